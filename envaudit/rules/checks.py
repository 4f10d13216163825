"""Checks that are code rather than data, because data cannot say them: version couplings between installed
packages, what `pip check` would say, how the jax child ended, and GPU health counters from NVML.

Each check is registered with the same metadata as a data rule (id, severity, title, fix, references), so
`envaudit rules` lists both and the tests hold both to the same standard.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envaudit.model import Facts, Finding, Severity
from envaudit.rules.derive import version_or_none
from envaudit.stack import PLUGIN, canonicalize_name

JEP_9419 = "https://docs.jax.dev/en/latest/jep/9419-jax-versioning.html"
INSTALL = "https://docs.jax.dev/en/latest/installation.html"
MEM_ERRORS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
XID = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


@dataclass(frozen=True)
class Check:
    id: str
    severity: Severity
    title: str
    fix: str
    references: tuple[str, ...]
    run: Callable[[Facts], list[str]]  # the details of each occurrence; empty when the check passes
    exact_fix: Callable[[str], str] | None = None  # the exact command for one occurrence, from its detail
    transient: bool = False  # the state of a moment (a GPU's counters, a hung driver), not of the environment

    def findings(self, facts: Facts) -> list[Finding]:
        found = []
        for detail in self.run(facts):
            fix = self.exact_fix(detail) if self.exact_fix else self.fix
            found.append(Finding(self.id, self.severity, self.title, detail, fix, self.references, "rule"))
        return found


def _release(text: str) -> tuple[int, ...] | None:
    version = version_or_none(text)
    return None if version is None else version.release


def _coupled(name: str) -> bool:
    """jax, jaxlib and the GPU plugins/PJRT packages: released together, each pinning the others."""
    return name in ("jax", "jaxlib") or bool(PLUGIN.match(name))


def _describe(req: dict[str, object]) -> str:
    return f"{req.get('package')} requires {req.get('requires')}, installed: {req.get('installed') or 'nothing'}"


def _is_coupling(req: dict[str, object]) -> bool:
    required = re.match(r"[A-Za-z0-9._-]+", str(req.get("requires", "")))
    return required is not None and _coupled(str(req.get("package"))) and _coupled(canonicalize_name(required[0]))


def coupling(facts: Facts) -> list[str]:
    return [_describe(r) for r in facts.requirements if _is_coupling(r)]


def unsatisfied(facts: Facts) -> list[str]:
    return [_describe(r) for r in facts.requirements if not _is_coupling(r)]


def plugins(facts: Facts) -> list[str]:
    jaxlib = facts.packages.get("jaxlib")
    if jaxlib is None:
        return []
    return [
        f"{name} {version} beside jaxlib {jaxlib}"
        for name, version in sorted(facts.packages.items())
        if PLUGIN.match(name) and _release(version) != _release(jaxlib)
    ]


def plugin_fix(detail: str) -> str:
    """'jax-cuda12-plugin 0.9.2 beside jaxlib 0.9.0.1' -> pip install 'jax-cuda12-plugin==0.9.0.1'."""
    name, jaxlib = detail.split(" ")[0], detail.rsplit(" ", 1)[-1]
    return f"pip install '{name}=={jaxlib}'"


def duplicates(facts: Facts) -> list[str]:
    return [
        f"{d.get('name')}: versions {', '.join(d.get('versions') or [])} at {', '.join(d.get('locations') or [])}"
        for d in facts.duplicates
    ]


BUSY = 0.02  # a timed-out child that used less than this share of a CPU was blocked (a driver call): hung
SPARE = 0.5  # CPUs the machine left idle meanwhile, below which the child was starved by other work


def starved(load: dict[str, Any], facts: Facts) -> bool:
    """A timeout that says the machine was too busy, not that something hangs: the child was computing, and the
    machine had no CPU to spare (others took it) or a GPU ran other jobs. Computing with CPUs to spare on idle
    GPUs is a hang that spins (a CUDA wait on a hung GPU spins by default). Reports saved before envaudit
    measured the machine's idle time are judged by the child's CPU time alone, as they were."""
    busy, idle = load.get("cpu_fraction"), load.get("idle_cpus")
    if not (isinstance(busy, int | float) and busy >= BUSY):
        return False
    if not isinstance(idle, int | float):
        return True
    return idle < SPARE or any(other_jobs(g, facts) for g in facts.nvidia.get("gpus") or [] if isinstance(g, dict))


def _jax_slow(facts: Facts) -> bool:
    return facts.jax.get("status") == "timeout" and starved(facts.jax, facts)


def jax_slow(facts: Facts) -> list[str]:
    if not _jax_slow(facts):
        return []
    idle = facts.jax.get("idle_cpus")
    spare = f", {idle:g} CPUs idle" if isinstance(idle, int | float) else ""
    return [f"{facts.jax.get('message')} (it used {facts.jax.get('cpu_fraction'):.0%} of a CPU{spare})"]


def jax_broken(facts: Facts) -> list[str]:
    status = facts.jax.get("status")
    if status in ("import_error", "crash", "timeout", "error") and not _jax_slow(facts):
        stage = facts.jax.get("stage")
        return [f"{status} (stage {stage}): {facts.jax.get('message')}"]
    return []


def nvml_hung(facts: Facts) -> list[str]:
    return [str(facts.nvidia.get("message"))] if facts.nvidia.get("status") == "timeout" else []


def _gpu(predicate: Callable[[dict[str, object]], str | None]) -> Callable[[Facts], list[str]]:
    def run(facts: Facts) -> list[str]:
        found = []
        for gpu in facts.nvidia.get("gpus") or []:
            if (what := predicate(gpu)) is not None:
                found.append(_named(gpu, what))
        return found

    return run


def _named(gpu: dict[str, object], what: str) -> str:
    return f"GPU {gpu.get('index')} ({gpu.get('name')}, {gpu.get('uuid')}): {what}"


def _ecc(gpu: dict[str, object]) -> str | None:
    count = gpu.get("ecc_uncorrected_volatile")
    return f"{count} uncorrected ECC error(s) since the last reset" if isinstance(count, int) and count > 0 else None


def _remap_failed(gpu: dict[str, object]) -> str | None:
    return "row remapping failed" if gpu.get("remap_failure") else None


def _reset_pending(gpu: dict[str, object]) -> str | None:
    if gpu.get("remap_pending"):
        return "a row remap is pending"
    return "retired pages are pending" if gpu.get("retired_pages_pending") else None


def _slowdown(gpu: dict[str, object]) -> str | None:
    reasons = [str(r) for r in gpu.get("throttle_reasons") or [] if str(r).startswith(("hw_", "sw_thermal"))]  # type: ignore[attr-defined]
    return f"clocks held down by {', '.join(reasons)}" if reasons else None


def other_jobs(gpu: dict[str, Any], facts: Facts) -> list[dict[str, Any]]:
    """The GPU's processes with a compute context that are not envaudit's own probe children (NVML is read while
    they run). In a container NVML may give host pids, which then do not match: a job is never hidden, though."""
    ours = {p for p in facts.jax.get("child_pids") or [] if isinstance(p, int)}
    return [p for p in gpu.get("compute_processes") or [] if isinstance(p, dict) and p.get("pid") not in ours]


def gpu_busy(facts: Facts) -> list[str]:
    return _gpu(lambda gpu: _jobs(other_jobs(gpu, facts)))(facts)


def _jobs(running: list[dict[str, Any]]) -> str | None:
    if not running:
        return None
    used = sum(int(p["used_memory_bytes"]) for p in running if isinstance(p.get("used_memory_bytes"), int))
    pids = ", ".join(str(p.get("pid")) for p in running[:5]) + (", ..." if len(running) > 5 else "")
    return f"{len(running)} other compute process(es) (pid {pids}; {used / 2**30:.1f} GiB)"


CHECKS: tuple[Check, ...] = (
    Check("jax-jaxlib-coupling", "fail", "jax, jaxlib and the GPU plugins do not satisfy each other's version pins",
          "pip install --upgrade 'jax[cuda12]' (or 'jax[cpu]'), so jax, jaxlib and plugins come from one release",
          (JEP_9419, "https://github.com/jax-ml/jax/issues/24901"), coupling),
    Check("plugin-jaxlib-mismatch", "fail", "a jax CUDA/ROCm plugin or PJRT package differs from the jaxlib version",
          "pip install the plugin and pjrt at the jaxlib version", (JEP_9419, "https://github.com/jax-ml/jax/issues/24901"),
          plugins, plugin_fix),
    Check("requirement-unsatisfied", "warn", "an installed package declares a requirement that is not met",
          "pip install the required version shown, or run `pip check` and resolve what it names",
          ("https://pip.pypa.io/en/stable/cli/pip_check/",), unsatisfied),
    Check("duplicate-distribution", "warn", "a package is installed twice; import and metadata can disagree",
          "pip uninstall the copy you do not want (run it until pip reports nothing left), then reinstall once",
          ("https://packaging.python.org/en/latest/specifications/recording-installed-packages/",), duplicates),
    Check("jax-slow", "warn", "jax did not finish starting in time while it was computing: the machine was too busy",
          "give it more time (--timeout S), or audit the node when it is idle", (INSTALL,), jax_slow, transient=True),
    Check("jax-broken", "fail", "jax cannot be imported or crashes on its first computation",
          "reinstall a matching set: pip install --force-reinstall 'jax[cpu]' (or 'jax[cuda12]')",
          (INSTALL,), jax_broken),
    Check("nvml-hung", "fail", "the NVIDIA driver does not answer (NVML hangs)",
          "drain the node; look for Xid errors in the kernel log (dmesg | grep -i xid; Xid 79: a GPU has fallen off "
          "the bus) and reset or power-cycle the GPU", (XID,), nvml_hung, transient=True),
    Check("gpu-uncorrected-ecc", "fail", "a GPU reports uncorrected ECC memory errors",
          "drain the node, reset the GPU (nvidia-smi -r -i N) and replace it if errors recur",
          (MEM_ERRORS,), _gpu(_ecc), transient=True),
    Check("gpu-remap-failure", "fail", "a GPU failed to remap a faulty memory row",
          "drain the node and return the GPU (RMA): row remapping failed",
          (MEM_ERRORS,), _gpu(_remap_failed), transient=True),
    Check("gpu-reset-pending", "warn", "a GPU needs a reset to retire or remap memory",
          "drain the node and reset the GPU (nvidia-smi -r -i N) when idle",
          (MEM_ERRORS,), _gpu(_reset_pending), transient=True),
    Check("gpu-clocks-slowdown", "warn", "a GPU's clocks are held down by a hardware or thermal slowdown",
          "check cooling and power; nvidia-smi -q -d PERFORMANCE shows the active reasons",
          ("https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",), _gpu(_slowdown),
          transient=True),
    Check("gpu-busy", "info", "a GPU runs other jobs' compute processes: the probes share it, and their times with it",
          "audit the node while it is idle (a Slurm epilog, or drained), if a probe timed out or was slow",
          ("https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html",), gpu_busy, transient=True),
)  # fmt: skip


TRANSIENT = frozenset(c.id for c in CHECKS if c.transient)  # never cached (the hook): true now, maybe not later


def evaluate(facts: Facts) -> list[Finding]:
    return [finding for check in CHECKS for finding in check.findings(facts)]
