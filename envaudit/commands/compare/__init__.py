"""`envaudit compare REPORT...`: drift across the nodes of a fleet, from their saved JSON reports (drift.py)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from envaudit.commands import options
from envaudit.commands.options import Command
from envaudit.model.exitcodes import Exit

# The names of drift.RENDERERS, written here: importing that module to read them would delay every audit's start
# (tests/cli/test_cli.py holds them equal)
FORMATS = ("text", "json")


@dataclass(frozen=True)
class CompareOptions:
    reports: tuple[Path, ...]
    format: str = "text"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "reports", nargs="+", type=options.path_argument, metavar="REPORT", help="JSON reports, or directories of them"
    )
    options.add_format(p, FORMATS, default="text", help="text for a terminal, json for a program (default: text)")


def parse(parsed: argparse.Namespace) -> CompareOptions:
    return CompareOptions(tuple(parsed.reports), parsed.format)


def run(o: CompareOptions) -> int:
    from envaudit.commands.compare import drift

    loaded = drift.load(list(o.reports))
    result = replace(drift.compare(loaded.reports), duplicates=loaded.duplicates, skipped=loaded.skipped)
    sys.stdout.write(drift.RENDERERS.render(result, o.format))
    return Exit.FINDINGS if result.drift else Exit.OK


COMMAND = Command(
    "compare",
    "drift across nodes: versions, facts and probe answers",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit compare node01.json node02.json", "two nodes' saved reports, side by side"),
        ("envaudit compare reports/ -f json", "every report in a directory, the drift as JSON"),
    ),
    exit_words=((Exit.OK, "no drift: the nodes agree"), (Exit.FINDINGS, "drift: the nodes differ")),
)
