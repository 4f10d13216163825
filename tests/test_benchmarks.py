"""A bench script run with `--record FILE` keeps one typed record of its figures (scripts/_bench.py,
scripts/_benchrecords.py). Nothing here measures: the timings are given, never asserted."""

from __future__ import annotations

import importlib
import inspect
import json
import platform
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from scripts import _bench
from scripts._benchrecords import HAND, SCHEMA, Machine, Record, Records, load
from tests.conftest import ROOT

SCRIPTS = sorted(p.stem for p in (ROOT / "scripts").glob("bench_*.py") if p.stem != "bench_table")
ARGPARSE = {"bench_sensitivity", "bench_precision_classes"}  # they take --runs N, the others RUNS
CPU = Machine(arch="x86_64", cpus=2, accelerator=None)
TPU = Machine(arch="x86_64", cpus=224, accelerator="TPU v5e (4 chips)")


def hand(script: str, note: str, machine: Machine = CPU) -> Record:
    return Record(
        script=script,
        compares=f"`{script}` / a baseline",
        target="≤ 1",
        machine=machine,
        date="2026-12-01",
        source=HAND,
        note=note,
    )


def written(path: Path, records: list[Record]) -> Path:
    path.write_text(json.dumps(Records(schema=SCHEMA, records=records), ensure_ascii=False), encoding="utf-8")
    return path


# recording


def test_a_run_with_record_keeps_one_record_of_its_figures_medians_machine_and_date(tmp_path: Path) -> None:
    path = tmp_path / "records.json"
    bench = _bench.Bench("scripts/bench_example.py", "`a` / `b`", "≤ 0.5", path)
    sides = bench.report("a", 2.0, "b", 4.0, "target <= 0.5", name="warm")
    bench.report("printed", 1.0, "only", 3.0, "no figure", name=None)
    bench.figure("per start", 1.5, "ms", medians=sides)
    bench.save(runs=3)
    (record,) = load(path)["records"]  # load checks the document against its types
    assert record["script"] == "bench_example.py" and record["compares"] == "`a` / `b`" and record["runs"] == 3
    warm, per_start = record["figures"]  # the ratio named, the extra figure; the unnamed comparison only printed
    assert warm["name"] == "warm" and warm["value"] == pytest.approx(0.5) and warm["unit"] == ""
    assert [(m["label"], m["median_s"]) for m in warm["medians"]] == [("a", 2.0), ("b", 4.0)]
    assert per_start["unit"] == "ms" and per_start["medians"] == warm["medians"]
    assert record["machine"]["arch"] == platform.machine() and record["machine"]["cpus"] >= 1
    assert date.fromisoformat(record["date"]) and record["source"] == "measured"
    assert "jax" in record  # the measured interpreter's release, or null where it has none


@pytest.mark.parametrize("machine", [CPU, TPU], ids=["the hand records' machine", "another machine"])
def test_a_record_replaces_the_one_of_its_script_and_machine_in_place_and_keeps_the_rest(
    machine: Machine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bench, "this_machine", lambda: machine)
    path = written(tmp_path / "records.json", [hand("bench_x.py", "old"), hand("bench_y.py", "kept")])
    for script in ("bench_x.py", "bench_z.py"):
        bench = _bench.Bench(script, "`x`", "≤ 1", path)
        bench.figure("", 0.25, "")
        bench.save(runs=5)
    records = load(path)["records"]
    if machine == CPU:  # x replaced where it was, z after
        assert [r["script"] for r in records] == ["bench_x.py", "bench_y.py", "bench_z.py"]
        assert records[0]["source"] == "measured" and records[1]["note"] == "kept"
    else:  # the other machine's records follow, the hand ones untouched
        assert [r["script"] for r in records] == ["bench_x.py", "bench_y.py", "bench_x.py", "bench_z.py"]
        assert records[0]["note"] == "old" and records[2]["machine"] == TPU


def test_the_record_option_is_taken_out_of_a_script_s_own_arguments(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    bench, argv = _bench.Bench.start("bench_x.py", "`x`", "≤ 1", ["3", "--record", str(path), "4"])
    assert argv == ["3", "4"] and bench.record == path
    bench, argv = _bench.Bench.start("bench_x.py", "`x`", "≤ 1", [f"--record={path}", "7"])
    assert argv == ["7"] and bench.record == path
    bench, argv = _bench.Bench.start("bench_x.py", "`x`", "≤ 1", ["7"])
    assert argv == ["7"] and bench.record is None
    bench.figure("", 1.0, "")
    bench.save(runs=7)  # nothing to write: no file appears
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_bench_script_refuses_a_bad_records_file_before_it_measures(
    script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module(f"scripts.{script}")

    def measured(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"{script} started measuring before it checked its records file")

    monkeypatch.setattr("subprocess.run", measured)
    for bad, content in ((tmp_path / "missing" / "r.json", None), (tmp_path / "broken.json", "{not json")):
        if content is not None:
            bad.write_text(content)
        runs = ["--runs", "1"] if script in ARGPARSE else ["1"]
        monkeypatch.setattr(sys, "argv", [script, *runs, "--record", str(bad)])
        with pytest.raises(SystemExit) as ended:  # main(argv) where it takes its arguments, sys.argv otherwise
            module.main(sys.argv[1:]) if inspect.signature(module.main).parameters else module.main()
        assert ended.value.code == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and str(bad) in err[0]
        assert content is None or bad.read_text() == content  # the user's file as it was
