"""Assembling a report: collect -> evaluate -> probe, for a live audit, a re-check of a saved report and a plan.

Every path ends in `assemble`, so the verdict of a live audit, of `check` and of `plan` is computed by the same
code from facts, and the exit code follows from the verdict alone (`exit_code`).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime

from envaudit import __version__
from envaudit.collect import collect, jaxinfo
from envaudit.exitcodes import Exit
from envaudit.model import SEVERITIES, Facts, Finding, ProbeResult, Report
from envaudit.probing import Outcome

ProbeRunner = Callable[[], Outcome]


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
) -> Report:
    from envaudit import rules

    findings = sorted(rules.evaluate(facts) + list(probe_findings), key=lambda f: SEVERITIES.index(f.severity))
    return Report(
        facts=facts,
        findings=tuple(findings),
        probes=tuple(probes),
        created=created or now_iso(),
        host=host() if host_info is None else host_info,
        envaudit_version=__version__,
        mode=mode,
        complete=complete,
    )


def _host_facts(timeout: float) -> Facts:
    """Every fact but jax's (no jax import here), collected while the probe child imports jax; the modules that
    judge them are imported here too, for the same reason: the child starts before they load."""
    from envaudit import probe_findings, rules  # noqa: F401

    return collect(quick=True, timeout=timeout)


def run_audit(*, quick: bool, timeout: float, probe_runner: ProbeRunner | None = None) -> Report:
    """Collect facts and run probes. The probe child also reports what jax says (one jax import for both); the
    other collectors need no jax, so they run in a thread while the child imports jax; the hints need both, so
    they come last. The probes run in this thread, so that an interrupt reaches the runner, which kills its child."""
    if quick or probe_runner is None:
        return assemble(collect(quick=quick, timeout=timeout), mode="quick" if quick else "audit")
    with ThreadPoolExecutor(max_workers=1) as pool:
        host_facts = pool.submit(_host_facts, timeout)
        outcome = probe_runner()
        facts = host_facts.result()
    facts = replace(facts, jax=outcome.jax if outcome.jax is not None else jaxinfo.get_jax(timeout=timeout))
    results = outcome.results
    if facts.jax.get("status") == "absent":  # nothing to audit: a probe that cannot import jax is skipped, not broken
        results = [
            replace(r, status="skip", message="jax is not installed")
            if r.status == "error" and r.metrics.get("error_kind") == "import" else r
            for r in results
        ]  # fmt: skip
    from envaudit import probe_findings as hints

    return assemble(facts, mode="audit", probes=results, probe_findings=hints.findings(results, facts))


def recheck(saved: Report) -> Report:
    """Today's rules on a saved report's facts; its probe results and probe findings are kept as measured."""
    kept = [f for f in saved.findings if f.source == "probe"]
    return assemble(
        saved.facts,
        mode="check",
        probes=saved.probes,
        probe_findings=kept,
        created=saved.created,
        complete=saved.complete,  # a saved "error" report stays one: its facts were never all collected
        host_info=saved.host,
    )


def exit_code(report: Report, *, strict: bool) -> Exit:
    if report.verdict == "error":
        return Exit.INTERNAL
    if report.verdict == "fail" or (strict and report.verdict == "warn"):
        return Exit.FINDINGS
    return Exit.OK
