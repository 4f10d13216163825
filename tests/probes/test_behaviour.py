"""The probes of behaviour (issue 43: fft, eager_jit, ieee_special, linalg): each fails, with the metric that
measures it named, when a fault corrupts what it measures; none cries wolf on 20 healthy seeds; each runs on the
older stack of the neural-tangents environment; and the judge holds their metrics to the platform's bounds.

Faults come from ``tests/faults/<fault>/sitecustomize.py`` on the child's PYTHONPATH, as in tests/child/test_probing.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from envaudit import judge
from envaudit.judge import assess
from envaudit.model.report import ProbeResult
from tests.child.test_probing import FAULTS, audit, by_name
from tests.conftest import ROOT, compiled
from tests.judge.test_judge import MACHINES

# probe -> (the fault that corrupts what it measures, a metric that must name it)
FAULTED = {
    "fft": ("fft_batch_scale", "rel_diff_batched_vs_single"),
    "eager_jit": ("eager_sqrt", "rel_diff_eager_vs_jit"),
    "ieee_special": ("nan_exp_finite", "wrong_nan"),
    "linalg": ("eigh_scale", "rel_err_eigh_values"),
}
SEEDS = 5
CLEARED = ("PYTHONPATH", "JAX_ENABLE_X64", "JAX_DEFAULT_MATMUL_PRECISION", "ENVAUDIT_FAULT_DELTA", "XLA_FLAGS")


@pytest.mark.jax
def test_a_fault_in_what_each_probe_measures_fails_it_by_that_metric(child_env: dict[str, str]) -> None:
    """One audit of the four probes with the four faults composed (tests/faults/compose): each probe fails, its
    finding naming the metric that measures its own fault."""
    env = {**child_env, "ENVAUDIT_FAULTS": ",".join(fault for fault, _ in FAULTED.values())}
    code, report = audit(env, *(a for probe in FAULTED for a in ("--probe", probe)), fault=FAULTS / "compose")
    assert code == 1, report["findings"]
    for probe, (_, metric) in FAULTED.items():
        assert by_name(report)[probe]["status"] == "fail", by_name(report)[probe]
        finding = next(f for f in report["findings"] if f["id"] == f"probe-{probe.replace('_', '-')}")
        assert finding["severity"] == "fail" and metric in finding["detail"], finding


@pytest.mark.jax
@pytest.mark.slow
def test_healthy_seeds_pass_alone_and_judged() -> None:
    """No false alarm: seeds (other inputs each) in one child, each result passing alone and as judged. Here five
    seeds, of the suite's time; `python -m scripts.bench_sensitivity --runs 20` runs twenty (its figures are in the
    probes' docstrings)."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED} | compiled()
    seeds = ",".join(map(str, range(SEEDS)))
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "bench_sensitivity.py"),
        "--child",
        ",".join(FAULTED),
        "--seeds",
        seeds,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(runs) == SEEDS * len(FAULTED)
    results = [ProbeResult(r["name"], r["status"], r["metrics"], 0.0, r["message"]) for r in runs]
    assert [r.message for r in results if r.status != "pass"] == []
    assert {r.status for r in judge.judge(results, MACHINES["cpu"]).results} == {"pass"}


@pytest.mark.slow
def test_the_probes_run_healthy_on_the_older_stack(nt_python: Path) -> None:
    """jax 0.4.25 / numpy 1.26 (the neural-tangents environment), with openxla/xla#13054's workaround as its users
    run it: every API a probe uses exists there, and its answer is right (the four in one process)."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env["XLA_FLAGS"] = "--xla_disable_hlo_passes=onednn-matmul-rewriter"
    cmd = [str(nt_python), str(ROOT / "scripts" / "bench_sensitivity.py"), "--child", ",".join(FAULTED)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    runs = {r["name"]: r for r in (json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{"))}
    assert {name: r["status"] for name, r in runs.items()} == dict.fromkeys(FAULTED, "pass"), runs


def judged(probe: str, metrics: Mapping[str, object], machine: str) -> dict[str, str]:
    """metric -> severity of each problem the judge finds in these metrics on that machine."""
    result = ProbeResult(probe, "pass", {"precision": "float32", **metrics}, 0.0, "")
    return {p.metric: p.severity for p in assess.problems(result, MACHINES[machine])}


def test_a_tpus_approximate_functions_pass_there_and_fail_on_a_cpu() -> None:
    """A TPU v5e's float32 log is 4.5e-5 from float64 (measured), its eigh residual 9.7e-6: healthy there, far
    beyond what a CPU gives (6e-8)."""
    tpu = {"rel_fn_err_log_jit": 4.5e-5, "rel_residual_eigh": 9.7e-6}
    assert judged("eager_jit", tpu, "tpu") == {}
    assert judged("eager_jit", tpu, "cpu") == {"rel_fn_err_log_jit": "fail"}
    assert judged("eager_jit", {"rel_fn_err_log_jit": 1e-3}, "tpu") == {"rel_fn_err_log_jit": "fail"}
    # a GPU's and an unknown platform's bounds are the loosest measured (a TPU's): never stricter than a TPU's
    assert judged("eager_jit", tpu, "h100") == {}


def test_a_wrong_ieee_class_fails_everywhere_and_flushed_subnormals_are_reported() -> None:
    for machine in ("cpu", "tpu", "h100"):
        assert judged("ieee_special", {"wrong_nan": 1, "wrong_inf": 0}, machine) == {"wrong_nan": "fail"}
        flushed = {"wrong_subnormal": 0, "subnormals_flushed": True, "wrong_cases": "none"}
        assert judged("ieee_special", flushed, machine) == {}
