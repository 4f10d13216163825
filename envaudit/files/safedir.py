"""Opening a directory as root without following a link that someone else could have planted or swapped.

A path checked and then opened by name can be changed in between: whoever can write to any directory on the way
can swap a component for a symbolic link to /etc, and root then writes there (or trusts a cache it did not make).
So a path is walked one component at a time with `O_NOFOLLOW`, each `openat` relative to the directory before
it: a component swapped for a link after the walk began makes the walk fail, never follow. A link found on the
way is followed only where nobody else could have put it there: in a directory that only root or this user can
write to, or in a sticky directory (/tmp) when the link itself is root's or this user's (others cannot replace it
there). What `trusted` accepts is also what the cache and the writers require of the directories they use.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup


class UntrustedPath(OSError):
    """A link on the way that another user could have planted; the message is one line for the user."""


def owners() -> tuple[int, ...]:
    return (0, os.geteuid())


def trusted(directory: os.stat_result, link: os.stat_result | None = None) -> bool:
    """Nobody but root and this user can change what `directory` holds (or `link`, in a sticky directory)."""
    if directory.st_uid not in owners():
        return False
    if directory.st_mode & 0o022 == 0:
        return True
    return bool(directory.st_mode & stat.S_ISVTX) and link is not None and link.st_uid in owners()


def open_directory(path: str | os.PathLike[str]) -> int:
    """A descriptor of the directory `path` names, reached without following an untrusted link (raises OSError:
    FileNotFoundError, NotADirectoryError, UntrustedPath...)."""
    return _walk(os.fspath(path) or ".", make=False, closed=False)


def _walk(text: str, make: bool, closed: bool) -> int:
    """The walk the openers share: with `closed`, each directory on the way must be `_closed`; with `make`, a
    missing component is made, 0700."""
    fd = os.open("/" if text.startswith("/") else ".", FLAGS)
    parts = [p for p in text.split("/") if p not in ("", ".")]
    links = 0
    try:
        while parts:
            part = parts.pop(0)
            if closed and not _closed(os.fstat(fd)):
                raise UntrustedPath(errno.EPERM, f"{text}: a directory on the way is open to other users")
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
            try:
                step = os.open(part, FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                here = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(here.st_mode):
                    raise
                links += 1
                if links > MAX_LINKS or not trusted(os.fstat(fd), here):
                    raise UntrustedPath(
                        errno.ELOOP, f"{part!r} on the way to {text} is a symbolic link in a directory others can write"
                    ) from None
                target = os.readlink(part, dir_fd=fd)
                if target.startswith("/"):
                    os.close(fd)
                    fd = os.open("/", FLAGS)
                parts[:0] = [p for p in target.split("/") if p not in ("", ".")]
                continue
            os.close(fd)
            fd = step
        return fd
    except BaseException:
        os.close(fd)
        raise


def nearest_existing(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(descriptor of the deepest existing directory on `path`, how many components below it are missing), or
    None when the walk fails for another reason than a missing component."""
    text, missing = os.path.normpath(os.fspath(path)), 0
    while True:
        try:
            return open_directory(text), missing
        except FileNotFoundError:
            parent = os.path.dirname(text)
            if parent == text:
                return None
            text, missing = parent, missing + 1
        except OSError:
            return None


def _closed(directory: os.stat_result) -> bool:
    """Only root or this user can change which entries `directory` holds (in a sticky one, only their own)."""
    return directory.st_uid in owners() and (directory.st_mode & 0o022 == 0 or bool(directory.st_mode & stat.S_ISVTX))


def make_private(path: str | os.PathLike[str], make: bool = True) -> int:
    """A descriptor of the directory `path` names, made (0700) where it is missing, when nobody else can change
    what the path leads to: every directory on the way is root's or this user's and closed to others' writes (a
    sticky one such as /tmp only holds entries of root's or this user's on the way), a link is followed only
    where `trusted`, and the last directory is this user's, never writable by others (and made private). A
    component someone else made first, or made open, fails the walk; so what a program is then told to use is
    already there, and nobody else can replace it. Without `make`, the same checks of a path that must exist
    (a reader's: FileNotFoundError when it does not). Raises OSError (UntrustedPath when it is not private)."""
    text = os.fspath(path) or "."
    fd = _walk(text, make=make, closed=True)
    try:
        here = os.fstat(fd)
        if here.st_uid != os.geteuid():
            raise UntrustedPath(errno.EPERM, f"{text} is not this user's")
        if here.st_mode & 0o022:  # others could have planted entries already
            raise UntrustedPath(errno.EPERM, f"{text} is open to other users' writes")
        if stat.S_IMODE(here.st_mode) & 0o077:
            os.fchmod(fd, stat.S_IMODE(here.st_mode) & 0o700)  # readable by others (an old umask): private now
        return fd
    except BaseException:
        os.close(fd)
        raise


def owned(path: str | os.PathLike[str]) -> bool:
    """Whether the directory `path` names exists and is this user's alone: every directory on the way root's or
    this user's and closed to others' writes (as `make_private` requires, without making or changing anything),
    the last one this user's and writable by nobody else. What another program keeps there (uv's cache of wheels)
    is then this user's own; a directory another user owns, or could swap, is not (root with a user's
    XDG_CACHE_HOME under `sudo -E` or `su`)."""
    try:
        fd = _walk(os.fspath(path) or ".", make=False, closed=True)
    except OSError:
        return False
    try:
        here = os.fstat(fd)
    finally:
        os.close(fd)
    return here.st_uid == os.geteuid() and here.st_mode & 0o022 == 0


def trusted_file(path: str | os.PathLike[str]) -> bool:
    """Whether `path` names a regular file (not a link) that only root or this user can change, in a directory
    reached as `owned` requires of its way: a configuration file whose words this user may act on."""
    text = os.fspath(path)
    parent, name = os.path.split(text)
    if not name:
        return False
    try:
        directory = _walk(parent or ".", make=False, closed=True)
    except OSError:
        return False
    try:
        if not _closed(os.fstat(directory)):  # others could replace the file
            return False
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except OSError:
        return False
    finally:
        os.close(directory)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return stat.S_ISREG(st.st_mode) and st.st_uid in owners() and st.st_mode & 0o022 == 0


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A new private directory (0700, this user's) to work in, removed afterwards: a build's, or the working
    directory of a program envaudit starts, so that nothing another user wrote is found there (a `json.py` that
    `python -c` or `-m` would import first, a `uv.toml` uv would read). In $TMPDIR where the way to it is closed to
    others (`owned`; root under `sudo -E` keeps a user's TMPDIR), else in /tmp (raises OSError when neither is)."""
    import shutil  # lazily: the hook's warm path reads safedir too
    import tempfile

    home = None
    for where in dict.fromkeys([tempfile.gettempdir(), "/tmp"]):
        try:
            made = Path(tempfile.mkdtemp(prefix=prefix, dir=where))
        except OSError:
            continue
        if owned(made):
            home = made
            break
        shutil.rmtree(made, ignore_errors=True)
    if home is None:
        raise UntrustedPath(errno.EPERM, "no private temporary directory: $TMPDIR and /tmp are open to other users")
    held = _hold(home)  # while it is held, no later sweep takes it for a leftover
    try:
        sweep(home.parent, prefix, keep=home)
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if held is not None:
            os.close(held)


LEFTOVER_S = 60.0  # a directory this old, of this user, that no process holds, is a killed run's leftover


def _hold(directory: Path) -> int | None:
    """An exclusive lock on the directory itself (flock on its descriptor), held by this process until closed."""
    import fcntl

    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def sweep(where: Path, prefix: str, keep: Path | None = None) -> list[Path]:
    """Remove what killed runs left in `where` (a SIGKILLed plan left 5,701 files, 635 MB): only this user's own
    directories named `prefix*` (never a link, another user's, or one of other permissions than envaudit makes),
    older than LEFTOVER_S and held by no process (`_hold` fails on one a live run holds). Returns what it removed."""
    import shutil
    import time

    removed: list[Path] = []
    try:
        names = [n for n in os.listdir(where) if n.startswith(prefix)]
    except OSError:
        return removed
    for name in names:
        path = where / name
        if keep is not None and path == keep:
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue
        mine = info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o700
        if not stat.S_ISDIR(info.st_mode) or not mine or time.time() - info.st_mtime < LEFTOVER_S:
            continue
        held = _hold(path)
        if held is None:  # a live run holds it (or it cannot be opened): not ours to take
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            os.close(held)
    return removed
