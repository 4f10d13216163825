"""Reading saved reports and writing results without ever leaving a half-written file; terminal colour.

A report or a textfile-collector file is written to a temporary file in the same directory, flushed to disk and
renamed over the target: a reader (node_exporter, a scheduler, a person) sees the old file or the new one, never
a torn one, and a failure leaves the old file untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import TextIO

from envaudit.model import Report, ReportError


class OutputError(OSError):
    """The output could not be written; the message is one line for the user."""


def read_report(path: Path) -> Report:
    """A saved report, validated; every way it can be wrong is a ReportError of one line naming the file."""
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise ReportError(f"{path}: is a directory, not a report file") from None
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise ReportError(f"{path}: the file is empty")
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ReportError(f"{path}: nested too deeply to be a report") from None
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    try:
        return Report.from_dict(data)
    except ReportError as exc:
        raise ReportError(f"{path}: {exc}") from None
    except RecursionError:
        raise ReportError(f"{path}: nested too deeply to be a report") from None


def write_atomic(path: Path, text: str) -> None:
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise OutputError(f"cannot write {path}: directory {directory} does not exist")
    tmp_name = None
    try:
        with tempfile.NamedTemporaryFile(
            "w", dir=directory, prefix=f".{path.name}.", suffix=".tmp", delete=False, encoding="utf-8"
        ) as handle:
            tmp_name = handle.name
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def use_color(stream: TextIO) -> bool:
    """Colour on a TTY unless NO_COLOR is set to anything (https://no-color.org)."""
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()
