"""`--format sarif`: a report as a SARIF 2.1.0 log, valid against the schema OASIS publishes (vendored,
tests/fixtures/schemas/), read back as GitHub code scanning reads it: a rule per finding id, a result per finding
with its level and, for a plan of files, the file and line that cause it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envaudit.cli import main
from envaudit.formats import FORMATS, sarif
from envaudit.model.exitcodes import Exit
from envaudit.model.fixes import Fix
from envaudit.model.report import Finding, Location, Report, Subject
from tests.conftest import sample_report
from tests.formats import published

LEVELS = {"fail": "error", "warn": "warning", "info": "note"}  # SARIF 2.1.0 section 3.27.10's levels


def logged(report: Report) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(FORMATS.render(report, "sarif"))
    assert published.problems(published.sarif(), found) == []
    return found


def located_report() -> Report:
    report = sample_report()
    first, second = report.findings
    ignored = Finding(Subject("rule", "demo-info"), "info", "a note", ignored="we know")
    return replace(
        report,
        findings=(
            replace(first, location=Location("sub dir/requirements #1.txt", 7)),
            replace(second, location=Location("pylock.toml")),
            ignored,
            replace(first, caused_by="demo-warn"),  # the same id twice: one rule, two results
        ),
    )


def test_the_log_is_valid_sarif_2_1_0_and_names_its_schema_and_tool() -> None:
    log = logged(located_report())
    assert log["version"] == "2.1.0" and log["$schema"] == published.load("sarif-schema-2.1.0.json")["id"]
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "envaudit" and driver["version"] == sample_report().envaudit_version
    assert driver["informationUri"].startswith("https://")
    assert run["invocations"] == [{"executionSuccessful": True}]
    assert run["properties"]["verdict"] == "fail"


def test_one_rule_per_finding_id_and_each_result_points_at_its_rule() -> None:
    report = located_report()
    [run] = logged(report)["runs"]
    rules, results = run["tool"]["driver"]["rules"], run["results"]
    assert [r["id"] for r in rules] == list(dict.fromkeys(f.id for f in report.findings))
    assert len(results) == len(report.findings)
    for f, result in zip(report.findings, results, strict=True):
        rule = rules[result["ruleIndex"]]
        assert result["ruleId"] == rule["id"] == f.id
        assert result["level"] == LEVELS[f.severity] == rule["defaultConfiguration"]["level"]
        assert result["message"]["text"].startswith(f"{f.title}.")
        assert (f.fix in result["message"]["text"]) if f.fix else True
        if f.references:
            assert rule["helpUri"] == f.references[0]
            assert all(ref in rule["help"]["text"] and ref in rule["help"]["markdown"] for ref in f.references)
        else:
            assert "helpUri" not in rule


def _where(result: dict[str, Any]) -> tuple[str, int] | None:
    """The file (as its URI reference decodes) and line a result points at, as code scanning reads them."""
    if "locations" not in result:
        return None
    physical = result["locations"][0]["physicalLocation"]
    uri = physical["artifactLocation"]["uri"]
    path = unquote(uri.removeprefix("file://")) if uri.startswith("file:///") else unquote(uri)
    return path, physical.get("region", {}).get("startLine", 0)


def test_a_located_finding_is_a_physical_location_and_an_ignored_one_is_suppressed() -> None:
    report = located_report()
    results = logged(report)["runs"][0]["results"]
    assert [_where(r) for r in results] == [("sub dir/requirements #1.txt", 7), ("pylock.toml", 0), None, None]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert [r.get("suppressions") for r in results] == [
        None,
        None,
        [{"kind": "external", "justification": "we know"}],
        None,
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=30)
    | st.sampled_from(["/abs/r.txt", "file://x", "a:b/c", "C:\\req.txt", "%41", "#", "?q", "//host/x"]),
    st.integers(0, 10**6),
)
def test_any_file_name_is_a_uri_reference_that_decodes_back(name: str, line: int) -> None:
    finding = Finding(Subject("rule", "r"), "warn", "t", location=Location(name, line))
    result = logged(replace(sample_report(), findings=(finding,)))["runs"][0]["results"][0]
    assert _where(result) == (name.replace("\\", "/"), line)


def test_an_audit_that_did_not_complete_says_so() -> None:
    log = logged(replace(sample_report(), complete=False))
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": False}]
    assert log["runs"][0]["properties"]["verdict"] == "error"


def test_a_clean_report_is_a_run_without_results() -> None:
    [run] = logged(Report(sample_report().facts, envaudit_version="1.0"))["runs"]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []


def test_a_plan_of_a_requirements_file_puts_the_result_on_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "requirements.txt").write_text("numpy==2.2.6\n\njax==0.10.2\njaxlib==0.10.2  # the bad one\n")
    monkeypatch.chdir(tmp_path)
    code = main(["plan", "-r", "requirements.txt", "--no-build", "--format", "sarif"])
    out, err = capsys.readouterr()
    assert code == Exit.FINDINGS, err
    log = json.loads(out)
    assert published.problems(published.sarif(), log) == []
    results = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    result = results["jaxlib-0102-cpu-vmap-matvec-sum"]
    assert result["level"] == "error" and _where(result) == ("requirements.txt", 4)


def test_every_severity_has_a_level() -> None:
    findings = tuple(Finding(Subject("rule", s), s, s, remedy=Fix(saved="x")) for s in LEVELS)  # type: ignore[arg-type]
    results = logged(replace(sample_report(), findings=findings))["runs"][0]["results"]
    assert [r["level"] for r in results] == list(LEVELS.values())
    assert sarif.LEVEL == LEVELS
