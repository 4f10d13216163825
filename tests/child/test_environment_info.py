"""`jax.print_environment_info()` as the user's own process would print it, the block a maintainer asks for first:
captured by the child with its `nvidia-smi` bounded (jax runs it unbounded, and a wedged driver hangs it), without
the variables envaudit set for its child, and with what redaction hides hidden."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from envaudit.child import _jaxfacts
from envaudit.child.state import users_info


def fake_smi(tmp_path: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(f"#!/bin/sh\n{body}\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi.parent}{os.pathsep}{os.environ['PATH']}")


def test_nvidia_smi_that_hangs_is_cut_at_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_smi(tmp_path, "sleep 60; echo late", monkeypatch)  # a shell whose child holds the output open
    monkeypatch.setattr(_jaxfacts, "NVIDIA_SMI_S", 0.5)
    started = time.monotonic()
    assert _jaxfacts._nvidia_smi() is None
    assert time.monotonic() - started < 30  # not the 60 s it would hang for


def test_nvidia_smi_that_fails_or_is_absent_gives_no_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_smi(tmp_path, "echo 'NVIDIA-SMI has failed'; exit 9", monkeypatch)
    assert _jaxfacts._nvidia_smi() is None
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert _jaxfacts._nvidia_smi() is None


@pytest.mark.jax
def test_the_block_is_jaxs_own_with_the_bounded_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import jax

    fake_smi(tmp_path, "echo '| NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: 13.0 |'", monkeypatch)
    info = _jaxfacts.environment_info(jax)
    assert info.startswith(f"jax:    {jax.__version__}\n") and "\njaxlib: " in info
    assert "$ nvidia-smi\n| NVIDIA-SMI 580.65.06" in info  # through envaudit's bounded runner, as jax shows it


def test_the_variables_envaudit_set_for_its_child_are_not_the_users() -> None:
    info = "jax:    0.10.1\nJAX_PLATFORMS=cpu\nXLA_PYTHON_CLIENT_PREALLOCATE=false\nXLA_FLAGS=--xla_gpu_x"
    mine = users_info(info, {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    assert mine == "jax:    0.10.1\nJAX_PLATFORMS=cpu\nXLA_FLAGS=--xla_gpu_x"
    assert users_info(info, {}) == info
