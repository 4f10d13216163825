"""`envaudit compare` on generated fleets with planted drift: software, driver, x64, and a probe-digest outlier."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from envaudit.cli import main
from envaudit.commands.compare.drift import RENDERERS, Comparison, Drift, compare
from envaudit.model.facts import Facts
from envaudit.model.report import ProbeResult, Report
from tests.conftest import facts_from


def node(name: str, jaxlib: str = "0.4.30", driver: str = "550.54.15", x64: bool = False, err: float = 8e-7) -> Report:
    facts: Facts = facts_from(
        {
            "packages": {"jax": "0.4.30", "jaxlib": jaxlib, "jax-cuda12-plugin": jaxlib},
            "nvidia": {
                "status": "ok",
                "driver_version": driver,
                "cuda_driver_version": "12.4",
                "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}],
            },
            "jax": {"status": "ok", "platform": "cuda", "x64": x64, "default_matmul_precision": None},
        }
    )
    probes = (ProbeResult("dense_chain", "pass", {"rel_err_batched": err}, 1.0 + len(name) / 100),)
    return Report(facts, probes=probes, host={"hostname": name}, created="2026-11-29T00:00:00Z", envaudit_version="0")


def fleet() -> list[tuple[str, Report]]:
    return [(f"gpu{i:02d}", node(f"gpu{i:02d}")) for i in range(8)]


def test_identical_fleet_has_no_drift() -> None:
    result = compare(fleet())
    assert (result.nodes, result.environments, result.majority, result.drift) == (8, 1, 8, ())


def test_software_driver_and_x64_drift_name_the_fact() -> None:
    nodes = fleet()
    nodes[1] = ("gpu01", node("gpu01", jaxlib="0.4.31"))
    nodes[2] = ("gpu02", node("gpu02", driver="535.104.05"))
    nodes[3] = ("gpu03", node("gpu03", x64=True))
    result = compare(nodes)
    found = {d.node: d.details for d in result.drift}
    assert set(found) == {"gpu01", "gpu02", "gpu03"} and result.majority == 5
    assert "package jaxlib: 0.4.31 (majority: 0.4.30)" in found["gpu01"]
    assert found["gpu02"] == ("driver: 535.104.05 (majority: 550.54.15)",)
    assert found["gpu03"] == ("x64: True (majority: False)",)


def test_probe_answer_outlier_on_identical_software() -> None:
    nodes = fleet()
    nodes[5] = ("gpu05", node("gpu05", err=3.1e-3))  # same stack, different bits: a faulty GPU
    result = compare(nodes)
    assert [(d.node, d.kind) for d in result.drift] == [("gpu05", "probe")]
    assert result.drift[0].details[0].startswith("dense_chain: answer differs from the 7 other nodes")


def test_durations_do_not_count_as_drift() -> None:
    nodes = [(n, replace(r, probes=(replace(r.probes[0], duration_s=float(i)),))) for i, (n, r) in enumerate(fleet())]
    assert compare(nodes).drift == ()


def test_what_differs_between_healthy_gpu_runs_is_not_drift() -> None:
    """Scatter-add atomics, timings: two healthy H100s differ there on every run, so only the answers count."""
    nodes = []
    for i, (name, report) in enumerate(fleet()):
        metrics = {**report.probes[0].metrics, "rerun_rel_diff_scatter_add": 1e-7 * i, "seconds_impl1": 1.0 + i}
        nodes.append((name, replace(report, probes=(replace(report.probes[0], metrics=metrics),))))
    assert compare(nodes).drift == ()
    varied = {**nodes[2][1].probes[0].metrics, "rerun_rel_diff": 1.2e-7, "rel_err_batched": 8.000001e-7}
    nodes[2] = ("gpu02", replace(nodes[2][1], probes=(replace(nodes[2][1].probes[0], metrics=varied),)))
    assert compare(nodes).drift == ()  # its own reruns differed: its errors are not bits to compare
    faulty = replace(nodes[3][1].probes[0], metrics={**nodes[3][1].probes[0].metrics, "output_dtype": "float16"})
    nodes[3] = ("gpu03", replace(nodes[3][1], probes=(faulty,)))
    assert [(d.node, d.kind) for d in compare(nodes).drift] == [("gpu03", "probe")]


def write(directory: Path, nodes: list[tuple[str, Report]]) -> None:
    for name, report in nodes:
        (directory / f"{name}.json").write_text(json.dumps(report.to_dict()))


def test_cli_on_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = fleet()
    write(tmp_path, nodes)
    assert main(["compare", str(tmp_path)]) == 0
    assert capsys.readouterr().out.endswith("no drift\n")
    write(tmp_path, [("gpu07", node("gpu07", jaxlib="0.4.29"))])
    assert main(["compare", str(tmp_path), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["drift"][0]["node"] == "gpu07" and data["nodes"] == 8


def test_cli_bad_inputs_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path)]) == 2
    assert "no JSON reports" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{")
    assert main(["compare", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "bad.json: not valid JSON" in err and len(err.splitlines()) == 1


def test_reports_naming_the_same_host_are_each_a_node_in_any_order(tmp_path: Path) -> None:
    """Two reports say gpu03 (a node re-imaged and renamed, a copied file): neither may hide the other, and the
    result may not depend on the order of the arguments."""
    nodes = fleet()
    nodes[3] = ("gpu03", node("gpu03", jaxlib="0.4.31"))  # the real gpu03 drifted
    write(tmp_path, nodes)
    (tmp_path / "gpu03-copy.json").write_text(json.dumps(node("gpu03").to_dict()))  # an older report of it, healthy
    files = sorted(tmp_path.glob("*.json"))
    results = [compare_cli(files), compare_cli(list(reversed(files))), compare_cli([tmp_path])]
    assert results[0] == results[1] == results[2]
    assert results[0]["nodes"] == 9 and results[0]["duplicates"] == ["gpu03"]
    assert [d["node"] for d in results[0]["drift"]] == [f"gpu03 ({tmp_path / 'gpu03.json'})"]


def compare_cli(paths: list[Path]) -> dict:  # type: ignore[type-arg]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["compare", *map(str, paths), "--format", "json"])
    result: dict = json.loads(out.getvalue())  # type: ignore[type-arg]
    return result


def test_a_bad_file_in_a_directory_is_skipped_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, fleet())
    (tmp_path / "torn.json").write_text('{"schema": "envaudit/report/v1", "verd')
    assert main(["compare", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "SKIPPED " in out and "torn.json: not valid JSON" in out and out.endswith("no drift\n")
    assert main(["compare", str(tmp_path / "torn.json")]) == 2  # named on the command line: bad input


@pytest.mark.parametrize(
    ("saved", "where"),
    [('"duration_s": 1.05', "probes[0].duration_s"), ('"rel_err_batched": 8e-07', "probes[0].metrics.rel_err_batched")],
)
def test_a_report_with_a_number_no_float_holds_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], saved: str, where: str
) -> None:
    """An integer of 401 digits (a duration, a metric) is not a report: skipped with its one line, not exit 3."""
    write(tmp_path, fleet())
    text = json.dumps(node("gpu99").to_dict())
    assert saved in text
    (tmp_path / "huge.json").write_text(text.replace(saved, saved.split(":")[0] + ": 1" + "0" * 400))
    assert main(["compare", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED ")]
    assert len(skipped) == 1 and f"huge.json: report.{where} is an integer of 1329 bits" in skipped[0], out
    assert out.startswith("8 nodes") and out.endswith("no drift\n")
    assert main(["compare", str(tmp_path / "huge.json")]) == 2  # named on the command line: bad input


def test_text_output_cleans_what_reports_and_file_names_say() -> None:
    evil = "gpu\x1b]0;PWNED\x07\n# injected\x9b2J"
    result = Comparison(
        2,
        2,
        1,
        (Drift(evil, "environment", (f"env JAX_Y: {evil} (majority: x)",)),),
        duplicates=(evil,),
        skipped=(f"/tmp/{evil}.json: not valid JSON",),
    )
    out = RENDERERS.render(result, "text")
    assert not any(ch in out for ch in "\x1b\x07\x9b") and "PWNED" in out
    assert not any(line.startswith("# injected") for line in out.splitlines()) and len(out.splitlines()) == 5
    assert json.loads(RENDERERS.render(result, "json"))["duplicates"] == [
        evil
    ]  # JSON escapes; it keeps the text as it is
