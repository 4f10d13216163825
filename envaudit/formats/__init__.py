"""Report renderers: each format is a pure function `Report -> str` and never writes (the CLI does).

One place to add a format: a module with `render(report, *, color=False) -> str` and an entry in FORMATS.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TextIO

from envaudit.formats import json_format, markdown, prometheus, text
from envaudit.model import Report

Renderer = Callable[..., str]

FORMATS: dict[str, Renderer] = {
    "text": text.render,
    "json": json_format.render,
    "markdown": markdown.render,
    "prometheus": prometheus.render,
}


def render(report: Report, fmt: str, *, color: bool = False) -> str:
    return FORMATS[fmt](report, color=color)


def use_color(stream: TextIO) -> bool:
    """Colour on a TTY unless NO_COLOR is set to anything (https://no-color.org)."""
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()
