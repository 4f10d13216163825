"""poetry.lock, pixi.lock, conda's environment.yml and `conda list` output planned as their tools install them
(tests/fixtures/inputs-round3/README.md: each real file's repository and commit), and the files a plan does not read
answered with a command whose output it does read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests.conftest import FIXTURES

ROUND3 = FIXTURES / "inputs-round3"
EXPORT = """# This file may be used to create an environment using:
# $ conda create --name <env> --file <this file>
# platform: linux-64
jax=0.4.23=pyhd8ed1ab_0
jaxlib=0.4.23=cuda120py311h5a49573_202
numpy=1.26.4=py311h64a7726_0
python=3.11.9=hb806964_0_cpython
"""


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["plan", *argv, "--no-build", "--format", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else {}, err


def test_cleanrl_poetry_lock_installs_its_jax_extra_from_the_lock(capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = plan(capsys, str(ROUND3 / "cleanrl" / "poetry.lock"), "--extra", "jax")
    assert code == Exit.OK, err
    packages = report["facts"]["packages"]
    assert (packages["jax"], packages["jaxlib"], packages["flax"]) == ("0.4.8", "0.4.7", "0.6.8")
    assert {"jax", "jaxlib", "flax"} <= set(report["facts"]["requested"])  # the pyproject's extra names them


def test_without_its_extra_poetry_installs_no_jax(capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = plan(capsys, str(ROUND3 / "cleanrl" / "poetry.lock"))
    assert code == Exit.OK, err
    assert "jax" not in report["facts"]["packages"]


def test_a_poetry_lock_older_than_its_pyproject_is_refused_as_poetry_refuses_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shutil.copy(ROUND3 / "cleanrl" / "poetry.lock", tmp_path)
    text = (ROUND3 / "cleanrl" / "pyproject.toml").read_text(encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(text.replace('jax = {version = "0.4.8"', 'jax = {version = "0.4.9"'))
    code, _, err = plan(capsys, str(tmp_path / "poetry.lock"), "--extra", "jax")
    assert code == Exit.USAGE and len(err.strip().splitlines()) == 1
    assert "content-hash" in err and "poetry lock" in err


@pytest.mark.parametrize("name", ["environment.yml", "gpu_environment.yml", "conda.yaml"])
def test_an_unpinned_conda_spec_names_an_export_whose_output_a_plan_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    """A conda file named as a project names it (EasyLM's scripts/gpu_environment.yml, projects round 3) is read as
    conda's: its advice was pip's `-r gpu_environment.yml`, which cannot read YAML."""
    shutil.copy(ROUND3 / "massivefold" / "mf-afmassive.yml", tmp_path / name)
    code, _, err = plan(capsys, str(tmp_path / name))
    assert code == Exit.USAGE and len(err.strip().splitlines()) == 1
    assert "jax=0.4.23 is not pinned" in err and "conda list --export > conda-list.txt" in err
    (tmp_path / "conda-list.txt").write_text(EXPORT)  # what that command writes
    code, report, err = plan(capsys, str(tmp_path / "conda-list.txt"))
    assert code in (Exit.OK, Exit.FINDINGS), err
    assert report["facts"]["packages"]["jaxlib"] == "0.4.23"
    assert report["facts"]["jax"]["platform"] == "cuda" and report["facts"]["jax"]["cuda_version"] == "12.0"


def test_conda_list_json_is_read_with_its_builds(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    items = [
        {"name": n, "version": v, "build_string": b, "channel": "conda-forge"}
        for n, v, b in (line.split("=") for line in EXPORT.splitlines() if not line.startswith("#"))
    ]
    (tmp_path / "conda-list.json").write_text(json.dumps(items))
    code, report, err = plan(capsys, str(tmp_path / "conda-list.json"))
    assert code in (Exit.OK, Exit.FINDINGS), err
    assert report["facts"]["jax"]["cuda_version"] == "12.0" and report["facts"]["packages"]["jax"] == "0.4.23"


def test_an_exact_conda_spec_with_its_build_is_a_pin(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "environment.yml").write_text(
        "dependencies:\n  - jax=0.4.23=pyhd8ed1ab_0\n  - jaxlib==0.4.23\n  - pip:\n    - flax==0.8.0\n"
    )
    code, report, err = plan(capsys, str(tmp_path / "environment.yml"))
    assert code in (Exit.OK, Exit.FINDINGS), err
    assert report["facts"]["packages"]["jax"] == report["facts"]["packages"]["jaxlib"] == "0.4.23"
    assert report["facts"]["packages"]["flax"] == "0.8.0"


# a pixi.lock of version 6 in the form rattler_lock's models/v6 deserialize (hand-written: conda packages named by
# their file, pypi packages by name and version)
PIXI_V6 = """version: 6
environments:
  default:
    channels:
    - url: https://conda.anaconda.org/conda-forge/
    indexes:
    - https://pypi.org/simple
    packages:
      linux-64:
      - conda: https://conda.anaconda.org/conda-forge/noarch/jax-0.4.23-pyhd8ed1ab_0.conda
      - conda: https://conda.anaconda.org/conda-forge/linux-64/jaxlib-0.4.23-cuda120py311h5a49573_202.conda
      - pypi: https://files.pythonhosted.org/packages/ab/cd/flax-0.8.0-py3-none-any.whl
      osx-arm64:
      - conda: https://conda.anaconda.org/conda-forge/noarch/jax-0.4.23-pyhd8ed1ab_0.conda
packages:
- conda: https://conda.anaconda.org/conda-forge/noarch/jax-0.4.23-pyhd8ed1ab_0.conda
  sha256: 00
- conda: https://conda.anaconda.org/conda-forge/linux-64/jaxlib-0.4.23-cuda120py311h5a49573_202.conda
  sha256: 00
- pypi: https://files.pythonhosted.org/packages/ab/cd/flax-0.8.0-py3-none-any.whl
  name: flax
  version: 0.8.0
"""


def test_a_pixi_lock_installs_its_platform_s_packages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "pixi.lock").write_text(PIXI_V6)
    code, report, err = plan(capsys, str(tmp_path / "pixi.lock"), "--os", "Linux", "--machine", "x86_64")
    assert code in (Exit.OK, Exit.FINDINGS), err
    packages = report["facts"]["packages"]
    assert (packages["jax"], packages["jaxlib"], packages["flax"]) == ("0.4.23", "0.4.23", "0.8.0")
    assert report["facts"]["jax"]["platform"] == "cuda"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("poetry.lock", "[[package]]\nname = 1\n"),
        ("poetry.lock", '[metadata]\nlock-version = "3.0"\n'),
        ("pixi.lock", "version: 9\nenvironments: {}\npackages: []\n"),
        ("pixi.lock", "version: 6\nenvironments: [\n"),
        ("environment.yml", "a: &x [1]\nb: *x\n"),
        ("environment.yml", "dependencies:\n  - 3.11\n"),
        ("conda-list.txt", "# platform: linux-64\njax==0.4.23\n"),
    ],
)
def test_a_malformed_file_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str
) -> None:
    (tmp_path / name).write_text(text)
    code, _, err = plan(capsys, str(tmp_path / name))
    assert code == Exit.USAGE and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_file_a_plan_does_not_read_names_a_command_whose_output_it_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    code, _, err = plan(capsys, str(tmp_path / "setup.py"))
    assert code == Exit.USAGE and "--report report.json" in err and "-r " not in err
    report = FIXTURES / "plan-inputs" / "jaxlib-0102" / "report.json"  # what `pip install --dry-run --report` writes
    code, _, err = plan(capsys, "--pip-report", str(report))
    assert code in (Exit.OK, Exit.FINDINGS), err
