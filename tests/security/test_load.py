"""A node is never drained because the machine was slow: a probe that runs out of time while computing (16 checks
on 2 cores, a TensorFlow import) is a warning saying what to change; one that runs out of time blocked, using no
CPU (a hung driver call, a deadlock), is a failure. The child's CPU time over the window tells them apart."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from envaudit import judge
from envaudit.model import ProbeResult
from tests.conftest import PYTHON
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
    proc = subprocess.run([PYTHON, "-c", RUN, str(tmp_path), names, str(total)], env=child_env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    return [ProbeResult.from_dict(r) for r in json.loads(proc.stdout)]


def test_computing_until_the_bound_is_slow_and_blocked_is_hung(tmp_path: Path, child_env: dict[str, str]) -> None:
    busy, blocked = timed_out(tmp_path, child_env, "busy,blocked")
    assert busy.status == blocked.status == "timeout"
    assert busy.metrics["cpu_fraction"] > 0.5 and blocked.metrics["cpu_fraction"] < 0.01
    found = {f.id: f.severity for f in judge.judge([busy, blocked], MACHINES["cpu"]).findings}
    assert found == {"probe-busy-timeout": "warn", "probe-blocked-timeout": "fail"}


def test_probes_left_unrun_by_the_total_bound_are_a_warning(tmp_path: Path, child_env: dict[str, str]) -> None:
    _, unrun = timed_out(tmp_path, child_env, "busy,quick", total=1.5)
    assert unrun.status == "timeout" and unrun.metrics == {"not_run": True}
    (finding,) = [f for f in judge.judge([unrun], MACHINES["cpu"]).findings]
    assert finding.severity == "warn" and "--timeout" in finding.fix


def test_healthy_checks_oversubscribing_the_machine_never_fail(child_env: dict[str, str], tmp_path: Path) -> None:
    """Eight node checks at once on this small machine, each with a short bound: some run out of time (the
    machine is busy), none may say the node is bad."""

    def check(i: int) -> subprocess.CompletedProcess[str]:
        env = {**child_env, "ENVAUDIT_CACHE_DIR": str(tmp_path / f"cache{i}")}  # cold: every compilation is paid
        return subprocess.run([PYTHON, "-m", "envaudit", "health", "--probe", "dense_chain", "--probe", "ntk",
                               "--timeout", "1.5"], env=env, capture_output=True, text=True, timeout=300)  # fmt: skip

    with ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(pool.map(check, range(8)))
    assert [r.returncode for r in runs] == [0] * 8, [r.stdout for r in runs]
