"""A hung NVIDIA driver must not hang envaudit: a health check that never returns is killed by Slurm and the node
is never drained, and the hook's cold path runs inside a user's `import jax`. The hang is itself the finding."""

from __future__ import annotations

import os

import pytest

from envaudit.collect import nvml
from tests.conftest import PYTHON, ROOT, envaudit_run
from tests.fakes.fake_pynvml import make_fake_pynvml

HANG = ROOT / "tests" / "faults" / "nvml_hang"


@pytest.mark.slow
def test_a_hung_nvml_is_a_timeout_fact_within_its_bound() -> None:
    facts = nvml.get_nvidia_within(0.5, make_fake_pynvml({"nvmlInit": {"hang": 3600}}))
    assert facts["status"] == "timeout" and "did not answer within 0.5 s" in str(facts["message"])
    assert facts["gpus"] == [] and facts["driver_version"] is None


def test_a_slow_but_answering_nvml_is_waited_for() -> None:
    facts = nvml.get_nvidia_within(10.0, make_fake_pynvml({"nvmlInit": {"hang": 0.2, "error": 12}}))
    assert facts["status"] == "absent"


@pytest.mark.jax
def test_health_on_a_node_whose_driver_hangs_exits_1_and_says_so(child_env: dict[str, str]) -> None:
    env = {**child_env, "PYTHONPATH": os.pathsep.join([str(HANG), child_env["PYTHONPATH"]])}
    proc = envaudit_run(
        PYTHON, "health", "--probe", "matmul_precision", env=env, timeout=120
    )  # a hang would be this timeout
    assert proc.returncode == 1 and proc.stdout.startswith("envaudit FAIL"), proc.stdout + proc.stderr
    assert "nvml-hung" in proc.stdout


@pytest.mark.slow
def test_quick_mode_on_that_node_returns_too(child_env: dict[str, str]) -> None:
    env = {**child_env, "PYTHONPATH": os.pathsep.join([str(HANG), child_env["PYTHONPATH"]])}
    proc = envaudit_run(PYTHON, "--quick", env=env, timeout=120)
    assert proc.returncode == 1 and "nvml-hung" in proc.stdout and "NVML did not answer" in proc.stdout
