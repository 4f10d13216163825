"""A plan of a pyproject.toml whose selected extra leaves jax unpinned says which commands make a resolution it reads;
followed as printed (pip's report from the package index, or `uv lock`, then the advice that gives, if any), they
must give a plan of that extra's stack, not the same error again: the resolution must hold the extra (`.[gpu]`,
not `.`), and the plan must select it (`--extra gpu`)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from envaudit.cli import main
from envaudit.model.exitcodes import Exit

pytestmark = pytest.mark.realenv
PROJECT = """\
[project]
name = "trainer"
version = "0.3.0"
requires-python = ">=3.11"
dependencies = ["requests>=2"]

[project.optional-dependencies]
gpu = ["jax>=0.7.0", "jaxlib>=0.7.0"]
"""


def advice(capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["plan", "pyproject.toml", "--extra", "gpu"]) == Exit.USAGE
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "jax>=0.7.0 is not pinned" in line, line
    return re.findall(r"`([^`]+)`", line)


def shell(command: str) -> None:
    """A command as the user runs it, with this interpreter's pip and uv first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    done = subprocess.run(["bash", "-e", "-c", command], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"


def planned(capsys: pytest.CaptureFixture[str], command: str) -> None:
    """The plan the advice names, run; where the resolution installs another jax on another Python (uv's lock is
    universal), the fork's own advice followed too: each Python it names, planned."""
    program, *argv = shlex.split(command)
    assert program == "envaudit"
    code = main([*argv, "--format", "json"])
    captured = capsys.readouterr()
    if code == Exit.USAGE and "say which with --python" in captured.err:
        pythons = re.findall(r"--python (\S+)", captured.err.partition("say which with")[2])
        assert pythons, captured.err
        for python in pythons:
            planned(capsys, f"{command} --python {python}")
        return
    assert code in (Exit.OK, Exit.FINDINGS), f"{command}: {captured.err}"
    assert '"jax": "' in captured.out  # the extra's stack, planned


@pytest.fixture(autouse=True)
def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("pyproject.toml").write_text(PROJECT, encoding="utf-8")


def test_pips_report_as_advised_resolves_the_extra(capsys: pytest.CaptureFixture[str]) -> None:
    *_, report, plan = advice(capsys)
    assert report.startswith("pip install --dry-run")
    shell(report)
    planned(capsys, plan)


def test_uv_lock_as_advised_resolves_the_extra(capsys: pytest.CaptureFixture[str]) -> None:
    lock, plan, *_ = advice(capsys)
    assert lock == "uv lock"
    shell(lock)
    planned(capsys, plan)
