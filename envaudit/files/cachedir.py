"""Where envaudit keeps derived data that is cheap to lose: parsed rules, the hook's verdicts, jax's compilation
cache. Everything stored there is rebuilt when missing or unreadable, so the directory may be deleted any time;
and since the probe child loads compiled programs from it, a cache that someone else could write is worse than
none: envaudit then runs without one.

ENVAUDIT_CACHE_DIR overrides the location (tests, read-only homes); otherwise, per the XDG base directory
specification, $XDG_CACHE_HOME/envaudit when that is an absolute path (a relative one is ignored), else
~/.cache/envaudit when HOME is an existing directory of this user's (so root with HOME=/nonexistent creates
nothing there), else a private $TMPDIR/envaudit-<uid> that must be a directory of this user's, not a link, with
no access for others. Whichever it is, it is used only if nobody else can change it: reached without an untrusted
link (`safedir`), this user's, writable by nobody else, or, not made yet, below a directory of root's or this
user's that nobody else can write to (root keeps a user's XDG_CACHE_HOME under `su`; that user's directory is then
no cache of root's). Before anything is written there or a child is told to use it, the whole path is made and
verified (`private`: 0700, every directory on the way root's or this user's), so nobody can be first to make a
missing component below a sticky /tmp. Reading never blocks (a FIFO in its place is no cache) and never reads
more than 16 MiB.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from envaudit.files import safedir

MAX_BYTES = 16 * 1024 * 1024


def _own_directory(path: Path, private: bool) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return False
    return not private or stat.S_IMODE(st.st_mode) & 0o077 == 0


def _private_tmp() -> Path | None:
    import tempfile  # lazily: it imports more than the hook's warm path may spend

    path = Path(tempfile.gettempdir()) / f"envaudit-{os.geteuid()}"
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    return path if _own_directory(path, private=True) else None  # a predictable name: trust only what is ours


def _candidate() -> Path | None:
    explicit = os.environ.get("ENVAUDIT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "envaudit"
    home = os.environ.get("HOME", "")
    if os.path.isabs(home) and _own_directory(Path(home), private=False):
        return Path(home) / ".cache" / "envaudit"
    return _private_tmp()


def _nobody_else_can_change(path: Path) -> bool:
    found = safedir.nearest_existing(path)
    if found is None:
        return False
    fd, missing = found
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if missing:  # envaudit will create the rest, 0700 (and check it again then: in /tmp another may be first)
        return st.st_uid in safedir.owners() and (st.st_mode & 0o022 == 0 or bool(st.st_mode & stat.S_ISVTX))
    return st.st_uid == os.geteuid() and st.st_mode & 0o022 == 0


def cache_dir() -> Path | None:
    """The cache directory, or None when there is no safe one (then envaudit works without a cache)."""
    path = _candidate()
    return path if path is not None and _nobody_else_can_change(path) else None


def private(name: str = "", make: bool = True) -> Path | None:
    """The cache directory (or its subdirectory `name`), made private before anything is told to use it: every
    directory on the way created 0700 and verified by `safedir.make_private`, so nobody else can be first to make
    a component (a path below a sticky /tmp) or replace one later. Without `make`, one that exists already and
    passes the same checks (a reader's: a directory whose parent another user owns can be swapped under it).
    None when there is no safe one."""
    directory = cache_dir()
    if directory is None:
        return None
    path = directory / name if name else directory
    try:
        os.close(safedir.make_private(path, make=make))
    except OSError:
        return None
    return path


def read_json(name: str) -> Any | None:
    """The cached JSON value, or None when it is missing, unreadable or not a regular file (never raises)."""
    directory = private(make=False)
    if directory is None:
        return None
    try:
        fd = os.open(directory / name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return json.loads(handle.read(MAX_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)


def write_json(name: str, value: Any) -> bool:
    """Store atomically; False when the cache cannot be written, which is never an error."""
    try:
        return write_text(name, json.dumps(value))
    except (TypeError, ValueError):
        return False


def write_text(name: str, text: str) -> bool:
    """Store atomically (safewrite.write); False when there is no cache or it cannot be written."""
    from envaudit.files.safewrite import write  # lazily: the hook's warm path only reads

    directory = private()
    if directory is None:
        return False
    try:
        write(directory / name, text)
        return True
    except OSError:
        return False


def driver_version() -> str:
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as handle:
            return handle.readline().strip()
    except OSError:
        return ""


def fingerprint() -> str:
    """The import hook's cache key: everything its verdict depends on (read by `_hook_boot` and `hook status`)."""
    import hashlib

    from envaudit import __version__
    from envaudit.model import redact, scope

    # the environment, not the name it was started by (bin/python and bin/python3 share one verdict)
    where = [sys.prefix, os.path.realpath(sys.executable)]
    parts = [__version__, *where, driver_version(), repr(sorted(redact.select_env(os.environ).items()))]
    for entry in dict.fromkeys(sys.path):
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in sorted(names):  # every distribution (pip-check answers depend on any), stat only ours
            if name.endswith(".dist-info"):
                relevant = scope.is_relevant(name.partition("-")[0])
                parts.append(f"{entry}/{name}:{_mtime(os.path.join(entry, name)) if relevant else 0}")
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # envaudit/
    rules = os.path.join(package, "rules", "data")
    parts += [f"{n}:{_mtime(os.path.join(rules, n))}" for n in sorted(os.listdir(rules))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0
