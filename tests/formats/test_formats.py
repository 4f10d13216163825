"""Every format renders every report; each keeps the promises its readers rely on."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import cast

import pytest
from prometheus_client.parser import text_string_to_metric_families

from envaudit.formats import FORMATS, markdown, prometheus, render
from envaudit.formats.style import Style
from envaudit.model.fixes import Fix
from envaudit.model.report import Finding, ProbeResult, ProbeStatus, Report, Subject
from tests.conftest import sample_report

ANSI = "\033["


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_renders_findings_and_versions(fmt: str) -> None:
    out = render(sample_report(), fmt)
    assert out.endswith("\n")
    assert "demo-fail" in out
    assert "0.4.25" in out
    assert ANSI not in out


def test_formats_registry_holds_the_documented_formats() -> None:
    assert {"text", "json", "markdown", "prometheus"} <= set(FORMATS)  # a new format adds to it, edits nothing here


def test_json_is_the_report() -> None:
    report = sample_report()
    again = Report.from_dict(json.loads(render(report, "json")))
    assert again.to_dict() == report.to_dict() and replace(again, findings=report.findings) == report


def test_text_colour_only_when_asked() -> None:
    coloured = render(sample_report(), "text", style=Style(color=True))
    assert ANSI in coloured
    assert "\033[31;1mFAIL" in coloured  # fail findings in red
    plain = render(sample_report(), "text")
    assert "verdict: FAIL" in plain
    assert "fix: pip install x" in plain


def test_markdown_is_ready_for_an_issue() -> None:
    md = render(sample_report(), "markdown")
    assert md.startswith("### envaudit report: **fail**")
    assert "| component | version / state |" in md
    assert "| neural-tangents | 0.6.5 |" in md
    assert "a failing \\| finding" in md  # a pipe in text does not break the table
    assert "<details><summary>" in md and "</details>" in md
    body = md.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(body)["verdict"] == "fail"


def test_prometheus_parses_with_the_reference_parser() -> None:
    text = render(sample_report(), "prometheus")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert all(name.startswith("envaudit_") for name in families)
    findings = {s.labels["severity"]: s.value for s in families["envaudit_findings"].samples}
    assert findings == {"fail": 1.0, "warn": 1.0, "info": 0.0}
    verdict = {s.labels["verdict"]: s.value for s in families["envaudit_verdict"].samples}
    assert verdict == {"ok": 0.0, "warn": 0.0, "fail": 1.0, "error": 0.0}
    packages = {s.labels["package"]: s.labels["version"] for s in families["envaudit_package_info"].samples}
    assert packages["neural-tangents"] == "0.6.5"
    status = {(s.labels["probe"], s.labels["status"]): s.value for s in families["envaudit_probe_status"].samples}
    assert status[("dense_chain", "pass")] == 1.0 and status[("dense_chain", "fail")] == 0.0
    errors = families["envaudit_probe_relative_error_ratio"].samples
    assert [(s.labels, s.value) for s in errors] == [({"probe": "dense_chain", "metric": "rel_err"}, 8.2e-7)]
    assert "envaudit_probe_metric" not in families  # one family per quantity and unit now (issue 28)
    last = families["envaudit_last_run_timestamp_seconds"].samples[0].value
    assert last == sample_report().created_timestamp()
    assert families["envaudit_last_success_timestamp_seconds"].samples[0].value == last  # it completed


def _gauges(text: str) -> dict[str, float]:
    return {f.name: f.samples[0].value for f in text_string_to_metric_families(text) if len(f.samples) == 1}


def test_prometheus_says_how_long_the_audit_took_when_the_report_says_it() -> None:
    assert "envaudit_duration_seconds" not in _gauges(render(sample_report(), "prometheus"))  # a report before it
    timed = replace(sample_report(), duration_s=12.5)
    assert _gauges(render(timed, "prometheus"))["envaudit_duration_seconds"] == 12.5
    again = Report.from_dict(json.loads(render(timed, "json")))  # and a saved one keeps it
    assert again.duration_s == 12.5 and "duration_s" not in json.loads(render(sample_report(), "json"))


def test_the_last_success_is_the_report_when_it_completed_else_what_its_writer_carries() -> None:
    done = sample_report()
    unfinished = replace(done, complete=False, created="2026-11-30T00:00:00Z")
    assert _gauges(prometheus.textfile(done, 5.0))["envaudit_last_success_timestamp_seconds"] == (
        done.created_timestamp()
    )  # a completed report is its own last success, whatever is carried
    carried = _gauges(prometheus.textfile(unfinished, done.created_timestamp()))
    assert carried["envaudit_last_success_timestamp_seconds"] == done.created_timestamp()
    assert carried["envaudit_last_run_timestamp_seconds"] == unfinished.created_timestamp()
    assert "envaudit_last_success_timestamp_seconds" not in _gauges(render(unfinished, "prometheus"))  # none known


def test_prometheus_escapes_label_values() -> None:
    report = sample_report()
    report = Report(
        report.facts.__class__(**{**report.facts.__dict__, "packages": {'we"ird\\pkg': "1\n2"}}),
        envaudit_version="0.1.0",
    )
    text = render(report, "prometheus")
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples if s.name == "envaudit_package_info"]
    assert samples[0].labels == {"package": 'we"ird\\pkg', "version": "1\n2"}


def test_prometheus_counts_repeated_findings_in_one_series() -> None:
    report = sample_report()
    twice = report.findings[:1] * 2  # e.g. one ECC finding per faulty GPU
    text = render(Report(report.facts, findings=twice, envaudit_version="0"), "prometheus")
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples if s.name == "envaudit_finding"]
    assert [(s.labels["id"], s.value) for s in samples] == [("demo-fail", 2.0)]


EVIL = "\x1b]0;PWNED\x07\x1b[2J`x``\n# injected heading\u2028\u202e|"


def test_markdown_cleans_every_value_and_keeps_code_spans_closed() -> None:
    """Finding ids, fixes and references, probe names and statuses, env names and values: no control character
    (so no line of their own, no terminal escape), and a backtick never ends the inline code it is in."""
    report = sample_report()
    facts = replace(report.facts, env={f"JAX_{EVIL}": EVIL, "JAX_TICK": "`"})
    finding = Finding(
        Subject("saved", EVIL),
        "warn",
        EVIL,
        EVIL,
        Fix(saved=EVIL),
        (EVIL, "https://example.org/a>b", "https://example.org/c"),
    )
    probe = ProbeResult(
        EVIL,
        cast(ProbeStatus, EVIL),
        {},
        1.0,
        EVIL,
        devices=({"id": 0, "kind": EVIL, "verdict": EVIL, "rel_err": 1.0},),
    )
    md = render(replace(report, facts=facts, findings=(finding,), probes=(probe,)), "markdown")
    head = md.split("<details><summary>Full report")[0]
    assert not any(ch in md for ch in "\x1b\x07\u2028\u202e"), ascii(md)
    assert not any(line.startswith("# injected") for line in md.splitlines())
    assert "```\ufffd]0;PWNED\ufffd\ufffd[2J`x`` # injected heading\ufffd\ufffd|```" in head  # the id, the fix
    assert "`` JAX_TICK=` ``" in head and "<https://example.org/c>" in head and "<https://example.org/a>b>" not in head
    assert all(row.count(" | ") == 3 for row in head.splitlines() if row.startswith("| \ufffd"))  # one cell each


@pytest.mark.parametrize("text", ["", "a", "`", "``a`", " a", "a ", "`a` b ``c"])
def test_inline_code_shows_its_text_as_it_is(text: str) -> None:
    """CommonMark: a code span ends at the first run of as many backticks as it opened with; one space each side
    is stripped when both are there."""
    code = markdown._code(text)
    fence = len(code) - len(code.lstrip("`"))
    body = code[fence:-fence]
    assert code.endswith("`" * fence) and "`" * fence not in body
    shown = body[1:-1] if len(body) > 1 and body[0] == body[-1] == " " and body.strip() else body
    assert shown == (text or " ")  # an empty span is no span: it shows a space


def test_a_devices_infinite_error_is_exported_as_infinity_and_each_device_once() -> None:
    devices = (
        {"id": 0, "kind": "cpu", "digest": "a", "rel_err": "inf", "verdict": "wrong"},
        {"id": 1, "kind": "cpu", "digest": "b", "rel_err": 8e-7, "verdict": "agrees"},
    )
    report = replace(sample_report(), probes=(ProbeResult("dense_chain", "fail", {}, devices=devices),))
    samples = [
        s
        for f in text_string_to_metric_families(render(report, "prometheus"))
        for s in f.samples
        if s.name == "envaudit_device_probe_rel_err"
    ]
    assert sorted((s.labels["device"], s.value) for s in samples) == [("0", float("inf")), ("1", 8e-7)]


def test_quick_mode_never_says_ok_about_what_it_did_not_look_at() -> None:
    from envaudit.formats import markdown, text
    from envaudit.judge import assemble
    from tests.conftest import facts_from

    quick = assemble.assemble(
        facts_from({"jax": {"status": "skipped", "message": "--quick does not start jax"}}), mode="quick"
    )
    assert "verdict: OK (jax not imported: quick mode)" in text.render(quick).splitlines()[0]
    assert "**ok** (jax not imported: quick mode)" in markdown.render(quick)
    assert [(f.id, f.severity) for f in quick.findings] == [("jax-not-imported", "info")]
