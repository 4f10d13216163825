"""A short-lived child whose every bound holds in the parent: its time, its output, and what it starts.

`subprocess.run(capture_output=True, timeout=...)` keeps everything a child prints (a `sitecustomize` that prints
progress, or `cat /dev/zero` behind a wrapper, fills memory in seconds), and on a timeout kills the child alone:
what it started lives on, and a grandchild that holds the pipes makes the wait outlast the bound. Here the child
runs in its own session; both pipes are read in this thread until the deadline, each kept up to `limit` bytes (a
child that prints more is cut off and killed: its answer is no answer); and when it is over, the child's whole
process group is killed, whatever it left behind.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

LIMIT = 4 * 1024 * 1024  # bytes kept of each stream
CHUNK = 64 * 1024
POLL_S = 0.05  # how soon an exit is seen while the pipes stay open
REAP_S = 2.0  # how long a killed child may take to exit before it is left to the kernel


@dataclass(frozen=True)
class Finished:
    returncode: int | None  # None: still running at the bound, or cut off (then killed)
    stdout: str
    stderr: str
    timed_out: bool = False
    cut: bool = False  # it printed more than the limit on a stream


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    limit: int = LIMIT,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Finished:
    """Run `argv` to its end or to the bound, in `cwd` (raises OSError when it cannot start)."""
    deadline = time.monotonic() + timeout
    with watchdog() as watch:  # the group dies with this process, even by SIGKILL
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=None if env is None else dict(env),
            cwd=cwd,
            start_new_session=True,
        )
        watch(proc)
        try:
            kept, timed_out, cut = _read(proc, deadline, limit)
            code = None if timed_out or cut else _wait(proc, deadline)
            timed_out = timed_out or (code is None and not cut)
        finally:
            reap(proc)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    text = {name: bytes(value).decode("utf-8", "replace") for name, value in kept.items()}
    return Finished(code, text["stdout"], text["stderr"], timed_out=timed_out, cut=cut)


def _read(proc: subprocess.Popen[bytes], deadline: float, limit: int) -> tuple[dict[str, bytearray], bool, bool]:
    """(what it printed on each stream, up to `limit`; whether the deadline came first; whether it printed more)."""
    kept = {"stdout": bytearray(), "stderr": bytearray()}
    with selectors.DefaultSelector() as selector:
        assert proc.stdout is not None and proc.stderr is not None
        selector.register(proc.stdout, selectors.EVENT_READ, "stdout")
        selector.register(proc.stderr, selectors.EVENT_READ, "stderr")
        while len(selector.get_map()):
            left = deadline - time.monotonic()
            if left <= 0:
                return kept, True, False
            # once it has exited, only what is already written is read: a process it left behind may hold the
            # pipes open for ever
            ready = selector.select(0 if proc.poll() is not None else min(left, POLL_S))
            if not ready and proc.returncode is not None:
                break
            for key, _ in ready:
                data = os.read(key.fd, CHUNK)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                buffer, room = kept[key.data], limit - len(kept[key.data])
                buffer += data[:room]
                if len(data) > room:
                    return kept, False, True
    return kept, False, False


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> int | None:
    """Its exit status, once it has closed both pipes; None when it still runs at the deadline."""
    try:
        return proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        return None


# The watchdog: a process of its own, so that no C call holding this process's GIL can keep it from acting. It reads
# the process group to watch, then waits for the end of a pipe only the parent holds; "done" first means the parent
# ended the group itself.
WATCHDOG = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
group = sys.stdin.buffer.readline().strip()
if group.isdigit() and sys.stdin.buffer.read() != b"done":
    try:
        os.killpg(int(group), signal.SIGKILL)
    except OSError:
        pass
"""


@contextmanager
def watchdog() -> Iterator[Callable[[subprocess.Popen[bytes] | subprocess.Popen[str]], None]]:
    """A watchdog for a child to be started in the block (given to it by the callable yielded): the child's process
    group is killed if this process dies, even by SIGKILL. A child watching its parent cannot do it while a C call
    holds its GIL, and the kernel's parent-death signal ends the child alone, not what it started. The watchdog
    runs before the child does, so the child is watched from its first moment; and in a session of its own, so a
    kill of envaudit's process group (slurmd's, `timeout -k`) does not take it too. (What leaves the child's group
    is not watched.)"""
    dog = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", WATCHDOG],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert dog.stdin is not None
    pipe = dog.stdin

    def watch(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
        with contextlib.suppress(OSError):
            pipe.write(f"{proc.pid}\n".encode())
            pipe.flush()

    try:
        yield watch
    finally:
        with contextlib.suppress(OSError):
            pipe.write(b"done")
            pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            dog.wait(timeout=REAP_S)


def reap(proc: subprocess.Popen[bytes] | subprocess.Popen[str], seconds: float = REAP_S) -> int | None:
    """Kill the child's process group and wait for the child's exit status at most `seconds`: a process in an
    uninterruptible driver call (a GPU fallen off the bus) does not die of SIGKILL until the call returns, and
    waiting on it would hang the audit. None: it had not exited."""
    kill_group(proc)
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def kill_group(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """Kill the child and anything it started in its session (it runs in its own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
