"""Where the suite's CPU goes: each test's CPU seconds (its process's and the children it waited for), grouped by
file and by marker, the figure that bounds CI on a machine with few cores (the suite is CPU-bound there: more
workers than cores did not shorten it). CPU seconds, unlike wall time, hold on a busy machine too.

usage: python -m scripts.suite_cpu [--top N] [PYTEST ARGS ...]

It runs `python -m pytest -q -n auto` with the arguments given (every test by default) and a plugin that records
each test's CPU in a temporary directory, then prints the totals, the files and the tests that cost most.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUT = "SUITE_CPU_OUT"  # the directory the plugin writes to, one file per worker
MARKERS = ("jax", "slow", "realenv", "integration")


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, waited.ru_utime + waited.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """The plugin: a test's CPU, its own and its children's, and its wall time, as one JSON line."""
    own, waited = _cpu()
    started = time.monotonic()
    yield
    own_after, waited_after = _cpu()
    row = {
        "id": item.nodeid,
        "own": own_after - own,
        "children": waited_after - waited,
        "wall": time.monotonic() - started,
        "markers": sorted({m.name for m in item.iter_markers()} & set(MARKERS)),
    }
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(Path(os.environ[OUT]) / f"{worker}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def report(rows: list[dict[str, Any]], top: int) -> list[str]:
    cpu = {r["id"]: r["own"] + r["children"] for r in rows}
    total = sum(cpu.values())
    lines = [f"{len(rows)} tests, {total:.0f} CPU s ({sum(r['wall'] for r in rows):.0f} s of summed wall time)"]
    by_marker: dict[str, float] = collections.defaultdict(float)
    for r in rows:
        by_marker[", ".join(r["markers"]) or "(fast loop)"] += cpu[r["id"]]
    lines += [f"  {s:7.1f} s {100 * s / total:5.1f}%  {m}" for m, s in sorted(by_marker.items(), key=lambda x: -x[1])]
    by_file: dict[str, float] = collections.defaultdict(float)
    for r in rows:
        by_file[r["id"].split("::")[0]] += cpu[r["id"]]
    lines.append(f"files costing most (of {len(by_file)}):")
    lines += [f"  {s:7.1f} s  {f}" for f, s in sorted(by_file.items(), key=lambda x: -x[1])[:top]]
    lines.append("tests costing most:")
    lines += [f"  {cpu[r['id']]:7.1f} s  {r['id']}" for r in sorted(rows, key=lambda r: -cpu[r["id"]])[:top]]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--top", type=int, default=20)
    options, rest = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory() as out:
        env = {
            **os.environ,
            OUT: out,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        command = [sys.executable, "-m", "pytest", "-q", "-n", "auto", "-p", "scripts.suite_cpu", *rest]
        done = subprocess.run(command, cwd=ROOT, env=env, check=False)
        rows = [json.loads(line) for path in Path(out).glob("*.jsonl") for line in path.read_text().splitlines()]
    print("\n".join(report(rows, options.top)) if rows else "no test ran")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
