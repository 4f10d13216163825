"""The first ptxas on PATH and its toolkit's version, from the layouts CUDA toolkits really have (version.json of
CUDA >= 11.1, version.txt before it, a toolkit assembled from NVIDIA's wheels with its dist-info, the wheel itself,
a wrapper script that execs the real ptxas), and never at the price of a hang, a huge read or a run binary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from envaudit.collect import toolkit

ROOT = Path(__file__).resolve().parents[2]
ARMED = "#!/bin/sh\necho ran > {marker}\n"


def toolkit_at(root: Path, marker: Path | None = None) -> Path:
    """A CUDA toolkit's bin/ptxas; it writes `marker` if anyone runs it."""
    (root / "bin").mkdir(parents=True)
    ptxas = root / "bin" / "ptxas"
    ptxas.write_text(ARMED.format(marker=marker or root / "ran"))
    ptxas.chmod(0o755)
    return ptxas


def test_version_json_names_ptxas_in_cuda_nvcc(tmp_path: Path) -> None:
    ptxas = toolkit_at(tmp_path / "cuda-12.1")
    versions = {"cuda": {"name": "CUDA SDK", "version": "12.1.1"}, "cuda_nvcc": {"version": "12.1.105"}}
    (tmp_path / "cuda-12.1" / "version.json").write_text(json.dumps(versions))
    found = toolkit.get_ptxas(f"{tmp_path / 'empty'}{os.pathsep}{ptxas.parent}")
    assert found == {"path": str(ptxas), "version": "12.1.105", "source": str(tmp_path / "cuda-12.1" / "version.json")}
    assert not (tmp_path / "cuda-12.1" / "ran").exists()  # read, never run


def test_an_old_toolkit_says_it_in_version_txt(tmp_path: Path) -> None:
    ptxas = toolkit_at(tmp_path / "cuda-10.2")
    (tmp_path / "cuda-10.2" / "version.txt").write_text("CUDA Version 10.2.89\n")
    assert toolkit.get_ptxas(str(ptxas.parent))["version"] == "10.2.89"


def test_a_wrapper_script_and_a_toolkit_built_from_wheels(tmp_path: Path) -> None:
    """This machine's own layout: /usr/local/bin/ptxas execs /usr/local/cuda-13.0/bin/ptxas, whose toolkit keeps
    the wheels' metadata in dist-info/."""
    real = toolkit_at(tmp_path / "cuda-13.0")
    (tmp_path / "cuda-13.0" / "dist-info" / "nvidia_cuda_nvcc-13.0.88.dist-info").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    wrapper = tmp_path / "bin" / "ptxas"
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    found = toolkit.get_ptxas(str(tmp_path / "bin"))
    assert found["path"] == str(wrapper) and found["version"] == "13.0.88"


def test_the_nvcc_wheels_own_ptxas(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    ptxas = toolkit_at(site / "nvidia" / "cuda_nvcc")
    (site / "nvidia_cuda_nvcc_cu12-12.6.85.dist-info").mkdir()
    assert toolkit.get_ptxas(str(ptxas.parent))["version"] == "12.6.85"


def test_relative_and_empty_entries_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toolkit_at(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert toolkit.get_ptxas(f"{os.pathsep}bin{os.pathsep}")["path"] is None


def test_no_ptxas_and_a_non_executable_one(tmp_path: Path) -> None:
    (tmp_path / "ptxas").write_text("not a program")
    assert toolkit.get_ptxas(str(tmp_path)) == {"path": None, "version": None, "source": "no ptxas on PATH"}


@pytest.mark.parametrize("damage", ["fifo", "huge", "directory", "garbage", "dangling", "nested", "device"])
def test_a_hostile_or_broken_version_file_is_unknown_not_a_hang(
    tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ptxas = toolkit_at(tmp_path / "cuda")
    version = tmp_path / "cuda" / "version.json"
    if damage == "fifo":
        os.mkfifo(version)  # opened for reading, a FIFO blocks until a writer comes: none will
    elif damage == "huge":
        version.write_bytes(b'{"cuda_nvcc": {"version": "12.1.105"}}' + b" " * toolkit.MAX_BYTES)
    elif damage == "directory":
        version.mkdir()
    elif damage == "garbage":
        version.write_text('{"cuda_nvcc": {"version": "12.1; rm -rf /"}}')
    elif damage == "nested":
        version.write_text("[" * 200_000)  # deeper than json's recursion limit
    elif damage == "device":
        version.symlink_to("/dev/null")  # as root, opening some devices acts (a watchdog arms): never opened
    else:
        version.symlink_to(tmp_path / "nowhere")
    opened: list[str] = []
    real_open = os.open

    def spy(path: str, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    result: dict[str, object] = {}
    reader = threading.Thread(target=lambda: result.update(toolkit.get_ptxas(str(ptxas.parent))), daemon=True)
    reader.start()
    reader.join(30)
    assert not reader.is_alive(), "reading the version file hung"
    assert result["path"] == str(ptxas) and result["version"] is None
    assert "/dev/null" not in opened and (damage != "device" or str(version) not in opened)


def test_an_entry_the_user_cannot_search_is_skipped_not_an_error() -> None:
    """A job's user with root's PATH (a Slurm prolog, `su` without `-`): PATH names directories it cannot enter.
    Found by the suite: the audit of such a user exited 3 on root's ~/.cargo/bin."""
    tmp_path = Path(tempfile.mkdtemp(prefix="envaudit-ptxas-"))  # pytest's own is closed to other users
    closed = tmp_path / "closed"
    toolkit_at(closed)
    closed.chmod(0o700)
    opened = toolkit_at(tmp_path / "open")
    (tmp_path / "open" / "version.json").write_text('{"cuda_nvcc": {"version": "12.4.131"}}')
    tmp_path.chmod(0o755)
    code = "import json, sys; from envaudit.collect import toolkit; print(json.dumps(toolkit.get_ptxas(sys.argv[1])))"
    path = f"{closed / 'bin'}{os.pathsep}{opened.parent}"
    nobody = ["setpriv", "--reuid", "54321", "--regid", "54321", "--clear-groups"]
    done = subprocess.run(
        [*nobody, sys.executable, "-c", code, path],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    shutil.rmtree(tmp_path)
    assert done.returncode == 0, done.stderr[-1000:]
    assert json.loads(done.stdout) == {
        "path": str(opened),
        "version": "12.4.131",
        "source": str(tmp_path / "open" / "version.json"),
    }


def test_a_wrapper_naming_a_path_with_a_nul_is_not_followed(tmp_path: Path) -> None:
    """Found by review: a NUL in the exec'd path made the audit and health exit 3 (ValueError from the OS)."""
    (tmp_path / "bin").mkdir()
    wrapper = tmp_path / "bin" / "ptxas"
    wrapper.write_bytes(b'#!/bin/sh\nexec /tmp/x\x00y/ptxas "$@"\n')
    wrapper.chmod(0o755)
    found = toolkit.get_ptxas(str(tmp_path / "bin"))
    assert found["path"] == str(wrapper) and found["version"] is None


def test_a_path_lookup_that_hangs_is_unknown_within_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH entry on a network file system that no longer answers: stat() never returns."""
    release = threading.Event()
    monkeypatch.setattr(toolkit, "get_ptxas", lambda path=None: release.wait(60) and {})
    found = toolkit.get_ptxas_within(0.2)
    release.set()
    assert found["path"] is None and "did not answer within 0.2 s" in str(found["source"])
