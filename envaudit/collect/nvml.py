"""NVIDIA driver and GPU health facts, read through NVML (the library behind nvidia-smi).

Why this exists: a GPU can make a JAX program compute wrong numbers without any error reaching Python.
Uncorrected ECC errors, a pending row remap, a MIG slice where a whole GPU was expected, clocks held
down by a hardware slowdown, a libcuda that is missing: none of it is visible from JAX, all of it is
visible to NVML. This module asks NVML and returns plain JSON facts for the rules to judge.

It never raises and never hangs. No driver is a fact (status "absent"); one query the GPU does not support is a
fact (the field is None and NVML's message is kept under "unavailable"); anything unexpected is status "error".
NVML runs in the process that calls it, so envaudit asks it in a short-lived child (`Asking`, which runs
`_nvml_child.py`; started first, it answers while the other facts are collected): a driver that stops answering (a
GPU fallen off the bus hangs nvmlInit and every query) would hang `health` past Slurm's limit and the hook's `import
jax`, and past the deadline is status "timeout" (check `nvml-hung`); a driver whose library crashes its caller (a
segfault in libnvidia-ml) kills the child, not envaudit, and is status "crash" (check `nvml-crashed`); a pynvml that
raises SystemExit, or exits, is an "error" that says so at once. Each is itself the clearest sign of a bad node.

The I/O seam is one argument: `get_nvidia(nvml)` receives the pynvml module (tests pass a fake with the
same names and the real exception classes). The helpers that interpret raw NVML values are pure.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from envaudit.child._jaxfacts import decode_cuda
from envaudit.child._main import decode
from envaudit.model import typecheck
from envaudit.model.facts import GPU, NvidiaFacts, NvidiaStatus

if TYPE_CHECKING:  # the child that asks NVML imports this module: what only the asking side uses is imported there
    from envaudit.child.bounded import Finished

# NVML return codes meaning "no usable NVIDIA driver here", as opposed to "something broke".
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
ABSENT_CODES = frozenset({NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_LIBRARY_NOT_FOUND})

# Bits of nvmlClocksEventReason* (called nvmlClocksThrottleReason* before driver R535).
CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x001, "gpu_idle"),
    (0x002, "applications_clocks_setting"),
    (0x004, "sw_power_cap"),
    (0x008, "hw_slowdown"),
    (0x010, "sync_boost"),
    (0x020, "sw_thermal_slowdown"),
    (0x040, "hw_thermal_slowdown"),
    (0x080, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)
_KNOWN_REASON_BITS = sum(bit for bit, _ in CLOCK_EVENT_REASONS)

# The newer name first; drivers before R535 only have the "Throttle" one (NVMLError_FunctionNotFound).
_CLOCK_REASON_FUNCTIONS = (
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
)
# _v2 asks libcuda itself and fails with "NVML Shared Library Not Found" when libcuda is missing (as JAX
# would); the old one then answers "a known supported version", so it is only a fallback for old drivers.
_CUDA_VERSION_FUNCTIONS = ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion")

# From pynvml: NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC.
_UNCORRECTED, _VOLATILE, _AGGREGATE = 1, 0, 1
_ENABLED = 1  # NVML_FEATURE_ENABLED == NVML_DEVICE_MIG_ENABLE

# What NVML is asked of each device: the fields of facts.GPU, in its order, but its index and what was unavailable.
GPU_FIELDS = tuple(name for name in GPU.__annotations__ if name not in ("index", "unavailable", "lost"))
NVML_ERROR_GPU_IS_LOST = 15


def decode_bus_id(value: bytes | str) -> str:
    """NVML's "00000000:17:00.0" as the canonical lower-case "0000:17:00.0" (CUDA and sysfs write it so)."""
    text = decode_text(value).strip().lower()
    domain, _, rest = text.partition(":")
    return f"{int(domain, 16):04x}:{rest}" if rest and all(c in "0123456789abcdef" for c in domain) else text


def decode_text(value: bytes | str) -> str:
    """Names, UUIDs and versions come back as bytes from pynvml releases before 11.x, as str after."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


decode_cuda_version = decode_cuda  # NVML and the CUDA runtime encode versions alike: 12040 -> "12.4"


def decode_compute_capability(major_minor: tuple[int, int] | list[int]) -> str:
    major, minor = major_minor
    return f"{major}.{minor}"


def decode_clock_reasons(mask: int) -> list[str]:
    """Names of the set bits of a clocks event (throttle) reason mask; unnamed bits as "unknown_0x..."."""
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    unknown = mask & ~_KNOWN_REASON_BITS
    return names + [f"unknown_{1 << i:#x}" for i in range(unknown.bit_length()) if unknown >> i & 1]


def _result(status: NvidiaStatus, message: str | None) -> NvidiaFacts:
    return {
        "status": status,
        "message": message,
        "driver_version": None,
        "cuda_driver_version": None,
        "nvml_version": None,
        "gpus": [],
    }


def _call(nvml: ModuleType, out: dict[str, str], fields: str, names: tuple[str, ...], *args: Any) -> Any:
    """The first of `names` this pynvml and driver have, called; on NVMLError, `fields` go into `out`."""
    message = f"{names[-1]} is missing from this pynvml"
    for name in names:
        function = getattr(nvml, name, None)
        if function is None:
            continue
        try:
            return function(*args)
        except nvml.NVMLError_FunctionNotFound as e:  # the driver predates this function: try the next
            message = str(e)
        except nvml.NVMLError as e:
            message = str(e)
            break
    for field in fields.split():
        out[field] = message
    return None


def _count_mig_devices(nvml: ModuleType, handle: Any) -> int:
    count = 0
    for i in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))):
        try:
            nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
        except nvml.NVMLError_NotFound:  # NVML's answer for an index with no MIG device behind it
            continue
        count += 1
    return count


def _gpu(nvml: ModuleType, index: int) -> GPU:
    unavailable: dict[str, str] = {}
    # every field present, None until NVML says; each write below is checked against facts.GPU
    gpu = cast(GPU, {"index": index, **dict.fromkeys(GPU_FIELDS), "unavailable": unavailable, "lost": False})
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as e:  # e.g. "GPU is lost": listed, with every field None
        unavailable["handle"] = str(e)
        if getattr(e, "value", None) == NVML_ERROR_GPU_IS_LOST:
            gpu["lost"] = True
        return gpu

    def get(fields: str, name: str, *args: Any) -> Any:
        return _call(nvml, unavailable, fields, (name,), handle, *args)

    if (name := get("name", "nvmlDeviceGetName")) is not None:
        gpu["name"] = decode_text(name)
    if (uuid := get("uuid", "nvmlDeviceGetUUID")) is not None:
        gpu["uuid"] = decode_text(uuid)
    if (serial := get("serial", "nvmlDeviceGetSerial")) is not None:
        gpu["serial"] = decode_text(serial)
    if (pci := get("pci_bus_id", "nvmlDeviceGetPciInfo")) is not None:
        gpu["pci_bus_id"] = decode_bus_id(pci.busId)
    if (cc := get("compute_capability", "nvmlDeviceGetCudaComputeCapability")) is not None:
        gpu["compute_capability"] = decode_compute_capability(cc)
    if (memory := get("memory_total_bytes memory_used_bytes", "nvmlDeviceGetMemoryInfo")) is not None:
        gpu["memory_total_bytes"], gpu["memory_used_bytes"] = int(memory.total), int(memory.used)
    if (ecc := get("ecc_enabled", "nvmlDeviceGetEccMode")) is not None:
        gpu["ecc_enabled"] = int(ecc[0]) == _ENABLED  # [current, pending]
    if (errors := get("ecc_uncorrected_volatile", "nvmlDeviceGetTotalEccErrors", _UNCORRECTED, _VOLATILE)) is not None:
        gpu["ecc_uncorrected_volatile"] = int(errors)
    if (
        errors := get("ecc_uncorrected_aggregate", "nvmlDeviceGetTotalEccErrors", _UNCORRECTED, _AGGREGATE)
    ) is not None:
        gpu["ecc_uncorrected_aggregate"] = int(errors)
    if (retired := get("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus")) is not None:
        gpu["retired_pages_pending"] = bool(retired)
    if (rows := get("remap_pending remap_failure", "nvmlDeviceGetRemappedRows")) is not None:
        _corrected, _uncorrected, pending, failure = rows
        gpu["remap_pending"], gpu["remap_failure"] = bool(pending), bool(failure)
    if (persistence := get("persistence_mode", "nvmlDeviceGetPersistenceMode")) is not None:
        gpu["persistence_mode"] = int(persistence) == _ENABLED
    if (mig := get("mig_enabled mig_devices", "nvmlDeviceGetMigMode")) is not None:
        gpu["mig_enabled"] = int(mig[0]) == _ENABLED  # [current, pending]
        try:
            gpu["mig_devices"] = _count_mig_devices(nvml, handle) if gpu["mig_enabled"] else 0
        except nvml.NVMLError as e:
            unavailable["mig_devices"] = str(e)
    mask = _call(nvml, unavailable, "throttle_reasons", _CLOCK_REASON_FUNCTIONS, handle)
    if mask is not None:
        gpu["throttle_reasons"] = decode_clock_reasons(int(mask))
    try:  # a job running beside the check (pynvml raises a non-NVMLError when the driver lacks the call)
        running = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        gpu["compute_processes"] = [{"pid": int(p.pid), "used_memory_bytes": p.usedGpuMemory} for p in running]
    except Exception as e:
        unavailable["compute_processes"] = str(e) or type(e).__name__
    return gpu


def _collect(nvml: ModuleType) -> NvidiaFacts:
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        code = getattr(e, "value", None)
        result = _result("absent" if code in ABSENT_CODES else "error", str(e))
        if code not in ABSENT_CODES and isinstance(code, int):
            result["error_code"] = code
        return result
    try:
        result = _result("ok", None)
        system: dict[str, str] = {}  # system-level fields NVML could not give, reported in "message"
        if (driver := _call(nvml, system, "driver_version", ("nvmlSystemGetDriverVersion",))) is not None:
            result["driver_version"] = decode_text(driver)
        if (cuda := _call(nvml, system, "cuda_driver_version", _CUDA_VERSION_FUNCTIONS)) is not None:
            result["cuda_driver_version"] = decode_cuda_version(int(cuda))
        if (version := _call(nvml, system, "nvml_version", ("nvmlSystemGetNVMLVersion",))) is not None:
            result["nvml_version"] = decode_text(version)
        if system:
            result["message"] = "; ".join(f"{field}: {message}" for field, message in system.items())
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except nvml.NVMLError as e:
            result["status"], result["message"] = "error", f"nvmlDeviceGetCount: {e}"
            if isinstance(code := getattr(e, "value", None), int):
                result["error_code"] = code
            return result
        result["gpus"] = [_gpu(nvml, index) for index in range(count)]
        return result
    finally:
        with contextlib.suppress(nvml.NVMLError):  # the facts are read; a failed shutdown changes none
            nvml.nvmlShutdown()


NVML_TIMEOUT_S = 10.0  # nvmlInit and the queries of a healthy 8-GPU node take well under a second
CHILD = Path(__file__).with_name("_nvml_child.py")
LIMIT = 1 << 20  # bytes kept of each of the child's streams: an answer is ~1 KB a GPU and its processes
GRACE_S = 1.0  # past the deadline, how long the kill of a late child is waited for


class Asking:
    """NVML asked in a short-lived child process (`_nvml_child.py`), started at once and run by `child.bounded` in
    a thread (its time, its output and its process group bounded), so that the other facts are collected
    meanwhile; `answer()` says what it answered or how it ended (`said`). A child stuck in the driver past its
    kill (a process in an uninterruptible driver call dies when the call returns, if ever) is left to that
    thread: `answer()` never waits past the deadline and GRACE_S."""

    def __init__(self, seconds: float, python: str | None = None) -> None:
        self.seconds, self.deadline = seconds, time.monotonic() + seconds
        self.argv = [python or sys.executable, str(CHILD), json.dumps(sys.path)]
        self.finished: Finished | str | None = None  # str: why it could not start
        self.runner = threading.Thread(target=self._run, name="envaudit-nvml", daemon=True)
        self.runner.start()

    def _run(self) -> None:
        from envaudit.child import bounded
        from envaudit.files import safedir

        try:
            # run by path (the script's directory first on sys.path, then envaudit's own path), in an empty
            # directory of its own: an entry "" of envaudit's path (started by `python -c`) is no caller's json.py
            with safedir.scratch("envaudit-nvml-") as home:
                self.finished = bounded.run(self.argv, timeout=self.seconds, limit=LIMIT, cwd=str(home))
        except (OSError, ValueError) as exc:  # ValueError: no interpreter named (an empty sys.executable)
            self.finished = f"could not start {self.argv[0] or 'Python'} to ask NVML: {exc}"

    def answer(self) -> NvidiaFacts:
        """The facts NVML gave, or how the asking ended; waits at most until the deadline (and GRACE_S)."""
        self.runner.join(max(self.deadline - time.monotonic(), 0.0) + GRACE_S)
        done = self.finished
        if done is None:  # killed at the deadline and still there: stuck in a call into the driver
            return _result(
                "timeout", f"NVML did not answer within {self.seconds:g} s, and its process outlived its kill"
            )
        if isinstance(done, str):
            return _result("error", done)
        return said(done, self.seconds)


def said(done: Finished, seconds: float) -> NvidiaFacts:
    """What the child that asked NVML answered, or how it ended without an answer (pure). Only an answer after
    its `asking` counts: what its start printed (a sitecustomize's words) is not its answer. A death by signal
    while asking is status "crash" (check `nvml-crashed`); before it, or any other end without an answer, "error"
    with its `returncode`; NVML asked and still running at the deadline, "timeout" (check `nvml-hung`)."""
    from envaudit.child.jaxfacts import signal_name
    from envaudit.model.redact import scrub

    asked, answer = False, None
    for line in done.stdout.splitlines():
        event = decode(line) or {}
        if event.get("event") == "asking":
            asked = True
        elif event.get("event") == "answer" and asked:
            answer = event.get("facts")
            break
    if answer is not None:
        wrong = typecheck.problem(answer, NvidiaFacts, "nvidia") if isinstance(answer, dict) else "no object"
        if wrong:
            return _result("error", f"the NVML collector's answer is not facts ({wrong})")
        facts = cast(NvidiaFacts, answer)
        if isinstance(facts.get("message"), str):  # free text from a child (a pynvml's exception) is scrubbed
            facts["message"] = scrub(str(facts["message"]))
        return facts
    if done.cut:
        return _result("error", f"the NVML collector printed more than {LIMIT} bytes on one stream")
    if done.returncode is None:
        if asked:
            return _result(
                "timeout", f"NVML did not answer within {seconds:g} s: the driver or a GPU no longer responds"
            )
        return _result("error", f"the NVML collector had not started within {seconds:g} s")
    code, name = done.returncode, signal_name(done.returncode)
    last = next((line.strip() for line in reversed(done.stderr.splitlines()) if line.strip()), "")
    words = f": {scrub(last)[:200]}" if last else ""
    if name is not None and asked:  # a driver whose library crashes its caller: a node fault
        result = _result("crash", f"the process asking NVML was killed by {name}: the driver's library crashed")
    elif name is not None:
        result = _result("error", f"the NVML collector was killed by {name} before it asked NVML{words}")
    else:
        result = _result("error", f"the NVML collector exited with status {code} without answering{words}")
    result["returncode"] = code
    if name is not None:
        result["signal"] = name
    return result


def get_nvidia_within(seconds: float = NVML_TIMEOUT_S) -> NvidiaFacts:
    """NVIDIA facts from NVML, asked in a child process (`Asking`) that has `seconds` to answer."""
    return Asking(seconds).answer()


def raised(exc: BaseException) -> NvidiaFacts:
    """What a pynvml that raised beyond Exception (SystemExit, KeyboardInterrupt) raised, as an error fact."""
    text = str(exc)
    return _result("error", f"pynvml raised {type(exc).__name__}{': ' + text if text else ''}")


def get_nvidia(nvml: ModuleType | None = None) -> NvidiaFacts:
    """NVIDIA driver and GPU facts from NVML; `nvml` defaults to the installed pynvml. Never raises."""
    try:
        if nvml is None:
            try:
                import pynvml
            except ImportError as e:  # the driver was not asked: whether there is one is unknown, not "absent"
                return _result("unknown", f"NVML was not asked ({e}: envaudit's nvidia-ml-py is not installed here)")
            nvml = pynvml
        return _collect(nvml)
    except Exception as e:  # the contract is to report, never to raise
        return _result("error", f"{type(e).__name__}: {e}")
