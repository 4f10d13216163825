"""`envaudit health`: the full audit tuned for a node check, answering in one line of at most 80 characters.

node-problem-detector cuts a plugin's output at 80 characters, Slurm's HealthCheckProgram is killed after 60 s and
LBNL NHC's watchdog stops its checks after 30 s (TIMEOUT in its `nhc` driver), so the probes run under a total bound
inside the shortest of them, the line names the worst finding first, and the full JSON report and the Prometheus
textfile are written beside each other (atomically) for `check`, `compare` and node_exporter; the status file
(`--status-file`) holds the exit code, the time and the line for the readers that only read (node-problem-detector's
plugin, NHC's check_envaudit). The exit code is the contract's: 0 OK, 1 problem, 2 bad usage, 3 could not audit.

A run that does not complete (bad usage found after the arguments, an internal error, SIGTERM) says so where those
readers look: the status file gets its exit code, and the textfile the verdict `error`, with the last success
carried from the JSON report beside it, which such a run never replaces: that report is always the last audit
that completed, so its time is the last success (no number is read back from the textfile).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, cast

from envaudit import __version__
from envaudit.commands import options
from envaudit.commands.options import Command, Judging, Probing
from envaudit.files import cachedir, safewrite
from envaudit.formats import prometheus, render
from envaudit.model.exitcodes import BadInput, Exit, Terminated
from envaudit.model.facts import Facts, ReportError
from envaudit.model.report import Report, Settings

MAX_LINE = 80
PROM_NAME = "envaudit.prom"
REPORT_NAME = "envaudit-report.json"
DEFAULT_TIMEOUT_S = 15.0  # per probe, and for the jax child
# The whole command, from its process's start to its last write (commands/_shared.audited keeps FINISH_S of it for
# what follows the probes): inside NHC's 30 s watchdog and Slurm's 60 s. On a fresh TPU v5e host envaudit's own start
# takes 1.2 s and jax's 9-11 s, and conv_chain compiles for 9 s: within 20 s no numeric probe ran there, cold or warm
# (a compile cut short is never cached, so no run warmed the next); 25 s runs it and caches it.
# Measured end to end on a 2-core CPU (`python -m envaudit health`, at 20 s): 2.3 s healthy with a warm cache; 16.5 s
# when a probe hangs (the bound spent, the rest not run); 15.6 s when `import jax` hangs (the jax child's own bound
# is the per-probe one).
# 60 % of it (child/state.BUDGET_SHARE), and no more than jax's start on the platform leaves (child/state.budget),
# holds every default probe's declared cost on a CPU (6.5 s together) but ntk_nt's 25 s; on a fresh TPU host the
# TPU's cold costs fit in part (the rest are skips that say so), and the times a finished run measured, all.
DEFAULT_TOTAL_S = 25.0


def fit(text: str, width: int = MAX_LINE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def health_line(report: Report) -> str:
    """One line, worst first: what a node-problem-detector condition or a Slurm drain reason shows."""
    if report.verdict == "error":
        return fit("envaudit ERROR: the audit could not complete")
    # the board to pull first: a device that computes wrong numbers is the most precise finding a node check has
    fails = sorted(
        (f for f in report.findings if f.severity == "fail" and not f.caused_by and f.counts),
        key=lambda f: f.subject.kind != "device",
    )  # root causes: their consequences are not news
    if fails:
        more = f" (+{len(fails) - 1} more)" if len(fails) > 1 else ""
        head = f"envaudit FAIL{more} {fails[0].id}: "
        return fit(head + fails[0].title)
    warns = sum(f.severity == "warn" and not f.caused_by and f.counts for f in report.findings)
    passed = sum(p.status == "pass" for p in report.probes)
    return fit(f"envaudit OK: 0 fail, {warns} warn; {passed}/{len(report.probes)} probes pass")


def check_directory(prometheus_dir: Path | None) -> None:
    """Refuse a bad --prometheus-dir before minutes of probing, not after."""
    if prometheus_dir is not None and not prometheus_dir.is_dir():
        raise safewrite.OutputError(f"--prometheus-dir {prometheus_dir} is not a directory")


def check_status_file(status_file: Path | None) -> None:
    """Refuse a --status-file that cannot be one before probing: its directory must exist, and it is no directory."""
    if status_file is None:
        return
    if status_file.is_dir():
        raise safewrite.OutputError(f"--status-file {status_file} is a directory")
    if not status_file.parent.is_dir():
        raise safewrite.OutputError(f"--status-file {status_file}: directory {status_file.parent} does not exist")


def status_text(code: int, line: str, when: float) -> str:
    """The status file: line 1 "<exit code> <unix time>", line 2 the one line, without control characters, as
    scripts/k8s/envaudit-npd-plugin.sh and scripts/nhc/envaudit.nhc read it."""
    shown = "".join(" " if ord(ch) < 32 or ord(ch) == 127 else ch for ch in line)
    return f"{int(code)} {int(when)}\n{fit(shown)}\n"


def save(report: Report, prometheus_dir: Path | None, status_file: Path | None = None, code: int = 0) -> None:
    """The textfile metrics and the JSON report, beside each other, then the status file with the exit code `code`
    (OutputError naming each one that could not be written); without a directory, the report alone, in the cache,
    best-effort (an unwritable cache must not turn a node's verdict into "could not audit")."""
    failed = []
    if prometheus_dir is None:
        cachedir.write_text(REPORT_NAME, render(report, "json"))
    else:
        # The textfile first: it is what node_exporter serves, so a report that cannot be written must not leave
        # the last run's verdict scraped. Each file is tried whatever happened to the other; every failure is said.
        for name, fmt in ((PROM_NAME, "prometheus"), (REPORT_NAME, "json")):
            try:
                check_directory(prometheus_dir)
                safewrite.write(prometheus_dir / name, render(report, fmt))
            except safewrite.OutputError as exc:
                failed.append(str(exc))
    if status_file is not None:
        try:
            safewrite.write(status_file, status_text(code, health_line(report), time.time()))
        except safewrite.OutputError as exc:
            failed.append(str(exc))
    if failed:
        raise safewrite.OutputError("; ".join(dict.fromkeys(failed)))


def last_success(prometheus_dir: Path) -> float | None:
    """When the last audit that completed was made: the JSON report beside the textfile (only a completed run
    writes it), read bounded and validated; None when there is none that can be read."""
    from envaudit.files import reportfile  # a run that completes never reads it: the command line loads it late

    try:
        kept = reportfile.read_report(prometheus_dir / REPORT_NAME)
    except (ReportError, OSError):
        return None
    return kept.created_timestamp() if kept.complete and kept.created_timestamp() > 0 else None


def save_unfinished(
    prometheus_dir: Path | None, status_file: Path | None, code: int, why: str, duration_s: float, created: str
) -> None:
    """What a run that did not complete leaves, best-effort (its own error is what the caller says): the status
    file with `code` and why, and a textfile whose verdict is error and whose last success is the kept report's.
    The JSON report beside it is left as it is: the last audit that completed."""
    report = Report(Facts(), created=created, envaudit_version=__version__, complete=False, duration_s=duration_s)
    if prometheus_dir is not None:
        with contextlib.suppress(safewrite.OutputError):
            safewrite.write(prometheus_dir / PROM_NAME, prometheus.textfile(report, last_success(prometheus_dir)))
    if status_file is not None:
        with contextlib.suppress(safewrite.OutputError):
            safewrite.write(status_file, status_text(code, f"envaudit ERROR: {why}", time.time()))


HealthFormat = Literal["line", "json", "prometheus"]


@dataclass(frozen=True)
class HealthOptions:
    prometheus_dir: Path | None = None
    status_file: Path | None = None
    quiet: bool = False
    probing: Probing = field(default_factory=lambda: Probing(timeout=DEFAULT_TIMEOUT_S, total_timeout=DEFAULT_TOTAL_S))
    judging: Judging = field(default_factory=Judging)
    format: HealthFormat = "line"
    warm: bool = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prometheus-dir", type=options.path_argument, help="write envaudit.prom and envaudit-report.json there"
    )
    p.add_argument(
        "--status-file",
        type=options.path_argument,
        metavar="PATH",
        help="write PATH atomically after each run: '<exit code> <unix time>', then the one line "
        "(read by scripts/k8s/envaudit-npd-plugin.sh and scripts/nhc/envaudit.nhc)",
    )
    options.add_format(
        p,
        ["line", "json", "prometheus"],
        default="line",
        help="what stdout gets: the one line a node's readers parse (default), or the report (json, prometheus)",
    )
    p.add_argument(
        "--warm",
        action="store_true",
        help="run every probe to its end, outside the total bound, so that jax's compilation cache holds their "
        "programs and the next check runs them all (a node's boot, before its first check); writes no node state "
        "and exits 0 unless it could not audit",
    )
    options.add_judging(p)
    options.add_quiet(p)
    options.add_probing(p, timeout=DEFAULT_TIMEOUT_S, total=DEFAULT_TOTAL_S)


def parse(parsed: argparse.Namespace) -> HealthOptions:
    return HealthOptions(
        parsed.prometheus_dir,
        parsed.status_file,
        parsed.quiet,
        options.probing(parsed),
        options.judging(parsed),
        cast(HealthFormat, parsed.format),
        parsed.warm,
    )


def run(o: HealthOptions) -> int:
    """The audit, its line printed first, then the files; a run that does not complete says so in them too."""
    from envaudit.commands import _shared
    from envaudit.judge.assemble import exit_code, now_iso

    if o.warm:
        return warm(o)
    check_directory(o.prometheus_dir)
    check_status_file(o.status_file)
    started = time.monotonic()
    try:
        report = _shared.known_devices(
            _shared.audited(o.probing, o.quiet, o.judging, quick=False, budget=True), o.probing
        )
    except BaseException as exc:  # no verdict: said where the node's readers look, then as for any verb (cli)
        code = Exit.USAGE if isinstance(exc, BadInput) else Exit.INTERNAL
        save_unfinished(o.prometheus_dir, o.status_file, code, why(exc), time.monotonic() - started, now_iso())
        raise
    if o.judging.source is not None or o.judging.untrusted:
        report = replace(report, settings=Settings(file=str(o.judging.source or ""), ignored=o.judging.untrusted))
    # the verdict first, whatever happens to the files
    print(health_line(report) if o.format == "line" else render(report, o.format).rstrip("\n"), flush=True)
    code = exit_code(report, strict=o.judging.strict)
    try:
        save(report, o.prometheus_dir, o.status_file, code)
    except safewrite.OutputError as exc:  # a scheduler acts on the exit code: it must stay the verdict's
        print(f"envaudit: error: {exc} (the verdict above stands)", file=sys.stderr)
    return code


WARM_PROBE_S = 120.0  # each probe's bound when warming: a cold compile on a TPU host took 4.9 s, x64's 18.5 s
WARM_TOTAL_S = 900.0


def warm(o: HealthOptions) -> int:
    """`--warm`: the audit with every probe run to its end under bounds that hold a cold compile (no total bound
    that leaves probes out), so that jax's compilation cache holds their programs and files/probecosts.py their
    warm costs: the next check plans with those and runs every probe. Nothing a node's readers read is written (a
    warming run is no check), and the exit is 0 whatever the verdict, which the line still says."""
    from envaudit.commands import _shared

    if o.prometheus_dir is not None or o.status_file is not None:
        raise BadInput("--warm writes no node state: leave out --prometheus-dir and --status-file")
    started = time.monotonic()
    probing = replace(
        o.probing,
        timeout=max(o.probing.timeout, WARM_PROBE_S),
        total_timeout=max(o.probing.total_timeout, WARM_TOTAL_S),
    )
    report = _shared.audited(probing, o.quiet, o.judging, quick=False)
    ran = sum(p.status != "skip" for p in report.probes)
    said = f"envaudit warmed: {ran}/{len(report.probes)} probes ran to their end in {time.monotonic() - started:.1f} s"
    print(said if o.format == "line" else render(report, o.format).rstrip("\n"), flush=True)
    if o.format == "line":
        print(f"(its verdict, not a node's: {health_line(report)})", flush=True)
    return Exit.OK


def why(exc: BaseException) -> str:
    """Why a run did not complete, in the words the command line says it."""
    if isinstance(exc, BadInput):
        return str(exc)
    if isinstance(exc, Terminated):
        return "terminated (SIGTERM): the audit did not complete"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return f"internal error: {type(exc).__name__}: {exc}"


COMMAND = Command(
    "health",
    "node health check: the audit in one line of at most 80 characters",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit health", "the one line a node's checks read; the exit code is the verdict's"),
        ("envaudit health --prometheus-dir /var/lib/prometheus/node-exporter -q", "node_exporter's textfile too"),
        ("envaudit health --status-file /run/envaudit.status", "the exit code, the time and the line, for a checker"),
    ),
)
