"""What a newcomer reads first: a healthy audit's verdict and findings on one 24-line screen, the short view says
the next step where a finding has no command, a page of probes skipped for one reason is one line, an interpreter
nobody examined is not described as one, and quick mode of another interpreter names that interpreter in its
advice."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from envaudit import rules
from envaudit.formats import summary, text
from envaudit.formats.style import Style
from envaudit.model.fixes import Fix
from envaudit.model.report import Advice, Finding, ProbeResult, Report, Subject
from tests.conftest import FIXTURES, facts_from, sample_report
from tests.golden import README_REPORT

SCREEN = 24  # lines of a terminal as it opens (VT100's, xterm's and most emulators' default)


def saved_reports() -> list[Path]:
    """Every saved report of a live audit with probes (the fixtures' and the README's), healthy or not."""
    found = []
    for path in sorted([*FIXTURES.rglob("*.json"), README_REPORT]):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("schema") == "envaudit/report/v1" and data.get("probes"):
            found.append(path)
    return found


HEALTHY = [p for p in saved_reports() if json.loads(p.read_text(encoding="utf-8"))["verdict"] == "ok"]


def test_saved_healthy_audits_are_there_to_test() -> None:
    assert README_REPORT in HEALTHY and len(HEALTHY) > 1


@pytest.mark.parametrize("path", HEALTHY, ids=lambda p: p.stem)
def test_a_healthy_audit_fits_one_screen_and_v_shows_everything(path: Path) -> None:
    report = Report.from_dict(json.loads(path.read_text(encoding="utf-8")))
    short = text.render(report, style=Style(width=80, verbose=False)).splitlines()
    assert len(short) <= SCREEN and short[0] == "verdict: OK", "\n".join(short)
    assert text.HINT in " ".join(" ".join(short).split())  # says how to see the rest
    full = text.render(report, style=Style(width=80, verbose=True))
    flat = " ".join(full.split())
    assert all(f"{name} {version}" in flat for name, version in report.facts.packages.items())
    for p in report.probes:  # every probe on a line of its own, with what it found
        assert " ".join((p.judgement or p.message or p.metrics_text()).split()) in flat
        assert any(line.split()[:2] == [p.status, p.run.label] for line in full.splitlines() if line.strip()), p
    assert full == text.render(report)  # -v is the whole report, as a file or a pipe gets it


@pytest.mark.parametrize("path", saved_reports(), ids=lambda p: p.stem)
def test_the_short_view_keeps_every_finding_and_every_probe_that_did_not_pass(path: Path) -> None:
    report = Report.from_dict(json.loads(path.read_text(encoding="utf-8")))
    short = text.render(report, style=Style(width=80, verbose=False))
    assert short.startswith(f"verdict: {report.verdict.upper()}")
    assert all(f"{f.id}: " in short for f in report.findings if not f.caused_by)
    folded = {p.run.label for p in report.probes if p.status in text.FOLDED}
    for p in report.probes:  # named, and those that did not pass or skip on their own line with what they found
        assert p.run.label in short
        if p.run.label not in folded:
            assert any(line.split()[:2] == [p.status, p.run.label] for line in short.splitlines() if line.strip())


ADVICE = "audit the environment that has jax with its interpreter"


def test_a_finding_without_a_command_shows_its_next_step_in_the_short_view() -> None:
    advised = Finding(Subject("check", "demo-advice"), "warn", "a finding", "", Fix(), advice=Advice(ADVICE))
    report = replace(sample_report(), findings=(advised,))
    short = text.render(report, style=Style(width=200, verbose=False))
    assert f"next: {ADVICE}" in short
    commanded = replace(sample_report(), findings=(replace(advised, remedy=Fix(saved="pip install x")),))
    assert "next:" not in text.render(commanded, style=Style(width=200, verbose=False))  # the command is the next step


def test_probes_skipped_for_one_reason_are_one_line_and_each_is_named() -> None:
    names = ("dense_chain", "batch_consistency", "determinism")
    skipped = tuple(ProbeResult(n, "skip", message="jax is not installed") for n in names)
    rendered = text.render(replace(sample_report(), probes=skipped), style=Style(width=200, verbose=False))
    lines = [line for line in rendered.splitlines() if "jax is not installed" in line]
    assert len(lines) == 1 and all(n in lines[0] for n in names) and "3 skipped" in lines[0]
    mixed = (*skipped[:2], ProbeResult("determinism", "pass"))
    assert (
        sum("jax is not installed" in line for line in text.render(replace(sample_report(), probes=mixed)).splitlines())
        == 2
    )


def test_a_stated_python_is_not_described_as_an_examined_interpreter() -> None:
    stated = facts_from({"python": {"version": "3.12"}})
    assert summary.python_line(stated) == "3.12 (as stated; no interpreter was examined)"
    examined = facts_from({"python": {"version": "3.11.7", "implementation": "CPython", "virtualenv": True}})
    assert summary.python_line(examined) == "3.11.7 (CPython, virtualenv)"


def test_quick_mode_of_another_interpreter_names_it_in_the_advice() -> None:
    other = "/srv/envs/my env/bin/python"
    facts = facts_from({"jax": {"status": "skipped", "message": "--quick does not start jax", "other_python": other}})
    (finding,) = [f for f in rules.evaluate(facts).findings if f.id == "jax-not-imported"]
    assert finding.advice is not None and "--python '/srv/envs/my env/bin/python'" in finding.advice.text
    mine = facts_from({"jax": {"status": "skipped", "message": "--quick does not start jax"}})
    (finding,) = [f for f in rules.evaluate(mine).findings if f.id == "jax-not-imported"]
    assert finding.advice is not None and "--python" not in finding.advice.text
