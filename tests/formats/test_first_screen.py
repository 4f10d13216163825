"""What a newcomer reads first: the short view says the next step where a finding has no command, a page of
probes skipped for one reason is one line, an interpreter nobody examined is not described as one, and quick mode
of another interpreter names that interpreter in its advice."""

from __future__ import annotations

from dataclasses import replace

from envaudit import rules
from envaudit.formats import summary, text
from envaudit.formats.style import Style
from envaudit.model.fixes import Fix
from envaudit.model.report import Advice, Finding, ProbeResult, Subject
from tests.conftest import facts_from, sample_report

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
