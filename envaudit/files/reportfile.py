"""Reading a saved report, bounded: every way a file handed to `check`, `compare` or `triage` can be wrong is one line.

A report is user input (a node's report from last month, a file a colleague sent): it may be huge, a FIFO that
never ends, a directory, not UTF-8, nested beyond recursion, or hold a NaN. Writing lives in `safewrite`, which is
written for root in directories others can write to.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from envaudit.model.facts import ReportError
from envaudit.model.report import Report

MAX_REPORT_BYTES = 16 * 1024 * 1024  # a report is a few hundred KiB (a TPU audit of 1,000 imports: 3 MiB)


def read_bounded(path: Path, limit: int, what: str = "a saved report", *, follow: bool = True) -> bytes:
    """At most `limit` bytes of a regular file, read without blocking on a FIFO (bad input: ReportError).
    `follow=False`, for paths another user controls (a PATH entry's files, read as root): no symlink, and nothing
    but a regular file is even opened (opening some devices acts: a watchdog arms)."""
    try:
        seen = None if follow else os.lstat(path)
        if seen is not None and not stat.S_ISREG(seen.st_mode):
            raise ReportError(f"{path}: is not a regular file (or is a symbolic link), so not {what}")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, UnicodeEncodeError):  # a NUL, or a lone surrogate: no path the system can name
        raise ReportError(f"{str(path)!a}: not a path a file can have") from None
    info = os.fstat(fd)
    if seen is not None and (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise ReportError(f"{path}: changed while it was opened")
    mode = info.st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise ReportError(f"{path}: is a directory, not {what}")
        raise ReportError(f"{path}: is not a regular file (a device, FIFO or socket), so not {what}")
    with os.fdopen(fd, "rb") as handle:
        try:
            return handle.read(limit)
        except OSError as exc:
            raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _read(path: Path) -> bytes:
    """The bytes of a report file, never more than MAX_REPORT_BYTES."""
    raw = read_bounded(path, MAX_REPORT_BYTES + 1)
    if len(raw) > MAX_REPORT_BYTES:
        raise ReportError(f"{path}: larger than {MAX_REPORT_BYTES // 2**20} MiB, so not a report")
    return raw


def _no_constant(text: str) -> float:
    raise ValueError(f"{text} is not a finite number")  # NaN, Infinity: never in a report envaudit writes


def _check_text(value: Any) -> None:
    """Every string must be encodable (no lone surrogates), or printing it later would fail."""
    json.dumps(value, ensure_ascii=False).encode("utf-8")


def parse_json(text: str, path: object, what: str) -> Any:
    """A JSON document read strictly: no NaN or Infinity, no float beyond what Python converts, no lone surrogate;
    every way it can be wrong is a ReportError of one line naming the file and what it was to be."""
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_float)
        if "\\ud" in text or "\\uD" in text:  # only a \uD800-\uDFFF escape can make a lone surrogate
            _check_text(data)
    except RecursionError:
        raise ReportError(f"{path}: nested too deeply to be {what}") from None
    except UnicodeEncodeError:
        raise ReportError(f"{path}: contains text that is not valid Unicode (a lone surrogate)") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:  # a number beyond what Python converts, or not finite
        raise ReportError(f"{path}: not {what}: {str(exc).split(';')[0]}") from None
    return data


def read_report(path: Path) -> Report:
    """A saved report, validated; every way it can be wrong is a ReportError of one line naming the file."""
    raw = _read(path)
    if not raw.strip():
        raise ReportError(f"{path}: the file is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not UTF-8 text") from None
    data = parse_json(text, path, "a report")
    try:
        return Report.from_dict(data)
    except ReportError as exc:
        raise ReportError(f"{path}: {exc}") from None
    except RecursionError:
        raise ReportError(f"{path}: nested too deeply to be a report") from None


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value
