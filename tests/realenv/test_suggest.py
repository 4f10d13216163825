"""`envaudit suggest --cpu` answers a command that installs, here, for real: its command run by uv (the installer it
names) into a throwaway venv of this Python, from the package index with the user's shared uv cache, and jax then
imports and computes there, at the release the suggestion says it resolves to."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from envaudit.collect.build import uv_environ
from tests.conftest import PYTHON, envaudit_run
from tests.realenv.conftest import UV
from tests.realenv.envs import JAX_PROGRAM

pytestmark = pytest.mark.realenv


def test_the_cpu_suggestion_installs_with_uv_and_jax_computes(tmp_path: Path) -> None:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    done = envaudit_run(
        PYTHON, "suggest", "--cpu", "--python", python, "--installer", "uv", "--format", "json", timeout=60
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    words = shlex.split(answer["command"])
    assert words[:4] == ["uv", "pip", "install", "-U"] and answer["extra"] == ""
    env = uv_environ(tmp_path)  # the user's own uv cache, shared with the other builds
    venv = tmp_path / "venv"
    subprocess.run([*UV, "venv", "-q", "--python", sys.executable, str(venv)], check=True, env=env, timeout=120)
    installed = subprocess.run(
        [*UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *words[3:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr
    ran = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            f"{JAX_PROGRAM}\nimport jax, jaxlib; print(jax.__version__, jaxlib.__version__)",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.split()
    assert lines[0] == "ok"
    jax, jaxlib = lines[1], lines[2]
    if "==" in answer["command"]:  # pinned: exactly the release it says
        assert Version(jax) == Version(jaxlib) == Version(answer["release"])
    else:  # the guide's unpinned command: the index's newest, which the tables reach or the index has passed
        assert Version(jax) >= Version(answer["release"]) and Version(jaxlib) >= Version(answer["release"])
