"""`envaudit triage FILE|-`: the environment pasted in a bug report, judged as the audit judges one (triaged.py),
and the reply written (reply.py)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from envaudit.commands import options
from envaudit.commands.options import Command
from envaudit.model.exitcodes import Exit, UsageError

# The names of reply.RENDERERS, written here: importing that module to read them would delay every audit's start
# (tests/cli/test_cli.py holds them equal)
FORMATS = ("text", "json", "markdown")


@dataclass(frozen=True)
class TriageOptions:
    source: str  # a file, or "-" for standard input
    format: str = "text"
    output: Path | None = None  # the reply written there atomically instead of stdout
    quiet: bool = False
    no_build: bool = False  # judge the text alone: build none of the stacks it states
    build_timeout: float = 240.0  # seconds for building and measuring them, together


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="FILE", help="a file with the pasted text, or - for standard input")
    options.add_format(
        p, FORMATS, default="text", help="text for a terminal, markdown to paste in the thread, json for a program"
    )
    options.add_output_file(p, "the reply")
    options.add_quiet(p)
    options.add_build(
        p,
        "judge the text alone: do not build the stacks it states (by default, where uv is here, the stack an"
        " environment states with jax's version is built in a throwaway environment, its CPU twin, and its imports"
        " and smoke calls measured: the reply says whether that reproduces the report; ENVAUDIT_NO_BUILD=1 does the"
        " same)",
        "seconds for building and measuring the stacks the text states, together (default: 240)",
    )


def parse(parsed: argparse.Namespace) -> TriageOptions:
    return TriageOptions(
        parsed.source, parsed.format, parsed.output, parsed.quiet, parsed.no_build, parsed.build_timeout
    )


def _same_file(source: str, output: Path | None) -> bool:
    """Whether --output names the pasted text's own file: the reply would replace what it answers."""
    if output is None or source == "-":
        return False
    try:
        return os.path.samefile(source, output)
    except OSError:  # either is not there (yet): not the same file
        return False


def run(o: TriageOptions) -> int:
    from envaudit.commands import written
    from envaudit.commands.triage import reply
    from envaudit.commands.triage.extract import MAX_BYTES
    from envaudit.commands.triage.triaged import Building, triage
    from envaudit.files import reportfile

    if _same_file(o.source, o.output):
        raise UsageError(f"--output {o.output} is the file triaged: the reply would replace it; name another file")
    raw = (
        sys.stdin.buffer.read(MAX_BYTES + 1)
        if o.source == "-"
        else reportfile.read_bounded(Path(o.source), MAX_BYTES + 1, "a text file")
    )
    say = (
        (lambda _: None) if o.quiet else (lambda text: print(f"envaudit: triage: {text}", file=sys.stderr, flush=True))
    )
    result = triage(raw, Building(o.no_build, o.build_timeout, say))
    written.deliver(
        reply.RENDERERS.render(result, o.format), o.output, quiet=o.quiet, verdict=result.verdict, what="reply"
    )
    return Exit.FINDINGS if result.verdict == "fail" else Exit.OK


COMMAND = Command(
    "triage",
    "the environment pasted in a bug report, judged (FILE, or - for stdin)",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit triage issue.txt", "the versions and errors a bug report states, judged"),
        (
            "pbpaste | envaudit triage - -f markdown -o reply.md",
            "the clipboard's text, the reply as Markdown in a file",
        ),
    ),
    exit_words=((Exit.OK, "no fail finding in any environment the text states"),),
)
