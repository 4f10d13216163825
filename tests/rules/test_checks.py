"""Code checks: version couplings, pip-check results, the jax child's end, and NVML health counters."""

from __future__ import annotations

from typing import Any

import pytest

from envaudit.rules.registry import CHECKS, registry
from tests.conftest import facts_from

CHECK_IDS = {c.id for c in CHECKS}


def ids(fragment: dict[str, Any]) -> set[str]:
    return {f.id for f in registry().evaluate_checks(facts_from(fragment))}


def test_jax_jaxlib_coupling_vs_other_requirements() -> None:
    facts = {
        "requirements": [
            {"package": "jax", "requires": "jaxlib<=0.4.30,>=0.4.27", "installed": "0.4.20"},
            {"package": "neural-tangents", "requires": "frozendict>=2.3", "installed": None},
        ]
    }
    assert ids(facts) == {"jax-jaxlib-coupling", "requirement-unsatisfied"}


def test_plugin_must_equal_jaxlib() -> None:
    same = {"packages": {"jaxlib": "0.9.0.1", "jax-cuda12-plugin": "0.9.0.1", "jax-cuda12-pjrt": "0.9.0.1"}}
    assert ids(same) == set()
    newer = {"packages": {"jaxlib": "0.9.0.1", "jax-cuda12-plugin": "0.9.2", "jax-cuda12-pjrt": "0.9.2"}}
    (found,) = registry().evaluate_checks(facts_from(newer))  # one cause, one finding: both left apart from jaxlib
    assert found.id == "plugin-jaxlib-mismatch"
    assert found.fix == "python -m pip install jax-cuda12-pjrt==0.9.0.1 jax-cuda12-plugin==0.9.0.1"
    assert found.detail.startswith("jax-cuda12-pjrt 0.9.2, jax-cuda12-plugin 0.9.2 beside jaxlib 0.9.0.1")


@pytest.mark.parametrize("status", ["import_error", "crash", "timeout", "error"])
def test_broken_jax_is_a_fail(status: str) -> None:
    found = registry().evaluate_checks(facts_from({"jax": {"status": status, "stage": "devices", "message": "boom"}}))
    assert [(f.id, f.severity) for f in found] == [("jax-broken", "fail")]
    assert "boom" in found[0].detail


def test_healthy_and_absent_jax_are_not_broken() -> None:
    assert ids({"jax": {"status": "ok", "platform": "cpu"}}) == set()
    assert ids({"jax": {"status": "skipped"}}) == {"jax-not-imported"}  # quick mode says what it did not check


def test_gpu_health_counters() -> None:
    gpus = [
        {"index": 0, "name": "A100", "uuid": "GPU-0", "ecc_uncorrected_volatile": 3, "remap_pending": True},
        {
            "index": 1,
            "name": "A100",
            "uuid": "GPU-1",
            "remap_failure": True,
            "throttle_reasons": ["hw_slowdown"],
        },
        {
            "index": 2,
            "name": "A100",
            "uuid": "GPU-2",
            "ecc_uncorrected_volatile": 0,
            "throttle_reasons": ["gpu_idle"],
            "compute_processes": [{"pid": 4242, "used_memory_bytes": 3 * 2**30}, {"pid": 7, "used_memory_bytes": None}],
        },
        {"index": 3, "name": "A100", "uuid": "GPU-3", "compute_processes": []},
    ]
    found = registry().evaluate_checks(facts_from({"nvidia": {"status": "ok", "gpus": gpus}}))
    got = {(f.id, str(i)) for f in found for i in range(4) if f.detail.startswith(f"GPU {i} ")}
    assert got == {
        ("gpu-uncorrected-ecc", "0"),
        ("gpu-reset-pending", "0"),
        ("gpu-remap-failure", "1"),
        ("gpu-clocks-slowdown", "1"),
        ("gpu-busy", "2"),
    }
    busy = next(f for f in found if f.id == "gpu-busy")
    assert "2 other compute process(es) (pid 4242, 7; 3.0 GiB)" in busy.detail
    ours = facts_from({"nvidia": {"status": "ok", "gpus": gpus}, "jax": {"child_pids": [4242, 7]}})
    found = registry().evaluate_checks(ours)
    assert "gpu-busy" not in {f.id for f in found}  # envaudit's own probe children: not a job


def test_every_check_has_an_https_reference_and_a_fix() -> None:
    for check in CHECKS:
        assert check.references and all(r.startswith("https://") for r in check.references)
        assert check.fix and check.severity in ("fail", "warn", "info")
    assert len(CHECK_IDS) == len(CHECKS)
