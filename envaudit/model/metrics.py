"""The vocabulary of probe metrics: which kind a metric's name is, and the one table that says it (`metrics.toml`,
beside this module), which both the judge and the formats read through here.

A probe names its metrics by the table's conventions (`rel_*` errors, `rerun_*` differences, `effective_bits_*`,
...); a metric's kind is that of the first `[[metric]]` pattern matching its name, and one that matches none is
reported, not judged. The same table holds what the judge bounds each kind by (`[error]`, `[class.*]`,
`[platform_error]`: judge/table.py) and the Prometheus families each kind is exported in (`[[family]]`:
formats/families.py), so a new metric named by the conventions is judged and exported with no edit.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("metrics.toml")
KINDS = (
    "error",
    "default_error",
    "platform_error",
    "rerun",
    "nondeterministic",
    "dtype",
    "documented_default",
    "raised",
    "wrong_count",
)
REPORT = "report"  # a metric that matches no pattern: reported, not judged
Patterns = tuple[tuple[re.Pattern[str], str], ...]  # the [[metric]] patterns and their kinds, in order


class TableError(ValueError):
    """metrics.toml does not follow its format; the message names what is wrong."""


def read(path: Path = DATA) -> dict[str, object]:
    """The table as TOML reads it (each reader validates the part it uses)."""
    with path.open("rb") as handle:
        return tomllib.load(handle)


def patterns(entries: object) -> Patterns:
    """The `[[metric]]` entries, each a pattern and a kind among KINDS, in order."""
    if not isinstance(entries, list):
        raise TableError("metrics.toml needs [[metric]] entries")
    found = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kind") not in KINDS or not isinstance(entry.get("pattern"), str):
            raise TableError(f"a [[metric]] entry needs a pattern and a kind among {KINDS}: {entry!r}")
        found.append((re.compile(entry["pattern"]), str(entry["kind"])))
    return tuple(found)


def kind_of(metric: str, known: Patterns) -> str:
    """The kind of the first pattern that matches the metric's name; REPORT when none does."""
    return next((kind for pattern, kind in known if pattern.search(metric)), REPORT)


@cache
def shipped() -> Patterns:
    return patterns(read().get("metric"))


@cache
def kind(metric: str) -> str:
    """The kind of a metric in the shipped table (memoised: a fleet's thousand reports share a dozen names)."""
    return kind_of(metric, shipped())
