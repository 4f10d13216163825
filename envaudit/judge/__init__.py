"""The judge: one pure function of (probe results, facts) that says what the probes' numbers mean on this machine.

A probe measures; the judge decides. Correctness is judged on the runs at HIGHEST precision against float32 or
float64 bounds; the default-precision run against the precision class the facts explain (TF32 on NVIDIA >= 8.0,
bfloat16 on TPUs); reruns against the determinism the platform documents. Reduced precision or nondeterminism by
design is at most a warning that cites the rule explaining it; anything beyond is a wrong answer. A rule explains a
probe's problem when it names it (`explains = ["probe:kind"]`, or `["probe:metric"]` for one metric) and its
condition holds on the facts (one whose condition is merely unknown is named as a possibility, never as the
cause), so a fix is never offered where the environment rules it out. One root cause is one finding: the problems
a rule explains join that rule's finding, and every default run beyond its class joins one. `envaudit check`
reruns this on a saved report, so an old report benefits from today's judgement. The data is
`model/metrics.toml` (read by `table.py`; the metrics' kinds by `model/metrics.py`, which the formats read too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from envaudit.judge import assess, peers, table
from envaudit.model import devices, fixes
from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.report import SEVERITIES, Clause, Finding, ProbeResult, ProbeRun, Subject
from envaudit.rules import engine
from envaudit.rules.node import blocked_for_long, compiling, starved
from envaudit.rules.registry import registry

# what to do where no command can fix it: said in the finding's detail, never printed as a fix (no command is one)
GENERIC_FIX = "envaudit probes {name} --script > repro.py; run it, and attach it and this report to an upstream issue"
GENERIC_REFS = ("https://github.com/jax-ml/jax/issues",)
DEFAULT_PRECISION = Subject("precision", "default")  # the default runs of every probe, where no rule explains them
DEFAULT_PRECISION_FIX = (
    "compute in float32 (the fix, or jax.config.update('jax_default_matmul_precision', 'float32') in the program), "
    "and report `envaudit probes matmul_precision --script` output upstream"
)
STATUS_TITLES = {
    "crash": "probe {name} crashed the process",
    "timeout": "probe {name} hung: it used no CPU while it ran out of time (a blocked driver call or a deadlock)",
    "error": "probe {name} could not run",
}
NOT_RUN = "probe {name} was not run: its declared cost does not fit health's total bound"
NOT_RUN_FIX = "give health a larger --total-timeout, or name the probe with --probe (named probes always run)"
SLOW_TITLE = "probe {name} did not finish in time: the machine was too busy, or the bound too short"
SLOW_FIX = "give it more time (--timeout S; health: --timeout and --total-timeout), or audit the node when it is idle"
KIND_TITLES = {
    "rerun": "probe {name}: reruns of one compiled program differ in their last bits",
    "nondeterministic": "probe {name}: an operation nondeterministic by design differs between reruns",
    "documented_default": "probe {name}: a library default differs from the precision asked for",
}


@dataclass(frozen=True)
class Judgement:
    results: tuple[ProbeResult, ...]  # each pass or fail as judged here (skip, error, crash, timeout kept)
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class _Measured:
    """What one measured run (its probe passed or failed) says: the result as judged here, the wrong answer no
    rule explains, each other problem with the subject of the finding it joins, and what it showed of devices."""

    result: ProbeResult
    wrong_answer: Finding | None
    joins: tuple[tuple[Subject, assess.Problem], ...]
    devices: tuple[peers.DeviceProblem, ...]


def judge(results: Sequence[ProbeResult], facts: Facts) -> Judgement:
    """Every result judged, and the findings: one per status a probe ended with, one per wrong answer no rule
    explains, one per cause (a rule, the platform's default precision, a kind of problem of one probe) with all the
    problems it explains, and one per device that computed apart from the known answer or its peers."""
    judged, findings = [], []
    grouped: dict[Subject, list[assess.Problem]] = {}  # a finding's subject -> the problems that join it
    by_device: dict[int, list[peers.DeviceProblem]] = {}
    for result in results:
        if result.status not in ("pass", "fail"):
            judged.append(replace(result, judgement=""))
            findings += _not_measured(result, facts)
            continue
        run = _measure(result, facts)
        judged.append(run.result)
        findings += [run.wrong_answer] if run.wrong_answer else []
        for subject, problem in run.joins:
            grouped.setdefault(subject, []).append(problem)
        for found in run.devices:
            by_device.setdefault(found.device, []).append(found)
    grouped, outliers = _outliers(grouped)
    findings += [_wrong_answer(run, wrong) for run, wrong in outliers.items()]
    findings += [_explained(subject, problems, facts) for subject, problems in grouped.items() if problems]
    findings += [_device_finding(device, found, facts) for device, found in sorted(by_device.items())]
    return Judgement(tuple(judged), tuple(findings))


def _not_measured(result: ProbeResult, facts: Facts) -> list[Finding]:
    """A probe that ended without an answer (error, crash, timeout) is a finding; one health's bound left out is a
    warning that says so; a skip is none."""
    if result.status in table.STATUSES:
        return [_status_finding(result, facts)]
    if result.left_out == "budget":  # left out by health's bound: said, not a fault
        title = NOT_RUN.format(name=result.run.label)
        subject = Subject.probe(result.run, "not-run")
        words = _advised(result.message, NOT_RUN_FIX)
        return [Finding(subject, "warn", title, words, Fix(), GENERIC_REFS, "probe")]
    return []


def _measure(result: ProbeResult, facts: Facts) -> _Measured:
    judged_devices, device_problems, of_probe = peers.judge(result, facts)
    problems = sorted([*assess.problems(result, facts), *of_probe], key=lambda p: SEVERITIES.index(p.severity))
    if result.status == "fail" and not problems and not device_problems:  # its own check failed on what
        problems = [assess.unjudged(result)]  # is not judged here: its word stands
    bad_device = any(p.severity == "fail" for p in device_problems)
    said = [*(f"device {p.device}: {p.text}" for p in device_problems), _words(problems, passed=not bad_device)]
    wrong = any(p.severity == "fail" for p in problems) or bad_device
    devices = judged_devices or result.devices
    judged = replace(
        result, status="fail" if wrong else "pass", judgement="; ".join(filter(None, said)), devices=devices
    )
    problems, unexplained = _attribute(problems)
    joins = tuple((_joins(result, p), p) for p in problems if p not in unexplained)
    answer = _wrong_answer(result.run, unexplained) if unexplained else None
    return _Measured(judged, answer, joins, tuple(device_problems))


def _attribute(problems: list[assess.Problem]) -> tuple[list[assess.Problem], list[assess.Problem]]:
    """The problems with the causes this run shows, and its wrong answers that no rule explains. A wrong answer at
    HIGHEST is the cause of a wrong default run too, which then joins what explains it (its rule, else the wrong
    answer itself); without one, a default run beyond its class is the platform's default or a rule's."""
    at_highest = [p for p in problems if p.severity == "fail" and p.kind != "default_error"]
    if not at_highest:
        return problems, []
    known = next((p.cause for p in at_highest if p.cause and p.certain), None)
    problems = [
        replace(p, cause=known, certain=known is not None) if p.severity == "fail" and p.kind == "default_error" else p
        for p in problems
    ]
    return problems, [p for p in problems if p.severity == "fail" and not (p.cause and p.certain)]


def _outliers(
    grouped: dict[Subject, list[assess.Problem]],
) -> tuple[dict[Subject, list[assess.Problem]], dict[ProbeRun, list[assess.Problem]]]:
    """Default runs past their precision class while other default runs here are within it: not the platform's
    precision (that shows in every default run: a V100 computing in bf16), but those probes' own wrong answers,
    taken out of the finding they joined. A class rule (TF32 by default, bf16 on a TPU) documents errors within
    the class, never past it: an H200's batched chain off by 1e-1 beside TF32-sized errors elsewhere was told
    "TF32 by default, by design"; the class stays context in the probe's detail. A rule of wrong numbers (a
    fail-level fault) still explains what it names. Returns what each finding keeps, and the outliers by run."""
    defaults = [p for problems in grouped.values() for p in problems if p.kind == "default_error"]
    if not any(p.severity != "fail" for p in defaults):
        return grouped, {}
    kept: dict[Subject, list[assess.Problem]] = {}
    found: dict[ProbeRun, list[assess.Problem]] = {}
    for subject, problems in grouped.items():
        kept[subject] = []
        for p in problems:
            fault = p.cause is not None and p.certain and p.cause.severity == "fail"
            if p.kind == "default_error" and p.severity == "fail" and not fault:
                past = f"; past what {p.cause.id} documents" if p.cause is not None and p.certain else ""
                found.setdefault(p.result, []).append(replace(p, cause=None, certain=False, why=p.why + past))
            else:
                kept[subject].append(p)
    return kept, found


def _joins(result: ProbeResult, problem: assess.Problem) -> Subject:
    """The finding a problem that is not a wrong answer of its own joins: its rule's, the default precision's (one
    cause all the same, where no rule says why), or its probe's kind of problem."""
    if problem.cause is not None and problem.certain:
        return Subject("rule", problem.cause.id)
    if problem.kind == "default_error":
        return DEFAULT_PRECISION
    return Subject.probe(result.run, problem.kind)


DEVICE_FIX = "drain the node and take {short} out of service: {test}"
ALONE = "test it alone (envaudit audit --device {jax})"
BESIDE = "compare it with devices that agree (envaudit audit --device {jax} {peers}): alone it has no peer"
GPU_FIX = (
    "; run NVIDIA's diagnostic on it (dcgmi diag -r 3 -i {index}), reset it (nvidia-smi -r -i {index}) and return "
    "it if it fails again"
)
DEVICE_REFS = (
    "https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html",
    "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html",
)


def _device_finding(device: int, found: list[peers.DeviceProblem], facts: Facts) -> Finding:
    """One finding per device, whatever the number of probes that saw it: the board to pull, first. NVIDIA's
    tools name a GPU by its NVML index, which only the device mapping can tell (else it is left to fill in)."""
    severity = min((p.severity for p in found), key=SEVERITIES.index)
    kind, short = found[0].kind, devices.short(device, found[0].kind, facts)
    what = (
        "computes wrong numbers"
        if any(p.wrong for p in found)
        else f"computes other bits than the node's other {kind} devices"
    )
    detail = f"{devices.describe(device, kind, facts)}: " + "; ".join(p.text for p in found)
    peers = next((p.peers for p in found if p.peers), ())
    test = ALONE if any(p.wrong for p in found) or not peers else BESIDE
    todo = DEVICE_FIX.format(short=short, test=test.format(jax=device, peers=" ".join(f"--device {j}" for j in peers)))
    nvidia = facts.jax.get("platform") == "cuda"
    if nvidia:
        gpu = devices.board(device, facts)
        todo += GPU_FIX.format(index=gpu.get("index") if gpu else "<its NVML index>")
    refs = DEVICE_REFS if nvidia else ()
    subject = Subject("device", str(device))
    return Finding(subject, severity, f"{short} {what}", _advised(detail, todo), Fix(), refs, "probe")


def merge(rule_findings: Sequence[Finding], probe_findings: Sequence[Finding], facts: Facts) -> list[Finding]:
    """One finding per root cause: a probe's evidence for a rule that also fired on the facts joins that rule's
    finding (the worse severity of the two, but the rule's own where its fault is in a backend jax does not compute
    on by default here: known_regressions measures XLA:CPU on a TPU host) instead of repeating it; worst first,
    stable within a severity."""
    merged = {id(f): f for f in rule_findings}
    by_id = {f.id: f for f in rule_findings}
    extra = []
    for found in probe_findings:
        fired = by_id.get(found.id)
        if fired is None or found.subject.kind != "rule":
            extra.append(found)
            continue
        worse = min((fired.severity, found.severity), key=SEVERITIES.index)
        worse = fired.severity if registry().cause(found.id).off_default(facts) else worse
        joined = replace(fired, severity=worse, measured=found.measured)
        merged[id(fired)] = by_id[found.id] = joined
    return sorted([*merged.values(), *extra], key=lambda f: SEVERITIES.index(f.severity))


def _words(problems: list[assess.Problem], passed: bool = True) -> str:
    wrong = [p.text for p in problems if p.severity == "fail"]
    if wrong:
        return "; ".join(wrong)
    if problems:  # what the platform documents; the findings say why, once for all probes
        return (
            ("checks pass; " if passed else "")
            + "by design here: "
            + ", ".join(f"{p.metric}={p.value}" for p in problems)
        )
    return ""


def _possibly(problems: list[assess.Problem]) -> str:
    possible = list(dict.fromkeys(p.cause.id for p in problems if p.cause is not None and not p.certain))
    return f" (possibly {', '.join(possible)}: its condition cannot be checked on these facts)" if possible else ""


def _wrong_answer(run: ProbeRun, wrong: list[assess.Problem]) -> Finding:
    detail = "; ".join(p.text for p in wrong) + _possibly(wrong)
    title = f"probe {run.label} computed a wrong answer"
    if all(p.kind == "raised" for p in wrong):  # an import or a call that raised computed nothing at all
        title = f"probe {run.label} raised instead of computing (an import or a call failed)"
    words = _advised(detail, GENERIC_FIX.format(name=run.probe))
    return Finding(Subject.probe(run), "fail", title, words, Fix(), GENERIC_REFS, "probe")


def _judged_by(cause: engine.Rule, problems: list[assess.Problem]) -> bool:
    """Whether the rule names exactly the case each problem is ("ntk_nt:error_impl3", not "*:error") and is no rule
    of wrong numbers: it judged that case's consequence (neural-tangents 0.6.5's implementation=3 raising is a
    warning: implementations 1 and 2 work), so measuring the case confirms the rule, at its severity. A plan, which
    cannot measure, said the same: it declined the warning, and the audit after it failed on it."""
    named = {e for e in cause.explains if ":" in e and "*" not in e}
    return not cause.wrong_numbers and all(
        f"{p.result.probe}:{p.kind}" in named or f"{p.result.probe}:{p.metric}" in named for p in problems
    )


def _explained(subject: Subject, problems: list[assess.Problem], facts: Facts) -> Finding:
    severity = min((p.severity for p in problems), key=SEVERITIES.index)
    cause = problems[0].cause if problems[0].certain else None
    measured = tuple(p.evidence for p in problems)
    if cause is not None:
        if _judged_by(cause, problems):  # the rule's word on its own case: what the plan said, the audit says
            severity = cause.severity
        words = _advised(cause.symptom, cause.fix)  # joins the rule's own finding, with its fix, where it fired
        return Finding(subject, severity, cause.title, words, Fix(), cause.references, "probe", measured=measured)
    if subject == DEFAULT_PRECISION:
        title = "float32 matmuls or convolutions at the default precision are less precise than this platform documents"
        if severity != "fail":
            title = "float32 matmuls or convolutions at the default precision lose precision (no rule says why here)"
        return Finding(
            subject,
            severity,
            title,
            "",
            Fix(export=(("JAX_DEFAULT_MATMUL_PRECISION", "float32"),), target=fixes.target(facts)),
            GENERIC_REFS,
            "probe",
            measured=measured,
            clauses=(Clause("note", (f"{_possibly(problems)} (the fix: {DEFAULT_PRECISION_FIX})",)),),
        )
    title = KIND_TITLES[problems[0].kind].format(name=problems[0].result.label)
    todo = f" (what to do: {GENERIC_FIX.format(name=problems[0].result.probe)})"  # said after what was measured
    return Finding(
        subject,
        severity,
        title,
        "",
        Fix(),
        GENERIC_REFS,
        "probe",
        measured=measured,
        clauses=(Clause("note", (todo,)),),
    )


def slow(result: ProbeResult, facts: Facts) -> bool:
    """A timeout that is no evidence of a fault: not run for lack of time, starved by other work, or not run
    because jax's own start ran out of time while starved."""
    if result.left_out == "jax":
        return result.status == "timeout" and facts.jax.get("status") == "timeout" and starved(facts.jax, facts)
    if result.status == "timeout" and result.left_out == "deadline":  # cut by the total bound: a hang only with
        return not blocked_for_long(result.metrics, result.duration_s, facts)  # evidence of one
    return result.status == "timeout" and (starved(result.metrics, facts) or compiling(result.metrics))


def _status_finding(result: ProbeResult, facts: Facts) -> Finding:
    if slow(result, facts):  # a loaded machine computes slowly; that says nothing about its numbers
        evidence = "; ".join(filter(None, [result.message, result.metrics_text()]))
        return Finding(
            Subject.probe(result.run, "timeout"),
            "warn",
            SLOW_TITLE.format(name=result.run.label),
            _advised(evidence, SLOW_FIX),
            Fix(),
            GENERIC_REFS,
            "probe",
        )
    certain = [rule for rule, holds in assess.causes(result.probe, result.status, facts) if holds]
    todo, refs = (
        (certain[0].fix, certain[0].references) if certain else (GENERIC_FIX.format(name=result.probe), GENERIC_REFS)
    )
    evidence = "; ".join(filter(None, [result.message, result.metrics_text(limit=8)]))
    if certain:
        evidence += f" (explained by {certain[0].id}: {certain[0].symptom})"
    if result.status == "timeout" and not certain:  # a hang, or a start slower than its bound: tell them apart
        more = math.ceil(2 * max(result.duration_s, 1.0))
        todo = f"rerun it with more time (--timeout {more}; health: --total-timeout too); if it hangs again: {todo}"
    title = STATUS_TITLES[result.status].format(name=result.run.label)
    words = _advised(evidence, todo)
    return Finding(Subject.probe(result.run, result.status), "fail", title, words, Fix(), refs, "probe")


def _advised(words: str, todo: str) -> str:
    """A finding's words and what to do where no command fixes it (advice is read, never pasted into a shell)."""
    return f"{words} (what to do: {todo})" if words else f"what to do: {todo}"
