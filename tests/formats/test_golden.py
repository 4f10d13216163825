"""Text and Markdown against their golden files, and the README's sample against the report it shows (the short view
a terminal 80 columns wide gets).

A failure here after a deliberate format change: run `python -m scripts.golden` and review the diff."""

from __future__ import annotations

import json

import pytest

from envaudit.formats import render
from envaudit.model.report import Report
from tests.conftest import ROOT
from tests.golden import FORMATS, README_REPORT, REPORTS, SAMPLE_STYLE, path, readme_sample


@pytest.mark.parametrize("name", sorted(REPORTS))
@pytest.mark.parametrize("suffix", sorted(FORMATS))
def test_rendering_matches_its_golden_file(name: str, suffix: str) -> None:
    assert render(REPORTS[name](), FORMATS[suffix]) == path(name, suffix).read_text(encoding="utf-8")


def test_readme_sample_is_the_rendering_of_a_real_audit() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = readme_sample(readme)
    shown = readme[start:end]
    report = Report.from_dict(json.loads(README_REPORT.read_text(encoding="utf-8")))
    assert report.mode == "audit" and report.probes  # made by a full audit (scripts/golden.py --readme)
    assert shown == render(report, "text", style=SAMPLE_STYLE)
    assert shown.startswith("verdict: OK\n") and "-v" in shown  # the short view: it says how to see the rest
