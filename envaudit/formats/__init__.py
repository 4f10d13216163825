"""Renderers: each format is a pure function of a document to text and never writes (the CLI does).

A report's formats are FORMATS; a comparison of nodes (`compare`) and a triaged bug report (`triage/reply.py`) have
theirs, made the same way (`Renderers`), and JSON is each document's `to_dict`, written by `as_json` for all three.
One place to add a report format: a module with `render(report, *, color=False) -> str` and an entry in FORMATS.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TextIO, TypeVar

from envaudit.formats import json_format, markdown, prometheus, text
from envaudit.formats.json_format import as_json
from envaudit.model import Report

__all__ = ["FORMATS", "Renderers", "as_json", "render", "use_color"]

Document = TypeVar("Document")


class Renderers(Mapping[str, Callable[..., str]], Generic[Document]):
    """The formats one kind of document is written in: a name -> render(document, *, color=False) -> str."""

    def __init__(self, **by_name: Callable[..., str]) -> None:
        self._by_name = by_name

    def __getitem__(self, name: str) -> Callable[..., str]:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def render(self, document: Document, fmt: str, *, color: bool = False) -> str:
        return self._by_name[fmt](document, color=color)


FORMATS: Renderers[Report] = Renderers(
    text=text.render, json=json_format.render, markdown=markdown.render, prometheus=prometheus.render
)


def render(report: Report, fmt: str, *, color: bool = False) -> str:
    return FORMATS.render(report, fmt, color=color)


def use_color(stream: TextIO) -> bool:
    """Colour on a TTY unless NO_COLOR is set to anything (https://no-color.org)."""
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()
