"""What a re-derived table changed, as a reviewer reads it: rows added, changed and removed, not a text diff.

A table's rows are its keyed sub-tables (`[release."0.4.1"]`, `[minimum_jaxlib]`'s entries: keyed by their key)
and its arrays of tables (`[[use]]`, `[[release]]`: keyed by their identifying fields, a run of releases by the
first of its `versions` too; rows that still share a name are told apart by their order); a top-level value that
is neither is one row of its own name.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from typing import Any

# the fields that name a row of an array of tables, where it has them (else its whole content names it)
IDENTITY = ("package", "code", "name", "api", "jaxlib", "jax", "kind", "module")


@dataclass
class TableDiff:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def summary(self) -> str:
        return f"{len(self.added)} added, {len(self.changed)} changed, {len(self.removed)} removed"


def _key(section: str, row: dict[str, Any]) -> str:
    named = [f"{k}={row[k]}" for k in IDENTITY if isinstance(row.get(k), str)]
    versions = row.get("versions")
    if isinstance(versions, list) and versions and "api" not in row:  # a run of releases: named by where it starts
        named.append(f"from {versions[0]}")
    if not named:
        named = [json.dumps(row, sort_keys=True)[:60]]
    return f"{section}: {', '.join(named)}"


def rows(data: dict[str, Any]) -> dict[str, str]:
    """The table's rows: a name for each, and its content as canonical JSON."""
    found: dict[str, str] = {}
    for section, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for row in value:
                key = _key(section, row)
                while key in found:  # rows that share a name: numbered in file order
                    key += "'"
                found[key] = json.dumps(row, sort_keys=True)
        elif isinstance(value, dict) and value and all(isinstance(v, (dict, str, list)) for v in value.values()):
            for name, row in value.items():
                found[f"{section}.{name}"] = json.dumps(row, sort_keys=True)
        else:
            found[section] = json.dumps(value, sort_keys=True)
    return found


def between(old_text: str, new_text: str) -> TableDiff:
    """The rows a new version of a table adds, changes and removes against the old one (an old text that does not
    parse, or none, has no rows)."""
    try:
        old = rows(tomllib.loads(old_text)) if old_text else {}
    except tomllib.TOMLDecodeError:
        old = {}
    new = rows(tomllib.loads(new_text))
    return TableDiff(
        added=[k for k in new if k not in old],
        changed=[k for k in new if k in old and old[k] != new[k]],
        removed=[k for k in old if k not in new],
    )


def render(name: str, diff: TableDiff, limit: int = 12) -> list[str]:
    """The lines a refresh prints for one table: its counts, then each row named (up to `limit` per kind)."""
    lines = [f"{name}: {diff.summary()}"]
    for sign, keys in (("+", diff.added), ("~", diff.changed), ("-", diff.removed)):
        lines += [f"  {sign} {key}" for key in keys[:limit]]
        if len(keys) > limit:
            lines.append(f"  {sign} ... and {len(keys) - limit} more")
    return lines
