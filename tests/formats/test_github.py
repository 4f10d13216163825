"""`--format github`: GitHub Actions workflow commands, read back as the runner reads them (one command per line,
`::NAME k=v,k=v::DATA`, data and properties unescaped as actions/toolkit escapes them), so a report's text can
never start a command of its own."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from envaudit.formats import github, summary
from envaudit.model.fixes import Fix
from envaudit.model.report import Finding, Location, Report, Severity, Subject
from tests.conftest import sample_report

COMMAND = re.compile(r"^::(?P<name>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")


def _unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return _unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def commands(rendered: str) -> list[tuple[str, dict[str, str], str]]:
    found = []
    for line in re.split(r"\r\n|\r|\n", rendered):  # the runner's lines (.NET ReadLine), not str.splitlines
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


def test_a_finding_located_in_an_input_file_lands_on_its_line() -> None:
    located = replace(sample_report().findings[0], location=Location("sub/requirements.txt", 7))
    unlocated = replace(sample_report().findings[1], location=Location("report.json"))  # a file without lines
    rendered = github.render(replace(sample_report(), findings=(located, unlocated)))
    (_, first, _), (_, second, _) = commands(rendered)
    assert first == {"file": "sub/requirements.txt", "line": "7", "title": "envaudit fail: demo-fail"}
    assert second == {"file": "report.json", "title": "envaudit warn: demo-warn"}
    assert rendered.startswith("::error file=sub/requirements.txt,line=7,title=")  # GitHub's order and spelling


# what escaping is about, and what an escape already looks like (%25, %0A: text, never unescaped twice)
PIECES = ["%", "\r", "\n", ":", ",", "::", "%25", "%0A", "%0D", "%3A", "%2C", "=", "a", " ", "\u2028", "é"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.text(max_size=40))
def test_escaping_round_trips_through_the_runners_unescaping(special: str, anything: str) -> None:
    for text in (special, anything, special + anything):
        data, prop = github._data(text), github._property(text)
        assert not {"\r", "\n"} & set(data) and _unescape_data(data) == text
        assert not {"\r", "\n", ":", ","} & set(prop) and _unescape_property(prop) == text


@settings(max_examples=150, deadline=None)
@given(TEXT, st.integers(min_value=1, max_value=10**6))
def test_a_location_of_any_name_is_one_command_read_back_whole(name: str, line: int) -> None:
    finding = Finding(Subject("rule", name), "warn", name, name, references=(name,), location=Location(name, line))
    rendered = github.render(replace(sample_report(), findings=(finding,)))
    [(command, props, data)] = commands(rendered)
    assert command == "warning"
    assert props == {"file": name, "line": str(line), "title": f"envaudit warn: {name}"}
    assert data.startswith(f"{summary.clean(name)}.")  # the message, cleaned for a log, read back whole


def _many(severity: Severity, n: int, *, ignored: bool = False) -> list[Finding]:
    name = f"ignored-{severity}" if ignored else severity
    return [
        Finding(Subject("rule", f"{name}-{k}"), severity, f"{name} {k}", ignored="x" if ignored else None)
        for k in range(n)
    ]


OVERFLOW = "envaudit: annotations left out"


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 25), st.integers(0, 25), st.integers(0, 25), st.integers(0, 3))
def test_no_kind_has_more_annotations_than_github_shows_and_what_is_left_out_is_said(
    fails: int, warns: int, infos: int, ignored: int
) -> None:
    """GitHub shows 10 annotations of each kind per step and drops the rest without a word: envaudit writes at most
    that many, says in one notice how many of each kind it left out, and keeps each left out as a plain log line."""
    findings = _many("fail", fails) + _many("warn", warns) + _many("info", infos) + _many("warn", ignored, ignored=True)
    rendered = github.render(replace(sample_report(), findings=tuple(findings)))
    found = commands(rendered)
    assert all(n <= github.PER_KIND for n in Counter(name for name, _, _ in found).values())
    annotated = [(name, props["title"].rsplit(": ", 1)[1]) for name, props, _ in found if props["title"] != OVERFLOW]
    left = [line.split(": ")[2] for line in rendered.splitlines() if line.startswith("envaudit left out: ")]
    assert sorted([i for _, i in annotated] + left) == sorted(f.id for f in findings)  # each once, one way or other
    by_id = {f.id: f for f in findings}
    kinds = Counter(github._command(by_id[i]) for i in left)
    overflow = [data for _, props, data in found if props["title"] == OVERFLOW]
    if left:
        [said] = overflow
        assert said.startswith(f"{len(left)} more annotation")
        assert all(f"{n} {kind}" in said for kind, n in kinds.items())
    else:
        assert overflow == []
    for kind in kinds:  # one of a kind is left out only where that kind is full (the overflow notice takes one)
        full = github.PER_KIND - (kind == "notice")
        assert sum(name == kind for name, _ in annotated) == full
    order = [f.id for f in findings]
    for kind in ("error", "warning", "notice"):  # of a kind, the first in the report's order are annotated
        ids = [i for name, i in annotated if name == kind]
        assert ids == [i for i in order if github._command(by_id[i]) == kind][: len(ids)]


def test_twenty_failures_are_ten_errors_and_one_notice_that_counts_the_other_ten() -> None:
    rendered = github.render(replace(sample_report(), findings=tuple(_many("fail", 20))))
    found = commands(rendered)
    assert [name for name, _, _ in found] == ["error"] * 10 + ["notice"]
    assert [props["title"] for _, props, _ in found[:10]] == [f"envaudit fail: fail-{k}" for k in range(10)]
    assert found[-1][2].startswith("10 more annotations left out (10 errors)")
    assert [line for line in rendered.splitlines() if line.startswith("envaudit left out")] == [
        f"envaudit left out: envaudit fail: fail-{k}: fail {k}" for k in range(10, 20)
    ]
