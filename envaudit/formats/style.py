"""How a human format is laid out for where it goes: colour, the width to wrap to, and whether every detail is
shown. The CLI decides it (envaudit/commands/terminal.py: a terminal's width and colour, the full report in a file); a
format never looks at the terminal itself, and the machine formats (JSON, Prometheus) ignore it."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

MIN_WIDTH = 40  # narrower than this, a hanging indent leaves no room: wrap as if it were this wide
BLOCK_INDENT = " " * 4  # a row whose columns leave no room: its text under them, this far in


@dataclass(frozen=True)
class Style:
    color: bool = False  # ANSI colours for the severities
    width: int = 80  # the text format's lines are wrapped to it (commands and URLs are never broken)
    verbose: bool = True  # every detail and reference; False: the short view of a terminal (`-v` shows it all)
    # Markdown is for pasting in public: without it, no host name and no home or environment path
    show_host: bool = False


PLAIN = Style()  # a file, a pipe, a test: 80 columns, every detail, no colour


def hanging(text: str, width: int, lead: str = "", indent: str = "") -> list[str]:
    """`lead` then `text` wrapped to `width`, the next lines under `indent`: at whitespace only, so a URL, a path
    or a version is never split (a word longer than the line stands on its own)."""
    return textwrap.wrap(
        text,
        max(width, MIN_WIDTH),
        initial_indent=lead,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [lead.rstrip()]


def row(lead: str, text: str, width: int) -> list[str]:
    """A list's row: its columns (`lead`, padded) then its text wrapped under the text's column, where the columns
    leave the text half the width; else the columns alone on a line and the text under them (BLOCK_INDENT)."""
    if len(lead) <= max(width, MIN_WIDTH) // 2:
        return hanging(text, width, lead, " " * len(lead))
    return [lead.rstrip(), *hanging(text, width, BLOCK_INDENT, BLOCK_INDENT)]
