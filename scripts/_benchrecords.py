"""The benchmark records: what a `scripts/bench_*.py` run measured, as one typed record, and the file that keeps the
latest record per script and machine (docs/benchmarks.json, from which `python -m scripts.bench_table` renders the
table of docs/benchmarks.md).

A record says which script, what it compares, its figures (each a value with its unit, and the two medians a ratio
is of), the target, the machine in words (architecture, CPUs, accelerator), the jax measured and the date. A figure
that one run of the script cannot express (a range over days, a load the machine had) is a record's free-text `note`;
the rows written by hand before the generator are such records, `source: "hand-recorded before the generator"`, dated
the day their row was last written. A file that is not such a document is `BadRecords`: one line for the user.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import date
from pathlib import Path
from typing import Final, Literal, NoReturn, TypedDict

from envaudit.collect import tpu
from envaudit.files import safewrite
from envaudit.model import typecheck
from envaudit.model.exitcodes import BadInput

SCHEMA: Final = "envaudit/benchmarks/v1"
MEASURED: Final = "measured"
HAND: Final = "hand-recorded before the generator"
Unit = Literal["", "s", "ms", "%"]  # "": a ratio, a count or a relative error


class Median(TypedDict):
    """One side of a comparison: what was run, and its median wall time over the run's alternated runs."""

    label: str
    median_s: float


# Each document type is a total TypedDict of the keys it must have and a subclass of those it may (`Required[...]`
# under `from __future__ import annotations` is not seen by Python 3.11's TypedDict: envaudit/model/facts.py's way).
class _Figure(TypedDict):
    name: str  # what the figure is, in the table ("warm", "per extra device"); "" for a script's one figure
    unit: Unit


class Figure(_Figure, total=False):
    value: float | None  # absent or None: nothing found (no injected error flagged)
    target: str  # as the script prints it beside the figure
    medians: list[Median]  # the sides a ratio or a difference is of


class _Machine(TypedDict):
    arch: str  # platform.machine()
    cpus: int  # the CPUs the run could use


class Machine(_Machine, total=False):
    accelerator: str | None  # "TPU v5e (4 chips)"; None on a CPU-only machine


class _Record(TypedDict):
    script: str  # "bench_quick.py"
    compares: str  # Markdown, as the table shows it
    target: str
    machine: Machine
    date: str  # ISO 8601, the day measured (a hand-recorded row: the day it was last written)
    source: Literal["measured", "hand-recorded before the generator"]


class Record(_Record, total=False):
    figures: list[Figure]
    runs: int  # runs of each side (or seeds)
    jax: str | None  # the measured interpreter's jax release
    note: str  # what the figures cannot say; a hand-recorded row's whole measurement


class Records(TypedDict):
    schema: Literal["envaudit/benchmarks/v1"]
    records: list[Record]


class BadRecords(BadInput):
    """A records file that is not a benchmarks document; the message is one line for the user."""


def this_machine() -> Machine:
    """The machine a benchmark runs on, in words: its architecture, the CPUs this process may use, its TPU chips
    (read from the PCI bus as jax reads them, envaudit/collect/tpu.py; nothing is opened or run)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    chips = tpu.read()
    accelerator = f"TPU {chips['version']} ({chips['chips']} chips)" if chips else None
    return Machine(arch=platform.machine(), cpus=cpus, accelerator=accelerator)


def machine_words(machine: Machine) -> str:
    words = f"{machine['arch']}, {machine['cpus']} CPUs"
    return f"{words}, {machine['accelerator']}" if machine.get("accelerator") else words


def today() -> str:
    return date.today().isoformat()


def _problem(data: object) -> str | None:
    """The first thing wrong with a parsed records document, as a phrase; None if nothing is."""
    if found := typecheck.problem(data, Records, "records file", closed=True):
        return found
    assert isinstance(data, dict)
    seen: dict[tuple[str, str], int] = {}
    for i, record in enumerate(data["records"]):
        try:
            date.fromisoformat(record["date"])
        except ValueError:
            return f"records[{i}].date is {record['date']!r}, not an ISO 8601 date"
        if not record.get("figures") and not record.get("note"):
            return f"records[{i}] has neither figures nor a note: nothing to show"
        key = (record["script"], machine_words(record["machine"]))
        if key in seen:
            return f"records[{i}] repeats {key[0]} on {key[1]} (records[{seen[key]}]): keep the latest"
        seen[key] = i
    return None


def parse(text: str, where: str) -> Records:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRecords(f"{where}: not JSON ({exc})") from None
    if found := _problem(data):
        raise BadRecords(f"{where}: {found}")
    records: Records = data
    return records


def load(path: Path, *, missing_ok: bool = False) -> Records:
    """The records of `path`; an empty document where it does not exist and `missing_ok`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return Records(schema=SCHEMA, records=[])
        raise BadRecords(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadRecords(f"{path}: cannot read it ({exc})") from None
    return parse(text, str(path))


def merged(records: Records, record: Record) -> Records:
    """`records` with `record` in the place of the one of its script and machine (the latest kept), or after them."""
    key = (record["script"], machine_words(record["machine"]))
    kept = list(records["records"])
    at = next((i for i, r in enumerate(kept) if (r["script"], machine_words(r["machine"])) == key), None)
    if at is None:
        kept.append(record)
    else:
        kept[at] = record
    return Records(schema=SCHEMA, records=kept)


def dumps(records: Records) -> str:
    return json.dumps(records, indent=2, ensure_ascii=False) + "\n"


def writable(path: Path) -> None:
    """Refuse, before a run measures anything, a records file it could not keep its result in."""
    if not path.parent.is_dir():
        raise BadRecords(f"cannot write {path}: directory {path.parent} does not exist")
    load(path, missing_ok=True)


def save(path: Path, record: Record) -> None:
    """Keep `record` in `path` (read again now: another run may have written it meanwhile), replaced whole and
    atomically (envaudit's safe writer: a reader sees the old file or the new one)."""
    if (found := typecheck.problem(record, Record, "record", closed=True)) is not None:
        raise AssertionError(found)  # a script built it: a bug, not input
    safewrite.write(path, dumps(merged(load(path, missing_ok=True), record)))


def refuse(error: BadInput) -> NoReturn:
    """Bad input's one line on stderr and exit 2 (docs/architecture.md's contract)."""
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(2)
