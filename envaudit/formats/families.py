"""Which Prometheus family each numeric probe metric is exported in: one quantity and one unit per family.

A probe names its metrics by the conventions of the metrics' table (`envaudit/model/metrics.toml`: `rel_*` errors,
`rerun_*` differences, `effective_bits_*`, ...), and the families are declared in that same table, under
`[[family]]`, by the metrics' kinds or by a name pattern: so a new probe metric that follows the conventions is
exported with no edit here or in the exporter. A format imports nothing from the judge (docs/architecture.md,
"Layers"): a metric's kind is `model/metrics.py`'s, the judge's too (tests/formats/test_families.py holds the two
readings equal on every metric name the probes write).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from envaudit.model import metrics
from envaudit.model.metrics import TableError as TableError

TABLE = metrics.DATA
NAME = re.compile(r"envaudit_probe_[a-z0-9_]+")  # Prometheus' metric-name characters, envaudit's prefix
NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}  # as a probe writes them (repr, strict JSON)


@dataclass(frozen=True)
class Family:
    name: str
    help: str
    kinds: frozenset[str] = frozenset()  # the judge's kinds it holds
    pattern: re.Pattern[str] | None = None  # or the names it holds (of metrics the judge does not judge)


@dataclass(frozen=True)
class Families:
    kinds: metrics.Patterns  # the [[metric]] patterns, in order
    families: tuple[Family, ...]

    def kind(self, metric: str) -> str:
        """The kind of a metric ("report" when no pattern matches), as the judge reads it (model/metrics.py)."""
        return metrics.kind_of(metric, self.kinds)

    def of(self, metric: str) -> Family | None:
        """The first family that holds the metric, by its kind or by its name; None: it is not exported."""
        kind = self.kind(metric)
        return next(
            (f for f in self.families if kind in f.kinds or (f.pattern is not None and f.pattern.search(metric))),
            None,
        )


def parse(data: dict[str, object]) -> Families:
    declared, entries = data.get("metric"), data.get("family")
    if not isinstance(declared, list) or not isinstance(entries, list):
        raise TableError("metrics.toml needs [[metric]] and [[family]] entries")
    kinds = metrics.patterns(declared)
    known = {kind for _, kind in kinds}
    families: list[Family] = []
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) - {"name", "help", "kinds", "pattern"}:
            raise TableError(f"a [[family]] entry has name, help, and kinds or a pattern: {entry!r}")
        name, help_text, held, pattern = entry.get("name"), entry.get("help"), entry.get("kinds"), entry.get("pattern")
        if not isinstance(name, str) or not NAME.fullmatch(name) or name in {f.name for f in families}:
            raise TableError(f"a [[family]] name must be a new envaudit_probe_* metric name: {name!r}")
        if not isinstance(help_text, str) or not help_text.strip() or "\n" in help_text:
            raise TableError(f"[[family]] {name} needs a help text of one line")
        if (held is None) == (pattern is None):
            raise TableError(f"[[family]] {name} holds metrics by kinds or by a pattern, one of the two")
        if held is not None and (not isinstance(held, list) or not held or not set(held) <= known):
            raise TableError(f"[[family]] {name}: kinds must be among the [[metric]] kinds {sorted(known)}")
        families.append(Family(name, help_text, frozenset(held or ()), _compiled(name, pattern)))
    return Families(kinds, tuple(families))


def _compiled(name: str, pattern: object) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise TableError(f"[[family]] {name}: pattern must be a regular expression")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise TableError(f"[[family]] {name}: pattern {pattern!r} is not a regular expression: {exc}") from None


@cache
def load(path: Path = TABLE) -> Families:
    return parse(metrics.read(path))


@cache
def family(metric: str) -> Family | None:
    """The family of a metric in the shipped table (memoised: a fleet's reports share a few dozen names)."""
    return load().of(metric)


def value(raw: object) -> float | None:
    """A metric's value as a sample: a number, or a non-finite one as the probe wrote it ("inf"); None otherwise
    (a dtype, a flag, an error text)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return float(raw)
    return NON_FINITE.get(raw) if isinstance(raw, str) else None
