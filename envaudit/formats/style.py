"""How a human format is laid out for where it goes: colour, the width to wrap to, and whether every detail is
shown. The CLI decides it (envaudit/commands/terminal.py: a terminal's width and colour, the full report in a file); a
format never looks at the terminal itself, and the machine formats (JSON, Prometheus) ignore it."""

from __future__ import annotations

from dataclasses import dataclass

MIN_WIDTH = 40  # narrower than this, a hanging indent leaves no room: wrap as if it were this wide


@dataclass(frozen=True)
class Style:
    color: bool = False  # ANSI colours for the severities
    width: int = 80  # the text format's lines are wrapped to it (commands and URLs are never broken)
    verbose: bool = True  # every detail and reference; False: the short view of a terminal (`-v` shows it all)
    # Markdown is for pasting in public: without it, no host name and no home or environment path
    show_host: bool = False


PLAIN = Style()  # a file, a pipe, a test: 80 columns, every detail, no colour
