"""A fake `pynvml` module built from a fixture dict, so the NVML collector can be tested without a GPU.

Faithful where it matters:
- the same function names as the real pynvml, and every call is checked against the real function's
  signature (a wrong argument count raises TypeError, as it would for real);
- the real constants and the real exception classes: an error is raised as `pynvml.NVMLError(code)`,
  which the real class turns into its subclass (NVMLError_NotSupported, ...) with NVML's own message;
- NVML's state rules: any call before nvmlInit, or nvmlShutdown without it, raises NVMLError_Uninitialized;
  a function the fixture does not mention raises NVMLError_FunctionNotFound, which is what real pynvml
  raises when the installed driver predates that function.

Fixture format (every key that names a function is the real pynvml name):
    {"nvmlInit": {"error": 12},                       # optional; absent or null means success
     "nvmlSystemGetDriverVersion": "570.86.15",        # system functions: a spec each
     "device_defaults": {"nvmlDeviceGetName": "NVIDIA H200", ...},
     "devices": [{"nvmlDeviceGetUUID": "GPU-..."}, ...],   # per GPU, merged over device_defaults
     "missing_functions": ["nvmlSystemGetCudaDriverVersion_v2"]}   # absent from this (older) pynvml
A spec is a plain value; or {"error": code}; or {"hang": seconds} (then the rest of the spec); or {"crash":
"segfault"} (a real invalid read in native code, as a driver library that crashes its caller: the process dies by
SIGSEGV); or {"exit": 7} (the process ends at once, as a C library that calls exit()); or {"raise": "SystemExit",
"args": [3]} (any built-in BaseException); or
{"by_args": {"1,0": spec, ...}, "default": spec} for a
function whose answer depends on its arguments after the handle (joined with ","); any other dict is a C
struct and comes back as an object with those attributes (nvmlDeviceGetMemoryInfo). nvmlDeviceGetCount
defaults to len(devices). Keys starting with "_" are comments.

In a child process the fake is put in place by the fault `tests/faults/nvml_fixture` (its sitecustomize, first on
PYTHONPATH), answering from the fixture file the environment variable ENVAUDIT_FAKE_NVML names (`from_environment`;
a file, not the JSON itself: a JSON value in the environment is hidden by redaction, word by word).
"""

from __future__ import annotations

import builtins
import ctypes
import inspect
import json
import os
import time
import types
from collections.abc import Callable
from typing import Any

import pynvml

SYSTEM_FUNCTIONS = (
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetCudaDriverVersion",
    "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlSystemGetNVMLVersion",
)
DEVICE_FUNCTIONS = (
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetEccMode",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetSerial",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetComputeRunningProcesses",
)
FIXTURE_VARIABLE = "ENVAUDIT_FAKE_NVML"  # a JSON fixture file, for the fault tests/faults/nvml_fixture
FIXTURE_KEYS = {"nvmlInit", "nvmlDeviceGetCount", "device_defaults", "devices", "missing_functions"}
_TUPLE_RESULTS = {"nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetRemappedRows"}  # real ones: tuples


class FakeHandle:
    """Stands in for pynvml's c_nvmlDevice_t: opaque to the caller, carries the GPU's merged specs."""

    def __init__(self, index: int, specs: dict[str, Any]) -> None:
        self.index, self.specs = index, specs

    def __repr__(self) -> str:
        return f"FakeHandle({self.index})"


def resolve(name: str, spec: Any, args: tuple[Any, ...] = ()) -> Any:
    """The value a spec stands for, or the real NVMLError it says to raise; {"hang": s} blocks for s seconds first
    (a driver that no longer answers, as with a GPU fallen off the bus)."""
    if isinstance(spec, dict):
        if "hang" in spec:
            time.sleep(float(spec["hang"]))
            return resolve(name, {k: v for k, v in spec.items() if k != "hang"} or None, args)
        if "error" in spec:
            raise pynvml.NVMLError(spec["error"])
        if spec.get("crash") == "segfault":
            ctypes.string_at(0)  # strlen(NULL) in C: the process is killed by SIGSEGV, no Python exception
        if "exit" in spec:
            os._exit(int(spec["exit"]))
        if "raise" in spec:
            raised = getattr(builtins, spec["raise"])
            assert isinstance(raised, type) and issubclass(raised, BaseException), spec
            raise raised(*spec.get("args", ()))
        if "by_args" in spec:
            key = ",".join(str(a) for a in args)
            default = spec.get("default", {"error": pynvml.NVML_ERROR_INVALID_ARGUMENT})
            return resolve(name, spec["by_args"].get(key, default))
        return types.SimpleNamespace(**spec)
    if isinstance(spec, list):  # a list of C structs (running processes) comes back as objects too
        items = [types.SimpleNamespace(**x) if isinstance(x, dict) else x for x in spec]
        return tuple(items) if name in _TUPLE_RESULTS else items
    return spec


def error_codes(spec: Any) -> list[int]:
    """Every error code a fixture (or part of one) mentions, for the fidelity test."""
    if isinstance(spec, dict):
        own = [spec["error"]] if "error" in spec else []
        return own + [code for value in spec.values() for code in error_codes(value)]
    if isinstance(spec, list):
        return [code for value in spec for code in error_codes(value)]
    return []


def make_fake_pynvml(fixture: dict[str, Any]) -> types.ModuleType:
    """A module with pynvml's names, answering from `fixture`. `module.calls` lists the calls made."""
    module = types.ModuleType("fake_pynvml", "Fake pynvml built from a fixture.")
    for attr in dir(pynvml):  # the real constants and exception classes
        value = getattr(pynvml, attr)
        is_error = isinstance(value, type) and issubclass(value, pynvml.NVMLError)
        if is_error or (attr.startswith(("NVML_", "nvmlClocks")) and isinstance(value, int)):
            setattr(module, attr, value)
    calls: list[str] = []
    state = {"init": 0}
    defaults = fixture.get("device_defaults", {})
    devices = [{**defaults, **device} for device in fixture.get("devices", [])]

    def define(name: str, body: Callable[..., Any]) -> None:
        signature = inspect.signature(getattr(pynvml, name))

        def function(*args: Any, **kwargs: Any) -> Any:
            signature.bind(*args, **kwargs)  # TypeError on a call the real function would refuse
            calls.append(name)
            if name != "nvmlInit" and state["init"] <= 0:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
            return body(*args, **kwargs)

        function.__name__ = function.__qualname__ = name
        setattr(function, "__signature__", signature)  # noqa: B010 (not a declared attribute)
        setattr(module, name, function)

    def init() -> None:
        resolve("nvmlInit", fixture.get("nvmlInit"))
        state["init"] += 1

    def shutdown() -> None:
        state["init"] -= 1

    def handle_by_index(index: int) -> FakeHandle:
        if not 0 <= index < len(devices):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        resolve("nvmlDeviceGetHandleByIndex", devices[index].get("nvmlDeviceGetHandleByIndex"))
        return FakeHandle(index, devices[index])

    def system(name: str) -> Callable[[], Any]:
        def body() -> Any:
            if name not in fixture:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
            return resolve(name, fixture[name])

        return body

    def device(name: str) -> Callable[..., Any]:
        def body(handle: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(handle, FakeHandle):
                raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            if name not in handle.specs:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
            return resolve(name, handle.specs[name], args)

        return body

    define("nvmlInit", init)
    define("nvmlShutdown", shutdown)
    count = fixture.get("nvmlDeviceGetCount", len(devices))
    define("nvmlDeviceGetCount", lambda: resolve("nvmlDeviceGetCount", count))
    define("nvmlDeviceGetHandleByIndex", handle_by_index)
    for name in SYSTEM_FUNCTIONS:
        define(name, system(name))
    for name in DEVICE_FUNCTIONS:
        define(name, device(name))
    for name in fixture.get("missing_functions", []):
        delattr(module, name)
    setattr(module, "calls", calls)  # noqa: B010
    return module


def from_environment() -> types.ModuleType:
    """The fake answering from the fixture file named by ENVAUDIT_FAKE_NVML (unset: an empty fixture)."""
    path = os.environ.get(FIXTURE_VARIABLE)
    if not path:
        return make_fake_pynvml({})
    with open(path, encoding="utf-8") as fixture:
        return make_fake_pynvml(json.load(fixture))
