"""The command line: the verbs by name (envaudit/commands/, one module or package each), and the exit.

`main(argv) -> int` is tested in-process; `main_entry` is what the console script and `python -m envaudit` run,
through `envaudit/__main__.py` (which answers a Ctrl-C while this module loads). Bad usage or bad input is one line
on stderr and exit 2 (argparse's multi-line usage dump is replaced by one line); an unexpected exception is one
line and exit 3, so a scheduler can tell "the node is bad" (1) from "the audit broke" (3).

Standard output that cannot be written is answered here too, the buffer flushed before the exit so that a failure
of the last write is seen (`--version > /dev/full` exited 0, its line lost). A reader that left (`envaudit schema |
head -c 10`: EPIPE) is no error of envaudit's to report: nothing is said (pip says one line, uv nothing), and the
exit is 3, the output not delivered: 0 would claim an answer nobody read, and 1, Python's documented choice and
pip's, is envaudit's "a fail finding", on which a Slurm wrapper drains the node. A full disk or quota (`> /dev/full`:
ENOSPC, EDQUOT, EFBIG) is one line on stderr and exit 2, as an --output file that cannot be written is. Either way
standard output is then pointed at /dev/null, so the interpreter's own flush at exit has nothing left to fail on.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence

from envaudit.cli.parser import Verb
from envaudit.cli.parser import build_parser as _build_parser
from envaudit.model.exitcodes import BadInput, Exit, Terminated

# The verbs by name, each the module that holds its `COMMAND`, in the order `envaudit --help` lists them. A verb's
# module is imported when the verb is used (`command`): `envaudit schema` loads schema's module and none of the
# others' (the planner, the probe child's runner, the rules' tables). What only a verb's work needs (the rules, the
# judge, compare's and triage's readers, a saved report, another interpreter) is imported inside its `run`, so a full
# audit starts its probe child sooner and loads them while the child imports jax: the verbs' modules hold their
# parsers and options, and little else. tests/test_layering.py reads these paths as the command line's imports.
COMMANDS: Mapping[str, str] = {
    "audit": "envaudit.commands.audit",
    "fix": "envaudit.commands.fix",
    "check": "envaudit.commands.check",
    "plan": "envaudit.commands.plan",
    "suggest": "envaudit.commands.suggest",
    "rules": "envaudit.commands.rules",
    "probes": "envaudit.commands.probes",
    "health": "envaudit.commands.health",
    "triage": "envaudit.commands.triage",
    "compare": "envaudit.commands.compare",
    "hook": "envaudit.commands.hook",
    "schema": "envaudit.commands.schema",
}
VERBS = tuple(COMMANDS)

__all__ = ["COMMANDS", "build_parser", "command", "main", "main_entry", "parser_for"]


def command(verb: str) -> Verb:
    """The verb named `verb` (a key of COMMANDS), its module imported on first use, with a Ctrl-C meanwhile noted
    and raised once it has loaded (`_noting`)."""
    with _noting():
        module = importlib.import_module(COMMANDS[verb])
    found: Verb = module.COMMAND
    return found


@contextlib.contextmanager
def _noting() -> Iterator[None]:
    """A Ctrl-C while a verb's modules load is noted and raised after: raised inside an import it can land where
    CPython ignores it (importlib's module-lock callback: "Exception ignored", and the command runs on) or wraps it
    (a class body's `__set_name__`: a RuntimeError, said as an internal error). Off the main thread, or where
    SIGINT is not Python's own handler (ignored, or the caller's), nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield
        return
    noted: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if noted:
        raise KeyboardInterrupt


@functools.cache
def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The grammar, built once (parsing does not change it): of every verb, or of `verb` alone, which is all a
    command line that names it parses (its own sub-parser, with the same prog, usage and errors)."""
    return _build_parser({name: command(name) for name in COMMANDS if verb in (None, name)})


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser `argv` needs: its verb's alone when it names one (the verb is its first word, `main` having put
    `audit` before options), else every verb's (--help lists them all; a mistyped verb is told their names)."""
    return build_parser(argv[0]) if argv and argv[0] in COMMANDS else build_parser()


def run(parsed: argparse.Namespace) -> int:
    return command(parsed.verb)(parsed)


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
        code = _answered(argv)
        sys.stdout.flush()  # the last write's failure is seen here, not by the interpreter's flush at exit
        return code
    except OSError as exc:
        return _unwritten(exc)


def _unwritten(exc: OSError) -> int:
    """An output that could not be written (the module's docstring says why each answer)."""
    if exc.errno not in (errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        print(f"envaudit: internal error: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
        return Exit.INTERNAL
    with contextlib.suppress(OSError, ValueError):  # nothing left for the exit's own flush to fail on
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    if exc.errno == errno.EPIPE:  # `envaudit rules | head`: the reader left; nothing more is said
        return Exit.INTERNAL
    print(f"envaudit: error: cannot write the output: {exc.strerror or one_line(exc)}", file=sys.stderr)
    return Exit.USAGE


def _answered(argv: list[str]) -> int:
    try:
        return run(parser_for(argv).parse_args(argv))
    except BadInput as exc:  # any module's bad input (UsageError, ReportError, PlanError, OutputError, ...)
        print(f"envaudit: error: {one_line(_scrubbed(exc))}", file=sys.stderr)
        return Exit.USAGE
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0)
    except OSError as exc:  # an output that could not be written, else the audit broke
        return _unwritten(exc)
    except KeyboardInterrupt:
        print("envaudit: interrupted", file=sys.stderr)
        return Exit.INTERNAL
    except Terminated:
        print("envaudit: terminated (SIGTERM): the audit did not complete", file=sys.stderr)
        return Exit.INTERNAL
    except Exception as exc:  # the audit itself broke: say so in one line, exit 3, never a traceback
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):  # a Ctrl-C inside a class's creation:
            print("envaudit: interrupted", file=sys.stderr)  # Python wraps it (RuntimeError from __set_name__)
            return Exit.INTERNAL
        print(f"envaudit: internal error: {type(exc).__name__}: {one_line(_scrubbed(exc))}", file=sys.stderr)
        return Exit.INTERNAL


def _scrubbed(said: object) -> str:
    """An error line that may quote input (`flax @ git+https://user:tok@host/x`, a file's `-r URL` line): URL
    credentials, queries and secrets hidden, as in a report (`redact.scrub_error`)."""
    from envaudit.model import redact

    return redact.scrub_error(str(said))


def one_line(said: object) -> str:
    """A message as one line a terminal shows as it is: what a file's key or value put in it (a newline, an escape
    sequence) written as Python writes it in a string, never acted on."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(said))


def main_entry() -> None:
    sys.exit(main())
