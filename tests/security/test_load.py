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
from envaudit.child import load
from envaudit.model.facts import GPU
from envaudit.model.report import ProbeResult
from tests.conftest import PYTHON, ROOT, envaudit_run
from tests.judge.test_judge import MACHINES

RUN = """
import json, sys
from pathlib import Path
from envaudit.files import probefiles
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
    assert finding.severity == "warn" and "--timeout" in finding.detail and not finding.fix  # advice


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


def test_a_cgroups_throttling_is_read_from_v1_and_v2_and_its_ancestors(tmp_path: Path) -> None:
    """The quota may be set on the job's cgroup or on one above it (a Kubernetes pod, slurmd's unit)."""
    for controller, key, value in (("cpu,cpuacct", "throttled_time", 3 * 10**9), ("", "throttled_usec", 3 * 10**6)):
        pod = tmp_path / controller / "kubepods" / "pod1"
        (pod / "container").mkdir(parents=True)
        (pod / "cpu.stat").write_text(f"nr_periods 40\nnr_throttled 30\n{key} {value}\n")
        (pod / "container" / "cpu.stat").write_text(f"nr_periods 40\nnr_throttled 0\n{key} 0\n")
        line = f"{'4' if controller else '0'}:{controller}:/kubepods/pod1/container"
        assert load.throttled([line], tmp_path) == pytest.approx(3.0)
    assert load.throttled(["3:memory:/x"], tmp_path) is None


def test_the_idle_time_is_of_the_cpus_the_child_may_use(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  10 0 10 900 0 0 0\ncpu0 5 0 5 100 0 0 0\ncpu1 5 0 5 800 0 0 0\nintr 1\n")
    assert load.idle_seconds({0}, stat) == pytest.approx(100 / load.USER_HZ)
    assert load.idle_seconds(None, stat) == pytest.approx(900 / load.USER_HZ)


def _cpu_cgroup() -> tuple[Path, str, str] | None:
    """(a cgroup directory to make, its quota file, the quota of a tenth of a CPU), where this process may."""
    if os.geteuid() != 0:
        return None
    v1, v2 = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")
    name = f"envaudit-test-{os.getpid()}"
    if (v1 / "cpu.cfs_quota_us").exists():
        return v1 / name, "cpu.cfs_quota_us", "10000"  # of a 100 ms period
    try:
        delegated = "cpu" in (v2 / "cgroup.subtree_control").read_text().split()
    except OSError:
        return None
    return (v2 / name, "cpu.max", "10000 100000") if delegated else None


@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.skipif(_cpu_cgroup() is None, reason="needs root and a cgroup CPU controller it may write")
def test_a_cpu_quota_starves_a_child_on_an_idle_machine(tmp_path: Path, child_env: dict[str, str]) -> None:
    """A Kubernetes limit, `CPUQuota` on slurmd, `docker --cpus`: the machine's CPUs sit idle while the child gets a
    tenth of one. Its timeout was judged a hang (FAIL, a healthy node drained); it is a busy machine."""
    found = _cpu_cgroup()
    assert found is not None
    group, quota, value = found
    group.mkdir()
    try:
        (group / quota).write_text(value)
        for name, body in PROBES.items():
            (tmp_path / f"{name}.py").write_text(body)
        inside = f'echo $$ > {group / "cgroup.procs"} && exec "$@"'
        proc = subprocess.run(
            ["sh", "-c", inside, "sh", PYTHON, "-c", RUN, str(tmp_path), "busy", "60"],
            env=child_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        group.rmdir()
    (busy,) = [ProbeResult.from_dict(r) for r in json.loads(proc.stdout)]
    assert {f.id: f.severity for f in judge.judge([busy], MACHINES["cpu"]).findings} == {"probe-busy-timeout": "warn"}
    assert busy.status == "timeout" and busy.metrics.get("throttled_fraction", 0) >= 0.1, busy.metrics


@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs: one for the cpuset, one left idle")
def test_a_cpuset_shared_with_other_work_starves_a_child_beside_idle_cpus(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """A job confined to CPU 0, which other work holds, while CPU 1 sits idle: starved, not hung."""
    for name, body in PROBES.items():
        (tmp_path / f"{name}.py").write_text(body)
    pinned = ["taskset", "-c", "0"]
    hogs = [subprocess.Popen([*pinned, PYTHON, "-c", "while True: pass"]) for _ in range(2)]
    try:
        proc = subprocess.run(
            [*pinned, PYTHON, "-c", RUN, str(tmp_path), "busy", "60"],
            env=child_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    (busy,) = [ProbeResult.from_dict(r) for r in json.loads(proc.stdout)]
    assert busy.status == "timeout" and busy.metrics["idle_cpus"] < 0.5, busy.metrics
    assert {f.id: f.severity for f in judge.judge([busy], MACHINES["cpu"]).findings} == {"probe-busy-timeout": "warn"}


@pytest.mark.slow
@pytest.mark.alone
def test_a_child_spinning_alone_on_its_one_cpu_is_hung_not_starved(tmp_path: Path, child_env: dict[str, str]) -> None:
    """Confined to one CPU that nothing else wants, a spinning hang leaves none of its CPUs idle: that is its own
    doing, not other work's, and it stays a hang (found by the review of the cpuset change)."""
    for name, body in PROBES.items():
        (tmp_path / f"{name}.py").write_text(body)
    proc = subprocess.run(
        ["taskset", "-c", "0", PYTHON, "-c", RUN, str(tmp_path), "busy", "60"],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (busy,) = [ProbeResult.from_dict(r) for r in json.loads(proc.stdout)]
    assert busy.metrics["cpus"] == 1 and busy.metrics["cpu_fraction"] > 0.5, busy.metrics
    assert {f.id: f.severity for f in judge.judge([busy], MACHINES["cpu"]).findings} == {"probe-busy-timeout": "fail"}


@pytest.mark.parametrize(
    ("metrics", "severity"),
    [
        # a spin that used all of a half-CPU quota for 15 s: CPU time for its 0.5 s of work many times over
        ({"cpu_fraction": 0.5, "idle_cpus": 1.5, "throttled_fraction": 0.5, "cpus": 2, "cpu_s": 7.5}, "fail"),
        # the same quota with a tenth of a CPU: not enough to have finished, the quota starved it
        ({"cpu_fraction": 0.1, "idle_cpus": 1.9, "throttled_fraction": 0.9, "cpus": 2, "cpu_s": 1.5}, "warn"),
        # alone on its one CPU for 15 s: a hang, though none of its CPUs sat idle
        ({"cpu_fraction": 1.0, "idle_cpus": 0.0, "throttled_fraction": 0.0, "cpus": 1, "cpu_s": 15.0}, "fail"),
        # a third of its one CPU, the rest taken by others
        ({"cpu_fraction": 0.33, "idle_cpus": 0.0, "throttled_fraction": 0.0, "cpus": 1, "cpu_s": 0.66}, "warn"),
    ],
)
def test_a_child_that_had_cpu_enough_for_its_work_is_hung_whatever_a_quota_took(
    metrics: dict[str, float], severity: str
) -> None:
    """The review's case: a spin-wait filling its cpuset or its quota was judged starved, so a hung node passed."""
    spinning = ProbeResult("dense_chain", "timeout", {**metrics, "cost_s": 0.5}, 15.0, "no answer within 15 s")
    assert {f.severity for f in judge.judge([spinning], MACHINES["cpu"]).findings} == {severity}
