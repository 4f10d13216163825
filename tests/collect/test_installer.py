"""What made an environment and what installs into it, read from its own files: a fix must use that installer (a
uv venv has no pip; conda's packages are conda's to move)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envaudit.collect import _interpreter
from envaudit.collect.outside import facts as outside_facts
from envaudit.model import fixes
from tests.conftest import facts_from

INTERPRETER = Path(_interpreter.__file__)


def said(python: Path) -> dict[str, object]:
    done = subprocess.run([str(python), str(INTERPRETER)], capture_output=True, text=True, timeout=60, check=True)
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


@pytest.mark.parametrize(
    ("make", "environment", "pip"),
    [
        ([sys.executable, "-m", "uv", "venv", "--python", sys.executable, "-q"], "uv", False),
        ([sys.executable, "-m", "venv", "--without-pip"], "venv", False),
    ],
    ids=["uv", "venv-without-pip"],
)
def test_a_real_environment_says_who_made_it_and_whether_pip_imports(
    tmp_path: Path, make: list[str], environment: str, pip: bool
) -> None:
    subprocess.run([*make, str(tmp_path / "env")], check=True, capture_output=True, timeout=120)
    python = tmp_path / "env" / "bin" / "python"
    facts = said(python)["python"]
    assert isinstance(facts, dict) and facts["environment"] == environment and facts["pip"] is pip
    python_facts, installed = outside_facts(str(python))
    target = fixes.target(facts_from({"python": dict(python_facts), "installers": installed[4]}))
    first = fixes.Fix(install=("numpy<2",), target=target).command.split(" && ")[0]
    assert first.startswith("uv pip install --python ") if environment == "uv" else first.endswith(" -m ensurepip")


def test_this_environment_has_pip_and_records_each_installer() -> None:
    answer = said(Path(sys.executable))
    facts = answer["python"]
    assert isinstance(facts, dict) and facts["pip"] is True and facts["environment"] in ("venv", "virtualenv", "uv")
    installers = {d["name"].lower(): d["installer"] for d in answer["distributions"]}  # type: ignore[attr-defined]
    assert installers["jax"] in ("pip", "uv")


def test_conda_and_pixi_environments_are_told_by_their_conda_meta(tmp_path: Path) -> None:
    conda = tmp_path / "miniforge" / "envs" / "ml"
    pixi = tmp_path / "project" / ".pixi" / "envs" / "default"
    for prefix in (conda, pixi):
        (prefix / "conda-meta").mkdir(parents=True)
    assert _interpreter.environment(str(conda), str(conda)) == "conda"
    assert _interpreter.environment(str(pixi), str(pixi)) == "pixi"
    assert _interpreter.environment(str(tmp_path), str(tmp_path)) == "system"
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "pyvenv.cfg").write_text("home = /usr/bin\nvirtualenv = 20.26.3\n", encoding="utf-8")
    assert _interpreter.environment(str(tmp_path / "v"), "/usr") == "virtualenv"
