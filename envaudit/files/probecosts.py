"""What each probe took here the last time it ran to its end with jax's compilation cache: the cost a total bound
plans with on the next run. A probe's declared cost is a cold cache's (seconds of compiling on a TPU); once its
programs are cached the same probe takes a tenth of it (conv_chain 4.8 s cold, 0.34 s warm on a TPU v5e), so a
node's second health check runs every probe where its first could run only some.

Kept in envaudit's cache directory (`probe-costs.json`, cheap to lose: a missing or unreadable file is the declared
costs again), per audited interpreter and platform class; a run that did not end (cut, crashed, hung) forgets its
time, for its programs were not cached. A run's first time here was a cold cache's: what it spent compiling
(`compile_s`, where the probe says) is mostly what the cache saves next time, so it is kept as `WARM_SHARE` of that
(measured on a TPU v5e: conv_chain 4.8 s cold of which 4.4 s compiling, 0.34 s warm). Bounded: the newest
`MAX_KEYS` interpreters, `MAX_RUNS` runs each.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from envaudit.files import cachedir

NAME = "probe-costs.json"
MAX_KEYS = 32
MAX_RUNS = 64
MAX_S = 3600.0  # a time past this is no cost a bound plans with
WARM_SHARE = 0.1  # of a first run's compile time, what loading the compiled programs from the cache costs


def key(python: str, platform: str) -> str:
    return f"{platform}:{python}"


def _table() -> dict[str, dict[str, float]]:
    found = cachedir.read_json(NAME)
    if not isinstance(found, dict):
        return {}
    return {
        k: {label: float(s) for label, s in v.items() if isinstance(label, str) and _seconds(s)}
        for k, v in found.items()
        if isinstance(k, str) and isinstance(v, dict)
    }


def _seconds(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < MAX_S and math.isfinite(value)


def remembered(where: str) -> dict[str, float]:
    """The probe runs' times here (label -> seconds), where each last ran to its end."""
    return _table().get(where, {})


def remember(where: str, ended: Mapping[str, tuple[float, float | None]], cut: Iterable[str]) -> None:
    """Keep the times of the runs that ended (`ended`: label -> its seconds, and of them its seconds compiling
    where it says) and forget those that did not (`cut`); never raises."""
    table, gone = _table(), set(cut)
    before = table.pop(where, {})
    runs = {label: s for label, s in before.items() if label not in gone}
    for label, (seconds, compiling) in ended.items():
        first = label not in before and compiling is not None
        cost = seconds - (1 - WARM_SHARE) * compiling if first and compiling is not None else seconds
        if _seconds(cost):
            runs[label] = round(cost, 3)
    if not runs and not table:
        return
    newest = dict(list(runs.items())[-MAX_RUNS:])
    kept = dict(list(table.items())[-(MAX_KEYS - 1) :]) if MAX_KEYS > 1 else {}
    cachedir.write_json(NAME, {**kept, where: newest})
