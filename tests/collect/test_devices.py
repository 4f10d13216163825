"""The jax device -> NVIDIA board mapping, against the real NVML collector over the fake pynvml: NVML's order is not
PCI bus order here (as NVIDIA warns it need not be), and CUDA_VISIBLE_DEVICES reorders and hides devices."""

from __future__ import annotations

import json

import pytest

from envaudit.collect.nvml import get_nvidia
from envaudit.model import devices
from envaudit.model.facts import GPU, Facts
from tests.conftest import FIXTURES, facts_from
from tests.fakes.fake_pynvml import make_fake_pynvml

BUSES = ["9A", "18", "DB", "2A", "BA", "3A", "AB", "5D"]  # NVML index -> bus: deliberately not ascending


def node(count: int = 8, **env: str) -> tuple[Facts, list[GPU]]:
    """The H200 node's facts, with `count` GPUs seen by jax (as many as CUDA_VISIBLE_DEVICES leaves it)."""
    fixture = json.loads((FIXTURES / "nvml" / "h200_8x_healthy.json").read_text())
    for device, bus in zip(fixture["devices"], BUSES, strict=True):
        device["nvmlDeviceGetPciInfo"] = {"busId": f"00000000:{bus}:00.0"}
    nvidia = get_nvidia(make_fake_pynvml(fixture))
    order = {"CUDA_DEVICE_ORDER": env.pop("ORDER")} if "ORDER" in env else {}
    jax = {
        "status": "ok",
        "platform": "cuda",
        "child_env": order,
        "devices": [
            {"id": i, "platform": "gpu", "device_kind": "NVIDIA H200", "local_hardware_id": i} for i in range(count)
        ],
    }
    return facts_from({"nvidia": nvidia, "jax": jax, "env": env}), nvidia["gpus"]


def buses(facts: Facts) -> list[str | None]:
    return [(devices.board(i, facts) or {}).get("pci_bus_id") for i in range(8)]


def test_in_bus_order_device_i_is_the_ith_gpu_by_bus_id_whatever_nvmls_order() -> None:
    facts, _ = node(ORDER="PCI_BUS_ID")
    assert buses(facts) == [f"0000:{b.lower()}:00.0" for b in sorted(BUSES)]
    assert devices.describe(0, "NVIDIA H200", facts).startswith("jax device 0 = GPU 1 (NVIDIA H200, PCI 0000:18:00.0")


def test_uuids_in_cuda_visible_devices_name_their_boards_in_their_order() -> None:
    _, gpus = node()
    facts, _ = node(2, CUDA_VISIBLE_DEVICES=f"{gpus[5]['uuid']},{gpus[2]['uuid'][:12]}")
    assert [devices.board(i, facts) for i in (0, 1)] == [gpus[5], gpus[2]]
    assert devices.board(2, facts) is None  # hidden: the process sees two GPUs


def test_indices_count_in_cudas_device_order() -> None:
    facts, _ = node(2, ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES="3,1")
    assert buses(facts)[:2] == ["0000:5d:00.0", "0000:2a:00.0"]  # bus order: 18 2A 3A 5D ...; index 3 first


@pytest.mark.parametrize("env", [{}, {"CUDA_VISIBLE_DEVICES": "1,0"}, {"CUDA_VISIBLE_DEVICES": "MIG-GPU-1cd3/1/0"}])
def test_what_cannot_be_told_is_not_guessed(env: dict[str, str]) -> None:
    """Fastest first (CUDA's default) is a heuristic; a MIG instance is not a board: the board is unknown."""
    facts, _ = node(8, **env)
    assert buses(facts) == [None] * 8
    assert "cannot be told" in devices.describe(3, "NVIDIA H200", facts)


def test_when_nvml_and_jax_count_other_gpus_no_board_is_named() -> None:
    """A GPU in MIG mode (or one CUDA cannot open) is missing from CUDA's numbering, not from NVML's list: device 0
    is then another board than NVML's first, so nothing is named (the review's case: the wrong GPU was reset)."""
    facts, _ = node(7, ORDER="PCI_BUS_ID")
    assert buses(facts)[:7] == [None] * 7
    facts, gpus = node(ORDER="PCI_BUS_ID")
    gpus[0]["mig_enabled"] = True
    assert buses(facts) == [None] * 8


def test_an_ambiguous_uuid_prefix_names_nothing() -> None:
    facts, _ = node(CUDA_VISIBLE_DEVICES="GPU-")
    assert devices.board(0, facts) is None


def test_a_cpu_device_is_just_itself() -> None:
    facts = facts_from({"jax": {"status": "ok", "platform": "cpu", "devices": [{"id": 2, "device_kind": "cpu"}]}})
    assert devices.describe(2, "cpu", facts) == "jax device 2 (cpu)"
