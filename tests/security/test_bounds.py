"""Every bound holds in the parent, against a child that floods, nests, hangs, or leaves its own children behind.

A wrapper or `sitecustomize` that prints progress floods without malice; an interpreter that hangs is a stuck NFS
mount. The audit's memory stays small, its time stays within the bounds the user gave, and nothing the child
started outlives the audit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from envaudit.child import bounded
from envaudit.child._main import PREFIX, decode
from tests.conftest import PYTHON, ROOT

MEASURED = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True, errors="replace", timeout=300)
sys.stdout.write(proc.stderr[-2000:])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, proc.returncode)
"""
FLOODS = {
    "lines": "#!/bin/sh\nexec yes garbage\n",
    "no newline": "#!/bin/sh\nexec cat /dev/zero\n",
    "deep JSON": "#!/bin/sh\nexec python3 -c \"print('[' * 100000 + ']' * 100000)\"\n",
}


def peak_mib(argv: list[str], env: dict[str, str]) -> tuple[int, int, str]:
    """(the largest resident size of envaudit, in MiB; its exit status; what it said on stderr)."""
    proc = subprocess.run(
        [PYTHON, "-c", MEASURED, *argv], env=env, capture_output=True, text=True, timeout=360, check=True
    )
    said, _, numbers = proc.stdout.rstrip().rpartition("\n")
    mib, code = numbers.split()
    return int(mib), int(code), said


def interpreter(tmp_path: Path, script: str) -> Path:
    target = tmp_path / "python"
    target.write_text(script)
    target.chmod(0o755)
    return target


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(FLOODS))
def test_an_interpreter_that_floods_or_nests_is_one_line_and_little_memory(
    kind: str, child_env: dict[str, str], tmp_path: Path
) -> None:
    """`audit --quick --python` of an interpreter that floods took 4 GB in 12-18 s; 100k nested lists exited 3."""
    target = interpreter(tmp_path, FLOODS[kind])
    mib, code, said = peak_mib([PYTHON, "-m", "envaudit", "--quick", "--python", str(target)], child_env)
    assert code == 2 and said.count("\n") == 0 and said.startswith(f"envaudit: error: --python {target}"), said
    assert mib < 64 + 2 * bounded.LIMIT // 2**20, mib  # the interpreter's own size and two streams' limit


@pytest.mark.slow
# health's bound holds jax's start (2 s on a CPU) and a probe beside the 3.5 s kept for its end: 8 s does, 3 s is
# bad usage on its own
@pytest.mark.parametrize("verb", [["audit", "--quick"], ["health", "--total-timeout", "8"]])
def test_a_hung_interpreter_takes_the_users_bound_and_its_children_die(
    verb: list[str], child_env: dict[str, str], tmp_path: Path
) -> None:
    """It took 62 s (its own bound, beyond the Slurm wrapper's 55 s) and left its children running."""
    pidfile = tmp_path / "pid"
    target = interpreter(tmp_path, f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nsleep 300\n")
    argv = [PYTHON, "-m", "envaudit", *verb, "--timeout", "3", "--python", str(target)]
    if verb[0] == "health":
        argv += ["--prometheus-dir", str(tmp_path)]
    proc = subprocess.run(argv, env=child_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr == f"envaudit: error: --python {target}: no answer within 3 s\n"
    assert gone(int(pidfile.read_text())), "the interpreter's child outlived the audit"


def gone(pid: int) -> bool:
    """The process has exited (or is a zombie nobody reaped yet), waiting a few moments for the kill to land."""
    for _ in range(100):
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        subprocess.run(["sleep", "0.05"], check=True)
    return False


SPAWNS = "import subprocess, sys; p = subprocess.Popen(['sleep', '300']); print(p.pid, flush=True); "


def test_bounded_run_keeps_the_limit_and_kills_what_the_child_started() -> None:
    done = bounded.run([sys.executable, "-c", SPAWNS + "sys.stdout.write('x' * 100000)"], timeout=30, limit=1000)
    pid, _, rest = done.stdout.partition("\n")
    assert done.cut and done.returncode is None and rest == "x" * (1000 - len(pid) - 1)
    assert gone(int(pid))
    done = bounded.run([sys.executable, "-c", SPAWNS + "sys.stderr.write('said')"], timeout=30)
    assert (done.returncode, done.stderr, done.cut, done.timed_out) == (0, "said", False, False)
    assert gone(int(done.stdout))


PROBE_RUN = """
import json, sys
from pathlib import Path
from envaudit.files import probefiles
from envaudit.child import runner, state
probefiles.probes_dir = lambda: Path(sys.argv[1])
options = state.Options(("blocked",), timeout=2, total=4, facts=False, python=sys.argv[2])
results = [r.to_dict() for r in runner.run(options).results]
# envaudit's own peak, not its children's (jax's), nor (as ru_maxrss would) the pytest worker's it was forked from
mib = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) // 1024
Path(sys.argv[3]).write_text(json.dumps({"results": results, "mib": mib}))
"""
CHILD_FLOODS = {  # a wrapper or a sitecustomize that prints while the probe hangs
    "lines": "yes garbage",
    "events": 'yes \'ENVAUDIT {"event": "memory", "devices": []}\'',
    "no newline": "cat /dev/zero",
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(CHILD_FLOODS))
def test_a_probe_child_that_floods_still_meets_its_bounds_in_little_memory(
    kind: str, child_env: dict[str, str], tmp_path: Path
) -> None:
    """Lines that keep coming never let the wait time out: a flood of `yes garbage` still ran at 45 s of a 10 s
    bound, valid-looking events reached 2.2 GB, `cat /dev/zero` 4 GB in 15 s."""
    (tmp_path / "blocked.py").write_text("def run(precision='auto'):\n    import time\n    time.sleep(3600)\n")
    wrapper = interpreter(tmp_path, f'#!/bin/sh\n{CHILD_FLOODS[kind]} &\nexec {PYTHON} "$@"\n')
    results, mib = run_probes(PROBE_RUN, tmp_path, wrapper, child_env)
    assert [(r["status"], r["message"]) for r in results] == [("timeout", "no answer within 2 s")]
    assert mib < 64 + 64, mib  # a queue of QUEUED lines of at most LINE_LIMIT characters, and the interpreter


def run_probes(code: str, probes: Path, python: Path, env: dict[str, str]) -> tuple[list[dict[str, Any]], int]:
    """(the results of a runner over `probes` with this interpreter; the runner's own peak resident MiB)."""
    answer = probes / "results.json"
    proc = subprocess.run(
        [PYTHON, "-c", code, str(probes), str(python), str(answer)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = json.loads(answer.read_text())
    return said["results"], said["mib"]


class _Unkillable:
    """A child in an uninterruptible driver call (a GPU fallen off the bus): SIGKILL is delivered, but it does not
    exit until the call returns, so a wait without a bound never returns."""

    def __init__(self) -> None:
        self.pid = 2**22 + 12345  # no such process group: killpg fails, as it does for nothing
        self.waited: list[float | None] = []

    def kill(self) -> None:
        pass

    def wait(self, timeout: float | None = None) -> int:
        self.waited.append(timeout)
        if timeout is None:
            threading.Event().wait()  # for ever
        raise subprocess.TimeoutExpired("driver", timeout or 0)


def test_a_child_that_does_not_die_of_sigkill_does_not_hang_the_audit() -> None:
    stuck = _Unkillable()
    answer: list[int | None] = []
    waiter = threading.Thread(target=lambda: answer.append(bounded.reap(stuck)), daemon=True)  # type: ignore[arg-type]
    waiter.start()
    waiter.join(timeout=60)
    assert answer == [None] and stuck.waited == [bounded.REAP_S]


def test_an_event_nested_deeper_than_the_stack_is_no_event() -> None:
    """It was a RecursionError out of the runner: `health` said internal error, exit 3, and no health line."""
    assert decode(PREFIX + "[" * 200_000) is None
    assert decode(PREFIX + '{"event": "done"}') == {"event": "done"}


FACTS_RUN = (
    PROBE_RUN.replace('("blocked",)', "()").replace("facts=False", "facts=True").replace("timeout=2", "timeout=4")
)
PAD = "x" * 100_000  # one argument of `yes`: the kernel takes at most 128 KiB


@pytest.mark.slow
def test_a_flood_of_fact_events_is_not_kept(child_env: dict[str, str], tmp_path: Path) -> None:
    """Each `fact` event was kept: 2 GB in 5 s of health, about 290 MB a second (here while `import jax` hangs,
    so that the flood lasts the whole bound of the jax facts)."""
    event = json.dumps({"event": "fact", "stage": "start", "pad": PAD})
    wrapper = interpreter(tmp_path, f"#!/bin/sh\nyes '{PREFIX}{event}' &\nexec {PYTHON} \"$@\"\n")
    hang = ROOT / "tests" / "faults" / "hang_on_import"
    env = {**child_env, "PYTHONPATH": f"{hang}{os.pathsep}{child_env['PYTHONPATH']}"}
    results, mib = run_probes(FACTS_RUN, tmp_path, wrapper, env)
    assert results == [] and mib < 64 + 64, (
        mib
    )  # MAX_FACT_EVENTS of at most LINE_LIMIT, QUEUED lines waiting, and the interpreter


STARTS_AGAIN = "while :; do echo '" + PREFIX + '{"event": "start", "probe": "blocked"}' + "'; sleep 0.3; done"


@pytest.mark.slow
def test_a_child_that_says_it_starts_again_does_not_get_its_bound_again(
    child_env: dict[str, str], tmp_path: Path
) -> None:
    """Each `start` reset the probe's bound: a spinning probe that repeated it ran to the total bound."""
    (tmp_path / "blocked.py").write_text("def run(precision='auto'):\n    import time\n    time.sleep(3600)\n")
    wrapper = interpreter(tmp_path, f'#!/bin/sh\n( {STARTS_AGAIN} ) &\nexec {PYTHON} "$@"\n')
    results, _ = run_probes(PROBE_RUN.replace("total=4", "total=30"), tmp_path, wrapper, child_env)
    ((status, duration),) = [(r["status"], r["duration_s"]) for r in results]
    assert status == "timeout" and duration >= 1.9, duration  # its own 2 s, counted from its first start
