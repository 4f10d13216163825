"""Report renderers: each format is a pure function `Report -> str`; only the CLI writes.

One place to add a format: a module with `render(report, *, color=False) -> str` and an entry in FORMATS.
"""

from __future__ import annotations

from collections.abc import Callable

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
