"""One probe result's metrics, each judged by its kind against the bounds and classes the facts call for (pure).

Every judged metric that is not as a healthy machine of this kind would give is a `Problem` with a severity: `fail`
for a wrong answer; `warn` or `info` for what the platform documents (reduced precision by default, nondeterminism
by design), citing the rule that explains it when one does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from envaudit.judge import classes, table
from envaudit.model import SEVERITIES, Facts, ProbeResult, Severity
from envaudit.rules import engine


@dataclass(frozen=True)
class Problem:
    result: str  # the probe result's name
    metric: str
    kind: str
    severity: Severity
    value: str  # as shown: "0.001 (9.9 bits)"
    why: str  # the bound it was held to and why: "> 1e-05 (float32 at HIGHEST)"
    cause: engine.Rule | None = None  # the rule that explains it, if one does

    @property
    def text(self) -> str:
        return f"{self.metric}={self.value}: {self.why}"


def causes(probe: str, kind: str, facts: Facts) -> list[engine.Rule]:
    """The rules naming (probe, kind) in `explains` whose condition is not false here: those that hold first."""
    named = [r for r in engine.load_rules() if any(_names(e, probe, kind) for e in r.explains)]
    verdicts = [(rule, rule.evaluate(facts)[0]) for rule in named]
    return [r for r, v in verdicts if v is True] + [r for r, v in verdicts if v is None]


def _names(entry: str, probe: str, kind: str) -> bool:
    want_probe, _, want_kind = entry.partition(":")
    return want_probe in ("*", probe) and want_kind in ("*", kind)


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:  # non-finite values travel as strings ("nan", "inf") to keep the JSON strict
        return float(str(value))
    except ValueError:
        return None


# The severity of documented behaviour when no rule explains it; with a rule, the rule's (never a failure).
DOCUMENTED: dict[str, Severity] = {"default_error": "warn", "nondeterministic": "info", "documented_default": "warn"}


def _capped(rule: engine.Rule | None, kind: str) -> Severity:
    severity = rule.severity if rule is not None else DOCUMENTED[kind]
    return "warn" if severity == "fail" else severity


def as_run(facts: Facts, dtype: str) -> Facts:
    """The facts as the probe's run saw them: a float64 run (`--precision float64`) ran with x64 on, whatever the
    process default, so a rule about x64 explains what that run showed."""
    if facts.jax.get("status") != "ok" or facts.jax.get("x64") == (dtype == "float64"):
        return facts
    return replace(facts, jax={**facts.jax, "x64": dtype == "float64"})


def problems(result: ProbeResult, facts: Facts) -> list[Problem]:
    data = table.load()
    dtype = str(result.metrics.get("precision")) if result.metrics.get("precision") == "float64" else "float32"
    probe = result.name.split("[")[0]
    run_facts = as_run(facts, dtype)
    found = []
    for metric, value in result.metrics.items():
        kind = data.kind_of(metric)
        if kind == table.REPORT:
            continue
        judged = _one(kind, value, dtype, facts, data)
        if judged is None:
            continue
        severity, why = judged
        cause = next(iter(causes(probe, kind, run_facts)), None)
        if severity != "fail" and kind in DOCUMENTED:
            severity = _capped(cause, kind)
        found.append(Problem(result.name, metric, kind, severity, _show(value, kind), why, cause))
    return sorted(found, key=lambda p: SEVERITIES.index(p.severity))


def _show(value: object, kind: str) -> str:
    number = _number(value)
    if number is None or (isinstance(value, str) and kind in ("raised", "dtype", "documented_default")):
        return str(value)
    bits = f" ({-math.log2(number):.1f} bits)" if kind == "default_error" and 0 < number < 1 else ""
    return f"{number:.2g}{bits}"


def _one(kind: str, value: object, dtype: str, facts: Facts, data: table.Table) -> tuple[Severity, str] | None:
    """(severity, why) for one metric of `kind`, or None when a healthy machine of this kind would give it."""
    bound = data.error_bound(dtype)
    number = _number(value)
    if kind == "raised":
        return ("fail", "the computation raised") if value else None
    if kind in ("dtype", "documented_default"):
        if value == dtype:
            return None
        return ("fail" if kind == "dtype" else "info"), f"expected {dtype}"
    if number is None or math.isnan(number):
        return "fail", "not a number"
    if kind == "error":
        return None if number <= bound else ("fail", f"> {bound:g}, the bound of {dtype} at HIGHEST precision")
    if kind == "default_error":
        if number <= bound:
            return None
        cls = data.classes[classes.precision_class(facts, dtype)]
        if number <= cls.bound:
            return "warn", f"within {cls.bound:g}, the bound of class {cls.name}: {cls.why}"
        return "fail", f"> {cls.bound:g}, the bound of class {cls.name}: {cls.why}"
    if number == 0:
        return None
    if not classes.nondeterminism_allowed(facts):
        return "fail", "> 0: a rerun must give the same bits here"
    if number > bound:
        return "fail", f"> {bound:g}: larger than reordered {dtype} rounding"
    if kind == "rerun":
        return "warn", "XLA documents GEMMs and convolutions on GPUs as possibly nondeterministic"
    return "info", "nondeterministic by design on GPUs without deterministic ops"
