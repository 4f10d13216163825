"""Every writer, attacked as a node's neighbours would attack root: a real unprivileged process racing the writer
in a directory it can write, device nodes, FIFOs, links, modes under a strict umask, full and read-only disks.

The writer is `safewrite.write`, behind `--output`, `health --prometheus-dir`, the cache and `hook enable`."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from envaudit import safewrite
from tests.conftest import PYTHON

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to run an unprivileged attacker and mknod")
NOBODY = 65534
ATTACKER = """
import os, sys, time
directory, secret, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
os.setgid(65534)
os.setuid(65534)
swaps, until = 0, time.monotonic() + seconds
while time.monotonic() < until:
    for name in os.listdir(directory):
        if name.endswith(".tmp"):  # the writer's temporary file: put a link to root's secret in its place
            path = os.path.join(directory, name)
            try:
                os.unlink(path)
                os.symlink(secret, path)
                swaps += 1
            except OSError:
                pass
print(swaps)
"""


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the unprivileged user owns (like node_exporter's textfile directory), reachable by it."""
    base = Path(tempfile.mkdtemp(prefix="envaudit-attack-"))
    base.chmod(0o755)
    directory = base / "textfile"
    directory.mkdir()
    os.chown(directory, NOBODY, NOBODY)
    yield directory
    subprocess.run(["rm", "-rf", str(base)], check=False)


@ROOT_ONLY
def test_an_unprivileged_racer_never_gets_roots_chmod_or_write(shared_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    attacker = subprocess.Popen([PYTHON, "-c", ATTACKER, str(shared_dir), str(secret), "8"], stdout=subprocess.PIPE,
                                text=True)  # fmt: skip
    target, written, refused = shared_dir / "envaudit.prom", 0, 0
    while attacker.poll() is None:
        text = f"envaudit_verdict 1 {written}\n" * 200
        try:
            safewrite.write(target, text)
        except safewrite.OutputError as exc:
            refused += 1
            assert "replaced the file" in str(exc) or "symbolic link" in str(exc), exc
            if target.is_symlink():
                target.unlink()  # the attacker's link was renamed into place: the operator removes it
            continue
        written += 1
        assert not target.is_symlink() and target.read_text() == text  # ours, whole
    swaps = int(attacker.communicate()[0])
    assert swaps > 0 and written > 0, (swaps, written, refused)  # the race really ran
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and secret.read_text() == "root only\n"
    assert secret.stat().st_uid == 0


@ROOT_ONLY
def test_a_character_device_is_written_not_replaced(tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the same device as /dev/null
    safewrite.write(null, "report\n")
    assert stat.S_ISCHR(null.lstat().st_mode)
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full: every write fails with ENOSPC
    with pytest.raises(safewrite.OutputError, match="No space left"):
        safewrite.write(full, "report\n")
    assert stat.S_ISCHR(full.lstat().st_mode)


def test_a_fifo_is_written_to_its_reader_and_without_one_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(safewrite.OutputError, match="no process is reading it"):
        safewrite.write(fifo, "report\n")  # never a hang
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    while True:  # wait until the reader has the FIFO open
        try:
            safewrite.write(fifo, "report\n")
            break
        except safewrite.OutputError:
            continue
    reader.join(timeout=10)
    assert got == ["report\n"] and stat.S_ISFIFO(fifo.lstat().st_mode)


def test_stdout_by_name_is_stdout_and_stays_a_link(tmp_path: Path, child_env: dict[str, str]) -> None:
    proc = subprocess.run([PYTHON, "-m", "envaudit", "rules"], env=child_env, capture_output=True, text=True)
    out = subprocess.run([PYTHON, "-m", "envaudit", "--quick", "--output", "/dev/stdout"], env=child_env,
                         capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0 and out.returncode == 0 and "verdict: OK" in out.stdout
    assert Path("/dev/stdout").is_symlink()


def test_a_link_is_refused_and_what_it_points_to_untouched(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(safewrite.OutputError, match="symbolic link"):
        safewrite.write(link, "new")
    assert link.is_symlink() and real.read_text() == "old"


@pytest.mark.parametrize("umask", [0o077, 0o022])
def test_modes_follow_the_umask_for_new_files_and_stay_for_existing_ones(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        safewrite.write(tmp_path / "new.json", "x")
        kept = tmp_path / "kept.json"
        kept.write_text("old")
        kept.chmod(0o600)
        safewrite.write(kept, "new")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and kept.read_text() == "new"  # never widened


@ROOT_ONLY
def test_root_keeps_the_owner_of_the_file_it_rewrites(shared_dir: Path) -> None:
    target = shared_dir / "envaudit.prom"
    target.write_text("old")
    os.chown(target, NOBODY, NOBODY)
    safewrite.write(target, "new")
    assert (target.stat().st_uid, target.read_text()) == (NOBODY, "new")


@ROOT_ONLY
@pytest.mark.parametrize("options", ["size=8k", "ro"])
def test_a_full_or_read_only_disk_keeps_the_old_file(tmp_path: Path, options: str) -> None:
    mount = tmp_path / "mnt"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        (mount / "report.json").write_text("old report\n")
        if options == "ro":
            subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        with pytest.raises(safewrite.OutputError):
            safewrite.write(mount / "report.json", "x" * 64_000)
        assert (mount / "report.json").read_text() == "old report\n"
        assert [p.name for p in mount.iterdir()] == ["report.json"]  # no temporary file left behind
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_the_cli_turns_each_refusal_into_one_line_and_exit_2(tmp_path: Path, child_env: dict[str, str]) -> None:
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    os.mkfifo(tmp_path / "fifo")
    for target in ("link.json", "fifo", "."):
        proc = subprocess.run([sys.executable, "-m", "envaudit", "--quick", "--output", str(tmp_path / target)],
                              env=child_env, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 2 and proc.stderr.startswith("envaudit: error: cannot write"), proc.stderr
        assert len(proc.stderr.splitlines()) == 1
    assert (tmp_path / "real.json").read_text() == "old"
