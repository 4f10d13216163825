"""The report schema: exact JSON round-trip, and every malformed document refused with one readable line."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from envaudit.model.facts import ReportError
from envaudit.model.report import SCHEMA, ProbeResult, Report
from tests.conftest import sample_report


def test_round_trip_is_exact() -> None:
    report = sample_report()
    data = json.loads(json.dumps(report.to_dict()))
    again = Report.from_dict(data)
    assert again.to_dict() == report.to_dict()
    # a report stores each finding's id, not the subject it was derived from: read back, the id is all it knows
    assert [(f.subject.kind, f.id) for f in again.findings] == [("saved", f.id) for f in report.findings]
    assert replace(again, findings=report.findings) == report


def test_top_level_keys_of_schema_v1() -> None:
    data = sample_report().to_dict()
    for key in ("schema", "envaudit_version", "created", "host", "verdict", "facts", "findings", "probes"):
        assert key in data
    assert data["schema"] == SCHEMA
    for key in ("packages", "python", "platform", "nvidia", "jax", "env"):
        assert key in data["facts"]
    assert set(data["findings"][0]) >= {"id", "severity", "title", "detail", "fix", "references", "source"}
    assert set(data["probes"][0]) >= {"name", "status", "metrics", "duration_s"}


def test_verdict_is_worst_severity() -> None:
    report = sample_report()
    assert report.verdict == "fail"
    warn_only = Report(report.facts, findings=report.findings[1:])
    assert warn_only.verdict == "warn"
    assert Report(report.facts).verdict == "ok"
    assert Report(report.facts, complete=False).verdict == "error"


def _mutate(path: list[Any], value: Any) -> dict[str, Any]:
    data = sample_report().to_dict()
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (["schema"], "other/v9", "schema is 'other/v9'"),
        (["facts"], KeyError, "report is missing 'facts'"),
        (["facts", "jax"], KeyError, "facts lack the key(s) jax"),
        (["facts", "packages"], ["jax"], "facts.packages must be a JSON object"),
        (["facts", "packages", "jax"], 4, "facts.packages.jax must be of JSON type string"),
        (["findings", 0, "severity"], "fatal", "finding.severity is 'fatal', not one of fail, warn, info"),
        (["probes", 0, "status"], "ok", "probe.status is 'ok', not one of"),
        (["probes", 0, "duration_s"], "slow", "probe.duration_s must be of JSON type number"),
        (["verdict"], "great", "report.verdict is 'great', not one of"),
        (["findings"], {}, "findings must be a JSON array"),
        (
            ["probes", 0, "devices"],
            [{"id": 0, "kind": "cpu", "digest": "a", "rel_err": 0.0}] * 2,
            "two answers for one",
        ),
        (["probes", 0, "devices"], [{"id": 0, "kind": "cpu", "rel_err": 0.0}], "probe.devices[0] is missing 'digest'"),
    ],
)
def test_malformed_reports_are_refused(path: list[Any], value: Any, expected: str) -> None:
    with pytest.raises(ReportError) as err:
        Report.from_dict(_mutate(path, value))
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_created_timestamp() -> None:
    assert sample_report().created_timestamp() == datetime(2026, 11, 29, 12, tzinfo=UTC).timestamp()
    assert Report(sample_report().facts, created="yesterday").created_timestamp() == 0.0


@pytest.mark.parametrize(
    ("result", "left_out"),
    [
        (ProbeResult("ntk", "skip", {"declared_cost_s": 3.0}, left_out="budget"), "budget"),
        (ProbeResult("ntk", "timeout", {"not_run": True}, left_out="deadline"), "deadline"),
        (ProbeResult("ntk", "timeout", {"cpu_fraction": 0.9}), None),  # it ran, and ran out of time
        (ProbeResult("ntk", "pass", {"not_run": True}), None),  # a probe's own metric of that name says nothing
        (ProbeResult("ntk", "timeout", {"not_run": False}), None),  # the flag, not the key: it ran out of time
        (ProbeResult("ntk", "timeout", {"not_run": 1}), None),
    ],
)
def test_why_a_probe_was_not_run_survives_a_report(result: ProbeResult, left_out: str | None) -> None:
    """Schema v1 stores a probe left out as its status and a metric; read back, it is left out for that reason."""
    again = ProbeResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.left_out == left_out and again == result


def test_a_run_of_several_precisions_keeps_its_precision_through_a_report() -> None:
    result = ProbeResult("dense_chain", "pass", precision="float64")
    assert result.to_dict()["name"] == "dense_chain[float64]"
    assert ProbeResult.from_dict(result.to_dict()) == result


@pytest.mark.parametrize(
    ("name", "probe", "finding_id"),
    [
        ("dense_chain[float64]", "dense_chain", "probe-dense-chain-float64-crash"),
        ("a[b", "a", "probe-a-b-crash"),  # names of other shapes, from a report edited by hand: as before
        ("x[]", "x", "probe-x--crash"),
        ("dense_chain[float64][z]", "dense_chain", "probe-dense-chain-float64-z-crash"),
        ("x]", "x]", "probe-x-crash"),
    ],
)
def test_a_saved_name_of_any_shape_keeps_its_probe_id_and_name(name: str, probe: str, finding_id: str) -> None:
    from envaudit.model.report import Subject

    result = ProbeResult.from_dict({"name": name, "status": "crash"})
    assert (result.probe, Subject.probe(result.run, "crash").id) == (probe, finding_id)
    assert result.to_dict()["name"] == name  # the report keeps what it said


def test_nulls_in_a_reports_open_objects_are_read_as_written() -> None:
    """metrics, host and facts are open: a null there (a newer envaudit's field, a metric a probe could not give) is
    read back, where a null in a required key is one line of bad input."""
    report = sample_report()
    probe = replace(report.probes[0], metrics={**report.probes[0].metrics, "note": None})
    written = replace(report, probes=(probe,), host={"hostname": None}).to_dict()
    written["facts"]["zzz"] = None
    again = Report.from_dict(json.loads(json.dumps(written)))
    assert again.probes[0].metrics["note"] is None and again.host == {"hostname": None}
    with pytest.raises(ReportError, match=r"report\.created must not be null"):
        Report.from_dict({**written, "created": None})


@pytest.mark.parametrize("key", ["findings", "probes"])
def test_a_null_finding_or_probe_is_bad_input(key: str) -> None:
    """Found by the plan fuzzer: `findings: [null]` passed the report's check and crashed reading the finding."""
    with pytest.raises(ReportError, match=rf"report\.{key}\[0\] must not be null"):
        Report.from_dict({**sample_report().to_dict(), key: [None]})
