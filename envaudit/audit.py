"""Assembling a report: collect -> evaluate -> probe, for a live audit, a re-check of a saved report and a plan.

Every path ends in `assemble`, so the verdict of a live audit, of `check` and of `plan` is computed by the same
code from facts, and the exit code follows from the verdict alone (`exit_code`).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from envaudit import __version__, rules
from envaudit.collect import collect
from envaudit.exitcodes import Exit
from envaudit.model import Facts, Finding, ProbeResult, Report

ProbeRunner = Callable[[Facts], tuple[list[ProbeResult], list[Finding]]]


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
) -> Report:
    findings = rules.evaluate(facts) + list(probe_findings)
    return Report(
        facts=facts,
        findings=tuple(findings),
        probes=tuple(probes),
        created=created or now_iso(),
        host=host() if host_info is None else host_info,
        envaudit_version=__version__,
        mode=mode,
    )


def run_audit(*, quick: bool, timeout: float, probe_runner: ProbeRunner | None = None) -> Report:
    facts = collect(quick=quick, timeout=timeout)
    if quick or probe_runner is None:
        return assemble(facts, mode="quick" if quick else "audit")
    results, found = probe_runner(facts)
    return assemble(facts, mode="audit", probes=results, probe_findings=found)


def recheck(saved: Report) -> Report:
    """Today's rules on a saved report's facts; its probe results and probe findings are kept as measured."""
    kept = [f for f in saved.findings if f.source == "probe"]
    return assemble(
        saved.facts,
        mode="check",
        probes=saved.probes,
        probe_findings=kept,
        created=saved.created,
        host_info=saved.host,
    )


def exit_code(report: Report, *, strict: bool) -> Exit:
    if report.verdict == "error":
        return Exit.INTERNAL
    if report.verdict == "fail" or (strict and report.verdict == "warn"):
        return Exit.FINDINGS
    return Exit.OK
