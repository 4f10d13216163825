"""What the tables over releases share: a release as jax compares it, a table's row for a release, and whether a
table read over a span of releases speaks of one. A release a table does not cover is unknown, never a finding: a
table that stops is not a claim that nothing came after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from envaudit.model.versions import release, version_or_none
from envaudit.rules.table import Span

Row = TypeVar("Row")


def numbers(version: str) -> tuple[int, ...]:
    """A version as jax's check_jaxlib_version compares it: its release numbers (.devN, rcN, +local cut), trailing
    zeros cut as PEP 440 compares them (`jaxlib==0.4.30.0` installs 0.4.30, which reports "0.4.30"); () for what is
    no version."""
    return release(version) or ()


def listed(version: str, releases: Sequence[str]) -> bool:
    """Whether a release is in a table's list of releases, as pip matches a pin to it (0.4.30.0 is 0.4.30)."""
    return numbers(version) in {numbers(item) for item in releases}


def is_release(version: str) -> bool:
    """A version a release table can speak of: a valid one, not a pre-release or a nightly (their pins differ)."""
    parsed = version_or_none(version)
    return parsed is not None and not parsed.is_prerelease


def row_of(rows: Mapping[str, Row], version: str) -> Row | None:
    """The row of a table keyed by release ("0.6.0") for a version that may be written otherwise (0.6, 0.6.0.0,
    0.6.0+cuda12): matched by release numbers, as jax compares them; None when the table has no such row."""
    wanted = numbers(version)
    return next((row for key, row in rows.items() if numbers(key) == wanted), None)


def covers(table: Span, version: str) -> bool:
    """Whether a table read over a span of releases (its covers_from and covers_to) speaks of this version."""
    return numbers(table["covers_from"]) <= numbers(version) <= numbers(table["covers_to"])


def newer_than(version: str) -> str:
    """The specifier of every release after this one that an installer will take: `>V` for a final release; for a
    pre-release or a development release `>=V,!=V` (`chromax>=0.0.3a0,!=0.0.3a0`), for pip takes no pre-release for
    `>0.0.3a0` (pip 23.2: "No matching distribution found for chromax>0.0.3a0", where 0.0.4a0 is the only newer
    release) and takes them for a `>=` that names one (PEP 440, "Handling of pre-releases"); it names no release
    that does not exist."""
    parsed = version_or_none(version)
    if parsed is None or not (parsed.is_prerelease or parsed.is_devrelease):
        return f">{version}"
    return f">={version},!={version}"
