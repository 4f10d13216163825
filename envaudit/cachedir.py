"""Where envaudit keeps derived data that is cheap to lose: parsed rules, the hook's verdicts, jax's compilation
cache. Everything stored there is rebuilt when missing or unreadable, so the directory may be deleted any time.

ENVAUDIT_CACHE_DIR overrides the location (tests, read-only homes); otherwise XDG_CACHE_HOME/envaudit or
~/.cache/envaudit, per the XDG base directory specification.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    explicit = os.environ.get("ENVAUDIT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no HOME and no passwd entry (a bare container user): a per-user temporary place
            return Path(tempfile.gettempdir()) / f"envaudit-{os.getuid()}"
    return Path(base) / "envaudit"


def read_json(name: str) -> Any | None:
    """The cached JSON value, or None when it is missing or unreadable (never raises)."""
    try:
        return json.loads((cache_dir() / name).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def write_json(name: str, value: Any) -> bool:
    """Store atomically; False when the cache cannot be written, which is never an error."""
    try:
        return write_text(name, json.dumps(value))
    except (TypeError, ValueError):
        return False


def write_text(name: str, text: str) -> bool:
    """Store atomically (files.write_atomic); False when the cache cannot be written."""
    from envaudit.files import write_atomic  # lazily: the hook's warm path only reads

    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        write_atomic(cache_dir() / name, text)
        return True
    except OSError:
        return False
