"""Whether a uv command runs for an environment: its own (bin/uv) or one on PATH; a fix is printed for uv only then."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envaudit.collect._interpreter import uv_found


def _executable(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)


def test_the_environments_own_uv_or_one_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    env = tmp_path / "env"
    assert uv_found(str(env)) is False
    _executable(env / "bin" / "uv")
    assert uv_found(str(env)) is True
    other = tmp_path / "other"
    _executable(tmp_path / "tools" / "uv")
    monkeypatch.setenv("PATH", os.pathsep.join([str(empty), str(tmp_path / "tools")]))
    assert uv_found(str(other)) is True
