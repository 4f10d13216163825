"""What every verb is, and the option groups several verbs share, each read once into a typed value.

A verb is a `Command`: its name and help, the arguments it adds to its parser, `options` (the one place its
`argparse.Namespace` is read, into a frozen dataclass of its own) and `run(options) -> exit code`. The command line
(envaudit/cli/) is a dict of them. A verb's module imports only what its parser needs; its work is imported inside
`run`, so that the audit's jax child starts before the rules and the judge load.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar, cast

from envaudit.commands import config, terminal
from envaudit.formats import FORMATS
from envaudit.model.exitcodes import JUDGING, Exit

Options = TypeVar("Options")
Color = Literal["auto", "always", "never"]
Precision = Literal["auto", "float32", "float64", "both"]
ListFormat = Literal["text", "json"]  # what the verbs that list or show (rules, probes, hook status) print


@dataclass(frozen=True)
class Command(Generic[Options]):
    """One verb of the command line."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    options: Callable[[argparse.Namespace], Options]  # the parsed arguments, read into the verb's own options
    run: Callable[[Options], int]
    description: str = ""
    examples: tuple[tuple[str, str], ...] = ()  # (a command line, what it does), shown by --help
    exits: tuple[Exit, ...] = JUDGING  # the codes it can exit with, their meanings model/exitcodes.py's
    exit_words: tuple[tuple[Exit, str], ...] = ()  # where a code means something of this verb's own (compare: drift)

    def __call__(self, parsed: argparse.Namespace) -> int:
        return self.run(self.options(parsed))


@dataclass(frozen=True)
class Output:
    """Where and how a report is written (--format is `Judging`'s, as [tool.envaudit] may set it)."""

    output: Path | None = None  # written there atomically instead of stdout
    color: Color = "auto"
    verbose: bool = False
    show_host: bool = False
    quiet: bool = False


@dataclass(frozen=True)
class Judging:
    """How a verb that judges counts findings: its format, strictness and ignored rules, the project's
    [tool.envaudit] under the command line's (envaudit/commands/config.py)."""

    format: str = "text"
    strict: bool = False
    ignore: tuple[tuple[str, str], ...] = ()  # (rule id, reason)
    keep: tuple[str, ...] = ()  # distributions the plan never moves (--keep), canonical names
    source: Path | None = None  # the pyproject.toml read, if any
    untrusted: str = ""  # the nearest one with [tool.envaudit], not read, and why

    @property
    def ignored(self) -> dict[str, str]:
        return dict(self.ignore)


@dataclass(frozen=True)
class Probing:
    """Which probes run, under which bounds, in which interpreter."""

    probe: tuple[str, ...] = ()
    skip_probe: tuple[str, ...] = ()
    timeout: float = 120.0  # per probe, and for the jax child
    total_timeout: float = 600.0
    precision: Precision = "auto"
    cache: bool = True
    device: tuple[int, ...] = ()
    python: str | None = None  # --python: the audited interpreter or environment, when not this one


def path_argument(text: str) -> Path:
    """A path the system can name (argparse's type for every file argument): no NUL, nothing the file system's
    encoding cannot write (a lone surrogate), said in one line before anything opens it."""
    return Path(path_text(text))


def path_text(text: str) -> str:
    """`path_argument`, kept as the text given (what the plan's readers take)."""
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{text!a} is not a path a file can have") from None
    if "\x00" in text:
        raise argparse.ArgumentTypeError(f"{text!a} holds a NUL byte, which no path can")
    return text


def add_format(p: argparse.ArgumentParser, choices: Sequence[str], *, help: str, default: str | None = None) -> None:
    """--format (-f), the one way every verb declares it."""
    p.add_argument("-f", "--format", choices=list(choices), default=default, help=help)


def add_output_file(p: argparse.ArgumentParser, what: str = "the report") -> None:
    """--output (-o), the one way every verb declares it: written atomically (files/safewrite.py, `written.deliver`)."""
    p.add_argument(
        "-o", "--output", type=path_argument, metavar="PATH", help=f"write {what} to PATH atomically instead of stdout"
    )


def add_list_format(p: argparse.ArgumentParser) -> None:
    add_format(p, ["text", "json"], default="text", help="text for a terminal, json for a program (default: text)")


def list_format(parsed: argparse.Namespace) -> ListFormat:
    return cast(ListFormat, parsed.format)


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no notes on stderr, errors only")


def add_output(p: argparse.ArgumentParser) -> None:
    add_format(p, sorted(FORMATS), help="output format (default: [tool.envaudit] format, else text)")
    add_output_file(p)
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
    add_quiet(p)
    add_judging(p)


def add_judging(p: argparse.ArgumentParser) -> None:
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
    add_keep(p)


def add_build(p: argparse.ArgumentParser, no_build: str, timeout: str, default: float = 240.0) -> None:
    """--no-build and --build-timeout: whether a verb builds the stack it judges here, and its bound."""
    p.add_argument("--no-build", action="store_true", help=no_build)
    p.add_argument("--build-timeout", type=seconds, default=default, metavar="SECONDS", help=timeout)


def add_keep(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--keep",
        action="append",
        type=distribution_argument,
        metavar="NAME",
        help="the plan never moves this distribution (repeatable); what only moving it would fix is left and said",
    )


def distribution_argument(text: str) -> str:
    """A distribution's name as the index spells it, canonical (argparse's type for --keep)."""
    if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,198}[A-Za-z0-9])?", text):
        raise argparse.ArgumentTypeError(f"{text!a} is not a distribution name")
    return re.sub(r"[-_.]+", "-", text).lower()  # PEP 503's normal form


def kept(parsed: argparse.Namespace) -> tuple[str, ...]:
    return tuple(dict.fromkeys(getattr(parsed, "keep", None) or ()))


def seconds(text: str) -> float:
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


def add_probing(p: argparse.ArgumentParser, timeout: float = 120.0, total: float = 600.0) -> None:
    p.add_argument("--probe", action="append", default=[], metavar="NAME", help="run only these probes")
    p.add_argument("--skip-probe", action="append", default=[], metavar="NAME", help="do not run this probe")
    p.add_argument("--timeout", type=seconds, default=timeout, help="seconds per probe and for the jax child")
    p.add_argument("--total-timeout", type=seconds, default=total, help="seconds for all probes together")
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


def output(parsed: argparse.Namespace) -> Output:
    return Output(
        output=parsed.output,
        color=cast(Color, parsed.color),
        verbose=parsed.verbose,
        show_host=parsed.show_host,
        quiet=parsed.quiet,
    )


def judging(parsed: argparse.Namespace, formats: tuple[str, ...] = tuple(FORMATS)) -> Judging:
    """The judging options of this run: the project's [tool.envaudit] (the nearest pyproject.toml that has one,
    from the working directory up), then the command line's --format, --strict and --ignore."""
    given = config.Given(
        format=getattr(parsed, "format", None), strict=parsed.strict, ignore=tuple(parsed.ignore or ())
    )
    settings = config.resolve(given, formats, Path.cwd())
    return Judging(
        format=settings.format or "text",
        strict=settings.strict,
        ignore=tuple(settings.ignore.items()),
        source=settings.source,
        untrusted=settings.untrusted,
        keep=kept(parsed),
    )


def probing(parsed: argparse.Namespace) -> Probing:
    return Probing(
        probe=tuple(parsed.probe),
        skip_probe=tuple(parsed.skip_probe),
        timeout=parsed.timeout,
        total_timeout=parsed.total_timeout,
        precision=cast(Precision, parsed.precision),
        cache=not parsed.no_cache,
        device=tuple(dict.fromkeys(parsed.device)),
        python=parsed.python,
    )
