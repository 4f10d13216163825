"""Renderers: each format is a pure function of a document to text and never writes (the CLI does).

A report's formats are FORMATS; a comparison of nodes (`compare`) and a triaged bug report (`triage/reply.py`) have
theirs, made the same way (`Renderers`), and JSON is each document's `to_dict`, written by `as_json` for all three.
One place to add a report format: a module with `render(report, *, style=PLAIN) -> str` and an entry in FORMATS
(`style.Style`: colour, width, detail; a machine format ignores it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from envaudit.formats import cyclonedx, github, json_format, markdown, prometheus, sarif, text
from envaudit.formats.json_format import as_json
from envaudit.formats.style import PLAIN, Style
from envaudit.model.report import Report

__all__ = ["FORMATS", "PLAIN", "Renderers", "Style", "as_json", "render"]

Document = TypeVar("Document")


class Renderers(Mapping[str, Callable[..., str]], Generic[Document]):
    """The formats one kind of document is written in: a name -> render(document, *, style=PLAIN) -> str."""

    def __init__(self, **by_name: Callable[..., str]) -> None:
        self._by_name = by_name

    def __getitem__(self, name: str) -> Callable[..., str]:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def render(self, document: Document, fmt: str, *, style: Style = PLAIN) -> str:
        return self._by_name[fmt](document, style=style)


FORMATS: Renderers[Report] = Renderers(
    text=text.render,
    json=json_format.render,
    markdown=markdown.render,
    prometheus=prometheus.render,
    github=github.render,
    sarif=sarif.render,
    cyclonedx=cyclonedx.render,
)


def render(report: Report, fmt: str, *, style: Style = PLAIN) -> str:
    return FORMATS.render(report, fmt, style=style)
