"""A node is never drained because the machine was slow, and never passed because something hangs: a probe that runs
out of time while it wanted a CPU and had to wait for one (16 checks on 2 cores) is a warning saying what to change;
one that runs out of time blocked, using no CPU (a hung driver call, a deadlock), or spinning with a CPU to itself (a
CUDA wait on a hung GPU spins), is a failure. The scheduler's own counters (/proc/PID/task/*/schedstat: time run,
time waited for a CPU) tell them apart, so these tests hold whatever else the machine is doing: a blocked child
waits for no CPU on a busy machine either, and a child sharing every CPU with two others waits on any machine."""

from __future__ import annotations

import json
import os
import subprocess
import time
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
from envaudit.rules import node
from envaudit.rules.node import WAITED
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
    """Two other processes spinning on every CPU of the machine (and one more), each in a session of its own as
    other jobs are (the scheduler shares CPUs fairly between sessions' groups: hogs in the test's own session would
    only slow the test), so that every runnable process waits for a CPU about half the time."""
    hogs = [
        subprocess.Popen([PYTHON, "-c", "while True: pass"], start_new_session=True)
        for _ in range(2 * (os.cpu_count() or 1) + 1)
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.slow
@pytest.mark.alone
def test_computing_until_the_bound_while_waiting_for_a_cpu_is_slow(tmp_path: Path, child_env: dict[str, str]) -> None:
    with every_cpu_taken():
        (busy,) = timed_out(tmp_path, child_env, "busy")
    assert busy.status == "timeout" and busy.metrics["cpu_fraction"] > 0.02
    assert busy.metrics["wait_fraction"] >= WAITED  # the scheduler's word: runnable, and made to wait
    found = {f.id: f.severity for f in judge.judge([busy], MACHINES["cpu"]).findings}
    assert found == {"probe-busy-timeout": "warn"}


@pytest.mark.slow
@pytest.mark.alone
def test_a_blocked_child_is_hung_on_a_busy_machine_too(tmp_path: Path, child_env: dict[str, str]) -> None:
    """The review's case: with every CPU busy, a hang was "the machine was too busy". A child blocked in a call
    neither runs nor waits for a CPU, however loaded the machine: it hangs."""
    with every_cpu_taken():
        (blocked,) = timed_out(tmp_path, child_env, "blocked")
    assert blocked.status == "timeout" and blocked.metrics["cpu_fraction"] < 0.01
    assert blocked.metrics["wait_fraction"] < WAITED
    found = {f.id: f.severity for f in judge.judge([blocked], MACHINES["cpu"]).findings}
    assert found == {"probe-blocked-timeout": "fail"}


def test_the_scheduler_counts_a_blocked_childs_wait_as_none_and_a_starved_ones_as_half() -> None:
    """load.waited reads what the kernel counted: measured on real children, not on the machine's idle time."""
    code = "import time; print('asleep', flush=True); time.sleep(60)"
    blocked = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert blocked.stdout is not None and blocked.stdout.readline() == "asleep\n"  # its start is not the window
        first = load.mark(blocked.pid)
        time.sleep(0.5)
        window = load.load(first, load.mark(blocked.pid))
    finally:
        blocked.kill()
        blocked.wait()
    if "wait_fraction" not in window:
        pytest.skip("this kernel keeps no schedstat")
    assert window["wait_fraction"] < 0.05 and window["cpu_fraction"] < 0.05


@pytest.mark.parametrize(
    ("metrics", "starved"),
    [
        ({"cpu_fraction": 0.5, "wait_fraction": 0.5}, True),  # runnable half the time, and kept waiting
        ({"cpu_fraction": 1.0, "wait_fraction": 0.01, "idle_cpus": 0.0}, False),  # a CPU to itself: it spins
        ({"cpu_fraction": 0.0, "wait_fraction": 0.0, "idle_cpus": 0.0}, False),  # blocked, on a full machine
        ({"cpu_fraction": 0.5, "wait_fraction": 0.01, "throttled_fraction": 0.5}, True),  # a quota held it
        ({"cpu_fraction": 0.5, "wait_fraction": 0.5, "cpu_s": 100.0, "cost_s": 1.0}, False),  # had enough CPU
        ({"cpu_fraction": 0.5, "idle_cpus": 0.1, "cpus": 2}, True),  # a report saved before schedstat was read
        ({"cpu_fraction": 0.9, "idle_cpus": 1.0, "cpus": 2}, False),
    ],
)
def test_starved_is_the_schedulers_word(metrics: dict[str, float], starved: bool) -> None:
    assert node.starved(metrics, MACHINES["cpu"]) is starved


@pytest.mark.slow
@pytest.mark.alone
def test_a_hang_in_import_jax_fails_the_node_however_busy_and_a_starved_one_does_not(child_env: dict[str, str]) -> None:
    """`import jax` blocked for ever on a node whose CPUs are all busy with jobs: jax-broken, a failure (it was
    "too busy" before). The same import spinning while it shares every CPU with two others is too busy."""
    argv = [PYTHON, "-m", "envaudit", "health", "--probe", "dense_chain", "--timeout", "3", "--total-timeout", "6"]
    hang = {**child_env, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "faults" / "hang_on_import"), str(ROOT)])}
    spin = {**child_env, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "faults" / "spin_on_import"), str(ROOT)])}
    with every_cpu_taken():
        hung = subprocess.run(argv, env=hang, capture_output=True, text=True, timeout=120)
        starved = subprocess.run(argv, env=spin, capture_output=True, text=True, timeout=120)
    assert hung.returncode == 1 and hung.stdout.startswith("envaudit FAIL") and "jax-broken" in hung.stdout
    assert starved.returncode == 0 and "jax-broken" not in starved.stdout, starved.stdout


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


IDLE_ENOUGH = 0.9  # of a CPU found idle over IDLE_SAMPLE_S: "nothing else wants it"
IDLE_SAMPLE_S = 1.0


def idlest_cpu(seconds: float = IDLE_SAMPLE_S) -> tuple[int, float]:
    """The CPU of this process's set that sat idle the most over `seconds` (/proc/stat), and how idle (0..1)."""

    def ticks() -> dict[int, tuple[int, int]]:
        found = {}
        for line in Path("/proc/stat").read_text().splitlines():
            name, *values = line.split()
            if name.startswith("cpu") and name[3:].isdigit():
                counts = [int(v) for v in values]
                found[int(name[3:])] = (counts[3] + counts[4], sum(counts[:8]))  # idle + iowait, all but guest
        return found

    before = ticks()
    time.sleep(seconds)
    after = ticks()
    idle = {
        cpu: (after[cpu][0] - before[cpu][0]) / max(after[cpu][1] - before[cpu][1], 1)
        for cpu in os.sched_getaffinity(0)
        if cpu in before and cpu in after
    }
    return max(idle.items(), key=lambda item: item[1])


@pytest.mark.slow
@pytest.mark.alone
def test_a_child_spinning_alone_on_its_one_cpu_is_hung_not_starved(tmp_path: Path, child_env: dict[str, str]) -> None:
    """Confined to one CPU that nothing else wants, a spinning hang leaves none of its CPUs idle: that is its own
    doing, not other work's, and it stays a hang (found by the review of the cpuset change). The condition is made,
    not assumed: the child is confined to the idlest CPU of this process's set, which must have sat idle first (on
    a machine whose every CPU is busy with other work, the case is the starved one above, and this test says so)."""
    cpu, idle = idlest_cpu()
    if idle < IDLE_ENOUGH:
        pytest.skip(f"no CPU here is idle enough to be one that nothing else wants: the idlest, {cpu}, {idle:.0%}")
    for name, body in PROBES.items():
        (tmp_path / f"{name}.py").write_text(body)
    proc = subprocess.run(
        ["taskset", "-c", str(cpu), PYTHON, "-c", RUN, str(tmp_path), "busy", "60"],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (busy,) = [ProbeResult.from_dict(r) for r in json.loads(proc.stdout)]
    assert busy.metrics["cpus"] == 1 and busy.metrics["cpu_fraction"] > 0.5, busy.metrics
    judged = {f.id: f.severity for f in judge.judge([busy], MACHINES["cpu"]).findings}
    # the CPU sat idle before; where other work took it during the run all the same (the scheduler's counter: the
    # child waited for it), the case is the starved one, and the judge must say so from that evidence, not a hang
    contested = busy.metrics.get("wait_fraction", 0.0) >= node.WAITED
    assert judged == {"probe-busy-timeout": "warn" if contested else "fail"}, busy.metrics


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
