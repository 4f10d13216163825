"""The command line: the only module that writes to stdout, stderr or files and chooses the exit code.

`main(argv) -> int` is tested in-process; `main_entry` is the console script. Bad usage or bad input is one line
on stderr and exit 2 (argparse's multi-line usage dump is replaced by one line); an unexpected exception is one
line and exit 3, so a scheduler can tell "the node is bad" (1) from "the audit broke" (3).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from envaudit import __version__, audit, files, plan, probe_findings, probing, rules
from envaudit.exitcodes import Exit
from envaudit.formats import FORMATS, render
from envaudit.model import Facts, Finding, ProbeResult, Report, ReportError

VERBS = ("audit", "check", "plan", "rules", "probes", "hook")


class UsageError(Exception):
    """Bad usage: argparse's complaint, turned into one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=sorted(FORMATS), default="text", help="output format (default: text)")
    p.add_argument("--output", type=Path, help="write the report to PATH atomically instead of stdout")
    p.add_argument("--strict", action="store_true", help="exit 1 on warn findings too")


def build_parser() -> _Parser:
    parser = _Parser(prog="envaudit", description="Does this JAX environment compute the right numbers?")
    parser.add_argument("--version", action="version", version=f"envaudit {__version__}")
    sub = parser.add_subparsers(dest="verb", parser_class=_Parser)
    p = sub.add_parser("audit", help="collect facts, evaluate rules, run probes (the default)")
    p.add_argument("--quick", action="store_true", help="no probes, no jax import: facts and rules only")
    _probe_options(p)
    _output_options(p)
    p = sub.add_parser("check", help="re-evaluate a saved JSON report with today's rules")
    p.add_argument("report", type=Path)
    _output_options(p)
    p = sub.add_parser("plan", help="what-if: evaluate pinned requirements before installing")
    plan.add_arguments(p)
    _output_options(p)
    p = sub.add_parser("rules", help="list the rules, or show one")
    p.add_argument("id", nargs="?")
    p = sub.add_parser("probes", help="list the probes; NAME --script prints a standalone repro program")
    p.add_argument("name", nargs="?")
    p.add_argument("--script", action="store_true", help="print the probe as a program runnable with plain python")
    p = sub.add_parser("hook", help="opt-in warning when jax is imported into a known-bad environment")
    p.add_argument("action", choices=["enable", "disable", "status"])
    p.add_argument("--user", action="store_true", help="enable in the user site-packages instead")
    return parser


def _hook(action: str, user: bool) -> int:
    from envaudit import hook

    if action == "enable":
        print(f"envaudit hook enabled: {hook.enable(user)}")
    elif action == "disable":
        removed = hook.disable()
        print("envaudit hook disabled: " + (", ".join(map(str, removed)) if removed else "it was not enabled"))
    else:
        print("\n".join(hook.status()))
    return Exit.OK


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return value


def _probe_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--probe", action="append", default=[], metavar="NAME", help="run only these probes")
    p.add_argument("--skip-probe", action="append", default=[], metavar="NAME", help="do not run this probe")
    p.add_argument("--timeout", type=_positive, default=120.0, help="seconds per probe and for the jax child")
    p.add_argument("--total-timeout", type=_positive, default=600.0, help="seconds for all probes together")
    p.add_argument("--precision", choices=["auto", "float32", "float64", "both"], default="auto",
                   help="probe precision (default: what the jax configuration gives)")  # fmt: skip
    p.add_argument("--no-cache", action="store_true", help="do not use jax's persistent compilation cache")


def _probe_names(args: argparse.Namespace) -> list[str]:
    known = probing.available()
    for name in [*args.probe, *args.skip_probe]:
        if name not in known:
            raise UsageError(f"no probe {name!r}; `envaudit probes` lists them")
    return [n for n in (args.probe or list(known)) if n not in args.skip_probe]


def _probe_runner(args: argparse.Namespace) -> audit.ProbeRunner:
    names = _probe_names(args)
    passes = ("float32", "float64") if args.precision == "both" else (args.precision,)
    progress = (lambda line: print(f"envaudit: {line}", file=sys.stderr)) if sys.stderr.isatty() else None

    def runner(facts: Facts) -> tuple[list[ProbeResult], list[Finding]]:
        results: list[ProbeResult] = []
        for precision in passes:
            opts = probing.Options(tuple(names), precision, args.timeout, args.total_timeout, not args.no_cache)
            found = probing.run_probes(opts, progress)
            results += [replace(r, name=f"{r.name}[{precision}]") for r in found] if len(passes) > 1 else found
        return results, probe_findings.findings(results, facts)

    return runner


def _probes(name: str | None, script: bool) -> int:
    known = probing.available()
    if name is None:
        for probe, path in known.items():
            print(f"{probe:<18}{probing.summary(path)}")
        return Exit.OK
    if name not in known:
        raise UsageError(f"no probe {name!r}; `envaudit probes` lists them")
    print(known[name].read_text() if script else f"{name}: {probing.summary(known[name])}\n  file: {known[name]}")
    return Exit.OK


def _emit(report: Report, args: argparse.Namespace) -> int:
    color = args.output is None and files.use_color(sys.stdout)
    text = render(report, args.format, color=color)
    if args.output is not None:
        files.write_atomic(args.output, text)
        print(f"envaudit: {report.verdict}: report written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return audit.exit_code(report, strict=args.strict)


def _rules(rule_id: str | None) -> int:
    entries = rules.catalogue()
    if rule_id is None:
        width = max(len(e.id) for e in entries)
        for e in entries:
            print(f"{e.id.ljust(width)}  {e.severity:<4}  {e.kind:<5}  {e.title}")
        return Exit.OK
    match = [e for e in entries if e.id == rule_id]
    if not match:
        raise UsageError(f"no rule {rule_id!r}; `envaudit rules` lists them")
    e = match[0]
    print(f"{e.id} ({e.severity}, {e.kind})\n  {e.title}")
    if e.symptom:
        print(f"  symptom: {e.symptom}")
    print(f"  fix: {e.fix}")
    for ref in e.references:
        print(f"  see: {ref}")
    return Exit.OK


def run(args: argparse.Namespace) -> int:
    if args.verb == "rules":
        return _rules(args.id)
    if args.verb == "hook":
        return _hook(args.action, args.user)
    if args.verb == "probes":
        return _probes(args.name, args.script)
    if args.verb == "check":
        return _emit(audit.recheck(files.read_report(args.report)), args)
    if args.verb == "plan":
        return _emit(audit.assemble(plan.facts_from_args(args), mode="plan"), args)
    runner = None if args.quick else _probe_runner(args)
    return _emit(audit.run_audit(quick=args.quick, timeout=args.timeout, probe_runner=runner), args)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in VERBS and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "audit")
    try:
        return run(build_parser().parse_args(argv))
    except (UsageError, ReportError, plan.PlanError, files.OutputError) as exc:
        print(f"envaudit: error: {exc}", file=sys.stderr)
        return Exit.USAGE
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0)
    except KeyboardInterrupt:
        print("envaudit: interrupted", file=sys.stderr)
        return Exit.INTERNAL
    except Exception as exc:  # the audit itself broke: say so in one line, exit 3, never a traceback
        print(f"envaudit: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return Exit.INTERNAL


def main_entry() -> None:
    sys.exit(main())
