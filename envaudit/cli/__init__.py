"""The command line: the verbs by name (envaudit/commands/, one module or package each), and the exit.

`main(argv) -> int` is tested in-process; `main_entry` is what the console script and `python -m envaudit` run,
through `envaudit/__main__.py` (which answers a Ctrl-C while this module loads). Bad usage or bad input is one line
on stderr and exit 2 (argparse's multi-line usage dump is replaced by one line); an unexpected exception is one
line and exit 3, so a scheduler can tell "the node is bad" (1) from "the audit broke" (3).
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence

from envaudit.cli.parser import Verb
from envaudit.cli.parser import build_parser as _build_parser
from envaudit.commands import audit, check, compare, fix, health, hook, plan, probes, rules, schema, triage
from envaudit.model.exitcodes import BadInput, Exit, Terminated

# What only a verb's work needs (the rules, the judge, compare's and triage's readers, a saved report, another
# interpreter) is imported inside its `run`, so a full audit starts its probe child sooner and loads them while the
# child imports jax: the verbs' modules hold their parsers and options, and little else.
COMMANDS: Mapping[str, Verb] = {
    c.name: c
    for c in (
        audit.COMMAND,
        fix.COMMAND,
        check.COMMAND,
        plan.COMMAND,
        rules.COMMAND,
        probes.COMMAND,
        health.COMMAND,
        triage.COMMAND,
        compare.COMMAND,
        hook.COMMAND,
        schema.COMMAND,
    )
}
VERBS = tuple(COMMANDS)

__all__ = ["COMMANDS", "build_parser", "main", "main_entry"]


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The grammar of every verb, built once (parsing does not change it)."""
    return _build_parser(COMMANDS)


def run(parsed: argparse.Namespace) -> int:
    return COMMANDS[parsed.verb](parsed)


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
        print(f"envaudit: error: {one_line(exc)}", file=sys.stderr)
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
        print(f"envaudit: internal error: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
        return Exit.INTERNAL


def one_line(said: object) -> str:
    """A message as one line a terminal shows as it is: what a file's key or value put in it (a newline, an escape
    sequence) written as Python writes it in a string, never acted on."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(said))


def main_entry() -> None:
    sys.exit(main())
