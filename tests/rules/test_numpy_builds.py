"""Releases built against NumPy 1 (numpy-builds.toml): the measured imports (confirm_numpy_builds.py) replayed
through `envaudit plan`, NumPy 1 beside them, a plan without a Python, the fix replanned, and the derivation's reading
of a build's NumPy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from derive.tables import numpy_builds
from envaudit.cli import main
from envaudit.rules.table import TABLES
from tests.conftest import BESIDE_MISCOMPILES
from tests.planfix import requested

ROOT = Path(__file__).resolve().parents[2]


CHECK = "numpy2-with-numpy1-build"


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    main(["plan", *argv, *BESIDE_MISCOMPILES, "--format", "json"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def flagged(report: dict[str, Any]) -> bool:
    return any(f["id"] == CHECK for f in report["findings"])


def test_each_measured_import_is_what_the_plan_says(capsys: pytest.CaptureFixture[str]) -> None:
    measured = json.loads((TABLES / "derived" / "numpy-builds-confirmed.json").read_text())
    assert {r["imports"] for r in measured["results"]} == {True, False}  # both sides measured
    for r in measured["results"]:
        pins = (f"{r['package']}=={r['version']}", f"numpy=={r['numpy']}", "--python", measured["python"])
        assert flagged(plan(capsys, *pins)) == (not r["imports"]), r


def test_numpy_1_beside_it_is_no_finding(capsys: pytest.CaptureFixture[str]) -> None:
    assert flagged(plan(capsys, "ml-dtypes==0.3.2", "numpy==2.0.2"))
    assert not flagged(plan(capsys, "ml-dtypes==0.3.2", "numpy==1.26.4"))
    assert not flagged(plan(capsys, "ml-dtypes==0.3.2"))  # no numpy planned: unknown


def test_the_fix_is_the_first_release_built_against_numpy_2_and_replans_clean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = plan(capsys, "jax==0.4.26", "jaxlib==0.4.26", "ml-dtypes==0.3.2", "numpy==2.0.2")
    asked = requested(report["plan"]["fix"])
    assert asked.requirements == ("ml-dtypes>=0.4.0",), asked
    assert not flagged(plan(capsys, "jax==0.4.26", "jaxlib==0.4.26", "ml-dtypes==0.4.0", "numpy==2.0.2"))


def test_a_build_reads_its_numpy_per_python_as_pip_chose_it_then() -> None:
    requires = [  # ml_dtypes 0.3.2's sdist pyproject.toml
        "numpy~=1.21.2; python_version<'3.11'",
        "numpy~=1.23.3; python_version>='3.11' and python_version<'3.12'",
        "numpy~=1.26.0; python_version>='3.12'",
        "setuptools~=68.1.0",
    ]
    releases = [(Version(v), at) for v, at in [("1.21.6", "2022-04"), ("1.23.5", "2022-11"), ("1.26.3", "2024-01-02")]]
    releases += [(Version("2.0.0"), "2024-06-16")]
    assert numpy_builds.build_numpy(requires, "3.10", releases, "2024-01-03") == "1.21.6"
    assert numpy_builds.build_numpy(requires, "3.12", releases, "2024-01-03") == "1.26.3"
    assert numpy_builds.build_numpy(["setuptools"], "3.12", releases, "2024-01-03") == ""  # no NumPy C API build
    assert numpy_builds.build_numpy(["oldest-supported-numpy"], "3.12", releases, "2025-01-01") == "1.26.3"
    # a pre-release the requirement pins, which the index here lists no file of (ml_dtypes 0.4.0)
    assert numpy_builds.numpy_at(releases, SpecifierSet("==2.0.0rc1"), "2024-04-01") == "2.0.0rc1"
    assert numpy_builds.numpy_at(releases, SpecifierSet(">=1.25"), "2024-01-03") == "1.26.3"  # 2.0.0 came later
