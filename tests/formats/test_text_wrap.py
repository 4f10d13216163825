"""The text format at a terminal's width: prose wrapped under its label, never a word lost or split, a command or a
URL never broken (a broken one cannot be pasted), and the short view a terminal gets without -v."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from envaudit.formats import text
from envaudit.formats.style import MIN_WIDTH, Style
from envaudit.model.fixes import Fix
from envaudit.model.report import Finding, Report, Subject
from tests.conftest import FIXTURES, sample_report

H200 = FIXTURES / "replay" / "h200-default-settings.json"
LONG_FIX = (
    "python -m pip install 'jax[cuda12]==0.10.1' jaxlib==0.10.1 jax-cuda12-plugin==0.10.1 jax-cuda12-pjrt==0.10.1"
)
URL = "https://github.com/jax-ml/jax/blob/main/docs/new_docs/201/precision.md#a-very-long-anchor-that-does-not-fit"


def report() -> Report:
    base = Report.from_dict(json.loads(H200.read_text()))
    long = Finding(
        Subject("rule", "a-finding-with-a-long-fix"),
        "fail",
        "a title long enough that it must be wrapped at every width this test tries, and then some more words",
        "a detail " * 30,
        Fix(saved=LONG_FIX),
        (URL,),
    )
    return replace(base, findings=(long, *base.findings))


def words(rendered: str) -> list[str]:
    return rendered.split()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_every_line_fits_but_a_command_or_a_url(width: int) -> None:
    rendered = text.render(report(), style=Style(width=width))
    header, *lines = rendered.splitlines()[1:]  # the header is one line, as triage reads a pasted report
    assert header.startswith("envaudit ")
    for line in lines:
        if len(line) > width:
            assert re.match(r"^ +(fix|see): ", line) or line.strip().split()[-1].startswith("http"), line
    assert f"fix: {LONG_FIX}" in rendered  # whole, on one line
    assert f"see: {URL}" in rendered


@pytest.mark.parametrize("width", [MIN_WIDTH - 10, 60, 120])
def test_wrapping_keeps_every_word_in_order(width: int) -> None:
    """The same words as the widest rendering, in the same order: wrapping only moves line breaks."""
    assert words(text.render(report(), style=Style(width=width))) == words(
        text.render(report(), style=Style(width=10_000))
    )


def test_the_short_view_shows_each_title_and_fix_and_hides_the_rest() -> None:
    short = text.render(report(), style=Style(width=80, verbose=False))
    full = text.render(report(), style=Style(width=80))
    assert "a-finding-with-a-long-fix" in short and f"fix: {LONG_FIX}" in short
    assert "a detail a detail" in full and "a detail a detail" not in short
    assert URL in full and URL not in short
    assert text.HINT in short and text.HINT not in full  # says how to see the rest
    assert len(short.splitlines()) < len(full.splitlines())


def test_colour_does_not_count_toward_the_width() -> None:
    plain = text.render(sample_report(), style=Style(width=60))
    coloured = text.render(sample_report(), style=Style(width=60, color=True))
    assert re.sub(r"\033\[[0-9;]*m", "", coloured) == plain
