"""The rule engine: data rules (`data/*.toml`, one file per rule) loaded, validated and evaluated on facts.

A rule's `when` is evaluated by `rules/conditions.py` (three-valued: unknown is never a match). Rule files are
validated when loaded: an unknown key is an error, because a misspelt condition would otherwise be silently
ignored and the rule would over-match.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypedDict

from envaudit.files import cachedir
from envaudit.model import fixes, typecheck
from envaudit.model.facts import Facts
from envaudit.model.redact import REDACTED
from envaudit.model.report import Advice, Finding, Severity, Subject
from envaudit.model.scope import canonicalize_name
from envaudit.model.versions import release
from envaudit.rules import accessors, conditions, fixing, follow
from envaudit.rules.check import Lifecycle
from envaudit.rules.conditions import holds
from envaudit.rules.signatures import Match, Signature

DATA = Path(__file__).with_name("data")
REGRESSIONS_PROBE = "known_regressions"  # the probe of upstream wrong-numbers bugs (probes/known_regressions.py)


class Example(TypedDict):
    match: bool  # whether the rule fires on these facts
    facts: dict[str, Any]  # a fragment of a facts document; what it leaves out is unknown


class SignatureFile(TypedDict, total=False):
    """A `[[signatures]]` entry (rules/signatures.py): text and source required (parse_rule)."""

    text: str
    source: str
    seen: str
    fires: bool
    states: dict[str, str]


class _Optional(TypedDict, total=False):
    notes: str
    examples: list[Example]
    explains: list[str]  # "probe:kind", "probe:metric" (either may be "*") or a finding id
    pins: list[str]  # requirement strings
    # another way out, as requirements (jax upgraded past the fault where `pins` moves NumPy down): the one plan
    # weighs both ways by its objective (judge/fixplan.py); the finding's own fix stays `pins`
    or_pins: list[str]
    # a measured way around it without moving a release: variables to set (an XLA_FLAGS value is an entry added to
    # the flags already set), the plan's way out where no release fixes it without breaking something else
    workaround: dict[str, str]
    signatures: list[SignatureFile]  # the messages users see when it bites (rules/signatures.py)
    # checked by conditions.problem; absent: a rule no collected fact decides, which only its messages show (a
    # module built for NumPy 1 under NumPy 2), so it needs signatures that fire
    when: dict[str, Any]
    # the jax backend whose compiler has the fault ("cpu": an XLA:CPU miscompile); where jax computes on another
    # by default (a TPU or GPU host), only work placed on this one hits it: a warn, whatever a probe measured there
    backend: Literal["cpu", "cuda", "rocm", "tpu"]


class RuleFile(_Optional):
    """A rule file (`data/*.toml`) as it must be: these keys required, those of _Optional allowed, no other."""

    id: str
    title: str
    severity: Severity
    symptom: str
    fix: str
    references: list[str]


Verdict = conditions.Verdict


class RuleError(ValueError):
    """A rule file that does not follow the format; names the file."""


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: Severity
    symptom: str
    fix: str
    references: tuple[str, ...]
    when: Mapping[str, Any]
    examples: tuple[Mapping[str, Any], ...]
    notes: str = ""
    explains: tuple[str, ...] = ()  # "probe:kind", "probe:metric" (either may be "*") or a finding id: what it causes
    pins: tuple[
        str, ...
    ] = ()  # the fix as requirements: installed by the audited interpreter (envaudit/model/fixes.py)
    or_pins: tuple[str, ...] = ()  # another way out the plan may take instead (RuleFile)
    variables: tuple[tuple[str, str], ...] = ()  # its `workaround`: variables that avoid it where no release can
    signatures: tuple[Signature, ...] = ()  # the messages users see when it bites
    lifecycle: Lifecycle = "active"
    backend: str = ""  # the backend whose compiler has the fault ("" any: RuleFile.backend)
    kind: Literal["rule"] = "rule"
    transient: bool = False  # a check's; a rule is about the environment
    board: bool = False

    def evaluate(self, facts: Facts) -> tuple[Verdict, list[str]]:
        """Whether its conditions hold on the facts; unknown for a rule without any (only its messages show it)."""
        evidence: list[str] = []
        return (holds(self.when, facts, evidence) if self.when else None), evidence

    def other_way(self, facts: Facts) -> fixes.Fix:
        """The other way out as a fix for these facts (empty where the rule has none)."""
        pins = follow.planned(facts, self.or_pins) if self.or_pins else []
        fix = fixing.install(facts, pins, installed_only=True) if pins else fixes.Fix()
        if fix.install:  # a file's lines exclude what fails, as the finding's own fix's do
            fix = replace(fix, excluding=follow.excluding(facts, self.when.get("packages") or {}))
        return fix

    def workaround(self, facts: Facts) -> fixes.Fix:
        """The workaround as a fix for these facts (empty where the rule has none)."""
        exported = tuple(
            (name, fixing.with_flag(facts.env.get(name, ""), value) if name == "XLA_FLAGS" else value)
            for name, value in self.variables
        )
        if any(REDACTED in value for _, value in exported):  # the report hides a value it would have to repeat
            return fixes.Fix()
        return fixes.Fix(export=exported, target=fixes.target(facts)) if exported else fixes.Fix()

    @property
    def wrong_numbers(self) -> bool:
        """Whether its fault is wrong numbers that the known_regressions probe measures: an audit lets the probe say
        whether this machine computes them; where no probe ran it (a plan, --quick, the hook, a pasted report
        without the probe), the release known to compute them fails on the rule alone, the same in every verb."""
        return any(entry.startswith(f"{REGRESSIONS_PROBE}:") for entry in self.explains)

    def off_default(self, facts: Facts) -> str:
        """The backend jax computes on by default where it is not the one with the fault ("" where it is, or where
        the facts do not say): the fault then hits only the work a program places there."""
        platform = accessors.default_backend(facts)
        return platform if self.backend and platform and platform != self.backend else ""

    def holds_back(self) -> str:
        """The library this rule holds jax back for: one whose newest release the tables list is still within the
        rule's condition, so no release of it works with the jax the rule condemns ("" for none)."""
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        from envaudit.rules import declared

        for name, spec in (self.when.get("packages") or {}).items():
            known = sorted(declared.releases(name), key=lambda v: release(v) or ())
            if name in ("jax", "jaxlib") or not known or not isinstance(spec, str):
                continue
            try:
                if SpecifierSet(spec).contains(known[-1]):
                    return str(name)
            except InvalidSpecifier:
                continue
        return ""

    def findings(self, facts: Facts) -> list[Finding]:
        """Its finding where its conditions hold on the facts, with what matched."""
        verdict, evidence = self.evaluate(facts)
        return [self.finding(evidence, facts)] if verdict else []

    def finding(self, evidence: list[str], facts: Facts) -> Finding:
        words = self.symptom + (f" [matched: {'; '.join(dict.fromkeys(evidence))}]" if evidence else "")
        # the command alone is the fix, pasteable into any shell; what it does, or what to do without one, is said
        pins = follow.planned(facts, self.pins) if self.pins else []
        fix = fixing.install(facts, pins, installed_only=True) if pins else fixes.Fix()
        if fix.install:
            fix = replace(fix, excluding=follow.excluding(facts, self.when.get("packages") or {}))
        elsewhere = self.off_default(facts)
        if elsewhere:
            words += (
                f" [jax computes on {elsewhere} by default here: only what a program places on the "
                f"{self.backend.upper()} (jax.device_put to a CPU device, jax.default_device) is hit]"
            )
        unprobed = self.wrong_numbers and not elsewhere  # a probe that ran its case clears it (judge/assemble.py)
        return Finding(
            Subject("rule", self.id),
            "fail" if unprobed else "warn" if elsewhere and self.severity == "fail" else self.severity,
            self.title,
            words,
            fix,
            self.references,
            advice=Advice(self.fix, tuple(pins) or self.pins),
            unprobed=unprobed,
            about=named(self.when),
        )

    def seen(self, facts: Facts, matches: Sequence[Match] = ()) -> Finding | None:
        """Its finding where its message is seen, whatever the facts say of its conditions."""
        return self.finding([], facts)


def named(when: Mapping[str, Any]) -> tuple[str, ...]:
    """The distributions a rule's conditions name (`packages`, `libraries`, `present`, inside `any` too), in order,
    canonical: what its finding is about."""
    found: list[str] = []
    for key, value in when.items():
        if (key in ("packages", "libraries") and isinstance(value, Mapping)) or (
            key == "present" and isinstance(value, list)
        ):
            found += [canonicalize_name(str(n)) for n in value]
        elif key == "any" and isinstance(value, list):
            found += [n for sub in value if isinstance(sub, Mapping) for n in named(sub)]
    return tuple(dict.fromkeys(found))


def parse_rule(data: Mapping[str, Any], where: str) -> Rule:
    """A rule from its file's data: its shape checked against RuleFile (typecheck, as a facts document is), then
    what a type cannot say (https references, a valid `when`, explains and pins that parse)."""
    if wrong := typecheck.problem(dict(data), RuleFile, where, closed=True):
        raise RuleError(wrong)
    refs = data["references"]
    if not refs or not all(r.startswith("https://") for r in refs):
        raise RuleError(f"{where}: references must be one or more https URLs")
    signatures = tuple(_signature(s, where) for s in data.get("signatures", ()))
    if "when" not in data and not any(s.fires for s in signatures):
        raise RuleError(f"{where}: a rule without `when` needs a signature that fires (nothing else would show it)")
    if "when" in data:
        _validate_when(data["when"], where)
    explains = data.get("explains", [])
    if not all(e.count(":") <= 1 for e in explains):
        raise RuleError(f"{where}: explains must be a list of 'probe:kind', 'probe:metric' or finding-id strings")
    pins, or_pins = data.get("pins", []), data.get("or_pins", [])
    if not all(fixes.valid(p) for p in [*pins, *or_pins]):
        raise RuleError(f"{where}: pins and or_pins must be lists of requirement strings ('numpy<2')")
    return Rule(
        id=data["id"],
        title=data["title"],
        severity=data["severity"],
        symptom=data["symptom"],
        fix=data["fix"],
        references=tuple(refs),
        when=data.get("when", {}),
        examples=tuple(data.get("examples", ())),
        notes=data.get("notes", ""),
        explains=tuple(explains),
        pins=tuple(pins),
        or_pins=tuple(or_pins),
        variables=tuple(sorted(data.get("workaround", {}).items())),
        signatures=signatures,
        backend=data.get("backend", ""),
    )


def _signature(data: SignatureFile, where: str) -> Signature:
    if "text" not in data or "source" not in data:
        raise RuleError(f"{where}: a signature needs its text and its source")
    states = tuple(sorted(data.get("states", {}).items()))
    return Signature(data["text"], data["source"], data.get("seen", ""), data.get("fires", True), states)


def _validate_when(when: Any, where: str) -> None:
    wrong = conditions.problem(when)
    if wrong is not None:
        raise RuleError(f"{where}: {wrong}")


def _raw_rules(directory: Path) -> list[tuple[str, dict[str, Any]]]:
    """(file name, parsed TOML) per rule file. Parsing 40 TOML files costs ~20 ms, a third of `--quick`'s budget,
    so the parsed form is cached as JSON keyed by the files' names, sizes and modification times."""
    files = sorted(directory.glob("*.toml"))
    stamp = repr([(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]) + str(directory.resolve())
    name = f"rules-{hashlib.sha256(stamp.encode()).hexdigest()[:20]}.json"
    cached = cachedir.read_json(name)
    if isinstance(cached, list) and all(isinstance(x, list) and len(x) == 2 for x in cached):
        return [(str(n), d) for n, d in cached]
    raw = []
    for path in files:
        with path.open("rb") as handle:
            raw.append((path.name, tomllib.load(handle)))
    cachedir.write_json(name, raw)
    return raw


@cache
def load_rules(directory: Path = DATA) -> tuple[Rule, ...]:
    rules = []
    for file_name, data in _raw_rules(directory):
        rule = parse_rule(data, file_name)
        if rule.id != Path(file_name).stem:
            raise RuleError(f"{file_name}: id {rule.id!r} differs from the file name")
        rules.append(rule)
    return tuple(rules)
