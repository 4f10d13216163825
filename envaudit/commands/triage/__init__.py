"""`envaudit triage FILE|-`: the environment pasted in a bug report, judged as the audit judges one (triaged.py),
and the reply written (reply.py)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from envaudit.commands.options import Command
from envaudit.model.exitcodes import Exit

# The names of reply.RENDERERS, written here: importing that module to read them would delay every audit's start
# (tests/cli/test_cli.py holds them equal)
FORMATS = ("text", "json", "markdown")


@dataclass(frozen=True)
class TriageOptions:
    source: str  # a file, or "-" for standard input
    format: str = "text"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="FILE", help="a file with the pasted text, or - for standard input")
    p.add_argument("--format", choices=FORMATS, default="text")


def parse(parsed: argparse.Namespace) -> TriageOptions:
    return TriageOptions(parsed.source, parsed.format)


def run(o: TriageOptions) -> int:
    from envaudit.commands.triage import reply
    from envaudit.commands.triage.extract import MAX_BYTES
    from envaudit.commands.triage.triaged import triage
    from envaudit.files import reportfile

    raw = (
        sys.stdin.buffer.read(MAX_BYTES + 1)
        if o.source == "-"
        else reportfile.read_bounded(Path(o.source), MAX_BYTES + 1, "a text file")
    )
    result = triage(raw)
    sys.stdout.write(reply.RENDERERS.render(result, o.format))
    return Exit.FINDINGS if result.verdict == "fail" else Exit.OK


COMMAND = Command(
    "triage", "the environment pasted in a bug report, judged (FILE, or - for stdin)", add_arguments, parse, run
)
