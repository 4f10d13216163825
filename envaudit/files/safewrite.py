"""Writing a file as root in a directory that others may write to, without ever writing through their links.

envaudit runs as root from Slurm and from a privileged DaemonSet, and node_exporter's textfile directory is often
owned by another account. So the target's directory is opened by a walk that follows no link another user could
have planted or swapped (`safedir.open_directory`), and everything after is relative to that descriptor: the old
file is examined there without following links, a temporary file is created there (`O_EXCL | O_NOFOLLOW`), given
its mode and owner while still empty, filled and flushed through its own descriptor (never by path), then renamed
over the target; the rename is verified (the target is our inode), so a swapped name is a reported failure, never
root's chmod or write on someone else's file. A reader sees the old file or the new one, never half of one; a
failure leaves the old file as it was.

What the user had keeps its nature: an existing report keeps its mode (and, written by root, its owner); a new one
gets the umask's mode. A symbolic link, a directory, a socket or a block device is never replaced: it is refused.
A character device or a FIFO (`/dev/null`, a pipe to a collector) is opened without following links, checked to
be the node examined, and written within a deadline (a FIFO nobody reads is an error, not a hang); a link to one
is followed only in a directory nobody else can write to. /dev/stdout, /dev/stderr and /dev/fd/N are the streams.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import select
import stat
import time
from pathlib import Path

from envaudit.files import safedir
from envaudit.model.exitcodes import BadInput


class OutputError(BadInput, OSError):
    """The output could not be written; the message is one line for the user."""


_FD_PATH = re.compile(r"^/(?:dev/fd|proc/self/fd)/(\d+)$")
_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}
STREAM_DEADLINE_S = 10.0  # for a FIFO or a device to take the whole report


def write(path: Path, text: str) -> None:
    data = text.encode("utf-8", errors="surrogateescape")
    target = str(path)
    fd = _STREAMS.get(target)
    match = _FD_PATH.match(target)
    if fd is not None or match:
        return _write_all(fd if fd is not None else int(match[1]) if match else 1, data, path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        dfd = safedir.open_directory(directory)
    except FileNotFoundError:
        raise OutputError(f"cannot write {path}: directory {directory} does not exist") from None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        _write_in(dfd, path, data)
    finally:
        os.close(dfd)


def _write_in(dfd: int, path: Path, data: bytes) -> None:
    try:
        here: os.stat_result | None = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        here = None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    if here is not None and stat.S_ISLNK(here.st_mode):
        if not safedir.trusted(os.fstat(dfd)):  # a link others could have planted, or could swap: never followed
            raise OutputError(f"cannot write {path}: it is a symbolic link; give the file it points to")
        return _write_stream(dfd, path, data, None)
    if here is not None and (stat.S_ISCHR(here.st_mode) or stat.S_ISFIFO(here.st_mode)):
        return _write_stream(dfd, path, data, here)
    if here is not None and not stat.S_ISREG(here.st_mode):
        raise OutputError(f"cannot write {path}: it is {_kind(here.st_mode)}, not a regular file")
    return _replace(dfd, path, data, here)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a file envaudit writes"


def _write_all(fd: int, data: bytes, path: Path, deadline: float | None = None) -> None:
    """All of `data`, or an OutputError: a write that takes nothing, or (non-blocking `fd`) a reader that does not
    drain it before `deadline`, is an error, never a spin or a hang."""
    view = memoryview(data)
    try:
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                left = (deadline - time.monotonic()) if deadline is not None else 0.0
                if left <= 0 or not select.select([], [fd], [], left)[1]:
                    raise OutputError(f"cannot write {path}: nothing read it within {STREAM_DEADLINE_S:g} s") from None
                continue
            if written == 0:
                raise OutputError(f"cannot write {path}: it takes no more data")
            view = view[written:]
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_stream(dfd: int, path: Path, data: bytes, seen: os.stat_result | None) -> None:
    """A character device or a FIFO, opened without blocking and without following a link unless `seen` is None
    (a link in a trusted directory), and written only if it is still the node examined."""
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if seen is not None else 0)
    try:
        fd = os.open(path.name, flags, dir_fd=dfd)
    except OSError as exc:
        why = "no process is reading it" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
        raise OutputError(f"cannot write {path}: {why}") from None
    try:
        now = os.fstat(fd)
        if not (stat.S_ISCHR(now.st_mode) or stat.S_ISFIFO(now.st_mode)):  # a link to a file: refused, as ever
            raise OutputError(f"cannot write {path}: it is a symbolic link; give the file it points to")
        if seen is not None and (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
            raise OutputError(f"cannot write {path}: another process replaced it while it was opened")
        _write_all(fd, data, path, time.monotonic() + STREAM_DEADLINE_S)
    finally:
        os.close(fd)


def _replace(dfd: int, path: Path, data: bytes, old: os.stat_result | None) -> None:
    tmp = f".{path.name}.{secrets.token_hex(8)}.tmp"
    mode = 0o600 if old is not None else 0o666  # the old mode is set before any byte is written; a new file's umask
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        if old is not None:  # what the user had keeps its mode and, written by root, its owner
            if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
                os.fchown(fd, old.st_uid, old.st_gid)
            os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after fchown, which clears set-id bits
        _write_all(fd, data, path)
        os.fsync(fd)
        mine = os.fstat(fd)
        try:
            os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
            now = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            now = None  # our temporary name was taken away
        if now is None or (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
            raise OutputError(f"cannot write {path}: another process replaced the file while it was written")
        with contextlib.suppress(OSError):
            os.fsync(dfd)  # the rename itself on disk
    except OutputError:
        _discard(tmp, fd, dfd)
        raise
    except OSError as exc:
        _discard(tmp, fd, dfd)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        _discard(tmp, fd, dfd)
        raise
    os.close(fd)


def _discard(tmp: str, fd: int, dfd: int) -> None:
    """Remove our temporary name if it is still ours, and close its descriptor (the caller closes `dfd`)."""
    with contextlib.suppress(OSError):
        mine, there = os.fstat(fd), os.stat(tmp, dir_fd=dfd, follow_symlinks=False)
        if (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
            os.unlink(tmp, dir_fd=dfd)
    os.close(fd)


def create(path: Path, text: str) -> None:
    """A new file only the caller can read (0600), created exclusively (`O_EXCL | O_NOFOLLOW`) in a directory the
    caller or root owns: what another user prepared under that name, a file or a link, is refused, never written
    through. For what envaudit keeps to act on later (a snapshot `fix --restore` reads)."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        dfd = safedir.open_directory(directory)
    except FileNotFoundError:
        raise OutputError(f"cannot write {path}: directory {directory} does not exist") from None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        if os.fstat(dfd).st_uid not in (os.geteuid(), 0):
            raise OutputError(f"cannot write {path}: {directory} belongs to another user; give a path in one of yours")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path.name, flags, 0o600, dir_fd=dfd)
        except FileExistsError:
            raise OutputError(f"cannot write {path}: it exists already (envaudit writes a new one only)") from None
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            _write_all(fd, text.encode("utf-8", errors="surrogateescape"), path)
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def trusted_file(path: Path, what: str) -> None:
    """That a file envaudit will act on is a regular file the caller or root owns and nobody else may write (a
    snapshot whose interpreter `fix --restore` runs, a pyproject.toml whose settings a root `health` applies): not
    writable by others, nor by its group where root reads it (a group a user shares is theirs, not root's)."""
    try:
        found = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        raise OutputError(f"cannot read {path}: {exc.strerror or exc}") from None
    _trusted(found, path, what)


def _trusted(found: os.stat_result, path: Path, what: str) -> None:
    if not stat.S_ISREG(found.st_mode):
        raise OutputError(f"{path}: not a regular file, so not {what}")
    others = stat.S_IWOTH | (stat.S_IWGRP if os.geteuid() == 0 else 0)
    if found.st_uid not in (os.geteuid(), 0) or found.st_mode & others:
        raise OutputError(f"{path}: {what} another user owns or may write is not used")


def read_trusted(path: Path, limit: int, what: str) -> bytes:
    """At most `limit` bytes of a file `trusted_file` accepts, checked on the descriptor it is read from: opened
    once, without following a link or blocking on a FIFO, and its fstat judged, so the file checked is the file
    read (a check of the name and then an open by name can be swapped in between)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(f"{path}: not a regular file, so not {what}") from None
        raise OutputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeEncodeError):
        raise OutputError(f"{str(path)!a}: not a path a file can have") from None
    with os.fdopen(fd, "rb") as handle:
        _trusted(os.fstat(fd), path, what)
        try:
            return handle.read(limit)
        except OSError as exc:
            raise OutputError(f"cannot read {path}: {exc.strerror or exc}") from None
