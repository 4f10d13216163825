"""Writing a file as root in a directory that others may write to, without ever writing through their links.

envaudit runs as root from Slurm and from a privileged DaemonSet, and node_exporter's textfile directory is often
owned by another account. So a report is written to a temporary file created in the target's directory by an open
directory descriptor (`O_EXCL | O_NOFOLLOW`), filled, given its mode and owner, and flushed through its own file
descriptor (never by path), then renamed over the target relative to that directory; the rename is verified (the
target is our inode), so a swapped name is a reported failure, never root's chmod or write on someone else's file.
A reader sees the old file or the new one, never half of one; a failure leaves the old file as it was.

What the user had keeps its nature: an existing report keeps its mode (and, written by root, its owner); a new one
gets the umask's mode. A symbolic link, a directory, a socket or a block device is never replaced: it is refused.
A character device or a FIFO (`/dev/null`, `/dev/stdout`, a pipe to a collector) is opened and written, since
nothing can be renamed over it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
from pathlib import Path


class OutputError(OSError):
    """The output could not be written; the message is one line for the user."""


_FD_PATH = re.compile(r"^/(?:dev/fd|proc/self/fd)/(\d+)$")
_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}


def write(path: Path, text: str) -> None:
    data = text.encode("utf-8", errors="surrogateescape")
    target = str(path)
    fd = _STREAMS.get(target)
    match = _FD_PATH.match(target)
    if fd is not None or match:
        return _write_all(fd if fd is not None else int(match[1]) if match else 1, data, path)
    try:
        here = os.lstat(path)
    except FileNotFoundError:
        here = None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    if here is not None and stat.S_ISLNK(here.st_mode):
        try:
            there = os.stat(path)
        except OSError:
            there = None
        if there is None or not (stat.S_ISCHR(there.st_mode) or stat.S_ISFIFO(there.st_mode)):
            raise OutputError(f"cannot write {path}: it is a symbolic link; give the file it points to")
        return _write_stream(path, data)
    if here is not None and (stat.S_ISCHR(here.st_mode) or stat.S_ISFIFO(here.st_mode)):
        return _write_stream(path, data)
    if here is not None and not stat.S_ISREG(here.st_mode):
        raise OutputError(f"cannot write {path}: it is {_kind(here.st_mode)}, not a regular file")
    return _replace(path, data, here)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a file envaudit writes"


def _write_all(fd: int, data: bytes, path: Path) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_stream(path: Path, data: bytes) -> None:
    """A character device or a FIFO: opened without blocking (a FIFO nobody reads is an error, not a hang)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        why = "no process is reading it" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
        raise OutputError(f"cannot write {path}: {why}") from None
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        _write_all(fd, data, path)
    finally:
        os.close(fd)


def _replace(path: Path, data: bytes, old: os.stat_result | None) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise OutputError(f"cannot write {path}: directory {directory} does not exist") from None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    tmp = f".{path.name}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dfd)
    except OSError as exc:
        os.close(dfd)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        _write_all(fd, data, path)
        if old is not None:  # what the user had keeps its mode and, written by root, its owner
            os.fchmod(fd, stat.S_IMODE(old.st_mode))
            if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
                os.fchown(fd, old.st_uid, old.st_gid)
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
    os.close(dfd)


def _discard(tmp: str, fd: int, dfd: int) -> None:
    """Remove our temporary name if it is still ours, and close both descriptors."""
    with contextlib.suppress(OSError):
        mine, there = os.fstat(fd), os.stat(tmp, dir_fd=dfd, follow_symlinks=False)
        if (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
            os.unlink(tmp, dir_fd=dfd)
    os.close(fd)
    os.close(dfd)
