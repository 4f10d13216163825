"""The devices of one node judged against the known answer and against each other: a wrong device fails and is named
(its board, where the facts tell it); a device whose bits differ from a strict majority fails where reruns must be
bitwise, warns where they differ by design; what is not one board's fault (the same wrong bits on several devices,
devices that disagree with no majority) is a problem of the probe, never a board to pull."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from envaudit import judge
from envaudit.model.facts import GPU, Facts
from envaudit.model.report import ProbeResult
from tests.collect.test_devices import node
from tests.judge.test_judge import MACHINES, gpu

GOOD, OTHER = "a" * 16, "b" * 16


def result(*devices: tuple[Any, ...], rerun: float = 0.0) -> ProbeResult:
    """Devices as (digest, rel_err[, rel_err_default]); the default run's digest follows the HIGHEST one, and so
    does its error unless given (a CPU's default precision is float32)."""
    found = tuple(
        {
            "id": i,
            "kind": "NVIDIA H200",
            "digest": d[0],
            "rel_err": d[1],
            "digest_default": d[0] + "d",
            "rel_err_default": d[2] if len(d) > 2 else d[1],
        }
        for i, d in enumerate(devices)
    )
    metrics: dict[str, Any] = {"precision": "float32", "rel_err_batched": 8e-7, "rerun_rel_diff": rerun}
    return ProbeResult("dense_chain", "pass", metrics, devices=found)


def ids(probe: ProbeResult, facts: Facts) -> dict[str, str]:
    return {f.id: str(f.severity) for f in judge.judge([probe], facts).findings}


def verdicts(probe: ProbeResult, facts: Facts) -> tuple[dict[int, str], dict[str, str]]:
    judged = judge.judge([probe], facts)
    found = {f.id: str(f.severity) for f in judged.findings if f.subject.kind == "device"}  # the rest as ever
    return {int(d["id"]): str(d["verdict"]) for d in judged.results[0].devices}, found


@pytest.mark.parametrize("machine", ["cpu", "h200"])
def test_a_device_outside_the_bound_is_wrong_on_any_machine(machine: str) -> None:
    probe = result((GOOD, 8e-7), (GOOD, 8e-7), (OTHER, 1e-4), (GOOD, 8e-7))
    assert verdicts(probe, MACHINES[machine]) == (
        {0: "agrees", 1: "agrees", 2: "wrong", 3: "agrees"},
        {"device-2": "fail"},
    )


@pytest.mark.parametrize("error", ["nan", "inf", -1.0, None])
def test_an_error_that_is_not_a_number_in_the_bound_is_wrong(error: Any) -> None:
    probe = result((GOOD, 8e-7), (OTHER, error), (GOOD, 8e-7))
    assert verdicts(probe, MACHINES["cpu"])[0][1] == "wrong"


def test_other_bits_within_the_bound_fail_where_the_platform_is_deterministic() -> None:
    probe = result((GOOD, 8e-7), (OTHER, 8.1e-7), (GOOD, 8e-7), (GOOD, 8e-7))
    assert verdicts(probe, MACHINES["cpu"]) == (
        {0: "agrees", 1: "differs", 2: "agrees", 3: "agrees"},
        {"device-1": "fail"},
    )
    deterministic = gpu("9.0", "NVIDIA H200", XLA_FLAGS="--xla_gpu_deterministic_ops=true")
    assert verdicts(probe, deterministic)[1] == {"device-1": "fail"}


def test_other_bits_are_a_warning_where_a_gpus_reductions_may_differ_by_design() -> None:
    """Without deterministic ops a GPU's GEMMs may differ by design, whether or not the one rerun showed it."""
    for rerun in (0.0, 3e-8):
        probe = result((GOOD, 8e-7), (OTHER, 8.1e-7), (GOOD, 8e-7), (GOOD, 8e-7), rerun=rerun)
        assert verdicts(probe, MACHINES["h200"]) == (
            {0: "agrees", 1: "differs", 2: "agrees", 3: "agrees"},
            {"device-1": "warn"},
        )


def test_a_tie_is_decided_by_the_known_answer_or_blames_no_one() -> None:
    decided = result((GOOD, 8e-7), (OTHER, 2e-3))
    assert verdicts(decided, MACHINES["cpu"]) == ({0: "agrees", 1: "wrong"}, {"device-1": "fail"})
    undecided = result((GOOD, 8e-7), (OTHER, 9e-7))
    assert verdicts(undecided, MACHINES["cpu"]) == ({0: "differs", 1: "differs"}, {})
    assert ids(undecided, MACHINES["cpu"]) == {"probe-dense-chain-rerun": "warn"}  # the probe's, no board's


def test_the_same_wrong_bits_on_every_device_are_the_softwares_fault_not_a_boards() -> None:
    every = result(*[(OTHER, 2e-3)] * 4)
    assert verdicts(every, MACHINES["cpu"]) == ({i: "wrong" for i in range(4)}, {})
    assert ids(every, MACHINES["cpu"]) == {"probe-dense-chain": "fail"}  # one wrong answer, no device to reset
    finding = judge.judge([every], MACHINES["cpu"]).findings[0]
    assert "devices 0, 1, 2, 3 alike" in finding.detail and "not of one board" in finding.detail


def test_seven_gpus_wrong_alike_do_not_make_the_right_one_differ() -> None:
    """The review's case: GPUs 1-7 wrong with the same bits (a multi-GPU library bug), GPU 0 right."""
    probe = result((GOOD, 8e-7), *[(OTHER, 3e-3)] * 7)
    judged, found = verdicts(probe, MACHINES["h200"])
    assert judged == {0: "agrees", **{i: "wrong" for i in range(1, 8)}} and found == {}
    assert ids(probe, MACHINES["h200"]).get("probe-dense-chain") == "fail"


def test_a_rule_that_names_the_wrong_answer_takes_it() -> None:
    """cuDNN < 9.10.1 with cuBLASLt >= 12.9 on several GPUs: the rule explains a wrong answer shared by devices."""
    facts = gpu("9.0", "NVIDIA H200")
    libraries = {"nvidia-cudnn-cu12": "9.8.0.87", "nvidia-cublas-cu12": "12.9.0.13"}
    eight: list[GPU] = [{"index": i, "name": "NVIDIA H200"} for i in range(8)]
    facts = replace(facts, packages={**facts.packages, **libraries}, nvidia={**facts.nvidia, "gpus": eight})
    probe = result((GOOD, 8e-7), *[(OTHER, 3e-3)] * 7)
    found = ids(probe, facts)
    assert not [k for k in found if k.startswith(("device-", "probe-dense-chain"))], found
    assert found.get("cudnn-multigpu-cublaslt-129") == "fail"


def test_a_device_wrong_only_at_the_default_precision_is_wrong() -> None:
    """The default run takes a GPU's tensor cores: a bad tensor core shows there and nowhere else."""
    probe = result((GOOD, 8e-7), (GOOD, 8e-7), (OTHER, 8e-7, 0.3), (GOOD, 8e-7))
    assert verdicts(probe, MACHINES["h200"]) == (
        {0: "agrees", 1: "agrees", 2: "wrong", 3: "agrees"},
        {"device-2": "fail"},
    )
    finding = judge.judge([probe], MACHINES["h200"]).findings
    assert any("rel_err_default=0.3" in f.detail for f in finding if f.id == "device-2")


def test_one_device_seen_by_several_probes_is_one_finding() -> None:
    probes = [result((GOOD, 8e-7), (OTHER, 1e-4), (GOOD, 8e-7)), result((GOOD, 8e-7), (OTHER, 9e-7), (GOOD, 8e-7))]
    probes[1] = ProbeResult("conv_chain", "pass", probes[1].metrics, devices=probes[1].devices)
    judged = judge.judge(probes, MACHINES["cpu"])
    assert [(f.id, f.severity) for f in judged.findings] == [("device-1", "fail")]
    assert "dense_chain" in judged.findings[0].detail and "conv_chain" in judged.findings[0].detail
    assert "wrong numbers" in judged.findings[0].title


def test_a_gpu_node_names_the_board_to_pull_and_the_index_nvidias_tools_want() -> None:
    facts, gpus = node(ORDER="PCI_BUS_ID")
    probe = result(*[(OTHER, 1e-4) if i == 0 else (GOOD, 8e-7) for i in range(8)])
    finding = judge.judge([probe], facts).findings[0]
    first = min(gpus, key=lambda g: str(g["pci_bus_id"]))  # jax device 0 is the GPU lowest on the bus
    assert finding.title == f"GPU {first['index']} (PCI {first['pci_bus_id']}, jax 0) computes wrong numbers"
    assert str(first["uuid"]) in finding.detail and f"dcgmi diag -r 3 -i {first['index']}" in finding.detail
    assert finding.references and all(r.startswith("https://docs.nvidia.com/") for r in finding.references)


def test_a_gpu_whose_board_cannot_be_told_is_named_by_jax_and_said_so() -> None:
    facts, _ = node()  # CUDA's default order, fastest first: no mapping
    finding = judge.judge([result((OTHER, 1e-4), *[(GOOD, 8e-7)] * 7)], facts).findings[0]
    assert finding.title.startswith("jax device 0 (NVIDIA H200)") and "cannot be told" in finding.detail
    assert "<its NVML index>" in finding.detail and not finding.fix  # a placeholder is never a command


def test_devices_of_other_kinds_are_compared_kind_by_kind() -> None:
    """An H200 and an H100 in one node run other kernels: their bits differ and nothing is wrong; the H100 that
    differs from its own kind is what is named."""
    probe = result((GOOD, 8e-7), (GOOD, 8e-7), (OTHER, 8e-7), (OTHER, 8e-7), (GOOD, 8.1e-7))
    kinds = ["NVIDIA H200", "NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]
    mixed = ProbeResult(
        probe.probe,
        "pass",
        probe.metrics,
        devices=tuple({**d, "kind": k} for d, k in zip(probe.devices, kinds, strict=True)),
    )
    assert verdicts(mixed, MACHINES["cpu"]) == (
        {0: "agrees", 1: "agrees", 2: "agrees", 3: "agrees", 4: "differs"},
        {"device-4": "fail"},
    )
