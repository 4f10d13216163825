"""The facts module: the types mypy holds readers to are the types a loaded document is checked against."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from envaudit.model.facts import Facts, JaxStatus, NvidiaStatus, ReportError
from envaudit.model.typecheck import problem
from tests.conftest import facts_from


def test_a_documents_types_are_checked_from_the_annotations_at_every_depth() -> None:
    assert problem({"gpus": [{"index": 0, "throttle_reasons": ["hw_slowdown"]}]}, Any, "x") is None
    cases: list[tuple[dict[str, Any], str]] = [
        ({"jax": {"status": "fine"}}, "facts.jax.status is 'fine', not one of ok, unknown"),
        ({"jax": {"status": "ok", "child_pids": [1, "2"]}}, "facts.jax.child_pids[1] must be of JSON type integer"),
        ({"jax": {"status": "ok", "x64": 1}}, "facts.jax.x64 must be of JSON type boolean"),
        ({"jax": {"status": "ok", "duration_s": True}}, "facts.jax.duration_s must be of JSON type number"),
        (
            {"nvidia": {"status": "ok", "gpus": [{"compute_processes": [{"pid": "1"}]}]}},
            "facts.nvidia.gpus[0].compute_processes[0].pid must be of JSON type integer",
        ),
        (
            {"duplicates": [{"name": "jax", "versions": ["0.4.30", None]}]},
            "facts.duplicates[0].versions[1] must not be null",
        ),
        ({"env": {"XLA_FLAGS": None}}, "facts.env.XLA_FLAGS must not be null"),
        ({"origin": "somewhere"}, "facts.origin is 'somewhere', not one of live, plan, hook, triage"),
        # a key with braces is a place, not a format string (hypothesis found {"{": [True]} raising ValueError)
        ({"requires": {"{": [True]}}, "facts.requires.{[0] must be of JSON type string"),
        ({"env": {"{}": None}}, "facts.env.{} must not be null"),
    ]
    for fragment, expected in cases:
        with pytest.raises(ReportError) as err:
            facts_from(fragment)
        assert str(err.value).startswith(expected), (fragment, str(err.value))


def test_null_fields_and_fields_not_declared_are_carried() -> None:
    facts = facts_from({"jax": {"status": "ok", "message": None, "stage": None, "from_the_future": [1, {}]}})
    assert facts.jax.get("message") is None and Facts.from_dict(facts.to_dict()) == facts
    assert facts.to_dict()["jax"]["from_the_future"] == [1, {}]


def test_a_report_of_envaudit_0_2_says_its_origin_in_a_status_and_still_reads() -> None:
    """0.2.0 wrote jax.status "planned" (a plan, a pasted bug report) or "hook"; the origin is a field now."""
    old = facts_from({"jax": {"status": "planned", "platform": "cuda"}, "nvidia": {"status": "planned"}})
    assert (old.origin, old.jax["status"], old.nvidia["status"]) == ("plan", "unknown", "ok")
    assert facts_from({"jax": {"status": "hook", "x64": True}}).origin == "hook"
    assert facts_from({"jax": {"status": "ok"}}).origin == "live"
    assert Facts.from_dict(old.to_dict()) == old


def test_every_status_the_types_name_loads_and_round_trips() -> None:
    for group, status in [("jax", s) for s in get_args(JaxStatus)] + [("nvidia", s) for s in get_args(NvidiaStatus)]:
        facts = facts_from({group: {"status": status}})
        assert Facts.from_dict(facts.to_dict()).to_dict()[group]["status"] == status


def test_a_bug_report_of_envaudit_0_2_reads_as_a_bug_report_not_a_plan() -> None:
    """0.2.0's triage wrote jax.status "planned" like a plan: read as a plan, a pasted macOS report would be told it
    cannot install (a plan's no-wheel check) and get a plan's defaults. The report's mode says which it was."""
    from envaudit.model.report import Report

    report = {
        "schema": "envaudit/report/v1",
        "envaudit_version": "0.2.0",
        "created": "2026-11-30T10:00:00Z",
        "host": {"hostname": "bug report"},
        "mode": "triage",
        "verdict": "ok",
        "findings": [],
        "probes": [],
        "facts": {
            "packages": {"jax": "0.4.30", "jaxlib": "0.4.30"},
            "python": {"version": "3.13.1"},
            "platform": {},
            "env": {},
            "nvidia": {"status": "unknown"},
            "jax": {"status": "planned", "message": "from the text of a bug report"},
        },
    }
    assert Report.from_dict(report).facts.origin == "triage"
    assert Report.from_dict({**report, "mode": "plan"}).facts.origin == "plan"
