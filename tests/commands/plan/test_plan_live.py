"""Live: uv and pip resolve a known-bad stack from the package index now (jax and jaxlib 0.4.20, with which the
resolvers pick NumPy 2: rule numpy2-with-jaxlib-before-0426), envaudit plans each resolution, and the requirement
lines its fix prints, written into the file it names and resolved again, plan clean. Resolution only, nothing is
installed; uv's and pip's caches are the user's, shared with every other run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from envaudit.cli import main
from envaudit.model.scope import canonicalize_name

pytestmark = [pytest.mark.realenv, pytest.mark.cost(10)]  # 8.4 s here, caches warm

UV = (sys.executable, "-m", "uv")
PYTHON = "3.11"  # the plan's Python, whatever runs the test: pip resolves for it and envaudit is told it
PYPROJECT = """\
[project]
name = "live-plan"
version = "0.1.0"
requires-python = ">=3.11,<3.13"
dependencies = [{deps}]

[tool.uv]
environments = ["sys_platform == 'linux' and platform_machine == 'x86_64'"]
"""
STACK = ["jax==0.4.20", "jaxlib==0.4.20"]
ROOT = "numpy2-with-jaxlib-before-0426"


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, timeout=600)


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["plan", *argv, "--python", PYTHON, "--format", "json"])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    return code, json.loads(captured.out)


def failures(report: dict[str, Any]) -> set[str]:
    return {f["id"] for f in report["findings"] if f["severity"] == "fail"}


def lines_for(fix: str, file: str) -> list[str]:
    """The requirement lines a plan's fix asks `file` to hold (read back by the test, never by envaudit)."""
    parts = [p.removeprefix(f"in {file}: ") for p in fix.split("; ") if p.startswith(f"in {file}: ")]
    assert len(parts) == 1, fix
    return parts[0].split(", ")


def written(requirements: list[str], lines: list[str]) -> list[str]:
    """The requirements with the fix's lines in place of those naming the same distribution."""
    moved = {canonicalize_name(Requirement(line).name): line for line in lines}
    kept = [r for r in requirements if canonicalize_name(Requirement(r).name) not in moved]
    return [*kept, *moved.values()]


def report_of(requirements: Path, report: Path) -> None:
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    run(*pip, "--python-version", PYTHON, "--only-binary=:all:", "--report", str(report), "-r", str(requirements))


def test_uv_and_pip_resolutions_of_a_bad_stack_plan_to_it_and_the_written_fix_resolves_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "pyproject.toml"
    project.write_text(PYPROJECT.format(deps=", ".join(f'"{r}"' for r in STACK)))
    run(*UV, "lock", "-q")
    run(*UV, "export", "-q", "--format", "pylock.toml", "-o", "pylock.toml")
    for argv in (["pyproject.toml"], ["uv.lock"], ["pylock.toml"]):
        code, report = plan(capsys, *argv)
        assert code == 1 and ROOT in failures(report), (argv, report["findings"])
        assert int(report["facts"]["packages"]["numpy"].split(".")[0]) >= 2
    _, report = plan(capsys, "pyproject.toml")
    fixed = written(STACK, lines_for(report["plan"]["fix"], "pyproject.toml"))
    project.write_text(PYPROJECT.format(deps=", ".join(f'"{r}"' for r in fixed)))
    run(*UV, "lock", "-q")
    code, after = plan(capsys, "pyproject.toml")
    assert code == 0 and not failures(after) and after["plan"]["fix"] == "", after["findings"]

    requirements = tmp_path / "requirements.txt"
    requirements.write_text("\n".join(STACK) + "\n")
    report_of(requirements, tmp_path / "report.json")
    code, report = plan(capsys, "-r", "requirements.txt", "--pip-report", "report.json")
    assert code == 1 and ROOT in failures(report)
    # the report records each distribution's requirements: the fix moves what NumPy 2's removal would break too
    lines = lines_for(report["plan"]["fix"], "requirements.txt")
    requirements.write_text("\n".join(written(STACK, lines)) + "\n")
    report_of(requirements, tmp_path / "report.json")
    code, after = plan(capsys, "-r", "requirements.txt", "--pip-report", "report.json")
    assert code == 0 and not failures(after) and after["plan"]["fix"] == "", (lines, after["findings"])
