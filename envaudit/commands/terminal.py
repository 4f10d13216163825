"""Where the command line meets a terminal: colour, the width to wrap to, the short view, and the progress line.

Colour (`--color auto|always|never`): `always` and `never` are what they say; `auto` colours a terminal unless
NO_COLOR is set and not empty (https://no-color.org) or TERM is `dumb`, and colours anything when FORCE_COLOR is set
and not empty (https://force-color.org, which lets FORCE_COLOR win over NO_COLOR). The width is the terminal's
(`shutil.get_terminal_size`: COLUMNS, else the terminal's own) when stdout is one, 80 otherwise; a terminal gets the
short view (each finding's title and fix) unless `-v`, a file or a pipe the whole report.

Progress goes to stderr from the first second, only when stderr is a terminal and `-q` is not given: one line,
rewritten in place ("collecting facts", "importing jax in PYTHON", "probe 3/9: ntk"), cleared before the report is
printed; on a `dumb` terminal, which cannot erase a line, one line per step.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import TextIO

from envaudit.child.state import Progress
from envaudit.formats.style import Style

COLOR_CHOICES = ("auto", "always", "never")
NOT_A_TERMINAL = 80  # columns for a file or a pipe
ERASE = "\r\033[K"  # back to the line's start, erase it (ECMA-48 EL)


def _tty(stream: TextIO) -> bool:
    return hasattr(stream, "isatty") and stream.isatty()


def color(mode: str, stream: TextIO, environ: Mapping[str, str]) -> bool:
    if mode != "auto":
        return mode == "always"
    if environ.get("FORCE_COLOR"):
        return True
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    return _tty(stream)


def style(
    stream: TextIO,
    environ: Mapping[str, str],
    *,
    to_file: bool = False,
    mode: str = "auto",
    verbose: bool = False,
    show_host: bool = False,
) -> Style:
    """The text format's style for this run's output: a file written with --output is a file, whatever stdout is."""
    tty = _tty(stream) and not to_file
    shown = width(stream) if tty else NOT_A_TERMINAL
    return Style(color("never" if to_file else mode, stream, environ), shown, verbose or not tty, show_host=show_host)


def width(stream: TextIO) -> int:
    """The columns to wrap what is written to `stream` to: a terminal's, else NOT_A_TERMINAL."""
    return shutil.get_terminal_size((NOT_A_TERMINAL, 24)).columns if _tty(stream) else NOT_A_TERMINAL


def describe(event: Progress) -> str:
    """A progress event in words."""
    if event.stage == "jax":
        return f"importing jax in {event.python}"
    step = f"probe {event.index}/{event.total}: {event.label}"
    return step if event.stage == "start" else f"{step} {event.status} ({event.seconds:.1f} s)"


class Line:
    """The progress line on a terminal's stderr; silent (every method does nothing) when `shown` is false."""

    def __init__(self, stream: TextIO, environ: Mapping[str, str], *, shown: bool) -> None:
        self.stream, self.shown = stream, shown and _tty(stream)
        self.in_place = environ.get("TERM") != "dumb"
        self.dirty = False

    def say(self, text: str) -> None:
        if not self.shown:
            return
        width = shutil.get_terminal_size((NOT_A_TERMINAL, 24)).columns - 1  # a full line would wrap the cursor
        line = f"envaudit: {text}"[: max(width, 20)]
        self.stream.write(f"{ERASE}{line}" if self.in_place else f"{line}\n")
        self.stream.flush()
        self.dirty = self.in_place

    def __call__(self, event: Progress) -> None:
        self.say(describe(event))

    def clear(self) -> None:
        """Erase the line, so that what comes next (the report, an error) starts on a clean one."""
        if self.dirty:
            self.stream.write(ERASE)
            self.stream.flush()
            self.dirty = False
