"""`envaudit check REPORT.json`: a saved report's facts and probe measurements judged again with today's rules."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from envaudit.commands import options
from envaudit.commands.options import Command, Judging, Output


@dataclass(frozen=True)
class CheckOptions:
    report: Path
    output: Output = field(default_factory=Output)
    judging: Judging = field(default_factory=Judging)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", type=options.path_argument, help="a JSON report envaudit wrote (-f json)")
    options.add_output(p)


def parse(parsed: argparse.Namespace) -> CheckOptions:
    return CheckOptions(parsed.report, options.output(parsed), options.judging(parsed))


def run(o: CheckOptions) -> int:
    from envaudit.commands._shared import emit
    from envaudit.files import reportfile
    from envaudit.judge.assemble import recheck

    saved = reportfile.read_report(o.report)
    if not saved.complete:  # exit 3 (the audit could not complete) needs its one line too
        print(f"envaudit: {o.report}: the saved audit did not complete (verdict error)", file=sys.stderr)
    return emit(recheck(saved, o.judging.ignored, o.judging.keep), o.output, o.judging)


COMMAND = Command(
    "check",
    "re-evaluate a saved JSON report with today's rules",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit check report.json", "a saved report (`envaudit -f json -o report.json`) judged again"),
        ("envaudit check report.json -f markdown -o report.md", "the same, as Markdown to paste in an issue"),
        ("envaudit check report.json --strict", "exit 1 on a warning too"),
    ),
)
