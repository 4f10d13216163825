"""Shared helpers for the integration tests: Debian packages, free ports, bounded polling, daemons that never leak.

Every daemon a test starts runs in its own session with a tag (a unique temporary directory) in its environment or
command line; teardown stops the daemons it started, then kills, by pid, any process that still carries the tag
(children the daemons spawned: slurmstepd, health-check programs), and checks that none is left.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from tests.conftest import ROOT

T = TypeVar("T")

INSTALL_SCRIPT = ROOT / ".ci" / "install-integration.sh"


def ensure_programs(
    programs: Iterable[str], search: Iterable[str] = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
) -> dict[str, str]:
    """Absolute paths of ``programs``; installs the Debian packages (.ci/install-integration.sh) when one is missing.

    The integration tests do not skip: a machine without the packages gets them (as root, through apt-get).
    """
    path = os.pathsep.join(search)

    def lookup() -> dict[str, str | None]:
        return {name: shutil.which(name, path=path) for name in programs}

    found = lookup()
    if not all(found.values()):
        subprocess.run(["bash", str(INSTALL_SCRIPT)], check=True, timeout=900, stdin=subprocess.DEVNULL)
        found = lookup()
    missing = [name for name, where in found.items() if where is None]
    assert not missing, f"still missing after {INSTALL_SCRIPT}: {missing}"
    return {name: str(where) for name, where in found.items()}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(
    what: str,
    probe: Callable[[], T | None],
    timeout: float,
    interval: float = 0.25,
    context: Callable[[], str] | None = None,
) -> T:
    """Poll ``probe`` until it returns a value other than None/False; fail with ``what`` (and context) on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            extra = f"\n{context()}" if context is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{extra}")
        time.sleep(interval)


def tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file, for failure messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"--- {path}: {exc}"
    return f"--- {path} (last {lines} lines)\n" + "\n".join(text.splitlines()[-lines:])


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def tagged_pids(tag: str) -> list[int]:
    """Processes (other than this one) whose command line or environment contains ``tag``."""
    needle = tag.encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        if needle in _read(f"/proc/{entry}/cmdline") or needle in _read(f"/proc/{entry}/environ"):
            pids.append(int(entry))
    return pids


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return False
    state = stat.rsplit(b")", 1)[-1].split()[0]
    return state not in (b"Z", b"X")


def stop(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM a daemon started by a test, then SIGKILL it if it has not exited within ``grace`` seconds."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=grace)


def kill_pid(pid: int, expect: str) -> None:
    """SIGKILL ``pid`` if it is still alive and its command line contains ``expect`` (guards against pid reuse)."""
    if alive(pid) and expect.encode() in _read(f"/proc/{pid}/cmdline"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def pid_from_file(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def reap_tagged(tag: str, timeout: float = 15.0) -> list[int]:
    """Kill every process carrying ``tag`` (by pid, SIGTERM then SIGKILL); return the ones still alive after it."""
    deadline = time.monotonic() + timeout
    sig = signal.SIGTERM
    while True:
        pids = [pid for pid in tagged_pids(tag) if alive(pid)]
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        time.sleep(0.5)
        if time.monotonic() > deadline - timeout / 2:
            sig = signal.SIGKILL
