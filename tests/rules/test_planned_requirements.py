"""What a planned jax and jaxlib declare they need, from the table read at each tag: the same verdict a live audit
gets from pip's metadata once the plan is installed, at the boundaries, with markers, and fixed by re-planning."""

from __future__ import annotations

import json
from importlib.metadata import requires, version

import pytest
from packaging.requirements import Requirement

from envaudit.cli import main
from envaudit.rules import jax_pins
from tests.planfix import requested


def unmet(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    main(["plan", *argv, "--format", "json"])
    found = {f["id"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    return found["jax-requirement-unsatisfied"]["detail"] if "jax-requirement-unsatisfied" in found else ""


def test_a_planned_numpy_below_what_jax_declares(capsys: pytest.CaptureFixture[str]) -> None:
    assert "jax requires numpy>=2.0, planned: 1.26.4" in unmet(capsys, "jax==0.10.1", "jaxlib==0.10.1", "numpy==1.26.4")
    assert not unmet(capsys, "jax==0.10.1", "jaxlib==0.10.1", "numpy==2.0.0")  # right at the boundary
    assert not unmet(capsys, "jax==0.10.1", "jaxlib==0.10.1")  # numpy not planned: unknown, not unmet


def test_a_marker_is_evaluated_only_for_a_planned_python(capsys: pytest.CaptureFixture[str]) -> None:
    pins = ("jax==0.4.31", "jaxlib==0.4.31", "numpy==1.24.4")
    assert not unmet(capsys, *pins)  # numpy>=1.24 holds; the Python 3.12 marker cannot be evaluated
    assert not unmet(capsys, *pins, "--python", "3.11")
    assert "jax requires numpy>=1.26.0, planned: 1.24.4" in unmet(capsys, *pins, "--python", "3.12")


def test_the_fix_replanned_meets_the_requirement(capsys: pytest.CaptureFixture[str]) -> None:
    main(["plan", "jax==0.4.30", "jaxlib==0.4.30", "ml-dtypes==0.1.0", "--format", "json"])
    fix = next(
        f["fix"] for f in json.loads(capsys.readouterr().out)["findings"] if f["id"] == "jax-requirement-unsatisfied"
    )
    assert requested(fix).requirements == ("ml-dtypes>=0.2.0",), fix
    assert not unmet(capsys, "jax==0.4.30", "jaxlib==0.4.30", "ml-dtypes==0.2.0")


def test_the_table_says_what_the_installed_jax_declares() -> None:
    """The table against real metadata: this environment's jax and jaxlib wheels declare what the table says."""
    row = jax_pins.REQUIRES.load()["release"][version("jax")]
    for package in ("jax", "jaxlib"):
        declared = {
            str(Requirement(r))
            for r in requires(package) or []
            if "extra ==" not in r and not Requirement(r).name.startswith("jaxlib")
        }
        assert {str(Requirement(r)) for r in row[package]} == declared, package


@pytest.mark.parametrize("release", list(jax_pins.REQUIRES.load()["release"]))
def test_every_release_of_the_table_is_found_as_it_is_written(capsys: pytest.CaptureFixture[str], release: str) -> None:
    """jax 0.6.0 is the row "0.6.0", whatever release numbers compare as (x.y.0 lost its row once): each release's
    own numpy minimum (every release read declares one), missed by far, is unmet."""
    assert "requires numpy" in unmet(capsys, f"jax=={release}", f"jaxlib=={release}", "numpy==1.0.0")
