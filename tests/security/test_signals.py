"""Schedulers stop a check with SIGTERM (Slurm's health check, Kubernetes), and a parent can die by SIGKILL: the
probe child, in its own session so that a terminal's Ctrl-C does not reach it, must never outlive envaudit."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import PYTHON, ROOT

HANG = ROOT / "tests" / "faults" / "hang_on_import"  # the child hangs in `import jax`, as a broken driver would
GIL = ROOT / "tests" / "faults" / "hang_holding_gil"  # the same, in a C call that holds the GIL


def children_of(pid: int) -> list[psutil.Process]:
    try:
        found: list[psutil.Process] = psutil.Process(pid).children(recursive=True)
        return found
    except psutil.NoSuchProcess:
        return []


def started(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    """The audit's probe children, once envaudit has started one (the imports child may run beside the jax one)."""
    for _ in range(600):
        found = [c for c in children_of(proc.pid) if "_main.py" in " ".join(c.cmdline())]
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("envaudit never started its child")


def audit_with(fault: Path, child_env: dict[str, str]) -> subprocess.Popen[str]:
    """A full audit with long bounds whose children get the fault's sitecustomize, in a process group of its own
    (as slurmd gives a health check)."""
    return subprocess.Popen(
        [PYTHON, "-m", "envaudit", "--timeout", "600", "--total-timeout", "900"],
        env={**child_env, "PYTHONPATH": f"{fault}{os.pathsep}{child_env['PYTHONPATH']}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def gone(processes: list[psutil.Process]) -> bool:
    _, alive = psutil.wait_procs(processes, timeout=30)
    return not alive


@pytest.mark.slow  # waits for the child it stops: 2 s
def test_sigterm_stops_the_audit_and_its_child(child_env: dict[str, str]) -> None:
    env = {**child_env, "PYTHONPATH": f"{HANG}{os.pathsep}{child_env['PYTHONPATH']}"}
    proc = subprocess.Popen(
        [PYTHON, "-m", "envaudit", "health", "--timeout", "600", "--total-timeout", "900"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    child = started(proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3 and err.strip() == "envaudit: terminated (SIGTERM): the audit did not complete"
    assert gone(child), "the probe child outlived a terminated envaudit"


@pytest.mark.slow
@pytest.mark.parametrize("fault", [HANG, GIL], ids=["sleeping", "holding the GIL"])
def test_a_child_whose_parent_is_killed_ends_itself(child_env: dict[str, str], fault: Path) -> None:
    """SIGKILL reaches no handler: the child sees the end of the pipe only its parent held, and ends its group;
    and where no thread of it can run (the GIL held by a C call), the kernel's parent-death signal ends it."""
    proc = audit_with(fault, child_env)
    child = started(proc)
    proc.kill()
    proc.wait(timeout=30)
    assert gone(child), "the probe child outlived its killed parent"


STARTS_AND_HANGS = """
import ctypes, subprocess, sys
if sys.argv[0].endswith("_main.py"):  # the probe child: it starts a helper, then hangs holding its GIL
    subprocess.Popen(["sleep", "300"])

    class _Hang:
        def find_spec(self, fullname, path=None, target=None):
            if fullname == "jax":
                ctypes.PyDLL(None).sleep(3600)

    sys.meta_path.insert(0, _Hang())
"""


@pytest.mark.slow
@pytest.mark.parametrize("killed", ["envaudit", "its process group"])
def test_what_the_child_started_dies_with_a_killed_envaudit(
    child_env: dict[str, str], tmp_path: Path, killed: str
) -> None:
    """The kernel's parent-death signal ends the child alone, and its watcher thread cannot run while a C call
    holds the GIL: the helper it started lived on after SIGKILL to envaudit. A watchdog outside both ends them,
    also when envaudit's whole process group is killed (slurmd at its timeout, `timeout -k`)."""
    (tmp_path / "sitecustomize.py").write_text(STARTS_AND_HANGS)
    proc = audit_with(tmp_path, child_env)
    children = started(proc)  # the jax child, and the imports child where it runs beside it
    for _ in range(600):
        helpers = [p for child in children for p in children_of(child.pid) if p.name() == "sleep"]
        if helpers:
            break
        time.sleep(0.05)
    assert helpers, "the child never started its helper"
    os.killpg(proc.pid, signal.SIGKILL) if killed != "envaudit" else proc.kill()
    proc.wait(timeout=30)
    assert gone([*children, *helpers]), "what the probe child started outlived its killed parent"
