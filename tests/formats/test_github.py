"""`--format github`: GitHub Actions workflow commands, read back as the runner reads them (one command per line,
`::NAME k=v,k=v::DATA`, data and properties unescaped as actions/toolkit escapes them), so a report's text can
never start a command of its own."""

from __future__ import annotations

import re
from dataclasses import replace

from envaudit.formats import github
from envaudit.model.fixes import Fix
from envaudit.model.report import Finding, Report, Subject
from tests.conftest import sample_report

COMMAND = re.compile(r"^::(?P<name>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")


def _unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return _unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def commands(rendered: str) -> list[tuple[str, dict[str, str], str]]:
    found = []
    for line in rendered.splitlines():
        if match := COMMAND.match(line):
            props = dict(p.split("=", 1) for p in (match["props"] or "").split(",") if p)
            found.append(
                (match["name"], {k: _unescape_property(v) for k, v in props.items()}, _unescape_data(match["data"]))
            )
    return found


def test_each_finding_is_an_annotation_of_its_severity() -> None:
    rendered = github.render(sample_report())
    found = commands(rendered)
    assert [(name, props["title"]) for name, props, _ in found] == [
        ("error", "envaudit fail: demo-fail"),
        ("warning", "envaudit warn: demo-warn"),
    ]
    assert "Fix: pip install x" in found[0][2].splitlines()
    last = rendered.splitlines()[-1]
    assert last.startswith("envaudit: FAIL") and not last.startswith("::")
    assert "jax 0.4.25" in rendered  # the audited versions, as plain log text


EVIL = "50% done\r\n::error::injected, title=x: y"


def test_no_text_of_a_report_starts_a_command_of_its_own() -> None:
    evil = Finding(Subject("rule", EVIL), "info", EVIL, EVIL, Fix(saved=EVIL), (EVIL,))
    rendered = github.render(replace(sample_report(), findings=(evil,)))
    lines = rendered.splitlines()
    assert sum(line.startswith("::") for line in lines) == 1  # the one annotation; nothing injected
    [(name, props, data)] = commands(rendered)
    assert name == "notice" and props["title"] == f"envaudit info: {EVIL}"  # escaped, and read back whole
    assert "::error::injected" in data  # carried as data, escaped, never a command
    assert "\r" not in rendered


def test_an_ignored_finding_is_a_notice_that_says_so() -> None:
    report = sample_report()
    ignored = replace(report.findings[0], ignored="known and accepted")
    rendered = github.render(replace(report, findings=(ignored, *report.findings[1:])))
    by_title = {props["title"]: (name, data) for name, props, data in commands(rendered)}
    name, data = by_title["envaudit ignored fail: demo-fail"]
    assert name == "notice" and "known and accepted" in data
    assert rendered.splitlines()[-1].startswith("envaudit: WARN")  # it counts toward no verdict


def test_a_clean_report_is_one_plain_line_of_verdict_after_the_versions() -> None:
    rendered = github.render(Report(sample_report().facts, envaudit_version="0"))
    assert commands(rendered) == []
    assert rendered.splitlines()[-1].startswith("envaudit: OK")
