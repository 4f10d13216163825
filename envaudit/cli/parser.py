"""The command-line grammar: one sub-parser per verb, each built by the verb itself, and argparse's errors as one
line (UsageError, exit 2) instead of its multi-line usage dump.

Every `--help` ends with examples (the verb's own, each a command line its parser takes: tests/cli/test_help.py)
and the exit codes it can return, rendered from model/exitcodes.py (the one source), wrapped here to argparse's own
width (RawDescriptionHelpFormatter keeps the lines as made).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NoReturn, Protocol

from envaudit import __version__
from envaudit.model.exitcodes import Exit, UsageError, meaning

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


class Verb(Protocol):
    """What the parser needs of a verb (envaudit/commands/options.Command)."""

    @property
    def name(self) -> str: ...
    @property
    def help(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def examples(self) -> Sequence[tuple[str, str]]: ...
    @property
    def exits(self) -> Sequence[Exit]: ...
    @property
    def exit_words(self) -> Sequence[tuple[Exit, str]]: ...
    def add_arguments(self, p: argparse.ArgumentParser) -> None: ...
    def __call__(self, parsed: argparse.Namespace) -> int: ...


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        """As argparse's, without its silence on an OSError (`--version > /dev/full` exited 0, its line lost):
        the command line answers a write that failed (cli.main)."""
        if message:
            (file or sys.stderr).write(message)


# What `envaudit --help` shows first: the three things most people come for
EXAMPLES = (
    ("envaudit", "audit this environment: its facts, the rules, and probes of the numbers jax computes"),
    ("envaudit plan -r requirements.txt", "what a requirements file would install, judged before installing it"),
    ("envaudit triage issue.txt", "the environment pasted in a bug report, judged"),
)


def _width() -> int:
    """argparse's own width for its help (HelpFormatter: the terminal's columns less 2)."""
    return max(shutil.get_terminal_size().columns - 2, 40)


def epilog(examples: Sequence[tuple[str, str]], codes: Sequence[Exit], said: Mapping[Exit, str]) -> str:
    """The examples, each command on its own line (never wrapped: it is to be pasted) with what it does under it,
    then each exit code with its meaning (`exitcodes.meaning`)."""
    width, lines = _width(), ["examples:"] if examples else []
    for command, what in examples:
        lines.append(f"  {command}")
        lines += textwrap.wrap(what, width, initial_indent=" " * 6, subsequent_indent=" " * 6)
    lines += ["", "exit codes:"] if examples else ["exit codes:"]
    for code in codes:
        lead = f"  {int(code):<3} "
        lines += textwrap.wrap(meaning(code, said), width, initial_indent=lead, subsequent_indent=" " * len(lead))
    return "\n".join(lines)


def _described(text: str) -> str:
    """A verb's description (else its one-line help) as a sentence, wrapped."""
    return "\n".join(textwrap.wrap(text[:1].upper() + text[1:], _width()))


def build_parser(verbs: Mapping[str, Verb]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="envaudit",
        description=_described(
            "Does this JAX environment compute the right numbers? `envaudit VERB --help` shows a verb's options,"
            " examples and exit codes."
        ),
        epilog=epilog(EXAMPLES, list(Exit), {}),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"envaudit {__version__}")
    sub = parser.add_subparsers(dest="verb", parser_class=_Parser)
    for verb in verbs.values():
        verb.add_arguments(
            sub.add_parser(
                verb.name,
                help=verb.help,
                description=_described(verb.description or verb.help),
                epilog=epilog(verb.examples, verb.exits, dict(verb.exit_words)),
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
        )
    return parser
