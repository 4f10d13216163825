"""The devices of one node judged against the known answer and against each other: a wrong device fails and is named
(its board, where the facts tell it); a device whose bits differ from a strict majority fails where reruns must be
bitwise, warns where they differ by design; a tie is decided by the known answer, or blames no one."""

from __future__ import annotations

from typing import Any

import pytest

from envaudit import judge
from envaudit.model import Facts, ProbeResult
from tests.judge.test_judge import MACHINES
from tests.test_devices import node

GOOD, OTHER = "a" * 16, "b" * 16


def result(*devices: tuple[str, float | str], rerun: float = 0.0) -> ProbeResult:
    found = tuple({"id": i, "kind": "NVIDIA H200", "digest": digest, "rel_err": error}
                  for i, (digest, error) in enumerate(devices))  # fmt: skip
    metrics: dict[str, Any] = {"precision": "float32", "rel_err_batched": 8e-7, "rerun_rel_diff": rerun}
    return ProbeResult("dense_chain", "pass", metrics, devices=found)


def verdicts(probe: ProbeResult, facts: Facts) -> tuple[dict[int, str], dict[str, str]]:
    judged = judge.judge([probe], facts)
    found = {f.id: str(f.severity) for f in judged.findings if f.id.startswith("device-")}  # the rest as ever
    return {int(d["id"]): str(d["verdict"]) for d in judged.results[0].devices}, found


@pytest.mark.parametrize("machine", ["cpu", "h200"])
def test_a_device_outside_the_bound_is_wrong_on_any_machine(machine: str) -> None:
    probe = result((GOOD, 8e-7), (GOOD, 8e-7), (OTHER, 1e-4), (GOOD, 8e-7))
    assert verdicts(probe, MACHINES[machine]) == ({0: "agrees", 1: "agrees", 2: "wrong", 3: "agrees"},
                                                  {"device-2": "fail"})  # fmt: skip


@pytest.mark.parametrize("error", ["nan", "inf", -1.0, None])
def test_an_error_that_is_not_a_number_in_the_bound_is_wrong(error: Any) -> None:
    probe = result((GOOD, 8e-7), (OTHER, error), (GOOD, 8e-7))
    assert verdicts(probe, MACHINES["cpu"])[0][1] == "wrong"


def test_other_bits_within_the_bound_fail_where_reruns_must_be_bitwise() -> None:
    probe = result((GOOD, 8e-7), (OTHER, 8.1e-7), (GOOD, 8e-7), (GOOD, 8e-7))
    assert verdicts(probe, MACHINES["cpu"]) == ({0: "agrees", 1: "differs", 2: "agrees", 3: "agrees"},
                                                {"device-1": "fail"})  # fmt: skip
    on_gpu_deterministic = verdicts(probe, MACHINES["h200"])  # reruns did not differ: bits must agree
    assert on_gpu_deterministic[1] == {"device-1": "fail"}


def test_other_bits_are_a_warning_where_reruns_already_differ_by_design() -> None:
    probe = result((GOOD, 8e-7), (OTHER, 8.1e-7), (GOOD, 8e-7), (GOOD, 8e-7), rerun=3e-8)
    assert verdicts(probe, MACHINES["h200"]) == ({0: "agrees", 1: "differs", 2: "agrees", 3: "agrees"},
                                                 {"device-1": "warn"})  # fmt: skip
    assert verdicts(probe, MACHINES["cpu"])[1] == {"device-1": "fail"}  # a CPU rerun must not differ at all


def test_a_tie_is_decided_by_the_known_answer_or_blames_no_one() -> None:
    decided = result((GOOD, 8e-7), (OTHER, 2e-3))
    assert verdicts(decided, MACHINES["cpu"]) == ({0: "agrees", 1: "wrong"}, {"device-1": "fail"})
    undecided = result((GOOD, 8e-7), (OTHER, 9e-7))
    assert verdicts(undecided, MACHINES["cpu"]) == ({0: "differs", 1: "differs"},
                                                    {"device-0": "warn", "device-1": "warn"})  # fmt: skip


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
    assert str(first["uuid"]) in finding.detail and f"dcgmi diag -r 3 -i {first['index']}" in finding.fix
    assert finding.references and all(r.startswith("https://docs.nvidia.com/") for r in finding.references)


def test_a_gpu_whose_board_cannot_be_told_is_named_by_jax_and_said_so() -> None:
    facts, _ = node()  # CUDA's default order, fastest first: no mapping
    finding = judge.judge([result((OTHER, 1e-4), *[(GOOD, 8e-7)] * 7)], facts).findings[0]
    assert finding.title.startswith("jax device 0 (NVIDIA H200)") and "cannot be told" in finding.detail
    assert "<its NVML index>" in finding.fix


def test_devices_of_other_kinds_are_compared_kind_by_kind() -> None:
    """An H200 and an H100 in one node run other kernels: their bits differ and nothing is wrong; the H100 that
    differs from its own kind is what is named."""
    probe = result((GOOD, 8e-7), (GOOD, 8e-7), (OTHER, 8e-7), (OTHER, 8e-7), (GOOD, 8.1e-7))
    kinds = ["NVIDIA H200", "NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]
    mixed = ProbeResult(probe.name, "pass", probe.metrics,
                        devices=tuple({**d, "kind": k} for d, k in zip(probe.devices, kinds, strict=True)))  # fmt: skip
    assert verdicts(mixed, MACHINES["cpu"]) == ({0: "agrees", 1: "agrees", 2: "agrees", 3: "agrees", 4: "differs"},
                                                {"device-4": "fail"})  # fmt: skip
