"""The command-line grammar: one sub-parser per verb, each built by the verb itself, and argparse's errors as one
line (UsageError, exit 2) instead of its multi-line usage dump."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, NoReturn, Protocol

from envaudit import __version__
from envaudit.model.exitcodes import UsageError

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


def build_parser(verbs: Mapping[str, Verb]) -> argparse.ArgumentParser:
    parser = _Parser(prog="envaudit", description="Does this JAX environment compute the right numbers?")
    parser.add_argument("--version", action="version", version=f"envaudit {__version__}")
    sub = parser.add_subparsers(dest="verb", parser_class=_Parser)
    for verb in verbs.values():
        verb.add_arguments(sub.add_parser(verb.name, help=verb.help, description=verb.description or None))
    return parser
