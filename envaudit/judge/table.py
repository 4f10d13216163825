"""The judge's data (`model/metrics.toml`): which kind each probe metric is (`model/metrics.py`, which the formats
read too), and the bounds of each dtype and precision class; loaded once, validated, so a misspelt kind is an error
at load time rather than a metric silently unjudged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from envaudit.model import metrics
from envaudit.model.metrics import DATA, KINDS, REPORT, TableError, kind

__all__ = [
    "DATA",
    "KINDS",
    "PLATFORMS",
    "REPORT",
    "STATUSES",
    "PrecisionClass",
    "Table",
    "TableError",
    "kind",
    "load",
    "parse",
]

PLATFORMS = ("cpu", "gpu", "tpu", "other")  # the keys of [platform_error.<dtype>] (classes.platform_class)
STATUSES = ("error", "crash", "timeout")  # probe statuses that are findings by themselves; a rule may explain them


@dataclass(frozen=True)
class PrecisionClass:
    name: str
    bound: float
    why: str  # the rule explaining a warning within the class is the one whose `explains` names default_error


@dataclass(frozen=True)
class Table:
    patterns: metrics.Patterns
    error: dict[str, float]  # dtype -> bound at HIGHEST
    classes: dict[str, PrecisionClass]
    platform: dict[str, dict[str, float]]  # dtype -> platform class -> bound of a platform_error

    def kind_of(self, metric: str) -> str:
        return metrics.kind_of(metric, self.patterns)

    def error_bound(self, dtype: str) -> float:
        return self.error.get(dtype, self.error["float32"])

    def platform_bound(self, dtype: str, platform: str) -> float:
        """The bound of a platform_error: what the platform class documents or was measured to give."""
        bounds = self.platform.get(dtype, self.platform["float32"])
        return bounds.get(platform, bounds["other"])


def parse(data: dict[str, object]) -> Table:
    entries, error, classes = data.get("metric"), data.get("error"), data.get("class")
    if not isinstance(entries, list) or not isinstance(error, dict) or not isinstance(classes, dict):
        raise TableError("metrics.toml needs [[metric]] entries, an [error] table and [class.*] tables")
    patterns = metrics.patterns(entries)
    if not {"float32", "float64"} <= set(error) or not all(isinstance(v, float) for v in error.values()):
        raise TableError("[error] needs float32 and float64 bounds")
    found = {}
    for name, spec in classes.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("bound"), float):
            raise TableError(f"[class.{name}] needs a bound")
        found[name] = PrecisionClass(name, spec["bound"], str(spec.get("why", "")))
    if not {"float32", "float64", "tf32", "bf16"} <= set(found):
        raise TableError("metrics.toml needs the classes float32, float64, tf32 and bf16")
    platform = data.get("platform_error")
    if not isinstance(platform, dict) or not {"float32", "float64"} <= set(platform):
        raise TableError("[platform_error] needs float32 and float64 tables of bounds per platform class")
    bounds: dict[str, dict[str, float]] = {}
    for dtype, spec in platform.items():
        if (
            not isinstance(spec, dict)
            or set(spec) != set(PLATFORMS)
            or not all(isinstance(v, float) for v in spec.values())
        ):
            raise TableError(f"[platform_error.{dtype}] needs a bound for each of {PLATFORMS}")
        bounds[str(dtype)] = {str(k): float(v) for k, v in spec.items()}
    return Table(tuple(patterns), {str(k): float(v) for k, v in error.items()}, found, bounds)


@cache
def load(path: Path = DATA) -> Table:
    return parse(metrics.read(path))
