"""Conditions of the data rules on a facts snapshot, three-valued: True holds, False does not, None unknown.

A condition that needs a fact the snapshot lacks is unknown, never a match, so a `--quick` audit, a sparse plan
or a bug report's few lines cannot raise a false alarm. A version known only down to a prefix ("CUDA 12") decides
an ordered comparison only when it holds for the whole range. `CONDITIONS` is the one place that names what a
rule's `when` may test; `rules/engine.py` validates rule files against it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envaudit.facts import Facts
from envaudit.redact import REDACTED
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
        parsed = accessors.version_or_none(version) if version else None
        if version is None:
            results.append(False)
        elif parsed is None:
            results.append(None)
        else:
            results.append(_spec(accessors.Exact(version, SAID[facts.origin]), spec, name, evidence))
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
        else:
            ok = value is not None and str(test["contains"]) in value
        if ok:
            evidence.append(f"{var}={value}" if value is not None else f"{var} unset")
        results.append(ok)
    return _all(results)


def _xla_flags(facts: Facts, want: Mapping[str, Mapping[str, str]], evidence: list[str]) -> Verdict:
    """Tests of one XLA flag's value as XLA reads it (the last occurrence wins). Both say "the workaround is not
    set": not_equals (an absent flag is not equal), lacks_item (an absent flag, or a comma list without it). A
    value hidden by redaction is unknown."""
    results: list[Verdict] = []
    for flag, test in want.items():
        value = accessors.xla_flag(facts, flag)
        if value == REDACTED:
            results.append(None)
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


CONDITIONS: dict[str, Callable[[Facts, Any, list[str]], Verdict]] = {
    "packages": _packages,
    "present": lambda f, names, ev: _all([n in f.packages for n in names]),
    "absent": lambda f, names, ev: _all([n not in f.packages for n in names]),
    "platform": lambda f, want, ev: _scalar(accessors.platform(f), want, "platform", ev),
    "driver": lambda f, spec, ev: _spec(accessors.nvidia_value(f, "driver_version"), spec, "driver", ev),
    "cuda_driver": lambda f, spec, ev: _spec(accessors.nvidia_value(f, "cuda_driver_version"), spec, "driver CUDA", ev),
    "cuda": lambda f, spec, ev: _spec(accessors.cuda(f), spec, "CUDA", ev),
    "cudnn": lambda f, spec, ev: _spec(accessors.cudnn(f), spec, "cuDNN", ev),
    "libraries": lambda f, want, ev: _all(
        [_spec(accessors.libraries(f).get(lib), spec, lib, ev) if f.packages else None for lib, spec in want.items()]
    ),
    "compute_capability": _caps,
    "gpus": lambda f, spec, ev: _spec(_count(accessors.gpu_count(f)), spec, "GPUs", ev),
    "x64": lambda f, want, ev: _scalar(accessors.x64(f), [want], "x64", ev),
    "matmul_precision": lambda f, want, ev: _scalar(accessors.matmul_precision(f), want, "matmul precision", ev),
    "deterministic_ops": lambda f, want, ev: _scalar(accessors.deterministic_ops(f), [want], "deterministic ops", ev),
    "cpu_fast_math_unsafe": lambda f, want, ev: _scalar(
        accessors.cpu_fast_math_unsafe(f), [want], "XLA:CPU fast math without NaN/Inf", ev
    ),
    "machine": lambda f, want, ev: _scalar(accessors.machine(f), want, "machine", ev),
    "jax_computed": lambda f, want, ev: _scalar(accessors.jax_computed(f), [want], "jax seen computing", ev),
    "env": _env,
    "xla_flags": _xla_flags,
    "any": lambda f, subs, ev: _any([holds(s, f, ev) for s in subs]),
}


def _count(n: int | None) -> Known | None:
    return None if n is None else accessors.Exact(str(n), "NVML")


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
