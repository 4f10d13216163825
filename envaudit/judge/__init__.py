"""The judge: one pure function of (probe results, facts) that says what the probes' numbers mean on this machine.

A probe measures; the judge decides. Correctness is judged on the runs at HIGHEST precision against float32 or
float64 bounds; the default-precision run against the precision class the facts explain (TF32 on NVIDIA >= 8.0,
bfloat16 on TPUs); reruns against the determinism the platform documents. Reduced precision or nondeterminism by
design is at most a warning that cites the rule explaining it; anything beyond is a wrong answer. A rule explains a
probe's problem when it names it (`explains = ["probe:kind"]`) and its condition does not evaluate to false on the
facts, so a fix is never cited where the environment already rules it out. `envaudit check` reruns this on a saved
report, so an old report benefits from today's judgement. The data lives beside it in `metrics.toml`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from envaudit.formats.summary import metrics_line
from envaudit.judge import assess, table
from envaudit.model import SEVERITIES, Facts, Finding, ProbeResult
from envaudit.rules import engine

GENERIC_FIX = "envaudit probes {name} --script > repro.py; run it, and attach it and this report to an upstream issue"
GENERIC_REFS = ("https://github.com/jax-ml/jax/issues",)
DEFAULT_PRECISION_FIX = (
    "export JAX_DEFAULT_MATMUL_PRECISION=float32 (or jax.config.update('jax_default_matmul_precision', 'float32')) "
    "to compute in float32, and report `envaudit probes matmul_precision --script` output upstream"
)
STATUS_TITLES = {
    "crash": "probe {name} crashed the process",
    "timeout": "probe {name} did not finish in time",
    "error": "probe {name} could not run",
}
DEFAULT_PRECISION = "probe-default-precision"  # every probe's default run worse than its precision class allows
KIND_TITLES = {
    "default_error": "probe {name} loses precision at the default matmul precision",
    "rerun": "probe {name}: reruns of one compiled program differ in their last bits",
    "nondeterministic": "probe {name}: an operation nondeterministic by design differs between reruns",
    "documented_default": "probe {name}: a library default differs from the precision asked for",
}


@dataclass(frozen=True)
class Judgement:
    results: tuple[ProbeResult, ...]  # each pass or fail as judged here (skip, error, crash, timeout kept)
    findings: tuple[Finding, ...]


def base(name: str) -> str:
    return name.split("[")[0]


def judge(results: Sequence[ProbeResult], facts: Facts) -> Judgement:
    judged, findings, grouped = [], [], {}  # type: list[ProbeResult], list[Finding], dict[str, list[assess.Problem]]
    for result in results:
        if result.status in table.STATUSES:
            judged.append(result)
            findings.append(_status_finding(result, facts))
            continue
        if result.status != "pass" and result.status != "fail":
            judged.append(result)
            continue
        problems = assess.problems(result, facts)
        wrong = [p for p in problems if p.severity == "fail"]
        judged.append(replace(result, status="fail" if wrong else "pass", message=_message(result, problems)))
        # A wrong answer at HIGHEST is the cause of a wrong default run too; a default run alone beyond its class
        # has one cause for every probe: the platform's default precision.
        if any(p.kind != "default_error" for p in wrong):
            findings.append(_wrong_answer(result, wrong))
        elif wrong:
            grouped.setdefault(DEFAULT_PRECISION, []).extend(wrong)
        for problem in problems:
            if problem.severity != "fail":
                key = problem.cause.id if problem.cause else f"probe-{_slug(result.name)}-{_slug(problem.kind)}"
                grouped.setdefault(key, []).append(problem)
    findings += [_explained(key, problems) for key, problems in grouped.items()]
    return Judgement(tuple(judged), tuple(findings))


def merge(rule_findings: Sequence[Finding], probe_findings: Sequence[Finding]) -> list[Finding]:
    """One finding per root cause: a probe's evidence for a rule that also fired on the facts joins that rule's
    finding (the worse severity of the two) instead of repeating it; worst first, stable within a severity."""
    merged = {id(f): f for f in rule_findings}
    by_id = {f.id: f for f in rule_findings}
    extra = []
    for found in probe_findings:
        fired = by_id.get(found.id)
        if fired is None or found.id.startswith("probe-"):
            extra.append(found)
            continue
        worse = min((fired.severity, found.severity), key=SEVERITIES.index)
        measured = found.detail.partition(" [measured: ")[2]
        detail = f"{fired.detail} [measured: {measured}" if measured else fired.detail
        joined = replace(fired, severity=worse, detail=detail)
        merged[id(fired)] = by_id[found.id] = joined
    return sorted([*merged.values(), *extra], key=lambda f: SEVERITIES.index(f.severity))


def _slug(name: str) -> str:
    return base(name).replace("_", "-")


def _message(result: ProbeResult, problems: list[assess.Problem]) -> str:
    wrong = [p.text for p in problems if p.severity == "fail"]
    if wrong:
        return "; ".join(wrong)
    if problems:  # what the platform documents; the findings say why, once for all probes
        return "checks pass; by design here: " + ", ".join(f"{p.metric}={p.value}" for p in problems)
    return result.message


def _fix(name: str, cause: engine.Rule | None) -> tuple[str, tuple[str, ...]]:
    return (cause.fix, cause.references) if cause else (GENERIC_FIX.format(name=base(name)), GENERIC_REFS)


def _wrong_answer(result: ProbeResult, wrong: list[assess.Problem]) -> Finding:
    cause = next((p.cause for p in wrong if p.cause is not None), None)
    fix, refs = _fix(result.name, cause)
    detail = "; ".join(p.text for p in wrong) + (f" (explained by {cause.id}: {cause.symptom})" if cause else "")
    title = f"probe {result.name} computed a wrong answer"
    return Finding(f"probe-{_slug(result.name)}", "fail", title, detail, fix, refs, "probe")


def _measured(problems: list[assess.Problem]) -> str:
    """`[measured: a m=v, b m=v; why]`: the evidence of several probes, each bound said once."""
    values = ", ".join(f"{p.result} {p.metric}={p.value}" for p in problems)
    return f"[measured: {values}; {'; '.join(dict.fromkeys(p.why for p in problems))}]"


def _explained(key: str, problems: list[assess.Problem]) -> Finding:
    severity = min((p.severity for p in problems), key=SEVERITIES.index)
    cause = problems[0].cause
    if key == DEFAULT_PRECISION:
        title = "float32 matmuls or convolutions at the default precision are less precise than this platform documents"
        return Finding(key, severity, title, _measured(problems), DEFAULT_PRECISION_FIX, GENERIC_REFS, "probe")
    if cause is not None:
        detail = f"{cause.symptom} {_measured(problems)}"
        return Finding(cause.id, severity, cause.title, detail, cause.fix, cause.references, "probe")
    fix, refs = _fix(problems[0].result, None)
    title = KIND_TITLES[problems[0].kind].format(name=problems[0].result)
    return Finding(key, severity, title, _measured(problems), fix, refs, "probe")


def _status_finding(result: ProbeResult, facts: Facts) -> Finding:
    cause = next(iter(assess.causes(base(result.name), result.status, facts)), None)
    fix, refs = _fix(result.name, cause)
    evidence = "; ".join(filter(None, [result.message, metrics_line(result.metrics, limit=8)]))
    title = STATUS_TITLES[result.status].format(name=result.name)
    return Finding(f"probe-{_slug(result.name)}-{result.status}", "fail", title, evidence, fix, refs, "probe")
