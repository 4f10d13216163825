"""The benchmark table of docs/benchmarks.md is generated from the records the bench scripts keep: a script run with
`--record FILE` keeps one typed record of its figures (scripts/_bench.py, scripts/_benchrecords.py), and
`python -m scripts.bench_table` renders the records file into the page between its markers (`--check`: exit 1
where the page differs). Nothing here measures: the timings are given, never asserted."""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import platform
import re
import shutil
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from scripts import _bench, bench_table
from scripts._benchrecords import HAND, SCHEMA, Machine, Record, Records, load, machine_words
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


def rows(text: str) -> list[list[str]]:
    """The cells of each table row of `text` (a pipe escaped as `\\|` stays in its cell)."""
    found = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| script |"):
            found.append([c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return found


def run_table(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, list[str]]:
    code = bench_table.main([str(a) for a in argv])
    return code, capsys.readouterr().err.splitlines()


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


def test_bench_plan_s_record_becomes_its_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end without measuring: the script's comparison is given, its record written and rendered."""
    from scripts import bench_plan

    monkeypatch.setattr(bench_plan, "compare", lambda *args: (0.125, 0.025))
    records = written(tmp_path / "records.json", [hand("bench_quick.py", "0.19 to 0.21")])
    page = tmp_path / "page.md"
    page.write_text(f"# B\n\n{bench_table.START}\n{bench_table.END}\n")
    monkeypatch.setattr(sys, "argv", ["bench_plan", "2", "--record", str(records)])
    bench_plan.main()
    assert run_table(capsys, "--records", records, "--page", page)[0] == 0
    cells = {r[0]: r for r in rows(page.read_text())}
    plan = cells["`bench_plan.py`"]
    assert plan[1] == bench_plan.COMPARES and plan[3] == bench_plan.TARGET
    assert "0.125 s" in plan[2] and "2 runs each" in plan[2] and load(records)["records"][1]["date"] in plan[2]


# the generator


def test_the_table_has_each_machine_s_records_as_rows_in_the_records_order(tmp_path: Path) -> None:
    measured = hand("bench_devices.py", "warm compilation cache")
    measured["source"], measured["runs"], measured["jax"] = "measured", 5, "0.10.1"
    measured["figures"] = [
        {"name": "per extra device", "value": 4.9, "unit": "%"},
        {"name": "health", "value": 1.8, "unit": "s"},
        {"name": "flagged", "value": None, "unit": ""},
    ]
    records = Records(
        schema=SCHEMA,
        records=[
            hand("bench_quick.py", "0.19 | 0.21"),
            hand("bench_audit.py", "1.9 warm", TPU),
            measured,
            hand("bench_plan.py", "0.1 s", TPU),
        ],
    )
    text = bench_table.table(records)
    cpu, tpu = text.split(f"On {machine_words(TPU)}:")
    assert f"On {machine_words(CPU)}:" in cpu
    assert [r[0] for r in rows(cpu)] == ["`bench_quick.py`", "`bench_devices.py`"]
    assert [r[0] for r in rows(tpu)] == ["`bench_audit.py`", "`bench_plan.py`"]
    quick, devices = rows(cpu)
    assert quick == ["`bench_quick.py`", "`bench_quick.py` / a baseline", "0.19 | 0.21", "≤ 1"]  # the note, whole
    for said in ("per extra device +4.9 %", "health 1.8 s", "flagged none", "5 runs each", "2026-12-01"):
        assert said in devices[2]
    assert "jax 0.10.1" in devices[2] and devices[2].endswith("warm compilation cache")


def test_the_page_outside_its_markers_is_left_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = written(tmp_path / "records.json", [hand("bench_quick.py", "0.2")])
    page = tmp_path / "page.md"
    head, tail = "# Benchmarks\n\nBefore | the table.\n\n", "\n\nAfter it.\n| not | a row |\n"
    page.write_text(f"{head}{bench_table.START}\nold table\n{bench_table.END}{tail}")
    assert run_table(capsys, "--records", records, "--page", page)[0] == 0
    new = page.read_text()
    assert new.startswith(head + bench_table.START) and new.endswith(bench_table.END + tail)
    assert "old table" not in new and len(rows(new.removesuffix(tail))) == 1


def test_check_fails_where_the_table_was_edited_by_hand_and_passes_once_regenerated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = Path(shutil.copy(bench_table.RECORDS, tmp_path / "benchmarks.json"))
    page = Path(shutil.copy(bench_table.PAGE, tmp_path / "benchmarks.md"))
    text = page.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `bench_"))
    edited = text.replace(row, row.replace(" | ≤", " (better now) | ≤", 1))
    assert edited != text
    page.write_text(edited, encoding="utf-8")
    code, err = run_table(capsys, "--records", records, "--page", page, "--check")
    assert code == 1 and len(err) == 1 and page.read_text(encoding="utf-8") == edited  # --check rewrites nothing
    assert run_table(capsys, "--records", records, "--page", page)[0] == 0
    assert page.read_text(encoding="utf-8") == text
    assert run_table(capsys, "--records", records, "--page", page, "--check") == (0, [])


def test_the_page_in_the_repository_is_what_the_committed_records_give(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_table(capsys, "--check")
    assert (code, err) == (0, []), "docs/benchmarks.md: edit docs/benchmarks.json, then python -m scripts.bench_table"


def _breakings() -> dict[str, Any]:
    good = Records(schema=SCHEMA, records=[hand("bench_quick.py", "0.2"), hand("bench_plan.py", "0.1 s")])

    def broken(change: Any) -> str:
        doc: Any = copy.deepcopy(good)
        change(doc)
        return json.dumps(doc)

    return {
        "not JSON": '{"schema": ',
        "not an object": "[]",
        "another schema": broken(lambda d: d.update(schema="envaudit/benchmarks/v0")),
        "a record without its script": broken(lambda d: d["records"][0].pop("script")),
        "runs not a number": broken(lambda d: d["records"][0].update(runs="five")),
        "a misspelt key": broken(lambda d: d["records"][0].update(figurse=[])),
        "not a date": broken(lambda d: d["records"][0].update(date="yesterday")),
        "nothing to show": broken(lambda d: d["records"][0].pop("note")),
        "a figure of no unit": broken(lambda d: d["records"][0].update(figures=[{"name": "x", "value": 1.0}])),
        "two records of a script and machine": broken(lambda d: d["records"].append(d["records"][0])),
    }


@pytest.mark.parametrize("content", list(_breakings().values()), ids=list(_breakings()))
def test_a_malformed_records_file_is_one_line_and_exit_2(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records.json"
    records.write_text(content)
    page = Path(shutil.copy(bench_table.PAGE, tmp_path / "benchmarks.md"))
    before = page.read_bytes()
    code, err = run_table(capsys, "--records", records, "--page", page)
    assert code == 2 and len(err) == 1 and str(records) in err[0]
    assert page.read_bytes() == before and records.read_text() == content


def test_a_missing_records_file_or_a_page_without_its_markers_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text("# No table here\n")
    code, err = run_table(capsys, "--records", tmp_path / "none.json", "--page", page)
    assert code == 2 and len(err) == 1 and "none.json" in err[0]
    records = written(tmp_path / "records.json", [hand("bench_quick.py", "0.2")])
    for text in ("# No table here\n", f"{bench_table.END}\n{bench_table.START}\n", f"{bench_table.START}\n" * 2):
        page.write_text(text)
        code, err = run_table(capsys, "--records", records, "--page", page)
        assert code == 2 and len(err) == 1 and str(page) in err[0] and page.read_text() == text
