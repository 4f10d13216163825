"""The command-line grammar: verbs, options and their validation, with argparse's errors as one-line UsageError.

Kept apart from cli.py (which runs the verbs) so that the whole contract of docs/architecture.md reads in one place.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from envaudit import __version__
from envaudit.commands import config, health, plan, terminal
from envaudit.commands.verbs import SCHEMAS
from envaudit.formats import FORMATS
from envaudit.model.exitcodes import UsageError

# The names in triage's and compare's renderers (triage/reply.py, compare.py; tests/test_cli.py holds them equal),
# written here: importing those modules to read them would delay every audit's start by about 20 ms.
TRIAGE_FORMATS = ("text", "json", "markdown")
COMPARE_FORMATS = ("text", "json")
VERBS = ("audit", "check", "plan", "rules", "probes", "hook", "health", "compare", "triage", "fix", "schema")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format", choices=sorted(FORMATS), help="output format (default: [tool.envaudit] format, else text)"
    )
    p.add_argument("--output", type=Path, help="write the report to PATH atomically instead of stdout")
    p.add_argument(
        "--color",
        choices=terminal.COLOR_CHOICES,
        default="auto",
        help="colour the text report (auto: on a terminal, unless NO_COLOR or TERM=dumb; FORCE_COLOR forces it)",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="on a terminal, every finding's detail and references too"
    )
    p.add_argument(
        "--show-host",
        action="store_true",
        help="Markdown: keep the host name and the home and environment paths (left out for pasting in public)",
    )
    _quiet_option(p)
    _judging_options(p)


def _quiet_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no notes on stderr, errors only")


def _judging_options(p: argparse.ArgumentParser) -> None:
    """What every verb that judges takes, beside [tool.envaudit] in pyproject.toml (envaudit/commands/config.py)."""
    p.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        help="exit 1 on warn findings too (default: [tool.envaudit] strict, else off)",
    )
    p.add_argument(
        "--ignore",
        action="append",
        type=config.ignore_argument,
        metavar="RULE[:REASON]",
        help="show this rule's findings as ignored and count none of them (repeatable; `envaudit rules` lists ids)",
    )


def build_parser() -> _Parser:
    parser = _Parser(prog="envaudit", description="Does this JAX environment compute the right numbers?")
    parser.add_argument("--version", action="version", version=f"envaudit {__version__}")
    sub = parser.add_subparsers(dest="verb", parser_class=_Parser)
    p = sub.add_parser("audit", help="collect facts, evaluate rules, run probes (the default)")
    p.add_argument("--quick", action="store_true", help="no probes, no jax import: facts and rules only")
    _probe_options(p)
    _output_options(p)
    p = sub.add_parser("fix", help="apply the report's one plan with the environment's installer, then audit again")
    p.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    p.add_argument("--yes", action="store_true", help="apply it without asking")
    p.add_argument(
        "--snapshot", type=Path, help="where to keep the distributions as they were (default: ./envaudit-snapshot-*)"
    )
    p.add_argument("--restore", type=Path, metavar="SNAPSHOT", help="put a snapshot's distributions back instead")
    _probe_options(p)
    p = sub.add_parser("check", help="re-evaluate a saved JSON report with today's rules")
    p.add_argument("report", type=Path)
    _output_options(p)
    p = sub.add_parser(
        "plan",
        help="what-if before installing: pinned requirements, requirements files, pyproject.toml, uv.lock,"
        " pylock.toml or a pip report",
    )
    plan.add_arguments(p)
    _output_options(p)
    p = sub.add_parser("rules", help="list the rules, or show one")
    p.add_argument("id", nargs="?")
    p = sub.add_parser("probes", help="list the probes; NAME --script prints a standalone repro program")
    p.add_argument("name", nargs="?")
    p.add_argument("--script", action="store_true", help="print the probe as a program runnable with plain python")
    p = sub.add_parser("health", help="node health check: the audit in one line of at most 80 characters")
    p.add_argument("--prometheus-dir", type=Path, help="write envaudit.prom and envaudit-report.json there")
    p.add_argument(
        "--status-file",
        type=Path,
        metavar="PATH",
        help="write PATH atomically after each run: '<exit code> <unix time>', then the one line "
        "(read by scripts/k8s/envaudit-npd-plugin.sh and scripts/nhc/envaudit.nhc)",
    )
    _judging_options(p)
    _quiet_option(p)
    _probe_options(p, timeout=health.DEFAULT_TIMEOUT_S, total=health.DEFAULT_TOTAL_S)
    p = sub.add_parser("triage", help="the environment pasted in a bug report, judged (FILE, or - for stdin)")
    p.add_argument("source", metavar="FILE", help="a file with the pasted text, or - for standard input")
    p.add_argument("--format", choices=TRIAGE_FORMATS, default="text")
    p = sub.add_parser("compare", help="drift across nodes: versions, facts and probe answers")
    p.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="JSON reports, or directories of them")
    p.add_argument("--format", choices=COMPARE_FORMATS, default="text")
    p = sub.add_parser("hook", help="opt-in warning when jax is imported into a known-bad environment")
    p.add_argument("action", choices=["enable", "disable", "status"])
    p.add_argument("--user", action="store_true", help="enable in the user site-packages instead")
    p.add_argument("--python", metavar="PATH", help="status: of this interpreter's environment instead")
    p = sub.add_parser(
        "schema",
        help="print the JSON Schema (draft 2020-12) of a JSON document envaudit writes",
        description="Print the JSON Schema (draft 2020-12) of a JSON document envaudit writes, generated from the "
        "types that declare it: report (what --format json writes, and check reads) or triage (what "
        "triage --format json writes).",
    )
    p.add_argument("name", nargs="?", choices=SCHEMAS, default="report", help="the document (default: report)")
    return parser


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return value


def _device(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 6:
        raise argparse.ArgumentTypeError(f"expected a jax device id (0, 1, ...), not {text!r}")
    return int(text)


def _probe_options(p: argparse.ArgumentParser, timeout: float = 120.0, total: float = 600.0) -> None:
    p.add_argument("--probe", action="append", default=[], metavar="NAME", help="run only these probes")
    p.add_argument("--skip-probe", action="append", default=[], metavar="NAME", help="do not run this probe")
    p.add_argument("--timeout", type=_positive, default=timeout, help="seconds per probe and for the jax child")
    p.add_argument("--total-timeout", type=_positive, default=total, help="seconds for all probes together")
    p.add_argument(
        "--precision",
        choices=["auto", "float32", "float64", "both"],
        default="auto",
        help="probe precision (default: what the jax configuration gives)",
    )
    p.add_argument("--no-cache", action="store_true", help="do not use jax's persistent compilation cache")
    p.add_argument(
        "--device",
        action="append",
        type=_device,
        default=[],
        metavar="N",
        help="compare only these jax devices (repeatable; default: every local device)",
    )
    p.add_argument(
        "--python", metavar="PATH", help="audit this interpreter's environment (or a virtualenv / conda directory)"
    )
