"""What a plan's builds measured here, remembered so that the same stack planned again costs no build.

Two memories, in envaudit's cache directory (`builds.json`, cheap to lose: a missing or unreadable file is a build
again):
- **asked**: what a request (the pins the installer was asked for, the Pythons, the index the user's configuration
  names) installed here, or the installer's refusal of it; the index moves (a new release of a package the pins
  leave open), so this is trusted for `ASKED_S` only;
- **measured**: what the imports probe measured in an environment of exactly this installed set, Python, platform,
  variables and probe code; that does not change while they do not, so it is kept until it is among the oldest.

Each is bounded (`MAX_ENTRIES`, the newest kept; an entry past `MAX_ENTRY_BYTES` is not kept), and the file by
`BUDGET` (the oldest entries go first). The keys are made by the caller (`collect/build.py`), who knows what a
measurement depends on; this module only stores, never raises.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Mapping
from typing import Any, Literal

from envaudit.files import cachedir

NAME = "builds.json"
MAX_ENTRIES = 48  # per memory
MAX_ENTRY_BYTES = 512 * 1024  # a measurement of a large stack (TensorFlow's hundreds of modules) is about 100 KiB
BUDGET = cachedir.MAX_BYTES // 2  # the whole file's JSON, well below what the cache reads back
ASKED_S = 24 * 3600.0  # how long what a request installed is trusted: the index moves

Memory = Literal["asked", "measured"]


def key(*parts: object) -> str:
    """A digest of what a value depends on (JSON of the parts, keys sorted)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _table() -> dict[str, dict[str, dict[str, Any]]]:
    found = cachedir.read_json(NAME)
    if not isinstance(found, dict):
        return {}
    return {
        memory: {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, dict)}
        for memory, entries in found.items()
        if memory in ("asked", "measured") and isinstance(entries, dict)
    }


def recall(memory: Memory, digest: str, *, now: float | None = None) -> dict[str, Any] | None:
    """The value kept under this key, or None (never kept, unreadable, or, for `asked`, older than ASKED_S)."""
    entry = _table().get(memory, {}).get(digest)
    if entry is None or not isinstance(entry.get("value"), dict):
        return None
    at = entry.get("at")
    if not isinstance(at, int | float) or isinstance(at, bool) or not math.isfinite(at):
        return None
    current = time.time() if now is None else now
    if at > current + 60 or (memory == "asked" and current - at > ASKED_S):
        return None
    value: dict[str, Any] = entry["value"]
    return value


def remember(memory: Memory, digest: str, value: Mapping[str, Any], *, now: float | None = None) -> bool:
    """Keep the value under this key (the oldest entries beyond MAX_ENTRIES go); False where it was not kept."""
    try:
        size = len(json.dumps(value))
    except (TypeError, ValueError):
        return False
    if size > MAX_ENTRY_BYTES:
        return False
    table = _table()
    entries = table.get(memory, {})
    entries.pop(digest, None)
    entries[digest] = {"at": time.time() if now is None else now, "value": dict(value)}
    table[memory] = dict(list(entries.items())[-MAX_ENTRIES:])
    # the file stays within what the cache reads back (cachedir.MAX_BYTES): past it, every entry would be lost at once
    sizes = {(m, k): len(json.dumps(v)) for m, kept in table.items() for k, v in kept.items()}
    total = sum(sizes.values())
    for old in [k for k in table[memory] if k != digest]:  # oldest first
        if total <= BUDGET:
            break
        total -= sizes[(memory, old)]
        del table[memory][old]
    return cachedir.write_json(NAME, table)
