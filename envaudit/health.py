"""`envaudit health`: the full audit tuned for a node check, answering in one line of at most 80 characters.

node-problem-detector cuts a plugin's output at 80 characters and Slurm's HealthCheckProgram is killed after 60 s,
so the probes run under a total bound well inside that, the line names the worst finding first, and the full JSON
report and the Prometheus textfile are written beside each other (atomically) for `check`, `compare` and
node_exporter. The exit code is the contract's: 0 OK, 1 problem, 2 bad usage, 3 could not audit.
"""

from __future__ import annotations

from pathlib import Path

from envaudit import cachedir, safewrite
from envaudit.formats import render
from envaudit.model import Report

MAX_LINE = 80
PROM_NAME = "envaudit.prom"
REPORT_NAME = "envaudit-report.json"
DEFAULT_TIMEOUT_S = 15.0  # per probe, and for the jax child
DEFAULT_TOTAL_S = 35.0  # all probes: with the jax child and start-up, well under Slurm's 60 s


def fit(text: str, width: int = MAX_LINE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def health_line(report: Report) -> str:
    """One line, worst first: what a node-problem-detector condition or a Slurm drain reason shows."""
    if report.verdict == "error":
        return fit("envaudit ERROR: the audit could not complete")
    # the board to pull first: a device that computes wrong numbers is the most precise finding a node check has
    fails = sorted(
        (f for f in report.findings if f.severity == "fail" and not f.caused_by),
        key=lambda f: f.subject.kind != "device",
    )  # root causes: their consequences are not news
    if fails:
        more = f" (+{len(fails) - 1} more)" if len(fails) > 1 else ""
        head = f"envaudit FAIL{more} {fails[0].id}: "
        return fit(head + fails[0].title)
    warns = sum(f.severity == "warn" and not f.caused_by for f in report.findings)
    passed = sum(p.status == "pass" for p in report.probes)
    return fit(f"envaudit OK: 0 fail, {warns} warn; {passed}/{len(report.probes)} probes pass")


def check_directory(prometheus_dir: Path | None) -> None:
    """Refuse a bad --prometheus-dir before minutes of probing, not after."""
    if prometheus_dir is not None and not prometheus_dir.is_dir():
        raise safewrite.OutputError(f"--prometheus-dir {prometheus_dir} is not a directory")


def save(report: Report, prometheus_dir: Path | None) -> None:
    """The textfile metrics and the JSON report, beside each other (OutputError naming each one that could not be
    written); without a directory, the report alone, in the cache, best-effort (an unwritable cache must not turn a
    node's verdict into "could not audit")."""
    if prometheus_dir is None:
        cachedir.write_text(REPORT_NAME, render(report, "json"))
        return
    check_directory(prometheus_dir)
    # The textfile first: it is what node_exporter serves, so a report that cannot be written must not leave the
    # last run's verdict scraped. Each file is tried whatever happened to the other; every failure is said.
    failed = []
    for name, fmt in ((PROM_NAME, "prometheus"), (REPORT_NAME, "json")):
        try:
            safewrite.write(prometheus_dir / name, render(report, fmt))
        except safewrite.OutputError as exc:
            failed.append(str(exc))
    if failed:
        raise safewrite.OutputError("; ".join(failed))
