"""Derived facts: each source of a CUDA/cuDNN version, its authority, and partial versions."""

from __future__ import annotations

import pytest

from envaudit.rules import accessors
from tests.conftest import facts_from


@pytest.mark.parametrize(
    ("label", "cuda", "cudnn"),
    [
        ("0.1.70+cuda102", "10.2", None),
        ("0.1.57+cuda110", "11.0", None),
        ("0.3.25+cuda11.cudnn82", "11", "8.2"),
        ("0.3.10+cuda11.cudnn805", "11", "8.0.5"),
        ("0.4.20+cuda12.cudnn89", "12", "8.9"),
        ("0.4.20", None, None),
        ("0.6.0+cuda12", "12", None),  # a hand-written label: CUDA 12, never a CUDA 1.2 (review)
        ("0.1.69+cuda92", "9.2", None),
    ],
)
def test_local_labels(label: str, cuda: str | None, cudnn: str | None) -> None:
    got_cuda, got_cudnn = accessors.parse_local_label(label)
    assert (got_cuda.text if got_cuda else None) == cuda
    assert (got_cudnn.text if got_cudnn else None) == cudnn


def test_cuda_prefers_what_jax_reports() -> None:
    facts = facts_from(
        {
            "packages": {"jaxlib": "0.4.30", "jax-cuda12-plugin": "0.4.30"},
            "jax": {"status": "ok", "cuda_version": "12.4"},
        }
    )
    assert accessors.cuda(facts) == accessors.Exact("12.4", "jax")
    facts = facts_from({"packages": {"jaxlib": "0.4.30", "jax-cuda12-plugin": "0.4.30"}})
    assert accessors.cuda(facts) == accessors.Partial("12", "jax-cuda12 plugin")
    assert accessors.platform(facts) == "cuda"


def test_platform_from_packages_and_jax() -> None:
    assert accessors.platform(facts_from({"packages": {"jaxlib": "0.4.30"}})) == "cpu"
    assert accessors.platform(facts_from({"packages": {"jaxlib": "0.1.70+cuda102"}})) == "cuda"
    assert accessors.platform(facts_from({"packages": {"jaxlib": "0.4.30", "libtpu": "0.0.1"}})) == "tpu"
    assert accessors.platform(facts_from({"packages": {}})) is None
    assert accessors.platform(facts_from({"jax": {"status": "ok", "platform": "rocm"}})) == "rocm"


def test_libraries_from_wheels() -> None:
    facts = facts_from(
        {
            "packages": {
                "nvidia-cudnn-cu12": "9.1.0.70",
                "nvidia-cuda-nvcc-cu12": "12.4.131",
                "nvidia-cublas": "13.0.0.19",
                "nvidia-ml-py": "12.0",
            }
        }
    )
    libs = accessors.libraries(facts)
    assert {k: v.text for k, v in libs.items()} == {
        "cudnn": "9.1.0.70",
        "nvcc": "12.4.131",
        "cublas": "13.0.0.19",
    }
    assert accessors.cudnn(facts) == accessors.Exact("9.1.0.70", "nvidia-cudnn-cu12 wheel")


def test_x64_and_precision() -> None:
    assert accessors.x64(facts_from({"jax": {"status": "ok", "x64": True}})) is True
    assert accessors.x64(facts_from({"env": {"JAX_ENABLE_X64": "True"}})) is True
    assert accessors.x64(facts_from({"env": {"JAX_ENABLE_X64": "0"}})) is False
    assert accessors.x64(facts_from({})) is None
    assert (
        accessors.matmul_precision(facts_from({"jax": {"status": "ok", "default_matmul_precision": None}})) == "default"
    )
    assert accessors.matmul_precision(facts_from({"env": {"JAX_DEFAULT_MATMUL_PRECISION": "TF32"}})) == "tf32"
    assert accessors.matmul_precision(facts_from({})) is None


def test_gpus_and_capabilities() -> None:
    absent = facts_from({"nvidia": {"status": "absent", "gpus": []}})
    assert accessors.gpu_count(absent) == 0 and accessors.compute_capabilities(absent) == []
    two = facts_from(
        {"nvidia": {"status": "ok", "gpus": [{"compute_capability": "8.0"}, {"compute_capability": "9.0"}]}}
    )
    assert accessors.gpu_count(two) == 2 and accessors.compute_capabilities(two) == ["8.0", "9.0"]
    assert accessors.gpu_count(facts_from({})) is None


def test_a_cuda_plugin_without_a_driver_is_the_cpu() -> None:
    """jax falls back to the CPU when the plugin finds no NVIDIA driver: quick mode must not say "cuda" there."""
    plugin = {"jax": "0.10.2", "jaxlib": "0.10.2", "jax-cuda12-plugin": "0.10.2"}
    assert accessors.platform(facts_from({"packages": plugin, "nvidia": {"status": "absent"}})) == "cpu"
    assert accessors.platform(facts_from({"packages": plugin, "nvidia": {"status": "ok", "gpus": []}})) == "cuda"
    assert accessors.platform(facts_from({"packages": plugin})) == "cuda"  # a plan: the driver is not known absent
