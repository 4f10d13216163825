"""JAX_PLATFORMS naming a platform this machine lacks, on facts, as jax 0.10.1 was measured to fail on a CPU-only
machine (rules/platforms.py): in a list with cpu too, misspelt, through the gpu alias, and where the facts cannot
say; with the fix that keeps what the machine has."""

from __future__ import annotations

from typing import Any

import pytest

from envaudit.rules.registry import registry
from tests.conftest import facts_from

JAX = {"jax": "0.10.1", "jaxlib": "0.10.1"}
CPU_ONLY = {"nvidia": {"status": "absent"}, "packages": JAX, "platform": {"system": "Linux"}}
GPU = {"status": "ok", "gpus": [{"index": 0}]}
CUDA_PLUGIN = {**JAX, "jax-cuda12-plugin": "0.10.1", "jax-cuda12-pjrt": "0.10.1"}
ID = "jax-platforms-unavailable"


def found(fragment: dict[str, Any], platforms: str) -> tuple[str, str] | None:
    facts = facts_from({**fragment, "env": {**fragment.get("env", {}), "JAX_PLATFORMS": platforms}})
    return next(((f.detail, f.fix) for f in registry().evaluate_checks(facts) if f.id == ID), None)


@pytest.mark.parametrize(
    ("platforms", "fix", "said"),
    [
        ("tpu", "unset JAX_PLATFORMS", "'tpu': no libtpu"),
        ("tpu,cpu", "export JAX_PLATFORMS=cpu", "'tpu': no libtpu"),
        ("cpu,tpu", "export JAX_PLATFORMS=cpu", "'tpu': no libtpu"),
        ("rocm", "unset JAX_PLATFORMS", "'rocm': no jax ROCm plugin"),
        ("rocm,cpu", "export JAX_PLATFORMS=cpu", "'rocm': no jax ROCm plugin"),
        ("metal", "unset JAX_PLATFORMS", "'metal': jax-metal"),
        ("metal,cpu", "export JAX_PLATFORMS=cpu", "macOS only, not Linux"),
        ("cuda", "unset JAX_PLATFORMS", "nothing it names can start"),  # passed over: a bare AssertionError
        ("gpu", "unset JAX_PLATFORMS", "'rocm' (of 'gpu'): no jax ROCm plugin"),
        ("gpu,cpu", "export JAX_PLATFORMS=cpu", "'rocm' (of 'gpu')"),
        ("TPU", "unset JAX_PLATFORMS", "'TPU': no backend has this name"),
        (" cpu", "export JAX_PLATFORMS=cpu", "' cpu': no backend has this name"),  # the name meant, kept
        ("cpu,", "export JAX_PLATFORMS=cpu", "'': no backend has this name"),
        ("cuda,tpu,cpu", "export JAX_PLATFORMS=cpu", "'tpu': no libtpu"),
    ],
)
def test_what_jax_fails_on_here_and_the_fix_that_keeps_what_the_machine_has(
    platforms: str, fix: str, said: str
) -> None:
    result = found(CPU_ONLY, platforms)
    assert result is not None, platforms
    assert result[1] == fix and said in result[0]


@pytest.mark.parametrize("platforms", ["cpu", "cuda,cpu", "cpu,cuda", "foo", "interpreter", "mps"])
def test_what_jax_starts_with_here_or_the_facts_cannot_judge(platforms: str) -> None:
    """cuda without an NVIDIA device is passed over (jax >= 0.4.31); a name no package here explains may be a
    plugin's (Apple's jax-metal is 'metal' on a Mac, other plugins register other names)."""
    assert found(CPU_ONLY, platforms) is None


def test_before_jax_0_4_31_cuda_fails_in_a_list_too() -> None:
    old = {**CPU_ONLY, "packages": {"jax": "0.4.30", "jaxlib": "0.4.30"}}
    detail, fix = found(old, "cuda,cpu") or ("", "")
    assert fix == "export JAX_PLATFORMS=cpu" and "'cuda': no NVIDIA driver" in detail


def test_libtpu_or_a_library_path_leave_tpu_to_the_machine() -> None:
    for fragment in (
        {**CPU_ONLY, "packages": {**JAX, "libtpu": "0.0.17"}},
        {**CPU_ONLY, "env": {"TPU_LIBRARY_PATH": "/opt/libtpu.so"}},
    ):
        assert found(fragment, "tpu,cpu") is None


def test_cuda_on_a_gpu_machine() -> None:
    with_plugin = {"nvidia": GPU, "packages": CUDA_PLUGIN}
    assert found(with_plugin, "cuda") is None and found(with_plugin, "cuda,cpu") is None
    detail, fix = found(with_plugin, "gpu") or ("", "")
    assert fix == "export JAX_PLATFORMS=cuda" and "'rocm' (of 'gpu')" in detail  # jax-ml/jax#25315
    assert (found(with_plugin, "gpu,cpu") or ("", ""))[1] == "export JAX_PLATFORMS=cuda,cpu"
    no_plugin = {"nvidia": GPU, "packages": JAX}
    for platforms in ("cuda", "cuda,cpu"):
        detail, fix = found(no_plugin, platforms) or ("", "")
        assert fix == "python -m pip install 'jax[cuda12]==0.10.1'" and "no jax CUDA plugin" in detail
    assert (found(no_plugin, "tpu,cuda") or ("", ""))[1] == "unset JAX_PLATFORMS"  # the plugin is not all


def test_a_driver_in_error_or_unknown() -> None:
    error = {"nvidia": {"status": "error", "message": "Driver Not Loaded"}, "packages": CUDA_PLUGIN}
    assert found(error, "cuda") is not None  # passed over, or failing: either way nothing starts
    assert found(error, "cuda,cpu") is None  # which of the two, the facts do not say
    assert found({"packages": CUDA_PLUGIN}, "cuda") is None  # no NVML facts (a plan): unknown
    assert found({"nvidia": {"status": "timeout"}, "packages": CUDA_PLUGIN}, "cuda") is None


def test_a_pasted_report_lists_only_some_packages() -> None:
    triage = {**CPU_ONLY, "origin": "triage"}
    assert found(triage, "tpu,cpu") is None and found(triage, "rocm") is None
    assert found(triage, "TPU") is not None  # a name jax never has, whatever is installed


def test_where_jax_started_with_it_nothing_is_said() -> None:
    assert found({**CPU_ONLY, "jax": {"status": "ok", "platform": "cpu"}}, "tpu,cpu") is None
