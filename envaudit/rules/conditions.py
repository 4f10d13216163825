"""Conditions of the data rules on a facts snapshot, three-valued: True holds, False does not, None unknown.

A condition that needs a fact the snapshot lacks is unknown, never a match, so a `--quick` audit, a sparse plan
or a bug report's few lines cannot raise a false alarm. A version known only down to a prefix ("CUDA 12") decides
an ordered comparison only when it holds for the whole range. `CONDITIONS` is the one place that names what a
rule's `when` may test, what value each takes and which ask a GPU's facts; `rules/engine.py` validates rule files
with it (`problem`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envaudit.model.facts import Facts
from envaudit.model.redact import REDACTED
from envaudit.rules import accessors

Verdict = bool | None  # True holds, False does not, None unknown
Known = accessors.Known


def _clause(value: Known, clause: Specifier, low: Version, high: Version) -> Verdict:
    """One specifier clause on a version known exactly, or only down to a prefix ("12": any 12.x).

    For a prefix, the ordered comparisons (<, <=, >, >=) hold for the whole range when they hold at both ends.
    An (in)equality is decided only when the clause's version is no more specific than the prefix (`==12.*` for
    "12") or lies outside the range (`==11.8`); `!=12.2` for "12" is unknown."""
    a, b = clause.contains(low, prereleases=True), clause.contains(high, prereleases=True)
    if a != b:
        return None
    if isinstance(value, accessors.Exact) or clause.operator in ("<", "<=", ">", ">="):
        return a
    known = value.text.split(".")
    named = clause.version.removesuffix(".*").split(".")
    if named[: len(known)] == known and len(named) > len(known):
        return None  # the clause names a version inside the range: some of it matches, some not
    return a


def _spec(value: Known | None, spec: str, label: str, evidence: list[str]) -> Verdict:
    if value is None:
        return None
    verdict = _decided(value.text, isinstance(value, accessors.Exact), spec)
    if verdict:
        evidence.append(f"{label} {value.text} ({value.source})")
    return verdict


@functools.lru_cache(maxsize=1 << 16)
def _decided(text: str, exact: bool, spec: str) -> Verdict:
    """A version (exact, or a prefix) against a specifier, decided once: every rule of a table asks the same few
    versions the same few questions, and a plan asks them for each stack it weighs (parsing them each time was
    most of a plan's time)."""
    value: Known = accessors.Exact(text, "") if exact else accessors.Partial(text, "")
    try:
        low, high = value.bounds()
    except (InvalidVersion, ValueError):  # a fact that is not a version ("N/A", 5000 digits) is not known as one
        return None
    return _all([_clause(value, clause, low, high) for clause in _clauses(spec)])


@functools.lru_cache(maxsize=1 << 12)
def _clauses(spec: str) -> tuple[Specifier, ...]:
    return tuple(SpecifierSet(spec))


def _packages(facts: Facts, want: Mapping[str, str], evidence: list[str]) -> Verdict:
    """Each named package's version against its specifier: False where it is not installed, unknown where its
    version is not one."""
    said = SAID[facts.origin]
    results: list[Verdict] = []
    for name, spec in want.items():
        version = facts.packages.get(name)
        results.append(False if version is None else _spec(accessors.Exact(version, said), spec, name, evidence))
    return _all(results)


SAID = {"live": "installed", "hook": "installed", "plan": "planned", "triage": "stated"}  # how a version is known


def _env(facts: Facts, want: Mapping[str, Mapping[str, Any]], evidence: list[str]) -> Verdict:
    if facts.origin == "triage":
        return None  # a bug report does not state its environment variables: unknown, not unset
    results: list[Verdict] = []
    for var, test in want.items():
        value = facts.env.get(var)
        if "unset" in test:
            ok = value is None
        elif "set" in test:
            ok = value is not None
        elif "equals" in test:
            ok = value == test["equals"]
        elif "not_in" in test:  # unset, or none of these values (CUDA_VISIBLE_DEVICES not hiding every GPU)
            ok = value not in test["not_in"]
        else:
            ok = value is not None and str(test["contains"]) in value
        if ok:
            evidence.append(f"{var}={value}" if value is not None else f"{var} unset")
        results.append(ok)
    return _all(results)


def _xla_flags(facts: Facts, want: Mapping[str, Mapping[str, str]], evidence: list[str]) -> Verdict:
    """Tests of one XLA flag's value as XLA reads it (the last occurrence wins). Both say "the workaround is not
    set": not_equals (an absent flag is not equal), lacks_item (an absent flag, or a comma list without it). A
    value hidden by redaction is unknown; a bug report that does not state XLA_FLAGS is taken as without the
    workaround (whoever set one would say so), and the evidence says it was taken so."""
    results: list[Verdict] = []
    unstated = facts.origin == "triage" and "XLA_FLAGS" not in facts.env
    for flag, test in want.items():
        value = None if unstated else accessors.xla_flag(facts, flag)
        if value == REDACTED:
            results.append(None)
            continue
        if unstated:
            evidence.append(f"XLA_FLAGS not stated, taken as without {flag}")
            results.append(True)
            continue
        if "not_equals" in test:
            ok = value is None or value != test["not_equals"]
        else:
            ok = value is None or test["lacks_item"] not in value.split(",")
        if ok:
            evidence.append(f"{flag} unset" if value is None else f"{flag}={value}")
        results.append(ok)
    return _all(results)


def _caps(facts: Facts, spec: str, evidence: list[str]) -> Verdict:
    caps = accessors.compute_capabilities(facts)
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


Evaluator = Callable[[Facts, Any, list[str]], Verdict]


def _libraries(facts: Facts, want: dict[str, str], evidence: list[str]) -> Verdict:
    """The CUDA libraries' versions (from their wheels); unknown without the packages."""
    if not facts.packages:
        return None
    return _all([_spec(accessors.libraries(facts).get(lib), spec, lib, evidence) for lib, spec in want.items()])


def _specifier(value: Any) -> str | None:
    from packaging.specifiers import InvalidSpecifier

    try:
        SpecifierSet(value)
    except (InvalidSpecifier, TypeError) as exc:
        return f"bad specifier {value!r}: {exc}"
    return None


def _specifiers(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"{value!r} is not a table of specifiers"
    return next(filter(None, (_specifier(spec) for spec in value.values())), None)


def _tests(*allowed: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, dict) and all(
            isinstance(t, dict) and len(t) == 1 and set(t) <= set(allowed) for t in value.values()
        ):
            return None
        return f"each test is one of {'/'.join(allowed)}"

    return check


def _subconditions(value: Any) -> str | None:
    if not isinstance(value, list):
        return "'any' takes a list of tables"
    return next(filter(None, (problem(sub) for sub in value)), None)


def _anything(value: Any) -> str | None:
    del value
    return None


@dataclass(frozen=True)
class Condition:
    """What a rule's `when` may test: how it is evaluated, what its value must be, and whether it asks a fact only
    a machine with an NVIDIA GPU has (a bug report from another machine cannot speak of it)."""

    evaluate: Evaluator
    valid: Callable[[Any], str | None] = _anything  # the problem with a rule's value for it, None if it has none
    gpu: bool = False


CONDITIONS: dict[str, Condition] = {
    "packages": Condition(_packages, _specifiers),
    "present": Condition(lambda f, names, ev: _all([n in f.packages for n in names])),
    "absent": Condition(lambda f, names, ev: _all([n not in f.packages for n in names])),
    "platform": Condition(lambda f, want, ev: _scalar(accessors.platform(f), want, "platform", ev)),
    "driver": Condition(
        lambda f, spec, ev: _spec(accessors.nvidia_value(f, "driver_version"), spec, "driver", ev), _specifier, True
    ),
    "cuda_driver": Condition(
        lambda f, spec, ev: _spec(accessors.nvidia_value(f, "cuda_driver_version"), spec, "driver CUDA", ev),
        _specifier,
        True,
    ),
    "cuda": Condition(lambda f, spec, ev: _spec(accessors.cuda(f), spec, "CUDA", ev), _specifier, True),
    "cudnn": Condition(lambda f, spec, ev: _spec(accessors.cudnn(f), spec, "cuDNN", ev), _specifier, True),
    "libraries": Condition(
        lambda f, want, ev: _all(
            [
                _spec(accessors.libraries(f).get(lib), spec, lib, ev) if f.packages else None
                for lib, spec in want.items()
            ]
        ),
        _specifiers,
        True,
    ),
    "compute_capability": Condition(_caps, _specifier, True),
    "gpus": Condition(lambda f, spec, ev: _spec(_count(accessors.gpu_count(f)), spec, "GPUs", ev), _specifier, True),
    "x64": Condition(lambda f, want, ev: _scalar(accessors.x64(f), [want], "x64", ev)),
    "matmul_precision": Condition(
        lambda f, want, ev: _scalar(accessors.matmul_precision(f), want, "matmul precision", ev)
    ),
    "deterministic_ops": Condition(
        lambda f, want, ev: _scalar(accessors.deterministic_ops(f), [want], "deterministic ops", ev)
    ),
    "cpu_fast_math_unsafe": Condition(
        lambda f, want, ev: _scalar(accessors.cpu_fast_math_unsafe(f), [want], "XLA:CPU fast math without NaN/Inf", ev)
    ),
    "machine": Condition(lambda f, want, ev: _scalar(accessors.machine(f), want, "machine", ev)),
    "jax_computed": Condition(lambda f, want, ev: _scalar(accessors.jax_computed(f), [want], "jax seen computing", ev)),
    "env": Condition(_env, _tests("contains", "equals", "not_in", "unset", "set")),
    "xla_flags": Condition(_xla_flags, _tests("not_equals", "lacks_item")),
    "any": Condition(lambda f, subs, ev: _any([holds(s, f, ev) for s in subs]), _subconditions),
}
GPU_CONDITIONS = frozenset(name for name, condition in CONDITIONS.items() if condition.gpu)


def problem(when: Any) -> str | None:
    """What is wrong with a rule's `when` (an unknown condition, a value it cannot take), None if nothing is."""
    if not isinstance(when, dict) or not when:
        return "'when' must be a non-empty table"
    for key, value in when.items():
        if key not in CONDITIONS:
            return f"unknown condition {key!r}"
        wrong = CONDITIONS[key].valid(value)
        if wrong is not None:
            return f"{key}: {wrong}"
    return None


def _count(n: int | None) -> Known | None:
    return None if n is None else accessors.Exact(str(n), "NVML")


def _all(results: list[Verdict]) -> Verdict:
    return False if False in results else None if None in results else True


def _any(results: list[Verdict]) -> Verdict:
    return True if True in results else None if None in results else False


def holds(when: Mapping[str, Any], facts: Facts, evidence: list[str]) -> Verdict:
    local: list[str] = []
    verdict = _all([CONDITIONS[key].evaluate(facts, value, local) for key, value in when.items()])
    if verdict:
        evidence.extend(local)
    return verdict
