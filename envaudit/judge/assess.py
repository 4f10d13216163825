"""One probe result's metrics, each judged by its kind against the bounds and classes the facts call for (pure).

Every judged metric that is not as a healthy machine of this kind would give is a `Problem` with a severity: `fail`
for a wrong answer; `warn` or `info` for what the platform documents (reduced precision by default, nondeterminism
by design), citing the rule that explains it when one does. Reports written before envaudit 0.2 measured every
error at the default precision and reruns as absolute differences; such a result (it has `max_abs_diff_*`
metrics) is read as it was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from envaudit.judge import classes, table
from envaudit.model.facts import Facts
from envaudit.model.report import SEVERITIES, Evidence, ProbeResult, ProbeRun, Severity
from envaudit.rules import engine
from envaudit.rules.registry import registry

DTYPES = ("float32", "float64")
# The severity of documented behaviour when no rule explains it; with a rule, the rule's (never a failure).
DOCUMENTED: dict[str, Severity] = {"default_error": "warn", "nondeterministic": "info", "documented_default": "warn"}
LEGACY_NONDETERMINISTIC = ("max_abs_diff_scatter_add", "max_abs_diff_conv_grad")


@dataclass(frozen=True)
class Problem:
    result: ProbeRun  # the probe run it was seen in
    metric: str
    kind: str
    severity: Severity
    value: str  # as shown: "0.001 (9.9 bits)"
    why: str  # the bound it was held to and why: "> 1e-05, the bound of float32 at HIGHEST precision"
    cause: engine.Rule | None = None  # the rule that explains it, if one names it
    certain: bool = False  # that rule's condition holds here (else it is only possible: the facts do not say)

    @property
    def text(self) -> str:
        return f"{self.metric}={self.value}: {self.why}"

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.result, self.metric, self.value, self.why)


def causes(probe: str, kind: str, facts: Facts, metric: str = "") -> list[tuple[engine.Rule, bool]]:
    """The rules naming this problem in `explains` ("probe:kind", or "probe:metric" for one metric) whose condition
    is not false here, each with whether it holds (True) or is unknown on these facts; those that hold first."""
    named = registry().explaining(probe, kind, metric)
    verdicts = [(rule, rule.evaluate(facts)[0]) for rule in named]
    return [(r, True) for r, v in verdicts if v is True] + [(r, False) for r, v in verdicts if v is None]


def cause(run: ProbeRun, kind: str, facts: Facts, dtype: str, metric: str = "") -> tuple[engine.Rule | None, bool]:
    """The first rule naming this problem of a probe's run (at `dtype`), and whether it holds."""
    return next(iter(causes(run.probe, kind, as_run(facts, dtype), metric)), (None, False))


def number(value: object) -> float | None:
    """A metric as a number: non-finite values travel as strings; anything else is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:  # non-finite values travel as strings ("nan", "inf") to keep the JSON strict
        return float(str(value))
    except ValueError:
        return None


def as_run(facts: Facts, dtype: str) -> Facts:
    """The facts as the probe's run saw them: a float64 run (`--precision float64`) ran with x64 on, whatever the
    process default, so a rule about x64 explains what that run showed."""
    if facts.jax.get("status") != "ok" or facts.jax.get("x64") == (dtype == "float64"):
        return facts
    return replace(facts, jax={**facts.jax, "x64": dtype == "float64"})


def run_dtype(metrics: dict[str, object]) -> str:
    """The dtype the run asked for: its `precision`, else what came out, else float32."""
    for key in ("precision", "output_dtype"):
        if metrics.get(key) in DTYPES:
            return str(metrics[key])
    return "float32"


def kind_of(metric: str, data: table.Table, legacy: bool) -> str:
    kind = data.kind_of(metric)
    if legacy and kind == "error":
        return "default_error"  # before 0.2 every error was measured at the default precision
    if legacy and metric in LEGACY_NONDETERMINISTIC:
        return "nondeterministic"
    return kind


def problems(result: ProbeResult, facts: Facts) -> list[Problem]:
    data = table.load()
    dtype = run_dtype(result.metrics)
    legacy = any(k.startswith("max_abs_diff_") for k in result.metrics)
    found = []
    for metric, value in result.metrics.items():
        kind = kind_of(metric, data, legacy)
        if kind == table.REPORT:
            continue
        judged = _one(kind, value, dtype, facts, data, absolute=legacy and metric.startswith("max_abs_diff_"))
        if judged is None:
            continue
        severity, why = judged
        rule, certain = cause(result.run, kind, facts, dtype, metric)
        if severity != "fail" and kind in DOCUMENTED:
            documented = rule.severity if rule is not None and certain else DOCUMENTED[kind]
            severity = "warn" if documented == "fail" else documented
        found.append(Problem(result.run, metric, kind, severity, _show(value, kind), why, rule, certain))
    return sorted(found, key=lambda p: SEVERITIES.index(p.severity))


def unjudged(result: ProbeResult) -> Problem:
    """A probe that failed its own check on metrics this judge does not read: its word stands."""
    why = result.message or "the probe's own check failed on metrics envaudit does not judge"
    return Problem(result.run, "status", "unjudged", "fail", "fail", why)


def _show(value: object, kind: str) -> str:
    figure = number(value)
    if figure is None or (isinstance(value, str) and kind in ("raised", "dtype", "documented_default")):
        return str(value)
    bits = f" ({-math.log2(figure):.1f} bits)" if kind == "default_error" and 0 < figure < 1 else ""
    return f"{figure:.2g}{bits}"


def _one(
    kind: str, value: object, dtype: str, facts: Facts, data: table.Table, *, absolute: bool = False
) -> tuple[Severity, str] | None:
    """(severity, why) for one metric of `kind`, or None when a healthy machine of this kind would give it."""
    bound = data.error_bound(dtype)
    figure = number(value)
    if kind == "raised":
        return ("fail", "the computation raised") if value else None
    if kind in ("dtype", "documented_default"):
        if value == dtype:
            return None
        return ("fail" if kind == "dtype" else "info"), f"expected {dtype}"
    if figure is None or math.isnan(figure) or figure < 0:
        return "fail", "not a norm of a difference (negative, or not a figure)"
    if kind == "error":
        return None if figure <= bound else ("fail", f"> {bound:g}, the bound of {dtype} at HIGHEST precision")
    if kind == "wrong_count":
        return None if figure == 0 else ("fail", "> 0: results unlike the reference's IEEE class")
    if kind == "platform_error":
        platform = classes.platform_class(facts)
        limit = data.platform_bound(dtype, platform)
        return None if figure <= limit else ("fail", f"> {limit:g}, the bound of {dtype} on platform class {platform}")
    if kind == "default_error":
        if figure <= bound:
            return None
        cls = data.classes[classes.precision_class(facts, dtype)]
        if figure <= cls.bound:
            return "warn", f"within {cls.bound:g}, the bound of class {cls.name}: {cls.why}"
        return "fail", f"> {cls.bound:g}, the bound of class {cls.name}: {cls.why}"
    if figure == 0:
        return None
    if not classes.nondeterminism_allowed(facts):
        return "fail", "> 0: a rerun must give the same bits here"
    if figure > bound and not absolute:  # a report before 0.2 measured absolute differences: no relative bound
        return "fail", f"> {bound:g}: larger than reordered {dtype} rounding"
    if kind == "rerun":
        return "warn", "XLA documents GEMMs and convolutions on GPUs as possibly nondeterministic"
    return "info", "nondeterministic by design on GPUs without deterministic ops"
