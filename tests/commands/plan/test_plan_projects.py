"""Eleven real JAX projects' dependency files, planned as their CI would plan them (tests/fixtures/plan-projects/
README.md: each file's repository, path and commit, what was expected of its plan before envaudit read it, and what
envaudit said).

Each is planned offline: no build (the suite's ENVAUDIT_NO_BUILD, and --no-build) and no network (a connection is
refused here, so a plan that asked the package index would fail). What is asserted is the verdict class expected of
each and the facts that decide it, never the report's text.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests.conftest import FIXTURES

PROJECTS = FIXTURES / "plan-projects"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise OSError("a plan reads no network")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket, "create_connection", refused)


def planned(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, project: str, *argv: str
) -> tuple[int, dict[str, Any], str]:
    """The plan's exit code, its JSON report (empty where it could not plan) and stderr, run in the project's
    directory as its CI runs it."""
    monkeypatch.chdir(PROJECTS / project)
    code = main(["plan", *argv, "--no-build", "--format", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else {}, err


def test_levanter_gpu_extra_plans_cuda_jax_with_a_warning_and_no_failure(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, report, err = planned(capsys, monkeypatch, "levanter", "uv.lock", "--extra", "gpu")
    assert code == Exit.OK, err
    packages = report["facts"]["packages"]
    assert packages["jax"] == packages["jaxlib"] == packages["jax-cuda12-plugin"] == packages["jax-cuda12-pjrt"]
    assert report["verdict"] == "warn" and not [f for f in report["findings"] if f["severity"] == "fail"]
    located = [f["location"] for f in report["findings"] if f["severity"] == "warn"]
    assert located and all(where["file"] == "uv.lock" and where["line"] > 0 for where in located)


@pytest.mark.parametrize(("project", "jax"), [("flax", "0.7.0"), ("penzai", "0.4.37")])
def test_a_library_lock_plans_one_stack_on_every_python_and_passes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, project: str, jax: str
) -> None:
    """Their locks fork by Python (and platform), but not in an audited distribution: no --python is needed."""
    code, report, err = planned(capsys, monkeypatch, project, "uv.lock")
    assert code == Exit.OK, err
    assert report["verdict"] == "ok" and report["facts"]["packages"]["jax"] == jax


def test_maxtext_dynamic_extras_are_refused_naming_why(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = planned(capsys, monkeypatch, "maxtext", "pyproject.toml", "--extra", "tpu")
    assert code == Exit.USAGE
    assert "optional-dependencies are dynamic" in err and "no extra" not in err


def test_jax_test_requirements_name_nothing_a_plan_evaluates(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = planned(capsys, monkeypatch, "jax", "-r", "test-requirements.txt")
    assert code == Exit.USAGE and "nothing to plan" in err


@pytest.mark.parametrize(
    ("project", "first"),
    [
        ("equinox", "jax"),
        ("optax", "jax"),
        ("brax", "flax"),
        ("diffrax", "jax"),
        ("numpyro", "jax"),
        ("orbax", "jax"),
    ],
)
def test_a_library_without_a_lock_is_refused_until_it_is_resolved(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, project: str, first: str
) -> None:
    """Ranges, no lock: CI resolves them when it installs, so a plan says how to make a resolution it can read."""
    code, _, err = planned(capsys, monkeypatch, project, "pyproject.toml")
    assert code == Exit.USAGE
    line = err.strip()
    assert "is not pinned" in line and "uv lock" in line and f" {first}" in line.split("is not pinned")[0]


def test_each_fixture_is_planned_by_a_test() -> None:
    assert sorted(p.name for p in PROJECTS.iterdir() if p.is_dir()) == sorted(
        ["levanter", "maxtext", "jax", "flax", "penzai", "equinox", "optax", "brax", "diffrax", "numpyro", "orbax"]
    )
