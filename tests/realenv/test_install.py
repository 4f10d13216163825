"""What installing envaudit gives, as a user installs it from this checkout into a fresh environment.

`pip install .` brings envaudit and its own dependencies only: no NumPy (only the audited interpreter imports it,
for the jax child and the probes), no jax. From there envaudit audits an interpreter that has jax (`--python`),
runs `--quick` and `plan`, and says of itself what the README says a fresh environment without jax gives.
`pip install ".[jax]"` resolves to a release the audit passes (its plan, from pip's own resolution).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, envaudit_run
from tests.realenv.conftest import UV
from tests.test_jax_extra import failed

pytestmark = pytest.mark.realenv
README = (ROOT / "README.md").read_text(encoding="utf-8")


NAME = "jax-envaudit"  # the distribution's name on the index (the index's "envaudit" is another project)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel of the working tree, as a release would publish them."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([*UV, "build", "-q", "--sdist", "--wheel", "-o", str(out), str(ROOT)], check=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def bare(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A uv venv holding envaudit installed by its name from the built wheel, with its dependencies, and nothing
    else (2-3 s with uv's cache warm)."""
    prefix = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([*UV, "venv", "-q", "--python", sys.executable, str(prefix)], check=True)
    install = [*UV, "pip", "install", "-q", "--python", str(prefix / "bin" / "python"), "--find-links", str(built)]
    subprocess.run([*install, NAME], check=True, capture_output=True, timeout=300)
    return prefix


def test_the_release_files_carry_valid_metadata_under_the_new_name(built: Path) -> None:
    """What `twine check` checks: the wheel's METADATA is valid core metadata (packaging reads and validates it),
    names jax-envaudit, and carries the README as its description in the type it declares; the sdist is there."""
    import zipfile

    from packaging.metadata import Metadata

    (wheel,) = built.glob("*.whl")
    (sdist,) = built.glob("*.tar.gz")
    assert wheel.name.startswith("jax_envaudit-") and sdist.name.startswith("jax_envaudit-")
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Metadata.from_email(archive.read(name), validate=True)
        scripts = archive.read(name.replace("METADATA", "entry_points.txt")).decode()
        shipped = set(archive.namelist())
    assert metadata.name == NAME and metadata.description_content_type == "text/markdown"
    assert metadata.description and metadata.description.startswith("# envaudit")
    assert "envaudit = envaudit.__main__:main_entry" in scripts and "jax-envaudit = " in scripts
    assert any(n.startswith("envaudit/_probes/") and n.endswith(".py") for n in shipped)  # the probes ship


def test_the_installed_wheel_runs_by_both_names(bare: Path, tmp_path: Path) -> None:
    for command in ("envaudit", NAME):
        done = subprocess.run([str(bare / "bin" / command), "--version"], **_quiet(tmp_path))
        assert done.returncode == 0 and done.stdout.startswith("envaudit "), (command, done.stderr)


def _shell() -> dict[str, str]:
    """The user's shell: nothing of this checkout on PYTHONPATH (the installed envaudit is the one that runs)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_PLATFORMS", "JAX_ENABLE_X64")}


def run(prefix: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return envaudit_run(prefix / "bin" / "python", *args, env=_shell(), timeout=600, cwd=cwd)


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.stdout, done.stderr[-2000:]
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_envaudit_installs_without_numpy_or_jax(bare: Path, tmp_path: Path) -> None:
    python = str(bare / "bin" / "python")
    where = subprocess.run([python, "-c", "import envaudit; print(envaudit.__file__)"], **_quiet(tmp_path))
    assert where.returncode == 0 and where.stdout.startswith(str(bare)), where  # the installed copy, not this one
    for module in ("numpy", "jax"):
        absent = subprocess.run([python, "-c", f"import {module}"], **_quiet(tmp_path))
        assert absent.returncode == 1 and f"No module named '{module}'" in absent.stderr, absent.stderr


def _quiet(cwd: Path) -> dict[str, Any]:
    return {"env": _shell(), "cwd": cwd, "capture_output": True, "text": True, "timeout": 60}


def test_without_numpy_it_audits_an_interpreter_that_has_jax(bare: Path, tmp_path: Path) -> None:
    """This test's own interpreter has jax: one cheap probe runs there, and the audit completes."""
    done = run(bare, "--python", sys.executable, "--probe", "matmul_precision", "--format", "json", cwd=tmp_path)
    report = _json(done)
    assert done.returncode in (0, 1) and report["verdict"] != "error", done.stderr[-2000:]
    assert report["facts"]["python"]["executable"] == sys.executable and report["facts"]["jax"]["status"] == "ok"
    (probe,) = report["probes"]
    assert probe["name"] == "matmul_precision" and probe["status"] not in ("skip", "error", "crash", "timeout"), probe


def test_without_numpy_quick_and_plan_run(bare: Path, tmp_path: Path) -> None:
    quick = run(bare, "--quick", "--python", sys.executable, "--format", "json", cwd=tmp_path)
    report = _json(quick)
    assert quick.returncode in (0, 1) and report["verdict"] != "error", quick.stderr[-2000:]
    assert report["facts"]["packages"]["jax"] and report["probes"] == []
    plan = run(bare, "plan", "jax==0.10.1", "jaxlib==0.10.1", "--format", "json", cwd=tmp_path)
    planned = _json(plan)
    assert plan.returncode == 0 and planned["verdict"] == "ok", plan.stderr[-2000:]
    assert planned["facts"]["packages"] == {"jax": "0.10.1", "jaxlib": "0.10.1"}


def test_a_fresh_environment_without_jax_gives_what_the_readme_says(bare: Path, tmp_path: Path) -> None:
    """The README's sentence under its first command: the exit status, the verdict line and the one finding."""
    said = r"without jax, `python -m envaudit` exits (\d) with `(verdict: \w+)` and one finding, `([\w-]+)`"
    claim = re.search(said.replace(" ", r"\s+"), README)  # wrapped where the README's lines are
    assert claim, "the README says what a fresh environment without jax gives, under its first command"
    code, verdict, finding = int(claim[1]), claim[2], claim[3]
    text = run(bare, cwd=tmp_path)
    assert text.returncode == code and text.stdout.splitlines()[0] == verdict, text.stdout[:2000] + text.stderr
    report = _json(run(bare, "--format", "json", cwd=tmp_path))
    assert [(f["id"], f["fix"]) for f in report["findings"]] == [(finding, "")]  # advice, no command
    assert report["plan"]["fix"] == ""


def test_the_jax_extra_resolves_to_a_release_the_audit_passes(tmp_path: Path) -> None:
    """What `pip install ".[jax]"` would install in a fresh environment (pip's resolution, nothing installed),
    planned: no finding, and a jaxlib no rule fails on this CPU (about 11 s, pip's cache warm)."""
    resolved = tmp_path / "resolved.json"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed", "--report", str(resolved)]
    subprocess.run([*pip, f"{ROOT}[jax]"], check=True, capture_output=True, timeout=300, cwd=tmp_path)
    done = envaudit_run(sys.executable, "plan", "--pip-report", str(resolved), "--format", "json", timeout=60)
    report = _json(done)
    assert done.returncode == 0 and report["verdict"] == "ok" and report["findings"] == [], report["findings"]
    jaxlib = report["facts"]["packages"]["jaxlib"]
    assert not [rule for version, rule in failed() if version == jaxlib], jaxlib
