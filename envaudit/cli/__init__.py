"""The command line: it prints, writes reports and chooses the exit code (the other writers are health.save, repair,
hook.enable and envaudit's cache, each doing what its verb promises).

`main(argv) -> int` is tested in-process; `main_entry` is what the console script and `python -m envaudit` run,
through `envaudit/__main__.py` (which answers a Ctrl-C while this module loads). Bad usage or bad input is one line
on stderr and exit 2 (argparse's multi-line usage dump is replaced by one line); an unexpected exception is one
line and exit 3, so a scheduler can tell "the node is bad" (1) from "the audit broke" (3).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from envaudit.child import state
from envaudit.child.state import Options
from envaudit.cli.parser import VERBS, build_parser
from envaudit.commands import audit, config, terminal, verbs
from envaudit.files import probefiles, safewrite
from envaudit.model.exitcodes import BadInput, Exit, UsageError

if TYPE_CHECKING:
    from envaudit.model.report import Report

# What only another verb needs (compare, triage, a saved report, another interpreter) is imported where used, and
# the rules load on first use (envaudit/rules/__init__.py), so a full audit starts its probe child sooner and loads
# them while the child imports jax. The parser needs the formats' names, health's bounds and plan's arguments, so
# those modules load with it.

__all__ = ["build_parser", "main", "main_entry"]


def _probe_options(args: argparse.Namespace, line: terminal.Line | None = None) -> Options:
    known = probefiles.available()
    if args.total_timeout < state.JAX_START_S:  # every child starts jax first: a hang could not be told from it
        raise UsageError(
            f"--total-timeout {args.total_timeout:g} is less than jax's start ({state.JAX_START_S:g} s declared)"
        )
    for name in [*args.probe, *args.skip_probe]:
        if name not in known:
            raise UsageError(f"no probe {name!r}; `envaudit probes` lists them")
    names = tuple(dict.fromkeys(n for n in (args.probe or list(known)) if n not in args.skip_probe))
    # health keeps to its bound by running what fits (probes named with --probe always run: the user chose them)
    budget = args.verb == "health" and not args.probe
    opts = Options(
        names,
        args.precision,
        args.timeout,
        args.total_timeout,
        not args.no_cache,
        progress=line if line is not None and line.shown else None,
        devices=tuple(dict.fromkeys(args.device)),
        budget=budget,
    )
    if opts.budget and names and not state.plan(opts)[0]:
        raise UsageError(f"--total-timeout {args.total_timeout:g} holds none of the probes' declared costs")
    return opts


def _emit(report: Report, args: argparse.Namespace) -> int:
    from envaudit.formats import render

    text = render(report, args.format, style=terminal.style(args, sys.stdout, os.environ))
    if args.output is not None:
        safewrite.write(args.output, text)
        if not args.quiet:
            print(f"envaudit: {report.verdict}: report written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return audit.exit_code(report, strict=args.strict)


JUDGING = ("audit", "check", "plan", "health")  # the verbs that give a verdict: [tool.envaudit] applies to them


def _settle(args: argparse.Namespace) -> None:
    """A judging verb's --format, --strict and --ignore, with the project's [tool.envaudit] under them."""
    from envaudit.formats import FORMATS

    settings = config.resolve(args, tuple(FORMATS), Path.cwd())
    args.format, args.strict, args.ignore = settings.format or "text", settings.strict, settings.ignore


def run(args: argparse.Namespace) -> int:
    if args.verb in JUDGING:
        _settle(args)
    if args.verb == "rules":
        return verbs.rules(args.id)
    if args.verb == "schema":
        return verbs.schema(args.name)
    if args.verb == "compare":
        from envaudit.commands import compare

        loaded = compare.load(args.reports)
        result = replace(compare.compare(loaded.reports), duplicates=loaded.duplicates, skipped=loaded.skipped)
        sys.stdout.write(compare.RENDERERS.render(result, args.format))
        return Exit.FINDINGS if result.drift else Exit.OK
    if args.verb == "health":
        return _health(args)
    if args.verb == "hook":
        return verbs.hook(args.action, args.user, args.python)
    if args.verb == "probes":
        return verbs.probes(args.name, args.script)
    if args.verb == "check":
        from envaudit.files import reportfile

        saved = reportfile.read_report(args.report)
        if not saved.complete:  # exit 3 (the audit could not complete) needs its one line too
            print(f"envaudit: {args.report}: the saved audit did not complete (verdict error)", file=sys.stderr)
        return _emit(audit.recheck(saved, args.ignore), args)
    if args.verb == "triage":
        return _triage(args.source, args.format)
    if args.verb == "fix":
        from envaudit.commands import fix as repair

        if args.restore is not None:
            return repair.restore(args.restore, timeout=args.timeout, say=lambda line: print(line, flush=True))
        probes, python, timeout = _one_bound(args)
        assert probes is not None  # fix always probes: the audit after it must see what the one before saw
        return repair.run(
            python=python,
            probes=probes,
            timeout=timeout,
            dry_run=args.dry_run,
            yes=args.yes,
            snapshot=args.snapshot,
            say=lambda line: print(line, flush=True),
            ask=_confirm if sys.stdin.isatty() else None,
        )
    if args.verb == "plan":
        from envaudit.commands import plan

        if args.each:
            return _plans(args)
        planned = plan.planned(args)
        return _emit(audit.assemble(planned.facts, mode="plan", ignore=args.ignore, target=planned.target), args)
    return _emit(_known_devices(_audited(args, quick=args.quick), args), args)


def _plans(args: argparse.Namespace) -> int:
    """plan --each: each file's report under a line naming it; a file that cannot be planned is its one line on
    stderr (exit 2), and the files after it are still planned. The exit code is the worst plan's."""
    from envaudit.commands import plan
    from envaudit.formats.summary import clean

    code: int = Exit.OK
    for number, (name, one) in enumerate(plan.separately(args)):
        gap = "\n" if number else ""
        sys.stdout.write(f"{gap}plan of {clean(name)}:\n\n")  # a file name can hold a terminal's escapes
        sys.stdout.flush()  # before an error line on stderr, which pre-commit shows in the same stream
        try:
            planned = plan.planned(one)
        except plan.PlanError as exc:
            print(f"envaudit: error: {exc}", file=sys.stderr, flush=True)
            code = max(code, Exit.USAGE)
            continue
        report = audit.assemble(planned.facts, mode="plan", ignore=args.ignore, target=planned.target)
        code = max(code, _emit(report, one))
        sys.stdout.flush()
    return code


def _health(args: argparse.Namespace) -> int:
    from envaudit.commands import health

    health.check_directory(args.prometheus_dir)
    health.check_status_file(args.status_file)
    started = time.monotonic()
    try:
        report = _known_devices(_audited(args, quick=False), args)
    except BaseException as exc:  # no verdict: said where the node's readers look, then as for any verb (_main)
        code = Exit.USAGE if isinstance(exc, BadInput) else Exit.INTERNAL
        took = time.monotonic() - started
        health.save_unfinished(args.prometheus_dir, args.status_file, code, _why(exc), took, audit.now_iso())
        raise
    print(health.health_line(report), flush=True)  # the verdict first, whatever happens to the files
    code = audit.exit_code(report, strict=args.strict)
    try:
        health.save(report, args.prometheus_dir, args.status_file, code)
    except safewrite.OutputError as exc:  # a scheduler acts on the exit code: it must stay the verdict's
        print(f"envaudit: error: {exc} (the verdict above stands)", file=sys.stderr)
    return code


def _why(exc: BaseException) -> str:
    """Why a run did not complete, in the words _main says it."""
    if isinstance(exc, BadInput):
        return str(exc)
    if isinstance(exc, Terminated):
        return "terminated (SIGTERM): the audit did not complete"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return f"internal error: {type(exc).__name__}: {exc}"


def _audited(args: argparse.Namespace, *, quick: bool) -> Report:
    """The audit, its progress on a terminal's stderr from the first second (-q: none), the line erased after."""
    line = terminal.Line(sys.stderr, os.environ, shown=not args.quiet)
    try:
        line.say("collecting facts")
        probes, python, timeout = _one_bound(args, line)
        return audit.run_audit(quick=quick, timeout=timeout, probes=probes, python=python, ignore=args.ignore)
    finally:
        line.clear()


def _confirm(question: str) -> bool:
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _one_bound(args: argparse.Namespace, line: terminal.Line | None = None) -> tuple[Options | None, str | None, float]:
    """The probes' options (None with --quick), the audited interpreter and the bound of each stage, under one
    total bound: the time --python's interpreter takes to answer is spent from --total-timeout, and no stage waits
    longer than what is left of it."""
    started = time.monotonic()
    probes = None if getattr(args, "quick", False) else _probe_options(args, line)
    python = _interpreter(args, min(args.timeout, args.total_timeout))
    left = max(args.total_timeout - (time.monotonic() - started), 0.0)
    return (None if probes is None else replace(probes, total=left)), python, min(args.timeout, left)


def _triage(source: str, fmt: str) -> int:
    from envaudit.commands.triage import reply, triage
    from envaudit.commands.triage.extract import MAX_BYTES
    from envaudit.files import reportfile

    raw = (
        sys.stdin.buffer.read(MAX_BYTES + 1)
        if source == "-"
        else reportfile.read_bounded(Path(source), MAX_BYTES + 1, "a text file")
    )
    result = triage(raw)
    sys.stdout.write(reply.RENDERERS.render(result, fmt))
    return Exit.FINDINGS if result.verdict == "fail" else Exit.OK


def _interpreter(args: argparse.Namespace, timeout: float) -> str | None:
    """--python's interpreter, checked before minutes of probing: it must answer as a Python does, in time."""
    if args.python is None:
        return None
    from envaudit.collect import outside

    python = outside.resolve(args.python)
    outside.describe(python, timeout)
    return python


def _known_devices(report: Report, args: argparse.Namespace) -> Report:
    """--device names jax devices, which only the audited jax can list: one it does not have is bad usage."""
    present = [d.get("id") for d in report.facts.jax.get("devices") or [] if isinstance(d, dict)]
    missing = [n for n in getattr(args, "device", []) if n not in present]
    if missing and present:
        shown = ", ".join(map(str, present))
        raise UsageError(f"no jax device {', '.join(map(str, missing))} here (--device; the devices: {shown})")
    return report


class Terminated(BaseException):
    """SIGTERM (Slurm and Kubernetes stop a check so): unwinds like Ctrl-C, so the runner kills its child."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in VERBS and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "audit")
    main_thread = threading.current_thread() is threading.main_thread()  # signal handlers are the main thread's
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        return _main(argv)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str]) -> int:
    try:
        return run(build_parser().parse_args(argv))
    except BadInput as exc:  # any module's bad input (UsageError, ReportError, PlanError, OutputError, ...)
        print(f"envaudit: error: {exc}", file=sys.stderr)
        return Exit.USAGE
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0)
    except BrokenPipeError:  # `envaudit rules | head`: the reader left; say nothing more, on a stdout that is gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.INTERNAL
    except KeyboardInterrupt:
        print("envaudit: interrupted", file=sys.stderr)
        return Exit.INTERNAL
    except Terminated:
        print("envaudit: terminated (SIGTERM): the audit did not complete", file=sys.stderr)
        return Exit.INTERNAL
    except Exception as exc:  # the audit itself broke: say so in one line, exit 3, never a traceback
        print(f"envaudit: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return Exit.INTERNAL


def main_entry() -> None:
    sys.exit(main())
