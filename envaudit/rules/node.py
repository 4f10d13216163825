"""The node's state of a moment, as the checks read it: a machine too loaded to judge a timeout, a GPU's health
counters (ECC, row remapping, clock slowdowns), other jobs on a GPU, a driver that does not answer or that crashes.

Kept apart from the environment checks because none of it is a property of the installed stack: these checks are
`transient` (never cached by the hook), and the judge reads `starved` to tell a slow machine from a hang.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from envaudit.model.devices import other_jobs
from envaudit.model.facts import GPU, Facts, Process
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import MEM_ERRORS, XID

BUSY = 0.02  # a timed-out child that used less than this share of a CPU was blocked (a driver call): hung
COMPILING = 0.2  # a compile at work uses a CPU (0.35-1.0 measured, 0.35 on a loaded 2-core machine); one blocked in
# a lock, 0.01-0.03 (the runtime's own threads): from this share of a CPU, a probe cut while compiling was compiling
SPARE = 0.5  # CPUs the machine left idle meanwhile, below which the child was starved by other work
THROTTLED = 0.1  # the share of the window a CPU quota held the child's cgroup, from which the child was starved
TAKEN = 0.25  # of the CPUs the child may use, what other work took meanwhile, from which the child was starved
ENOUGH = 4.0  # CPU seconds per second of declared cost (measured on 2 cores), twice over: enough to have finished
# the share of the window the child's threads were runnable and waited for a CPU from which it was starved: a child
# with a CPU to itself waits a few percent (its wake-ups); one sharing each CPU with another waits about half
WAITED = 0.2
FLOOD = 1024.0  # KiB per second a timed-out child printed, from which it was flooding, not starved


def compiling(load: Mapping[str, Any]) -> bool:
    """A timeout that caught the probe compiling (its last word, probes/_kit.progress) while it used the CPU: XLA
    at work on a cold compilation cache (a fresh TPU host compiles fft for 19 s of CPU), which is progress, not a
    hang. A compile that used no CPU is blocked like any other call."""
    busy = load.get("cpu_fraction")
    return load.get("stage") == "compiling" and isinstance(busy, int | float) and busy >= COMPILING


HANG_S = 5.0  # seconds a probe cut by the total bound must have run with no CPU for that to be a hang (at least
# twice its declared cost too): a probe cut 2.7 s into its compile by a spent bound says nothing of a hang


def blocked_for_long(load: Mapping[str, Any], seconds: float, facts: Facts) -> bool:
    """A probe cut by the run's total bound that hangs all the same: it had run for HANG_S and twice its declared
    cost (`cost_s`) using no CPU (`BUSY`), neither compiling nor starved. Without it, a node whose first probe
    blocks forever would pass health once the total bound ends that probe before its own bound."""
    busy, cost = load.get("cpu_fraction"), load.get("cost_s")
    long_enough = seconds >= max(HANG_S, 2 * cost if isinstance(cost, int | float) else 0.0)
    idle = isinstance(busy, int | float) and busy < BUSY
    return long_enough and idle and not compiling(load) and not starved(load, facts)


def starved(load: Mapping[str, Any], facts: Facts) -> bool:
    """A timeout that says the machine was too busy, not that something hangs: the child was computing and could not
    get the CPU it wanted. The scheduler's own counter says so (`wait_fraction`: its threads were runnable and waited
    for a CPU), or a cgroup's CPU quota held it, or a GPU ran other jobs (a spin-wait on a GPU another job holds);
    never where it had CPU enough to finish its work twice over (`ENOUGH`). A child blocked in a call (no CPU, no
    wait) hangs, on an idle machine as on a loaded one. Reports saved before envaudit read the scheduler's counters
    are judged by what they have: the child's CPU time and the idle time of its CPUs."""
    busy, idle, throttled = load.get("cpu_fraction"), load.get("idle_cpus"), load.get("throttled_fraction")
    cpus, used, cost, waited = load.get("cpus"), load.get("cpu_s"), load.get("cost_s"), load.get("wait_fraction")
    if not (isinstance(busy, int | float) and busy >= BUSY):
        return False
    if any(other_jobs(g, facts) for g in facts.nvidia.get("gpus") or [] if isinstance(g, dict)):
        return True  # a spin-wait on a GPU another job holds: CPU time says nothing
    if isinstance(used, int | float) and isinstance(cost, int | float) and used > ENOUGH * cost:
        return False  # it had CPU enough to finish its work twice over, whatever the others or a quota took
    if isinstance(printed := load.get("printed_kib_s"), int | float) and printed >= FLOOD:
        return False  # it spent its time printing without end (a line that never ends): a hang that floods
    if isinstance(throttled, int | float) and throttled >= THROTTLED:
        return True
    if isinstance(waited, int | float):
        return waited >= WAITED
    if not isinstance(idle, int | float):
        return True
    # others took CPU from it: few of its CPUs idle, and (where their number is known) not because it used them
    others = cpus - busy - idle if isinstance(cpus, int) and not isinstance(cpus, bool) else TAKEN
    return idle < SPARE and others >= TAKEN


# NVML's own errors that say the driver or a GPU is broken, in NVIDIA's words (nvml.h, nvmlReturn_t)
NVML_ERRORS: dict[int, str] = {
    15: "NVML_ERROR_GPU_IS_LOST: the GPU has fallen off the bus or has otherwise become inaccessible",
    18: "NVML_ERROR_LIB_RM_VERSION_MISMATCH: RM detects a driver/library version mismatch (the loaded kernel module"
    " is not the installed library's driver version: a driver upgraded without a reboot)",
    999: "NVML_ERROR_UNKNOWN: an internal driver error occurred",
}


def nvml_error(facts: Facts) -> list[Occurrence]:
    """NVML answered with one of its errors that say the driver is broken (not "no driver", which is `absent`, nor
    one that may be the caller's, such as "Insufficient Permissions")."""
    code = facts.nvidia.get("error_code")
    if facts.nvidia.get("status") != "error" or code not in NVML_ERRORS:
        return []
    return [Occurrence(f"{facts.nvidia.get('message')} ({NVML_ERRORS[code]})")]


def lost(gpu: GPU) -> str | None:
    return _named(gpu, f"lost to NVML ({NVML_ERRORS[15]})") if gpu.get("lost") else None


def nvml_hung(facts: Facts) -> list[Occurrence]:
    return [Occurrence(str(facts.nvidia.get("message")))] if facts.nvidia.get("status") == "timeout" else []


def nvml_crashed(facts: Facts) -> list[Occurrence]:
    """Asking NVML killed the process that asked (by a signal): the driver crashes its own management library."""
    return [Occurrence(str(facts.nvidia.get("message")))] if facts.nvidia.get("status") == "crash" else []


def per_gpu(predicate: Callable[[GPU], str | None]) -> Callable[[Facts], list[Occurrence]]:
    def run(facts: Facts) -> list[Occurrence]:
        found = []
        for gpu in facts.nvidia.get("gpus") or []:
            if (what := predicate(gpu)) is not None:
                found.append(Occurrence(_named(gpu, what)))
        return found

    return run


def _named(gpu: GPU, what: str) -> str:
    return f"GPU {gpu.get('index')} ({gpu.get('name')}, {gpu.get('uuid')}): {what}"


def ecc(gpu: GPU) -> str | None:
    count = gpu.get("ecc_uncorrected_volatile")
    return f"{count} uncorrected ECC error(s) since the last reset" if isinstance(count, int) and count > 0 else None


def remap_failed(gpu: GPU) -> str | None:
    return "row remapping failed" if gpu.get("remap_failure") else None


def reset_pending(gpu: GPU) -> str | None:
    if gpu.get("remap_pending"):
        return "a row remap is pending"
    return "retired pages are pending" if gpu.get("retired_pages_pending") else None


def slowdown(gpu: GPU) -> str | None:
    reasons = [str(r) for r in gpu.get("throttle_reasons") or [] if str(r).startswith(("hw_", "sw_thermal"))]
    return f"clocks held down by {', '.join(reasons)}" if reasons else None


def gpu_busy(facts: Facts) -> list[Occurrence]:
    return per_gpu(lambda gpu: _jobs(other_jobs(gpu, facts)))(facts)


def _jobs(running: list[Process]) -> str | None:
    if not running:
        return None
    used = sum(u for p in running if isinstance(u := p.get("used_memory_bytes"), int))
    pids = ", ".join(str(p.get("pid")) for p in running[:5]) + (", ..." if len(running) > 5 else "")
    return f"{len(running)} other compute process(es) (pid {pids}; {used / 2**30:.1f} GiB)"


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
NVML_HUNG = Check(
    id="nvml-hung",
    severity="fail",
    title="the NVIDIA driver does not answer (NVML hangs)",
    fix="drain the node; look for Xid errors in the kernel log (dmesg | grep -i xid; Xid 79: a GPU has fallen off "
    "the bus) and reset or power-cycle the GPU",
    references=(XID,),
    run=nvml_hung,
    transient=True,
)
NVML_ERROR = Check(
    id="nvml-error",
    severity="fail",
    title="the NVIDIA driver answers with an error: no GPU can be used",
    fix="drain the node; after a driver upgrade, reboot it (the loaded kernel module must be the library's version); "
    "otherwise look for Xid errors in the kernel log (dmesg | grep -i xid) and reinstall the driver",
    references=("https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html", XID),
    run=nvml_error,
    transient=True,
)
GPU_LOST = Check(
    id="gpu-lost",
    severity="fail",
    title="a GPU is lost: it has fallen off the bus or become inaccessible",
    fix="drain the node; look for Xid 79 in the kernel log (dmesg | grep -i xid), then reset the GPU or power-cycle "
    "the node",
    references=("https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html", XID),
    run=per_gpu(lost),
    transient=True,
    board=True,
)
NVML_CRASHED = Check(
    id="nvml-crashed",
    severity="fail",
    title="the NVIDIA driver's management library crashes (asking NVML killed the process)",
    fix="drain the node; run nvidia-smi, which uses the same library: if it crashes too, look for Xid errors in "
    "the kernel log (dmesg | grep -i xid) and reinstall the driver or power-cycle the node; if it does not, "
    "reinstall nvidia-ml-py (the pynvml envaudit asks NVML through)",
    references=(XID,),
    run=nvml_crashed,
    transient=True,
)
GPU_UNCORRECTED_ECC = Check(
    id="gpu-uncorrected-ecc",
    severity="fail",
    title="a GPU reports uncorrected ECC memory errors",
    fix="drain the node, reset the GPU (nvidia-smi -r -i N) and replace it if errors recur",
    references=(MEM_ERRORS,),
    run=per_gpu(ecc),
    transient=True,
    board=True,
)
GPU_REMAP_FAILURE = Check(
    id="gpu-remap-failure",
    severity="fail",
    title="a GPU failed to remap a faulty memory row",
    fix="drain the node and return the GPU (RMA): row remapping failed",
    references=(MEM_ERRORS,),
    run=per_gpu(remap_failed),
    transient=True,
    board=True,
)
GPU_RESET_PENDING = Check(
    id="gpu-reset-pending",
    severity="warn",
    title="a GPU needs a reset to retire or remap memory",
    fix="drain the node and reset the GPU (nvidia-smi -r -i N) when idle",
    references=(MEM_ERRORS,),
    run=per_gpu(reset_pending),
    transient=True,
    board=True,
)
GPU_CLOCKS_SLOWDOWN = Check(
    id="gpu-clocks-slowdown",
    severity="warn",
    title="a GPU's clocks are held down by a hardware or thermal slowdown",
    fix="check cooling and power; nvidia-smi -q -d PERFORMANCE shows the active reasons",
    references=("https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",),
    run=per_gpu(slowdown),
    transient=True,
    board=True,
)
GPU_BUSY = Check(
    id="gpu-busy",
    severity="info",
    title="a GPU runs other jobs' compute processes: the probes share it, and their times with it",
    fix="audit the node while it is idle (a Slurm epilog, or drained), if a probe timed out or was slow",
    references=("https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html",),
    run=gpu_busy,
    transient=True,
    board=True,
)
