"""A jax CUDA build installed beside a GPU while jax computes on the CPU (`cuda-backend-failed-jax-on-cpu`): a
failure where the user asked for the GPU, nothing where they asked for the CPU, and one root where a rule knows why."""

from __future__ import annotations

from typing import Any

import pytest

from envaudit import rules
from envaudit.judge import causes
from tests.conftest import facts_from

STACK = {"jax": "0.6.1", "jaxlib": "0.6.1", "jax-cuda12-plugin": "0.6.1", "jax-cuda12-pjrt": "0.6.1"}
GPU = {
    "status": "ok",
    "driver_version": "550.54.15",
    "cuda_driver_version": "12.4",
    "gpus": [{"index": 0, "compute_capability": "8.0"}],
}
ON_THE_CPU = {"status": "ok", "platform": "cpu", "backend": "cpu"}


def roots(packages: dict[str, str], env: dict[str, str], nvidia: dict[str, Any] = GPU) -> dict[str, str]:
    facts = facts_from({"packages": packages, "env": env, "nvidia": nvidia, "jax": ON_THE_CPU})
    evaluated = rules.evaluate(facts)
    return {f.id: f.severity for f in causes.link(evaluated.findings, evaluated) if not f.caused_by}


def test_a_plugin_that_did_not_start_beside_a_gpu_is_a_failure() -> None:
    found = roots(STACK, {})
    assert found.get("cuda-backend-failed-jax-on-cpu") == "fail" and "gpu-present-jax-on-cpu" not in found
    assert roots({"jax": "0.6.1", "jaxlib": "0.6.1"}, {}).get("gpu-present-jax-on-cpu") == "warn"  # no CUDA build


@pytest.mark.parametrize(
    "env",
    [
        {"JAX_PLATFORMS": "cpu"},
        {"JAX_PLATFORM_NAME": "cpu"},
        {"CUDA_VISIBLE_DEVICES": ""},
        {"CUDA_VISIBLE_DEVICES": "-1"},
    ],
)
def test_where_the_user_asked_for_the_cpu_it_is_no_failure(env: dict[str, str]) -> None:
    assert "fail" not in roots(STACK, env).values()


def test_a_rule_that_knows_why_is_the_one_root() -> None:
    """A driver older than CUDA 12's minimum, a plugin of another release than jaxlib: each folds it."""
    old_driver = {**GPU, "driver_version": "470.82.01", "cuda_driver_version": "11.4"}
    assert [i for i, s in roots(STACK, {}, old_driver).items() if s == "fail"] == ["cuda12-driver-below-525"]
    skewed = {**STACK, "jaxlib": "0.6.2"}
    assert "cuda-backend-failed-jax-on-cpu" not in roots(skewed, {})
