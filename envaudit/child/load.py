"""What a child and the CPUs it may use did over a window: how a loaded machine is told from a hang.

A child that timed out while computing was slow if it could not get the CPU it wanted, and hung if it could. The
scheduler says which itself: `/proc/PID/task/*/schedstat` counts, per thread, the time it ran and the time it was
runnable and waited for a CPU (`wait_fraction`, summed over the child's threads per second of the window). A child
blocked in a call (a hung driver, a deadlock) neither runs nor waits; one that spins with a CPU to itself runs and
hardly waits; one starved by other work waits, however busy or idle the rest of the machine is. The other readings,
each taken at the start of the window and at its end, stay for what the scheduler's counters cannot say, and for
kernels without them:
- the child's own CPU time (all its threads);
- the idle time of the CPUs the child may run on (its affinity: a Slurm or Kubernetes cpuset), not the whole
  machine's, which stays idle around a job confined to two busy cores; with their number, what neither the child
  nor idleness took of them is what other work took (a child that spins alone on its one CPU leaves none idle,
  and is not starved for it);
- the time its cgroup was throttled by a CPU quota (a Kubernetes limit, systemd's `CPUQuota` on slurmd, `docker
  --cpus`): a quota starves a child on an idle machine. cgroup v2 `cpu.stat` `throttled_usec`, v1 `throttled_time`
  (nanoseconds); the largest over the child's cgroup and its ancestors, where the quota may be set.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from envaudit.model.report import JSONDict

CGROUP_ROOT = Path("/sys/fs/cgroup")
USER_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # the unit of /proc/stat


@dataclass(frozen=True)
class Mark:
    at: float  # time.monotonic()
    cpu_s: float | None  # the child's CPU time
    idle_s: float | None  # idle time summed over the CPUs the child may use
    throttled_s: float | None  # time its cgroup (or an ancestor) was held by a CPU quota
    cpus: int | None  # how many CPUs the child may use
    waited_s: float | None = None  # time its threads were runnable and waited for a CPU (schedstat)


def mark(pid: int) -> Mark:
    cpus = _cpus(pid)
    count = len(cpus) if cpus is not None else None
    return Mark(time.monotonic(), cpu_seconds(pid), idle_seconds(cpus), throttled_seconds(pid), count, waited(pid))


def load(before: Mark, after: Mark) -> JSONDict:
    """The share of a CPU the child used (`cpu_fraction`), how many of its CPUs sat idle (`idle_cpus`), the share
    of the window its cgroup was throttled (`throttled_fraction`), for the readings both marks have; and how many
    CPUs it may use (`cpus`): what neither it nor idleness took of them, other work took; and the CPU seconds it
    used (`cpu_s`), to hold against what its work was declared to cost."""
    seconds = max(after.at - before.at, 1e-6)
    found: JSONDict = {}
    for key, start, end in (
        ("cpu_fraction", before.cpu_s, after.cpu_s),
        ("idle_cpus", before.idle_s, after.idle_s),
        ("throttled_fraction", before.throttled_s, after.throttled_s),
        ("wait_fraction", before.waited_s, after.waited_s),
    ):
        if start is not None and end is not None:
            found[key] = round((end - start) / seconds, 3)
    if after.cpus is not None:
        found["cpus"] = after.cpus
    if before.cpu_s is not None and after.cpu_s is not None:
        found["cpu_s"] = round(after.cpu_s - before.cpu_s, 3)
    return found


def waited(pid: int, proc: Path = Path("/proc")) -> float | None:
    """Seconds the process's threads have spent runnable and waiting for a CPU, summed (the second field of each
    thread's schedstat, in nanoseconds); None where the kernel does not keep them. A thread that ended is gone from
    the sum: over a window, a child's threads that come and go can only lower what it waited."""
    total, seen = 0, False
    try:
        threads = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return None
    for thread in threads:
        try:
            fields = (thread / "schedstat").read_text().split()
        except OSError:
            continue
        if len(fields) >= 2 and fields[1].isdigit():
            total, seen = total + int(fields[1]), True
    return total / 1e9 if seen else None


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time the process has used so far (all its threads), or None when it cannot be read."""
    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.Error, OSError):
        return None
    return float(times.user + times.system)


def _cpus(pid: int) -> set[int] | None:
    try:
        return set(os.sched_getaffinity(pid))
    except (OSError, AttributeError):
        return None


def idle_seconds(cpus: set[int] | None, stat: Path = Path("/proc/stat")) -> float | None:
    """Idle seconds summed over `cpus` (all of the machine's when None; waiting for I/O is not idle)."""
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return _all_idle()
    total, seen = 0, False
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and (cpus is None or int(name[3:]) in cpus):
            total, seen = total + int(fields[3]), True
    return total / USER_HZ if seen else _all_idle()


def _all_idle() -> float | None:
    try:
        return float(psutil.cpu_times().idle)
    except (psutil.Error, OSError, AttributeError):
        return None


def throttled_seconds(pid: int, root: Path = CGROUP_ROOT) -> float | None:
    """The longest time any cgroup of the process's CPU controller, from its own up to the root, was throttled;
    None when no cgroup says (no CPU controller, or nothing mounted where systemd and Kubernetes mount it)."""
    try:
        memberships = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    return throttled(memberships, root)


def throttled(memberships: list[str], root: Path = CGROUP_ROOT) -> float | None:
    """`throttled_seconds` of a process in these cgroups (the lines of /proc/PID/cgroup)."""
    found: list[float] = []
    for line in memberships:
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and not controllers:  # cgroup v2, at the root or below `unified` (a hybrid layout)
            bases, key, unit = [root, root / "unified"], "throttled_usec", 1e-6
        elif "cpu" in controllers.split(","):
            bases, key, unit = [root / controllers], "throttled_time", 1e-9
        else:
            continue
        for base in bases:
            found += [value * unit for value in _along(base, path, key)]
    return max(found) if found else None


def _along(base: Path, path: str, key: str) -> list[int]:
    """`key` of cpu.stat in the cgroup at `path` below `base` and in each of its ancestors that has one."""
    parts = [p for p in path.split("/") if p and p != ".."]
    values = []
    for depth in range(len(parts), -1, -1):
        try:
            text = (base.joinpath(*parts[:depth]) / "cpu.stat").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                values.append(int(value))
    return values
