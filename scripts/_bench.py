"""Shared by the benchmark scripts: whole-process wall times of commands, alternated A B A B in one run so that a
noisy machine's drift hits both sides alike. Medians and their ratio are what the scripts print; a `Bench` keeps the
figures a script reports and, where `--record FILE` was given, writes them as one record (scripts/_benchrecords.py)
that `python -m scripts.bench_table` renders into docs/benchmarks.md."""

from __future__ import annotations

import importlib.metadata
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from envaudit.model.exitcodes import BadInput
from scripts._benchrecords import MEASURED, Figure, Median, Record, Unit, refuse, save, this_machine, today, writable

ROOT = Path(__file__).resolve().parent.parent
ENVAUDIT = [sys.executable, "-m", "envaudit"]
JAX_INFO = [sys.executable, "-c", "import jax; jax.print_environment_info()"]


def env(**extra: str) -> dict[str, str]:
    base = {**os.environ, **extra}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return base


def wall(cmd: list[str], environ: dict[str, str], before: Callable[[], None] | None = None) -> float:
    if before is not None:
        before()
    start = time.perf_counter()
    subprocess.run(cmd, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def compare(
    a: list[str], b: list[str], runs: int, environ: dict[str, str], before_a: Callable[[], None] | None = None
) -> tuple[float, float]:
    """Median wall time of a and of b over `runs` alternated runs each, after one warm-up of each."""
    wall(a, environ, before_a), wall(b, environ)
    times_a, times_b = [], []
    for _ in range(runs):
        times_a.append(wall(a, environ, before_a))
        times_b.append(wall(b, environ))
    return statistics.median(times_a), statistics.median(times_b)


RECORD_HELP = "also keep the result as one record in FILE (docs/benchmarks.json: then python -m scripts.bench_table)"


def jax_release(python: str) -> str | None:
    """The jax release `python` imports, from its distribution's metadata (jax itself is not imported)."""
    if python == sys.executable:
        try:
            return importlib.metadata.version("jax")
        except importlib.metadata.PackageNotFoundError:
            return None
    asked = "import importlib.metadata as m; print(m.version('jax'))"
    done = subprocess.run([python, "-I", "-c", asked], capture_output=True, text=True, timeout=60, check=False)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def record_option(argv: list[str]) -> tuple[list[str], Path | None]:
    """`argv` without `--record FILE` (or `--record=FILE`), and FILE, for the scripts that read sys.argv by hand."""
    rest, path = [], None
    items = iter(argv)
    for item in items:
        if item == "--record":
            given = next(items, None)
            if given is None:
                refuse(BadInput("--record needs a FILE"))
            path = Path(given)
        elif item.startswith("--record="):
            path = Path(item.removeprefix("--record="))
        else:
            rest.append(item)
    return rest, path


def kept(value: float) -> float:
    """A measured value as a record keeps it: four significant digits, far finer than a noisy machine's runs agree."""
    return float(f"{value:.4g}")


@dataclass
class Bench:
    """One run of a benchmark script: the figures it reports, kept as one record in `record` (its records file) when
    the run ends, if one was given. The file is checked at the start, so a bad one costs no measuring."""

    script: str  # the script's __file__
    compares: str  # Markdown: what the table's row says it compares
    target: str
    record: Path | None = None
    python: str = sys.executable  # whose jax is measured
    measures_jax: bool = True  # False where jax plays no part (a plan of tables, compare, triage)
    figures: list[Figure] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.record is not None:
            try:
                writable(self.record)
            except BadInput as error:
                refuse(error)

    @classmethod
    def start(
        cls, script: str, compares: str, target: str, argv: list[str], *, measures_jax: bool = True
    ) -> tuple[Bench, list[str]]:
        """The run of a script that reads its arguments by hand, and those arguments less `--record FILE`."""
        rest, path = record_option(argv)
        return cls(script, compares, target, path, measures_jax=measures_jax), rest

    def report(self, label_a: str, a: float, label_b: str, b: float, target: str, *, name: str | None) -> list[Median]:
        """Print both medians and their ratio; keep the ratio as a figure called `name` (None: printed only)."""
        width = max(len(label_a), len(label_b))
        print(f"{label_a.ljust(width)}  median {a:.3f} s")
        print(f"{label_b.ljust(width)}  median {b:.3f} s")
        print(f"ratio {a / b:.3f} ({target})")
        sides = [Median(label=label_a, median_s=kept(a)), Median(label=label_b, median_s=kept(b))]
        if name is not None:
            self.figure(name, a / b, "", target=target, medians=sides)
        return sides

    def figure(
        self,
        name: str,
        value: float | None,
        unit: Unit,
        *,
        target: str | None = None,
        medians: list[Median] | None = None,
    ) -> None:
        """Keep one figure that is not a ratio of two medians (a median itself, a share per device, a count)."""
        figure = Figure(name=name, unit=unit, value=None if value is None else kept(value))
        if target is not None:
            figure["target"] = target
        if medians:
            figure["medians"] = medians
        self.figures.append(figure)

    def save(self, runs: int, note: str | None = None) -> None:
        """Write the record where `--record FILE` was given (nothing otherwise), replacing the one of this script
        and machine."""
        if self.record is None:
            return
        record = Record(
            script=Path(self.script).name,
            compares=self.compares,
            target=self.target,
            machine=this_machine(),
            date=today(),
            source=MEASURED,
            figures=self.figures,
            runs=runs,
        )
        if self.measures_jax:
            record["jax"] = jax_release(self.python)
        if note:
            record["note"] = note
        try:
            save(self.record, record)
        except BadInput as error:
            refuse(error)
        print(f"recorded in {self.record}")
