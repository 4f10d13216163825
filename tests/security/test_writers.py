"""Every writer, attacked as a node's neighbours would attack root: a real unprivileged process racing the writer
in a directory it can write, device nodes, FIFOs, links, modes under a strict umask, full and read-only disks.

The writer is `safewrite.write`, behind `--output`, `health --prometheus-dir`, the cache and `hook enable`."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from envaudit.files import safewrite
from tests.conftest import PYTHON, envaudit_run

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


@pytest.mark.slow
@ROOT_ONLY
def test_an_unprivileged_racer_never_gets_roots_chmod_or_write(shared_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    attacker = subprocess.Popen(
        [PYTHON, "-c", ATTACKER, str(shared_dir), str(secret), "8"], stdout=subprocess.PIPE, text=True
    )
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
    out = subprocess.run(
        [PYTHON, "-m", "envaudit", "--quick", "--output", "/dev/stdout"], env=child_env, capture_output=True, text=True
    )
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


@pytest.mark.slow
def test_the_cli_turns_each_refusal_into_one_line_and_exit_2(tmp_path: Path, child_env: dict[str, str]) -> None:
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    os.mkfifo(tmp_path / "fifo")
    for target in ("link.json", "fifo", "."):
        proc = envaudit_run(sys.executable, "--quick", "--output", str(tmp_path / target), env=child_env, timeout=60)
        assert proc.returncode == 2 and proc.stderr.startswith("envaudit: error: cannot write"), proc.stderr
        assert len(proc.stderr.splitlines()) == 1
    assert (tmp_path / "real.json").read_text() == "old"


EXCHANGER = """
import ctypes, os, sys, time
a, b, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
os.setgid(65534)
os.setuid(65534)
libc = ctypes.CDLL(None, use_errno=True)
swaps, until = 0, time.monotonic() + seconds
while time.monotonic() < until:  # renameat2(RENAME_EXCHANGE): the two names trade places atomically
    swaps += libc.renameat2(-100, a.encode(), -100, b.encode(), 2) == 0
print(swaps)
"""


def exchanger(a: Path, b: Path, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen([PYTHON, "-c", EXCHANGER, str(a), str(b), str(seconds)], stdout=subprocess.PIPE, text=True)


def drain(fifo: Path, stop: threading.Event) -> threading.Thread:
    """A reader that holds `fifo` open and reads everything (the attacker's collector)."""

    def run() -> None:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        while not stop.is_set():
            with contextlib.suppress(BlockingIOError):
                os.read(fd, 65536)
            time.sleep(0.001)
        os.close(fd)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def root_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    return secret


@pytest.mark.slow
@ROOT_ONLY
def test_a_fifo_swapped_for_a_link_between_check_and_open_is_never_followed(shared_dir: Path, tmp_path: Path) -> None:
    """The attacker's FIFO (with a reader, so it is written) trades places with a link to root's secret, over and
    over: root must write the FIFO or refuse, never the secret."""
    secret = root_secret(tmp_path)
    target, other = shared_dir / "envaudit.prom", shared_dir / "other"
    os.mkfifo(target)
    other.symlink_to(secret)
    for name in (target, other):
        os.chown(name, NOBODY, NOBODY, follow_symlinks=False)
    stop = threading.Event()
    reader = drain(target, stop)
    racer = exchanger(target, other, 4)
    written = refused = 0
    while racer.poll() is None:
        try:
            safewrite.write(target, "envaudit_verdict 1\n")
            written += 1
        except safewrite.OutputError:
            refused += 1
    stop.set()
    reader.join(timeout=10)
    assert int(racer.communicate()[0]) > 0 and written + refused > 0
    assert secret.read_text() == "root only\n" and stat.S_IMODE(secret.stat().st_mode) == 0o600


@ROOT_ONLY
def test_a_link_planted_in_a_shared_directory_is_refused_even_to_a_device_or_fifo(
    shared_dir: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "root-fifo"  # stands for a root-only device: if the link were followed, its reader would see it
    os.mkfifo(fifo, 0o600)
    stop = threading.Event()
    got: list[bytes] = []
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    (shared_dir / "envaudit.prom").symlink_to(fifo)
    with pytest.raises(safewrite.OutputError, match="symbolic link"):
        safewrite.write(shared_dir / "envaudit.prom", "envaudit_verdict 1\n")
    with contextlib.suppress(BlockingIOError):
        got.append(os.read(fd, 100))
    os.close(fd)
    stop.set()
    assert got in ([], [b""])
    (tmp_path / "stream").symlink_to(fifo)  # in a directory nobody else can write to, a link to a FIFO is followed
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    safewrite.write(tmp_path / "stream", "kept\n")
    assert os.read(reader, 100) == b"kept\n"
    os.close(reader)


@pytest.mark.slow
def test_a_fifo_whose_reader_stops_reading_is_an_error_within_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader that never reads
    fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ: the smallest pipe buffer, as the attacker would set it
    monkeypatch.setattr(safewrite, "STREAM_DEADLINE_S", 0.5)
    start = time.monotonic()
    with pytest.raises(safewrite.OutputError, match="nothing read it"):
        safewrite.write(fifo, "x" * 100_000)
    assert time.monotonic() - start < 30  # bounded (the bound is 0.5 s; a hang would never return)
    os.close(fd)


def test_a_device_that_takes_no_more_data_is_an_error_not_a_spin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device at its end makes write(2) return 0 (/dev/vcs*): the writer must stop, not loop for ever."""
    calls: list[int] = []

    def at_its_end(fd: int, data: object) -> int:
        calls.append(fd)
        if len(calls) > 100:
            raise AssertionError("the writer loops on a write that returns 0")
        return 0

    monkeypatch.setattr(os, "write", at_its_end)
    with pytest.raises(safewrite.OutputError, match="takes no more data"):
        safewrite.write(Path("/dev/stderr"), "report\n")


@pytest.mark.slow
@ROOT_ONLY
def test_a_textfile_directory_swapped_for_a_link_never_gets_a_file_elsewhere(tmp_path: Path) -> None:
    """The attacker owns the textfile directory's parent and trades the directory for a link to a root-only
    directory: nothing may ever be written there (nor an attacker-owned file planted, as the old mode was copied)."""
    base = Path(tempfile.mkdtemp(prefix="envaudit-attack-"))
    try:
        base.chmod(0o755)
        os.chown(base, NOBODY, NOBODY)
        textfile, link, private = base / "tf", base / "link", tmp_path / "root-only"
        textfile.mkdir()
        private.mkdir(mode=0o755)
        (textfile / "envaudit.prom").write_text("old")
        (textfile / "envaudit.prom").chmod(0o666)
        link.symlink_to(private)
        for path in (textfile, textfile / "envaudit.prom", link):
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        racer = exchanger(textfile, link, 4)
        attempts = 0
        while racer.poll() is None:
            attempts += 1
            with contextlib.suppress(safewrite.OutputError):
                safewrite.write(textfile / "envaudit.prom", "envaudit_verdict 1\n")
        assert int(racer.communicate()[0]) > 0 and attempts > 0
        assert list(private.iterdir()) == []
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


def test_an_existing_files_mode_is_set_before_its_first_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 0600 report rewritten under a 022 umask: its new content is never readable by others, even for a moment."""
    kept = tmp_path / "report.json"
    kept.write_text("old")
    kept.chmod(0o600)
    modes: list[int] = []
    real_write = os.write

    def watched(fd: int, data: bytes) -> int:
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", watched)
    old = os.umask(0o022)
    try:
        safewrite.write(kept, "PRIVATE")
    finally:
        os.umask(old)
    assert modes and set(modes) == {0o600} and kept.read_text() == "PRIVATE"
