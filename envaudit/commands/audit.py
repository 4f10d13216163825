"""Assembling a report: collect -> evaluate -> probe, for a live audit, a re-check of a saved report and a plan.

Every path ends in `assemble`, so the verdict of a live audit, of `check` and of `plan` is computed by the same
code from facts, and the exit code follows from the verdict alone (`exit_code`).
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime

from envaudit import __version__
from envaudit.child import runner
from envaudit.child.state import Options
from envaudit.collect import collect
from envaudit.model.exitcodes import Exit
from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix, Plan, Target, aimed
from envaudit.model.report import Finding, ProbeResult, Report


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def host() -> dict[str, str]:
    return {"hostname": socket.gethostname()}


def assemble(
    facts: Facts,
    *,
    mode: str,
    probes: Sequence[ProbeResult] = (),
    probe_findings: Sequence[Finding] = (),
    created: str | None = None,
    host_info: dict[str, str] | None = None,
    complete: bool = True,
    ignore: Mapping[str, str] | None = None,
    target: Target | None = None,
) -> Report:
    """`ignore`: the rules the user ignores, with their reasons (envaudit/judge/ignoring.py): shown, never counted.
    `target`: what the fixes are rendered for where it is not the facts' installer (a plan read from files: the
    requirement lines to write, `fixes.Target` "lines"); the plan itself is computed the same way."""
    from envaudit import judge, rules
    from envaudit.judge import causes, fixplan, ignoring

    # one finding per root cause (a probe's evidence joins its rule's), consequences linked to their root
    linked = causes.link(judge.merge(rules.evaluate(facts), probe_findings), facts, probes)
    findings = ignoring.mark(linked, ignore or {})
    plan = fixplan.plan(facts, findings, ignore)
    if target is not None:
        plan = plan.aimed(target)
        findings = [replace(f, remedy=aimed(f.remedy, target)) for f in findings]
    return Report(
        facts=facts,
        findings=tuple(_planned(f, plan) for f in findings),
        plan=plan,
        probes=tuple(probes),
        created=created or now_iso(),
        host=host() if host_info is None else host_info,
        envaudit_version=__version__,
        mode=mode,
        complete=complete,
    )


def _planned(finding: Finding, plan: Plan) -> Finding:
    """A finding with its part of the plan as its fix: computed on the state the steps before it leave, or none
    where another step fixes it too (its own would contradict the plan), said in its detail."""
    if finding.caused_by or not finding.remedy or finding.remedy.saved:
        return finding
    if by := plan.fixed_by(finding.id):
        return replace(finding, remedy=Fix(), caveat=f"{finding.caveat} (the plan's fix of {by} fixes it too)")
    if plan.loop and finding.id in plan.remaining and not plan.part(finding.id):
        loops = (
            " (its own fix leads back to a state the plan was in: no known release fixes it without breaking another)"
        )
        return replace(finding, remedy=Fix(), caveat=f"{finding.caveat}{loops}")
    return replace(finding, remedy=plan.part(finding.id) or finding.remedy)


def _host_facts(timeout: float, python: str | None) -> Facts:
    """Every fact but jax's (no jax import here), collected while the child imports jax; the modules that judge
    them are imported here too, for the same reason: the child starts before they load."""
    from envaudit.judge import causes  # noqa: F401
    from envaudit.rules import checks, engine  # noqa: F401

    facts = collect(timeout=timeout, python=python)
    engine.load_rules()  # read once (cached) while jax still imports, not after the probes
    return facts


def run_audit(
    *,
    quick: bool,
    timeout: float,
    probes: Options | None = None,
    python: str | None = None,
    ignore: Mapping[str, str] | None = None,
) -> Report:
    """Collect facts and run probes. One child reports what jax says and runs the probes (one jax import for
    both); the other collectors need no jax, so they run in a thread while the child imports jax; the judge needs
    both, so it comes last. The child is followed from this thread, so that an interrupt reaches the runner, which
    kills it. Without probes, the child reports the jax facts alone. `python`: the interpreter whose environment
    is audited (--python), when it is not this one; it runs the child too. `ignore`: as `assemble`'s. The report
    says how long it took (`duration_s`: from here to the assembled report)."""
    started = time.monotonic()
    if quick:
        return _timed(assemble(collect(timeout=timeout, python=python), mode="quick", ignore=ignore), started)
    child = replace(probes or Options(timeout=timeout, total=timeout), python=python or sys.executable, facts=True)
    with ThreadPoolExecutor(max_workers=1) as pool:
        host_facts = pool.submit(_host_facts, timeout, python)
        outcome = runner.run(child)
        facts = host_facts.result()
    assert outcome.jax is not None  # run() always finishes the facts it was asked for (child.facts)
    facts = replace(facts, jax=outcome.jax)
    return _timed(judged(facts, outcome.results, mode="audit", ignore=ignore), started)


def _timed(report: Report, started: float) -> Report:
    return replace(report, duration_s=time.monotonic() - started)


def judged(
    facts: Facts,
    results: Sequence[ProbeResult],
    *,
    mode: str,
    saved: Report | None = None,
    ignore: Mapping[str, str] | None = None,
) -> Report:
    """The report of these facts and probe results as today's rules and judge see them (`saved`: the report
    they come from, whose time, host and completeness are kept)."""
    from envaudit import judge
    from envaudit.judge import causes

    verdict = judge.judge(causes.not_applicable(results, facts), facts)
    if saved is None:
        return assemble(facts, mode=mode, probes=verdict.results, probe_findings=verdict.findings, ignore=ignore)
    again = assemble(
        facts,
        mode=mode,
        probes=verdict.results,
        probe_findings=verdict.findings,
        created=saved.created,
        host_info=saved.host,
        complete=saved.complete,
        ignore=ignore,
    )
    return replace(again, duration_s=saved.duration_s)  # how long that audit took, as its time and host are kept


def recheck(saved: Report, ignore: Mapping[str, str] | None = None) -> Report:
    """Today's rules and judge on a saved report's facts and probe metrics: the probe findings it was saved with
    are replaced by today's judgement of the same measurements (a saved "error" report stays one)."""
    return judged(saved.facts, saved.probes, mode="check", saved=saved, ignore=ignore)


def exit_code(report: Report, *, strict: bool) -> Exit:
    if report.verdict == "error":
        return Exit.INTERNAL
    if report.verdict == "fail" or (strict and report.verdict == "warn"):
        return Exit.FINDINGS
    return Exit.OK
