"""A report assembled from facts and probe results: the rules evaluated, the probes judged, one finding per root
cause, what the user ignores marked, the one plan computed, each finding given its part of it.

Every verb ends here (a live audit, `check` of a saved report, `plan`, `fix`, `health`), so the same facts give the
same verdict whichever verb collected them, and the exit code follows from the verdict alone (`exit_code`).
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from envaudit import __version__, judge, rules
from envaudit.judge import causes, fixplan, ignoring
from envaudit.model.exitcodes import Exit
from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix, Plan, Target, aimed
from envaudit.model.report import Clause, Finding, Mode, ProbeResult, Report
from envaudit.rules import knowledge
from envaudit.rules.engine import REGRESSIONS_PROBE
from envaudit.rules.registry import registry


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def host() -> dict[str, str]:
    return {"hostname": socket.gethostname()}


def assemble(
    facts: Facts,
    *,
    mode: Mode,
    probes: Sequence[ProbeResult] = (),
    probe_findings: Sequence[Finding] = (),
    created: str | None = None,
    host_info: dict[str, str] | None = None,
    complete: bool = True,
    ignore: Mapping[str, str] | None = None,
    target: Target | None = None,
    keep: Collection[str] = (),
) -> Report:
    """`ignore`: the rules the user ignores, with their reasons (envaudit/judge/ignoring.py): shown, never counted.
    `keep`: the distributions the plan never moves (`--keep`; judge/fixplan.py).
    `target`: what the fixes are rendered for where it is not the facts' installer (a plan read from files: the
    requirement lines to write, `fixes.Target` "lines"); the plan itself is computed the same way."""
    return candidates(
        facts,
        mode=mode,
        probes=probes,
        probe_findings=probe_findings,
        created=created,
        host_info=host_info,
        complete=complete,
        ignore=ignore,
        target=target,
        limit=1,
        keep=keep,
    )[0]


def candidates(
    facts: Facts,
    *,
    mode: Mode,
    probes: Sequence[ProbeResult] = (),
    probe_findings: Sequence[Finding] = (),
    created: str | None = None,
    host_info: dict[str, str] | None = None,
    complete: bool = True,
    ignore: Mapping[str, str] | None = None,
    target: Target | None = None,
    limit: int = 4,
    keep: Collection[str] = (),
) -> list[Report]:
    """The report as `assemble` makes it, then the same report with each other plan the tables propose
    (`fixplan.candidates`, best first, at most `limit` in all): what a measurement chooses from where the first
    plan does not install or run (commands/plan/building.py). The findings are the same in each; their fixes are
    their parts of that report's plan."""
    # one finding per root cause (a probe's evidence joins its rule's), consequences linked to their root
    evaluated = rules.evaluate(facts)
    found = _measured(evaluated.findings, probes)
    linked = causes.link(judge.merge(found, probe_findings, facts), evaluated, probes)
    findings = ignoring.mark(linked, ignore or {})
    plans = fixplan.candidates(facts, findings, ignore, limit=limit, keep=keep)
    if target is not None:
        plans = [plan.aimed(target) for plan in plans]
        findings = [replace(f, remedy=aimed(f.remedy, target)) for f in findings]
    when, where = created or now_iso(), host() if host_info is None else host_info
    return [
        Report(
            facts=facts,
            findings=tuple(_planned(f, plan) for f in findings),
            plan=plan,
            probes=tuple(probes),
            created=when,
            host=where,
            envaudit_version=__version__,
            knowledge=knowledge.reach(),
            mode=mode,
            complete=complete,
        )
        for plan in plans
    ]


def _measured(findings: Sequence[Finding], probes: Sequence[ProbeResult]) -> list[Finding]:
    """A rule of wrong numbers that the known_regressions probe ran here is judged by what it measured (its own
    severity, and the probe's failure joined to it by `judge.merge`), not failed for want of a measurement."""
    ran = any(p.probe == REGRESSIONS_PROBE and p.status in ("pass", "fail") for p in probes)
    if not ran:
        return list(findings)
    return [replace(f, severity=registry().cause(f.id).severity, unprobed=False) if f.unprobed else f for f in findings]


def _planned(finding: Finding, plan: Plan) -> Finding:
    """A finding with its part of the plan as its fix: computed on the state the steps before it leave, or none
    where another step fixes it too (its own would contradict the plan), said in its detail."""
    if finding.caused_by or not finding.remedy or finding.remedy.saved:
        return finding
    if by := plan.fixed_by(finding.id):
        return replace(finding, remedy=Fix()).said(Clause("fixed_by", (by,)))
    if plan.loop and finding.id in plan.remaining and not plan.part(finding.id):
        return replace(finding, remedy=Fix()).said(Clause("loops"))
    return replace(finding, remedy=plan.part(finding.id) or finding.remedy)


def judged(
    facts: Facts,
    results: Sequence[ProbeResult],
    *,
    mode: Mode,
    saved: Report | None = None,
    ignore: Mapping[str, str] | None = None,
    keep: Collection[str] = (),
) -> Report:
    """The report of these facts and probe results as today's rules and judge see them (`saved`: the report
    they come from, whose time, host and completeness are kept)."""
    return _rejudged(facts, results, mode=mode, saved=saved, ignore=ignore, keep=keep, limit=1)[0]


def alternatives(report: Report, limit: int, keep: Collection[str] = ()) -> list[Report]:
    """The report, then the same report with each other plan the tables propose for its facts and probe results
    (best first, at most `limit` in all): what `fix` proves in order on twins of the environment."""
    found = _rejudged(report.facts, report.probes, mode=report.mode, saved=report, keep=keep, limit=limit)
    return [report, *(r for r in found[1:] if r.plan.fix != report.plan.fix)]


def _rejudged(
    facts: Facts,
    results: Sequence[ProbeResult],
    *,
    mode: Mode,
    saved: Report | None,
    limit: int,
    ignore: Mapping[str, str] | None = None,
    keep: Collection[str] = (),
) -> list[Report]:
    """The reports of these facts and results as today's rules and judge see them, one per plan (at most `limit`);
    a saved report's time, host, completeness and duration kept."""
    verdict = judge.judge(causes.not_applicable(results, facts), facts)
    judged = functools.partial(
        candidates,
        facts,
        mode=mode,
        probes=verdict.results,
        probe_findings=verdict.findings,
        ignore=ignore,
        keep=keep,
        limit=limit,
    )
    if saved is None:
        return judged()
    found = judged(created=saved.created, host_info=saved.host, complete=saved.complete)
    return [replace(r, duration_s=saved.duration_s) for r in found]  # how long that audit took, as its time is kept


def recheck(saved: Report, ignore: Mapping[str, str] | None = None, keep: Collection[str] = ()) -> Report:
    """Today's rules and judge on a saved report's facts and probe metrics: the probe findings it was saved with
    are replaced by today's judgement of the same measurements (a saved "error" report stays one)."""
    return judged(saved.facts, saved.probes, mode="check", saved=saved, ignore=ignore, keep=keep)


def exit_code(report: Report, *, strict: bool) -> Exit:
    if report.verdict == "error":
        return Exit.INTERNAL
    if report.verdict == "fail" or (strict and report.verdict == "warn"):
        return Exit.FINDINGS
    return Exit.OK
