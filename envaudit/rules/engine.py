"""The rule engine: data rules (`data/*.toml`, one file per rule) evaluated against a facts snapshot.

Conditions are three-valued. A condition that needs a fact the snapshot lacks is unknown (None), never a match,
so a `--quick` audit or a sparse plan cannot raise false alarms. Rule files are validated when loaded: an unknown
key is an error, because a misspelt condition would otherwise be silently ignored and the rule would over-match.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envaudit import cachedir, fixes
from envaudit.model import SEVERITIES, Facts, Finding, Severity
from envaudit.rules import derive

DATA = Path(__file__).with_name("data")
RULE_KEYS = {"id", "title", "severity", "symptom", "fix", "pins", "references", "notes", "when", "examples", "explains"}
Verdict = bool | None  # True holds, False does not, None unknown
Known = derive.Known


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
    explains: tuple[str, ...] = ()  # "probe:kind" or "probe:metric" (either may be "*"): the problems it causes
    pins: tuple[str, ...] = ()  # the fix as requirements: installed by the audited interpreter (envaudit/fixes.py)

    def evaluate(self, facts: Facts) -> tuple[Verdict, list[str]]:
        evidence: list[str] = []
        return holds(self.when, facts, evidence), evidence

    def finding(self, evidence: list[str], facts: Facts) -> Finding:
        detail = self.symptom + (f" [matched: {'; '.join(dict.fromkeys(evidence))}]" if evidence else "")
        command = fixes.pip_install(facts, self.pins, installed_only=True) if self.pins else ""
        detail += f" (the fix: {self.fix})" if command else ""  # the command alone, pasteable into any shell
        fix = command or self.fix
        return Finding(self.id, self.severity, self.title, detail, fix, self.references, "rule")


def _clause(value: Known, clause: Specifier, low: Version, high: Version) -> Verdict:
    """One specifier clause on a version known exactly, or only down to a prefix ("12": any 12.x).

    For a prefix, the ordered comparisons (<, <=, >, >=) hold for the whole range when they hold at both ends.
    An (in)equality is decided only when the clause's version is no more specific than the prefix (`==12.*` for
    "12") or lies outside the range (`==11.8`); `!=12.2` for "12" is unknown."""
    a, b = clause.contains(low, prereleases=True), clause.contains(high, prereleases=True)
    if a != b:
        return None
    if isinstance(value, derive.Exact) or clause.operator in ("<", "<=", ">", ">="):
        return a
    known = value.text.split(".")
    named = clause.version.removesuffix(".*").split(".")
    if named[: len(known)] == known and len(named) > len(known):
        return None  # the clause names a version inside the range: some of it matches, some not
    return a


def _spec(value: Known | None, spec: str, label: str, evidence: list[str]) -> Verdict:
    if value is None:
        return None
    try:
        low, high = value.bounds()
    except (InvalidVersion, ValueError):  # a fact that is not a version ("N/A", 5000 digits) is not known as one
        return None
    verdict = _all([_clause(value, clause, low, high) for clause in SpecifierSet(spec)])
    if verdict:
        evidence.append(f"{label} {value.text} ({value.source})")
    return verdict


def _packages(facts: Facts, want: Mapping[str, str], evidence: list[str]) -> Verdict:
    results: list[Verdict] = []
    for name, spec in want.items():
        version = facts.packages.get(name)
        parsed = derive.version_or_none(version) if version else None
        if version is None:
            results.append(False)
        elif parsed is None:
            results.append(None)
        else:
            results.append(_spec(derive.Exact(version, "installed"), spec, name, evidence))
    return _all(results)


def _env(facts: Facts, want: Mapping[str, Mapping[str, Any]], evidence: list[str]) -> Verdict:
    if facts.jax.get("status") == "planned":
        return None  # a plan declares no environment variables: their values are unknown, not unset
    results: list[Verdict] = []
    for var, test in want.items():
        value = facts.env.get(var)
        if "unset" in test:
            ok = value is None
        elif "set" in test:
            ok = value is not None
        elif "equals" in test:
            ok = value == test["equals"]
        else:
            ok = value is not None and str(test["contains"]) in value
        if ok:
            evidence.append(f"{var}={value}" if value is not None else f"{var} unset")
        results.append(ok)
    return _all(results)


def _caps(facts: Facts, spec: str, evidence: list[str]) -> Verdict:
    caps = derive.compute_capabilities(facts)
    if caps is None:
        return None
    matching = [c for c in caps if SpecifierSet(spec).contains(c)]
    if matching:
        evidence.append(f"compute capability {', '.join(matching)}")
    return bool(matching)


def _scalar(value: object, wanted: Iterable[object], label: str, evidence: list[str]) -> Verdict:
    if value is None:
        return None
    if value in wanted:
        evidence.append(f"{label} {value}")
        return True
    return False


CONDITIONS: dict[str, Callable[[Facts, Any, list[str]], Verdict]] = {
    "packages": _packages,
    "present": lambda f, names, ev: _all([n in f.packages for n in names]),
    "absent": lambda f, names, ev: _all([n not in f.packages for n in names]),
    "platform": lambda f, want, ev: _scalar(derive.platform(f), want, "platform", ev),
    "driver": lambda f, spec, ev: _spec(derive.nvidia_value(f, "driver_version"), spec, "driver", ev),
    "cuda_driver": lambda f, spec, ev: _spec(derive.nvidia_value(f, "cuda_driver_version"), spec, "driver CUDA", ev),
    "cuda": lambda f, spec, ev: _spec(derive.cuda(f), spec, "CUDA", ev),
    "cudnn": lambda f, spec, ev: _spec(derive.cudnn(f), spec, "cuDNN", ev),
    "libraries": lambda f, want, ev: _all(
        [_spec(derive.libraries(f).get(lib), spec, lib, ev) if f.packages else None for lib, spec in want.items()]
    ),
    "compute_capability": _caps,
    "gpus": lambda f, spec, ev: _spec(_count(derive.gpu_count(f)), spec, "GPUs", ev),
    "x64": lambda f, want, ev: _scalar(derive.x64(f), [want], "x64", ev),
    "matmul_precision": lambda f, want, ev: _scalar(derive.matmul_precision(f), want, "matmul precision", ev),
    "deterministic_ops": lambda f, want, ev: _scalar(derive.deterministic_ops(f), [want], "deterministic ops", ev),
    "env": _env,
    "any": lambda f, subs, ev: _any([holds(s, f, ev) for s in subs]),
}


def _count(n: int | None) -> Known | None:
    return None if n is None else derive.Exact(str(n), "NVML")


def _all(results: list[Verdict]) -> Verdict:
    return False if False in results else None if None in results else True


def _any(results: list[Verdict]) -> Verdict:
    return True if True in results else None if None in results else False


def holds(when: Mapping[str, Any], facts: Facts, evidence: list[str]) -> Verdict:
    local: list[str] = []
    verdict = _all([CONDITIONS[key](facts, value, local) for key, value in when.items()])
    if verdict:
        evidence.extend(local)
    return verdict


def parse_rule(data: Mapping[str, Any], where: str) -> Rule:
    unknown = set(data) - RULE_KEYS
    if unknown:
        raise RuleError(f"{where}: unknown key(s) {sorted(unknown)}")
    for key in ("id", "title", "severity", "symptom", "fix", "references", "when"):
        if key not in data:
            raise RuleError(f"{where}: missing {key!r}")
    if data["severity"] not in SEVERITIES:
        raise RuleError(f"{where}: severity must be one of {SEVERITIES}")
    refs = data["references"]
    if not refs or not all(isinstance(r, str) and r.startswith("https://") for r in refs):
        raise RuleError(f"{where}: references must be one or more https URLs")
    _validate_when(data["when"], where)
    explains = data.get("explains", [])
    if not isinstance(explains, list) or not all(isinstance(e, str) and e.count(":") == 1 for e in explains):
        raise RuleError(f"{where}: explains must be a list of 'probe:kind' or 'probe:metric' strings")
    pins = data.get("pins", [])
    if not isinstance(pins, list) or not all(isinstance(p, str) and fixes.valid(p) for p in pins):
        raise RuleError(f"{where}: pins must be a list of requirement strings ('numpy<2')")
    return Rule(
        id=data["id"], title=data["title"], severity=data["severity"], symptom=data["symptom"], fix=data["fix"],
        references=tuple(refs), when=data["when"], examples=tuple(data.get("examples", ())),
        notes=data.get("notes", ""), explains=tuple(explains), pins=tuple(pins),
    )  # fmt: skip


def _validate_when(when: Any, where: str) -> None:
    if not isinstance(when, dict) or not when:
        raise RuleError(f"{where}: 'when' must be a non-empty table")
    for key, value in when.items():
        if key not in CONDITIONS:
            raise RuleError(f"{where}: unknown condition {key!r}")
        specs = list(value.values()) if key in ("packages", "libraries") else [value]
        if key in (
            "driver",
            "cuda_driver",
            "cuda",
            "cudnn",
            "compute_capability",
            "gpus",
            "packages",
            "libraries",
        ):
            for spec in specs:
                try:
                    SpecifierSet(spec)
                except (InvalidSpecifier, TypeError) as exc:
                    raise RuleError(f"{where}: bad specifier {spec!r} for {key}: {exc}") from None
        if key == "any":
            for sub in value:
                _validate_when(sub, where)
        tests = {"contains", "equals", "unset", "set"}
        if key == "env" and not all(isinstance(t, dict) and len(t) == 1 and set(t) <= tests for t in value.values()):
            raise RuleError(f"{where}: each env test is one of contains/equals/unset/set")


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


def evaluate(facts: Facts, rules: Iterable[Rule] | None = None) -> list[Finding]:
    findings = []
    for rule in load_rules() if rules is None else rules:
        verdict, evidence = rule.evaluate(facts)
        if verdict:
            findings.append(rule.finding(evidence, facts))
    return findings
