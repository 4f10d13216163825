"""Every device of a node probed, simulated with four real CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=4) and one of them made to compute wrong numbers by the
`device_corrupt` fault: the node check names that device, first, as one failure however many probes saw it, in
every format; a healthy node of four devices has no device finding; `--device` limits what is compared.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import PYTHON, ROOT, envaudit_run

FAULT = ROOT / "tests" / "faults" / "device_corrupt"
PER_DEVICE = ("dense_chain", "conv_chain", "ntk")  # the probes that compare devices (the fast ones)
PROBES = [arg for name in PER_DEVICE for arg in ("--probe", name)]


def node_env(child_env: dict[str, str], fault: bool, **extra: str) -> dict[str, str]:
    env = {**child_env, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", **extra}
    if fault:
        env["PYTHONPATH"] = os.pathsep.join([str(FAULT), env["PYTHONPATH"]])
    return env


def envaudit(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    proc = envaudit_run(PYTHON, *argv, env=env, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def health(env: dict[str, str], directory: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = envaudit(env, "health", "--prometheus-dir", str(directory), *PROBES, *argv)
    report: dict[str, Any] = json.loads((directory / "envaudit-report.json").read_text())
    return proc, report


def samples(directory: Path, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    text = (directory / "envaudit.prom").read_text()
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]:
    directory = tmp_path_factory.mktemp("healthy")
    env = node_env({**os.environ, "PYTHONPATH": str(ROOT)}, fault=False)
    return (*health(env, directory), directory)


@pytest.fixture(scope="module")
def corrupt(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]:
    directory = tmp_path_factory.mktemp("corrupt")
    env = node_env({**os.environ, "PYTHONPATH": str(ROOT)}, fault=True)
    return (*health(env, directory), directory)


def device_findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"].startswith("device-")]


@pytest.mark.jax
def test_a_healthy_node_of_four_devices_compares_them_all_and_finds_nothing(
    healthy: tuple[subprocess.CompletedProcess[str], dict[str, Any], Path],
) -> None:
    proc, report, directory = healthy
    assert proc.returncode == 0, proc.stdout
    assert len(report["facts"]["jax"]["devices"]) == 4
    for probe in (p for p in report["probes"] if p["name"] in PER_DEVICE):
        assert [d["id"] for d in probe["devices"]] == [0, 1, 2, 3], probe["name"]
        assert {d["verdict"] for d in probe["devices"]} == {"agrees"}
        assert len({d["digest"] for d in probe["devices"]}) == 1  # one executable, one input: the same bits
    assert device_findings(report) == []
    status = samples(directory, "envaudit_device_probe_status")
    assert len([k for k, v in status.items() if v == 1]) == 4 * len(PER_DEVICE)
    assert all(dict(k)["status"] == "agrees" for k, v in status.items() if v == 1)


@pytest.mark.jax
def test_one_wrong_device_is_one_failure_that_names_it_first(
    corrupt: tuple[subprocess.CompletedProcess[str], dict[str, Any], Path],
) -> None:
    proc, report, directory = corrupt
    assert proc.returncode == 1
    assert proc.stdout.startswith("envaudit FAIL device-2: jax device 2"), proc.stdout
    assert [f["id"] for f in device_findings(report)] == ["device-2"]  # three probes saw it: one root cause
    finding = device_findings(report)[0]
    assert finding["severity"] == "fail" and "wrong numbers" in finding["title"]
    assert all(name in finding["detail"] for name in PER_DEVICE) and "--device 2" in finding["detail"]
    assert not [f for f in report["findings"] if f["id"].startswith("probe-")]  # device 0's own run is right
    for probe in (p for p in report["probes"] if p["name"] in PER_DEVICE):
        verdicts = {d["id"]: d["verdict"] for d in probe["devices"]}
        assert verdicts == {0: "agrees", 1: "agrees", 2: "wrong", 3: "agrees"} and probe["status"] == "fail"
    status = samples(directory, "envaudit_device_probe_status")
    assert {dict(k)["device"] for k, v in status.items() if v == 1 and dict(k)["status"] == "wrong"} == {"2"}
    errors = samples(directory, "envaudit_device_probe_rel_err")
    assert all((value > 1e-5) == (dict(k)["device"] == "2") for k, value in errors.items())


@pytest.mark.jax
def test_the_same_verdict_in_every_format(
    corrupt: tuple[subprocess.CompletedProcess[str], dict[str, Any], Path], child_env: dict[str, str]
) -> None:
    _, _, directory = corrupt
    saved = str(directory / "envaudit-report.json")
    text = envaudit(child_env, "check", saved)
    markdown = envaudit(child_env, "check", saved, "--format", "markdown")
    assert text.returncode == markdown.returncode == 1
    assert "jax device 2 (cpu) computes wrong numbers" in text.stdout
    device_lines = [line for line in text.stdout.splitlines() if "device 2" in line and "wrong" in line]
    assert len(device_lines) == 1 + len(PER_DEVICE)  # the finding, and device 2's line under each probe
    assert markdown.stdout.count("| ↳ device 2 | wrong |") == len(PER_DEVICE)
    assert "dcgmi" not in text.stdout and "nvidia-smi" not in text.stdout  # no NVIDIA tool for a CPU device


@pytest.mark.jax
def test_a_bitwise_difference_within_the_bound_is_still_a_failure_where_devices_must_agree(
    child_env: dict[str, str], tmp_path: Path
) -> None:
    """1e-8 is far inside float32's bound, but on the CPU the devices run one executable deterministically."""
    env = node_env(child_env, fault=True, ENVAUDIT_FAULT_DELTA="1e-7")
    proc, report = health(env, tmp_path, "--probe", "dense_chain")
    assert proc.returncode == 1 and [f["id"] for f in device_findings(report)] == ["device-2"]
    dense = next(p for p in report["probes"] if p["name"] == "dense_chain")
    assert {d["id"]: d["verdict"] for d in dense["devices"]}[2] == "differs"
    assert "other bits" in device_findings(report)[0]["title"]
    todo = device_findings(report)[0]["detail"]  # alone it would have no peer to differ from: beside one that agrees
    assert "--device 2 --device 0 --device 1" in todo, todo
    again = envaudit(
        env,
        "audit",
        "--format",
        "json",
        "--probe",
        "dense_chain",
        *todo.split("envaudit audit ")[1].split(")")[0].split(),
    )
    assert again.returncode == 1 and "device-2" in {f["id"] for f in json.loads(again.stdout)["findings"]}


@pytest.mark.jax
def test_device_limits_the_comparison_to_the_devices_named(child_env: dict[str, str], tmp_path: Path) -> None:
    proc = envaudit(
        node_env(child_env, fault=True), "audit", "--format", "json", *PROBES, "--device", "0", "--device", "3"
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, report["findings"]
    assert {tuple(d["id"] for d in p["devices"]) for p in report["probes"] if p["name"] in PER_DEVICE} == {(0, 3)}
    assert report["facts"]["jax"]["child_env"]["ENVAUDIT_DEVICES"] == "0,3"


@pytest.mark.jax
@pytest.mark.parametrize("ids", [["99"], ["1", "9"]])
def test_a_device_that_does_not_exist_is_bad_usage(child_env: dict[str, str], ids: list[str]) -> None:
    argv = [arg for i in ids for arg in ("--device", i)]
    proc = envaudit(node_env(child_env, fault=False), "health", "--probe", "dense_chain", *argv)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no jax device" in proc.stderr, proc.stderr
    assert "0, 1, 2, 3" in proc.stderr  # the devices there are


@pytest.mark.jax
def test_compare_names_the_device_whose_answer_drifted(
    healthy: tuple[subprocess.CompletedProcess[str], dict[str, Any], Path],
    corrupt: tuple[subprocess.CompletedProcess[str], dict[str, Any], Path],
    child_env: dict[str, str],
    tmp_path: Path,
) -> None:
    for name, (_, report, _) in (("node-a", healthy), ("node-b", corrupt), ("node-c", healthy)):
        (tmp_path / f"{name}.json").write_text(json.dumps({**report, "host": {"hostname": name}}))
    proc = envaudit(child_env, "compare", str(tmp_path))
    drift = [line for line in proc.stdout.splitlines() if "on device 2" in line]
    assert proc.returncode == 1 and drift, proc.stdout
    assert not [line for line in proc.stdout.splitlines() if "on device 0" in line or "on device 3" in line]
