"""A node is never drained because the machine was slow, and never passed because something hangs: a probe that runs
out of time while computing on a machine with no CPU to spare (16 checks on 2 cores) is a warning saying what to
change; one that runs out of time blocked, using no CPU (a hung driver call, a deadlock), or spinning while CPUs
sat idle (a CUDA wait on a hung GPU spins), is a failure. The child's CPU time and the machine's idle time over
the window tell them apart."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from envaudit import judge
from envaudit.facts import GPU
from envaudit.model import ProbeResult
from tests.conftest import PYTHON, ROOT, envaudit_run
from tests.judge.test_judge import MACHINES

RUN = """
import json, sys
from pathlib import Path
from envaudit import probefiles
from envaudit.child import runner, state
probefiles.probes_dir = lambda: Path(sys.argv[1])
outcome = runner.run(state.Options(tuple(sys.argv[2].split(",")), timeout=2, total=float(sys.argv[3]), facts=False))
print(json.dumps([r.to_dict() for r in outcome.results]))
"""
PROBES = {
    "busy": "def run(precision='auto'):\n    while True:\n        sum(range(1000))\n",
    "blocked": "def run(precision='auto'):\n    import time\n    time.sleep(3600)\n",
    "quick": "def run(precision='auto'):\n    return {'name': 'quick', 'status': 'pass', 'metrics': {}}\n",
}


def timed_out(tmp_path: Path, child_env: dict[str, str], names: str, total: float = 60) -> list[ProbeResult]:
    for name, body in PROBES.items():
        (tmp_path / f"{name}.py").write_text(body)
    proc = subprocess.run(
        [PYTHON, "-c", RUN, str(tmp_path), names, str(total)],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return [ProbeResult.from_dict(r) for r in json.loads(proc.stdout)]


@contextmanager
def every_cpu_taken() -> Iterator[None]:
    """Other work on every CPU of the machine (and one more), as a loaded node has."""
    hogs = [subprocess.Popen([PYTHON, "-c", "while True: pass"]) for _ in range((os.cpu_count() or 1) + 1)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.slow
@pytest.mark.alone
def test_computing_until_the_bound_on_a_loaded_machine_is_slow(tmp_path: Path, child_env: dict[str, str]) -> None:
    with every_cpu_taken():
        (busy,) = timed_out(tmp_path, child_env, "busy")
    assert busy.status == "timeout" and busy.metrics["cpu_fraction"] > 0.02 and busy.metrics["idle_cpus"] < 0.5
    found = {f.id: f.severity for f in judge.judge([busy], MACHINES["cpu"]).findings}
    assert found == {"probe-busy-timeout": "warn"}


@pytest.mark.slow
@pytest.mark.alone
def test_blocked_or_spinning_with_cpus_to_spare_is_hung(tmp_path: Path, child_env: dict[str, str]) -> None:
    busy, blocked = timed_out(tmp_path, child_env, "busy,blocked")
    assert busy.status == blocked.status == "timeout"
    assert busy.metrics["cpu_fraction"] > 0.5 and blocked.metrics["cpu_fraction"] < 0.01
    assert busy.metrics["idle_cpus"] >= 0.5  # this machine had CPU to spare: nothing starved the spinning child
    found = {f.id: f.severity for f in judge.judge([busy, blocked], MACHINES["cpu"]).findings}
    assert found == {"probe-busy-timeout": "fail", "probe-blocked-timeout": "fail"}


@pytest.mark.slow
@pytest.mark.alone
def test_a_spinning_hang_in_import_jax_fails_the_node_and_a_loaded_one_does_not(child_env: dict[str, str]) -> None:
    """The review's case: `import jax` spinning for ever gave `envaudit OK` (and the Slurm wrapper resumed the
    node). With CPUs to spare it is jax-broken, a failure; the same spin on a machine with none is too busy."""
    env = {**child_env, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "faults" / "spin_on_import"), str(ROOT)])}
    argv = [PYTHON, "-m", "envaudit", "health", "--probe", "dense_chain", "--timeout", "3", "--total-timeout", "6"]
    idle = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert idle.returncode == 1 and idle.stdout.startswith("envaudit FAIL") and "jax-broken" in idle.stdout
    with every_cpu_taken():
        loaded = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0 and "jax-broken" not in loaded.stdout, loaded.stdout


def test_other_jobs_on_a_gpu_make_a_timeout_a_warning() -> None:
    """A GPU shared with another job starves the probes as surely as a CPU does (the host thread spin-waits)."""
    spinning = ProbeResult("dense_chain", "timeout", {"cpu_fraction": 1.0, "idle_cpus": 7.0}, 30.0, "no answer")
    gpus: list[GPU] = [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-0", "compute_processes": [{"pid": 4242}]}]
    shared = replace(MACHINES["h200"], nvidia={**MACHINES["h200"].nvidia, "gpus": gpus})
    assert {f.severity for f in judge.judge([spinning], MACHINES["h200"]).findings} == {"fail"}
    assert {f.severity for f in judge.judge([spinning], shared).findings} == {"warn"}


@pytest.mark.slow
@pytest.mark.alone
def test_probes_left_unrun_by_the_total_bound_are_a_warning(tmp_path: Path, child_env: dict[str, str]) -> None:
    _, unrun = timed_out(tmp_path, child_env, "busy,quick", total=1.5)
    assert unrun.status == "timeout" and unrun.metrics == {"not_run": True}
    (finding,) = [f for f in judge.judge([unrun], MACHINES["cpu"]).findings]
    assert finding.severity == "warn" and "--timeout" in finding.fix


@pytest.mark.jax
@pytest.mark.alone
def test_healthy_checks_oversubscribing_the_machine_never_fail(child_env: dict[str, str], tmp_path: Path) -> None:
    """Eight node checks at once on this small machine, each with a short bound: some run out of time (the
    machine is busy), none may say the node is bad."""

    def check(i: int) -> subprocess.CompletedProcess[str]:
        env = {**child_env, "ENVAUDIT_CACHE_DIR": str(tmp_path / f"cache{i}")}  # cold: every compilation is paid
        return envaudit_run(
            PYTHON, "health", "--probe", "dense_chain", "--probe", "ntk", "--timeout", "1.5", env=env, timeout=300
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(pool.map(check, range(8)))
    assert [r.returncode for r in runs] == [0] * 8, [r.stdout for r in runs]
