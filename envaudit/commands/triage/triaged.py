"""`envaudit triage FILE|-`: the environment pasted in a bug report, judged as `plan` judges pins.

Maintainers of jax, flax and neural-tangents ask the same questions in every thread ("which versions?", then
"that combination is known broken"). Triage reads the pasted text (`extract`), turns each environment it shows
into facts (a plan's: what the text says, nothing assumed, so a rule on anything unsaid is unknown, never a
match), evaluates the knowledge base on them through `assemble.assemble` (the same verdict code as every verb), and
says what the text did not say that would matter. Every fact used is shown with the line it came from.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from envaudit.commands.triage import extract, own
from envaudit.commands.triage.extract import Seen, Unread
from envaudit.commands.triage.gpus import capability
from envaudit.commands.triage.reproduce import Reproduction, reproduce
from envaudit.model.exitcodes import BadInput
from envaudit.model.facts import Facts, JaxFacts, Message, NvidiaFacts, PlatformFacts, PythonFacts
from envaudit.model.report import Report, schema_id
from envaudit.rules import raised
from envaudit.rules.conditions import GPU_CONDITIONS

SCHEMA = "envaudit/triage/v1"  # what to_dict writes; its JSON Schema is triage/schema.py's TRIAGE


class TriageError(BadInput, ValueError):
    """A text with no environment in it; the message is one line."""


@dataclass(frozen=True)
class Environment:
    seen: tuple[Seen, ...]  # every fact used, with its line
    report: Report
    missing: tuple[str, ...]  # what the text did not say that would matter here
    possible: tuple[tuple[str, str], ...]  # (rule id, title): would apply if an unsaid fact allows it
    reproduction: Reproduction | None = None  # its stated stack built here and measured, or why not


@dataclass(frozen=True)
class Building:
    """How a report's stacks are reproduced here (reproduce.py): not at all (`no_build`, or ENVAUDIT_NO_BUILD), or
    within `timeout` seconds for all of them together, the first MAX_BUILT environments that state jax."""

    no_build: bool = False
    timeout: float = 240.0
    say: Callable[[str], None] = field(default=lambda _: None)


MAX_BUILT = 3  # a before/after report shows two or three stacks; a text of sixteen is not built sixteen times


@dataclass(frozen=True)
class Triage:
    environments: tuple[Environment, ...]
    truncated: bool  # the text was longer than the bytes, lines or line length read
    unread: Unread | None  # where the reading of facts stopped: more environments or facts than are read
    # what the text states that is not installed: minimums ("jax 0.4.4+", `requires jax`) and releases it says
    # help ("downgrading Flax to 0.6.4 solved it", `helps flax`)
    requirements: tuple[Seen, ...] = ()
    unnamed: tuple[Seen, ...] = ()  # versions the text states with no name found for them: asked about

    @property
    def verdict(self) -> str:
        """The worst of the environments' verdicts, as every verb says a report's (model/report.Report.verdict): an
        ignored finding or an info is no verdict of its own (triage of a report said "info" where check said ok)."""
        found = {e.report.verdict for e in self.environments}
        return next((v for v in ("error", "fail", "warn") if v in found), "ok")

    def to_dict(self) -> dict[str, Any]:
        return {
            "$schema": schema_id(SCHEMA),
            "schema": SCHEMA,
            "verdict": self.verdict,
            "truncated": self.truncated,
            "unread": vars(self.unread) if self.unread else None,
            "environments": [_env_dict(e) for e in self.environments],
            "requirements": [vars(s) for s in self.requirements],
            **({"unnamed": [vars(s) for s in self.unnamed]} if self.unnamed else {}),
        }


def _env_dict(env: Environment) -> dict[str, Any]:
    return {
        "facts": [vars(s) for s in env.seen],
        "findings": [f.to_dict() for f in env.report.findings],
        "missing": list(env.missing),
        "possible": [{"id": i, "title": t} for i, t in env.possible],
        "evaluated": env.report.facts.to_dict(),
        **({"reproduction": _reproduction_dict(env.reproduction)} if env.reproduction else {}),
    }


def _reproduction_dict(found: Reproduction) -> dict[str, Any]:
    said: dict[str, Any] = {"status": found.status, "reason": found.reason}
    return said | ({"measured": dict(found.measured)} if found.measured is not None else {})


def _value(env: dict[str, Seen | list[Seen]], fact: str) -> str | None:
    item = env.get(fact)
    return item.value if isinstance(item, Seen) else None


def facts_of(env: dict[str, Seen | list[Seen]]) -> Facts:
    packages = {
        k.removeprefix("package "): v.value for k, v in env.items() if k.startswith("package ") and isinstance(v, Seen)
    }
    jax = JaxFacts(status="unknown", message="from the text of a bug report")
    if (platform := _value(env, "platform")) is not None:
        jax["platform"] = platform
    if (x64 := _value(env, "x64")) is not None:
        jax["x64"] = x64 == "on"
    if (cudnn := _value(env, "cudnn")) is not None:
        jax["cudnn_version"] = cudnn
    listed = env.get("gpu")
    gpus = listed if isinstance(listed, list) else []
    driver, cuda = _value(env, "driver"), _value(env, "cuda")
    nvidia = NvidiaFacts(status="unknown", message="the text does not say")
    if driver or gpus:
        nvidia = {
            "status": "ok",
            "driver_version": driver,
            "cuda_driver_version": cuda,
            "gpus_exact": bool(gpus),
            "gpus": [
                {"index": i, "name": g.value, "compute_capability": capability(g.value)} for i, g in enumerate(gpus)
            ],
        }
    python = PythonFacts(version=v) if (v := _value(env, "python")) else PythonFacts()
    system = PlatformFacts(system=s) if (s := _value(env, "system")) else PlatformFacts()
    if machine := _value(env, "machine"):
        system["machine"] = machine
    return Facts(
        packages=dict(sorted(packages.items())), python=python, platform=system, nvidia=nvidia, jax=jax, origin="triage"
    )


def missing(facts: Facts) -> list[str]:
    """What a maintainer would ask for next, given what the text says."""
    p, asked = facts.packages, []
    gpu = facts.jax.get("platform") == "cuda" or facts.nvidia.get("gpus") or any("cuda" in n for n in p)
    needs = [
        ("jax" not in p, "the jax version (pip show jax)"),
        ("jax" in p and "jaxlib" not in p, "the jaxlib version (pip show jaxlib)"),
        (not facts.python, "the Python version"),
        ("numpy" not in p, "the NumPy version"),
        ("platform" not in facts.jax, "the devices jax sees (python -c 'import jax; jax.print_environment_info()')"),
        (bool(gpu) and not facts.nvidia.get("driver_version"), "the NVIDIA driver and CUDA versions (nvidia-smi)"),
        (bool(gpu) and not facts.nvidia.get("gpus"), "the GPU model (nvidia-smi)"),
        (("flax" in p or "neural-tangents" in p) and "x64" not in facts.jax, "whether jax_enable_x64 is on"),
    ]
    asked += [what for needed, what in needs if needed]
    return asked


def possible(facts: Facts) -> list[tuple[str, str]]:
    """Rules whose package condition holds on the text's versions but whose other conditions it does not decide."""
    from envaudit.rules import conditions
    from envaudit.rules.registry import registry

    off_gpu = facts.jax.get("platform") not in (None, "cuda")  # then a rule on CUDA facts cannot apply
    return [
        (rule.id, rule.title)
        for rule in registry().rules
        if rule.evaluate(facts)[0] is None
        and "packages" in rule.when
        and not (off_gpu and set(rule.when) & GPU_CONDITIONS)
        and conditions.holds({"packages": rule.when["packages"]}, facts, []) is True
    ]


def triage(raw: bytes, building: Building = Building()) -> Triage:
    from envaudit.judge import assemble
    from envaudit.rules import messages as read
    from envaudit.rules.registry import registry

    text_lines, truncated = extract.lines(raw)
    if (written := own.read(extract.whole_lines(raw))) is not None:  # a report's JSON lines may be long: read whole
        environment, unread = _own(written, text_lines)
        return Triage((environment,), truncated, unread)
    scanned = registry().signatures.scan(text_lines)
    configured: set[int] = set()  # lines of a backend that did not start after the program chose jax's platforms
    if chosen := extract.chosen_platforms(text_lines):
        # where the choice is the cause (an error of the configuration's shape, rules/raised.py: a backend the
        # program did not name), not what jax's general words about backends say: those lines are no message the
        # rules read, and the error is the program's
        deferring = registry().deferring
        configured = {
            m.line
            for m in scanned
            if m.owner in deferring and raised.shape(m.text, platforms_chosen=chosen) == "configuration"
        }
        scanned = [m for m in scanned if not (m.owner in deferring and m.line in configured)]
    matches = read.deferred(scanned)
    found = extract.seen(text_lines) + [Seen(f, v, m.line, m.text[:200]) for m in matches for f, v in m.facts]
    found.sort(key=lambda s: s.line)  # stable: a line's own facts before its message's
    stated = tuple(s for s in found if s.fact.startswith(extract.NOT_INSTALLED))
    shown = extract.environments([s for s in found if not s.fact.startswith(extract.NOT_INSTALLED)])
    environments = shown.environments
    bare = tuple(extract.unnamed(text_lines)) if not environments else ()
    if not environments and (matches or stated or bare or extract.mentions_jax(text_lines)):
        environments = [{}]  # an error, jax's code or versions without names: answered, with what to state
    if not environments:
        raise TriageError(
            "no environment in this text (expected jax.print_environment_info() output, pip list or "
            "pip freeze lines, conda list, flax's 'Flax, jax, jaxlib versions' line, versions in prose, or an "
            "error message jax, XLA or NumPy prints)"
        )
    # each message once (a log repeats them), the first that the rules read (messages.MAX_MESSAGES)
    longest: dict[int, str] = {}  # per line, the longest text matched there (it holds the shorter ones)
    for m in matches:
        longest[m.line] = max(longest.get(m.line, ""), m.text, key=len)
    first: dict[str, Message] = {}  # each text at the first line it is on
    for line, text in sorted(longest.items()):
        if line not in configured:
            informational = extract.LOG_INFO.match(text_lines[line - 1]) is not None
            first.setdefault(text, Message(line=line, text=text, informational=informational))
    messages = list(first.values())[: read.MAX_MESSAGES]
    fired = [m.text for m in matches if m.signature.fires]
    # a deferring cause's match on a line where another cause's signature only states facts: it speaks there where
    # that cause is no finding and it has something to say on the environment's facts (messages.deferred)
    withheld = [m for m in scanned if m.owner in registry().deferring and m.signature.fires and m not in matches]
    unexplained: dict[tuple[frozenset[str], tuple[str, ...]], list[Message]] = {}  # by what explains: read once each
    result, built, deadline = [], 0, time.monotonic() + building.timeout
    for env in environments:
        facts = replace(facts_of(env), messages=messages)
        # an error line is explained by a signature that fires, by one whose cause is a finding here, or by a
        # deferring cause that speaks for it here
        quiet = read.explaining(facts, matches)
        spoken = tuple(m.text for m in withheld if m.line not in configured and registry().seen(m.owner, facts, [m]))
        if (quiet, spoken) not in unexplained:
            explained = fired + list(spoken) + [m.text for m in matches if m.owner in quiet]
            unexplained[quiet, spoken] = extract.errors(text_lines, explained)
        facts = stated_facts = replace(facts, errors=unexplained[quiet, spoken])
        shown_here = None
        if "jax" in facts.packages:
            left = deadline - time.monotonic()
            if built == MAX_BUILT or left <= 0:
                shown_here = Reproduction("not_built", f"only the first {built} stacks are built, within the bound")
            else:
                facts, shown_here = reproduce(facts, no_build=building.no_build, timeout=left, say=building.say)
                built += shown_here.measured is not None
        report = assemble.assemble(facts, mode="triage", host_info={"hostname": "bug report"})
        seen = sorted((s for v in env.values() for s in (v if isinstance(v, list) else [v])), key=lambda s: s.line)
        asked, could = tuple(missing(stated_facts)), tuple(possible(stated_facts))  # what the text says, not the twin
        result.append(Environment(tuple(seen), report, asked, could, shown_here))
    return Triage(tuple(result), truncated, shown.unread, stated, bare)


def _own(found: own.Own, text_lines: list[str]) -> tuple[Environment, Unread | None]:
    """envaudit's own report, judged as `check` judges it: its facts and its probes' measurements, by today's
    knowledge; at most MAX_FACTS facts, as for any text (past that, where the reading stopped)."""
    from envaudit.judge import assemble

    facts, unread = found.report.facts, None
    said = [("python", v)] if (v := facts.python.get("version")) else []
    said += [("system", v)] if (v := facts.platform.get("system")) else []
    said += [(f"package {name}", version) for name, version in facts.packages.items()]
    if len(said) > extract.MAX_FACTS:
        kept = dict(said[: extract.MAX_FACTS])
        packages = {n: v for n, v in facts.packages.items() if f"package {n}" in kept}
        facts = replace(facts, packages=packages)
        said, unread = list(kept.items()), Unread(found.line, "facts", extract.MAX_FACTS)
    report = replace(assemble.judged(facts, found.report.probes, mode="triage"), host={"hostname": "bug report"})
    seen, at = [], found.line
    for fact, value in said:  # in the report's order: each looked for from where the one before it was
        at, line = _where(text_lines, found.line, at, fact, value)
        seen.append(Seen(fact, value, at, line))
    return Environment(tuple(seen), report, tuple(missing(facts)), tuple(possible(facts))), unread


def _where(text_lines: list[str], start: int, at: int, fact: str, value: str) -> tuple[int, str]:
    """The line that states this value (of this package), looked for from line `at` on, then from the report's
    `start`: (its number, the line); the report's first line where none does."""
    name = fact.removeprefix("package ")
    for number in (*range(at, len(text_lines) + 1), *range(start, at)):
        line = text_lines[number - 1]
        if value in line and (name in line or fact in ("python", "system")):
            return number, line.strip()[:200]
    return start, text_lines[start - 1].strip()[:200]
