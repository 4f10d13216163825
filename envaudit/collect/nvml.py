"""NVIDIA driver and GPU health facts, read through NVML (the library behind nvidia-smi).

Why this exists: a GPU can make a JAX program compute wrong numbers without any error reaching Python.
Uncorrected ECC errors, a pending row remap, a MIG slice where a whole GPU was expected, clocks held
down by a hardware slowdown, a libcuda that is missing: none of it is visible from JAX, all of it is
visible to NVML. This module asks NVML and returns plain JSON facts for the rules to judge.

It never raises and never hangs. No driver is a fact (status "absent"); one query the GPU does not support is a
fact (the field is None and NVML's message is kept under "unavailable"); anything unexpected is status "error".
A driver that stops answering (a GPU fallen off the bus hangs nvmlInit and every query) would hang `health` past
Slurm's limit and the hook's `import jax`: `get_nvidia_within` asks in a daemon thread and, past its deadline,
reports status "timeout", which is itself the clearest sign of a bad node (check `nvml-hung`).

The I/O seam is one argument: `get_nvidia(nvml)` receives the pynvml module (tests pass a fake with the
same names and the real exception classes). The helpers that interpret raw NVML values are pure.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Any, cast

from envaudit.child._jaxfacts import decode_cuda
from envaudit.collect import within
from envaudit.facts import GPU, NvidiaFacts, NvidiaStatus

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
GPU_FIELDS = tuple(name for name in GPU.__annotations__ if name not in ("index", "unavailable"))


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
    gpu = cast(GPU, {"index": index, **dict.fromkeys(GPU_FIELDS), "unavailable": unavailable})
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as e:  # e.g. "GPU is lost": listed, with every field None
        unavailable["handle"] = str(e)
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
        return _result("absent" if getattr(e, "value", None) in ABSENT_CODES else "error", str(e))
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
            return result
        result["gpus"] = [_gpu(nvml, index) for index in range(count)]
        return result
    finally:
        with contextlib.suppress(nvml.NVMLError):  # the facts are read; a failed shutdown changes none
            nvml.nvmlShutdown()


NVML_TIMEOUT_S = 10.0  # nvmlInit and the queries of a healthy 8-GPU node take well under a second


def get_nvidia_within(seconds: float = NVML_TIMEOUT_S, nvml: ModuleType | None = None) -> NvidiaFacts:
    """get_nvidia, or status "timeout" if NVML has not answered within `seconds` (collect.within)."""
    answer = within(seconds, lambda: get_nvidia(nvml), "envaudit-nvml")
    if answer is not None:
        return answer
    return _result("timeout", f"NVML did not answer within {seconds:g} s: the driver or a GPU no longer responds")


def get_nvidia(nvml: ModuleType | None = None) -> NvidiaFacts:
    """NVIDIA driver and GPU facts from NVML; `nvml` defaults to the installed pynvml. Never raises."""
    try:
        if nvml is None:
            try:
                import pynvml
            except ImportError as e:
                return _result("absent", str(e))
            nvml = pynvml
        return _collect(nvml)
    except Exception as e:  # the contract is to report, never to raise
        return _result("error", f"{type(e).__name__}: {e}")
