"""envaudit's cache, as root on a shared machine: never a place someone else prepared, never a directory created
where HOME merely points, never a read that blocks. (The probe child loads compiled programs from it.)"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from envaudit import cachedir
from tests.conftest import PYTHON, ROOT

NOBODY = 65534
WHERE = "from envaudit import cachedir; print(cachedir.cache_dir())"


def run(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME", "ENVAUDIT_CACHE_DIR")}
    return subprocess.run([PYTHON, "-c", code], env={**base, "PYTHONPATH": str(ROOT), **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to prepare the directory as another user")
@pytest.mark.parametrize("prepared", ["owned by another user", "a link to another user's directory"])
def test_a_prepared_temporary_cache_is_not_used(tmp_path: Path, prepared: str) -> None:
    tmp, theirs = tmp_path / "tmp", tmp_path / "theirs"
    tmp.mkdir()
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    name = tmp / f"envaudit-{os.geteuid()}"
    if prepared.startswith("owned"):
        name.mkdir(mode=0o700)
        os.chown(name, NOBODY, NOBODY)
    else:
        name.symlink_to(theirs)
    proc = run(WHERE + "; print(cachedir.write_text('x.json', '{}'))", tmp_path, TMPDIR=str(tmp))
    assert proc.stdout.split() == ["None", "False"], proc.stderr
    assert list(theirs.iterdir()) == [] and (not name.is_dir() or name.is_symlink() or list(name.iterdir()) == [])


def test_an_open_temporary_cache_of_our_own_is_not_used_either(tmp_path: Path) -> None:
    (tmp_path / f"envaudit-{os.geteuid()}").mkdir()
    (tmp_path / f"envaudit-{os.geteuid()}").chmod(0o777)
    assert run(WHERE, tmp_path, TMPDIR=str(tmp_path)).stdout.strip() == "None"


def test_a_private_temporary_cache_is_made_when_there_is_no_home(tmp_path: Path) -> None:
    assert run(WHERE, tmp_path, TMPDIR=str(tmp_path)).stdout.strip() == str(tmp_path / f"envaudit-{os.geteuid()}")
    assert (tmp_path / f"envaudit-{os.geteuid()}").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("home", ["nonexistent", "", "relative"])
def test_a_home_that_is_not_a_directory_of_ours_creates_nothing(tmp_path: Path, home: str) -> None:
    value = str(tmp_path / "nonexistent") if home == "nonexistent" else home
    proc = run("from envaudit import cachedir; cachedir.write_text('x.json', '{}')", tmp_path, HOME=value,
               TMPDIR=str(tmp_path / "tmp"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no /nonexistent/.cache, no ./.cache, no tmp either


def test_a_relative_xdg_cache_home_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    proc = run(WHERE, tmp_path, XDG_CACHE_HOME="cache", HOME=str(tmp_path / "home"))
    assert proc.stdout.strip() == str(tmp_path / "home" / ".cache" / "envaudit")


def test_a_fifo_in_the_cache_is_no_cache_and_no_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVAUDIT_CACHE_DIR", str(tmp_path))
    os.mkfifo(tmp_path / "hook-x.json")
    answer: list[object] = []
    reader = threading.Thread(target=lambda: answer.append(cachedir.read_json("hook-x.json")), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert answer == [None]
    (tmp_path / "big.json").write_bytes(b"[" + b"0," * (cachedir.MAX_BYTES // 2) + b"0]")
    assert cachedir.read_json("big.json") is None
