"""Tests of envaudit.collect.nvml: against a fake pynvml built from fixtures, and against the real pynvml."""

from __future__ import annotations

import ctypes
import inspect
import json
import re
import sys
import types
from pathlib import Path
from typing import Any, cast

import pynvml
import pytest

from envaudit.collect import nvml as collector
from envaudit.collect.nvml import (
    CLOCK_EVENT_REASONS,
    GPU_FIELDS,
    decode_bus_id,
    decode_clock_reasons,
    decode_compute_capability,
    decode_cuda_version,
    decode_text,
    get_nvidia,
)
from envaudit.model import typecheck
from envaudit.model.facts import NvidiaFacts
from tests.fakes.fake_pynvml import (
    DEVICE_FUNCTIONS,
    FIXTURE_KEYS,
    SYSTEM_FUNCTIONS,
    FakeHandle,
    error_codes,
    make_fake_pynvml,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvml"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))
TOP_KEYS = ["status", "message", "driver_version", "cuda_driver_version", "nvml_version", "gpus"]
GPU_KEYS = {"index", "unavailable", "lost", *GPU_FIELDS}
MiB = 1024 * 1024
NO_DRIVER: dict[
    str, object
] = {  # what a machine without the NVIDIA driver gives: the library not found, nothing else known
    "status": "absent",
    "message": "NVML Shared Library Not Found",
    "driver_version": None,
    "cuda_driver_version": None,
    "nvml_version": None,
    "gpus": [],
}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def run(fixture: dict[str, Any] | str) -> tuple[dict[str, Any], types.ModuleType]:
    fake = make_fake_pynvml(load(fixture) if isinstance(fixture, str) else fixture)
    return cast(dict[str, Any], get_nvidia(fake)), fake


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_every_fixture_reads_as_the_nvidia_facts_a_report_declares(path: Path) -> None:
    """A fixture is added by its file alone: whatever it holds, the collector's answer is what facts.py declares."""
    result, _ = run(path.stem)
    assert typecheck.problem(result, NvidiaFacts, "nvidia") is None


def test_the_fixtures_hold_healthy_and_faulty_boards_and_no_driver() -> None:
    """What the replayed cases need: some board reporting, one with an ECC or remap fault, and a machine without
    a driver; any fixture may be added beside them."""
    results = [run(path.stem)[0] for path in FIXTURE_FILES]
    gpus = [gpu for result in results for gpu in result["gpus"]]
    assert any(r["status"] == "absent" for r in results) and any(r["status"] == "ok" and r["gpus"] for r in results)
    assert any(gpu.get("ecc_uncorrected_volatile") or gpu.get("remap_pending") for gpu in gpus)


# ---- pure helpers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(12040, "12.4"), (12080, "12.8"), (12000, "12.0"), (11080, "11.8"), (13000, "13.0"), (9020, "9.2")],
)
def test_decode_cuda_version(raw: int, expected: str) -> None:
    assert decode_cuda_version(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(b"NVIDIA H200", "NVIDIA H200"), ("NVIDIA H200", "NVIDIA H200"), (b"GPU-\xff", "GPU-\ufffd"), (b"", "")],
)
def test_decode_text(raw: bytes | str, expected: str) -> None:
    assert decode_text(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [((9, 0), "9.0"), ([8, 6], "8.6"), ((10, 0), "10.0")])
def test_decode_compute_capability(raw: tuple[int, int] | list[int], expected: str) -> None:
    assert decode_compute_capability(raw) == expected


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        (0, []),
        (0x1, ["gpu_idle"]),
        (0x8 | 0x20, ["hw_slowdown", "sw_thermal_slowdown"]),
        (0x4 | 0x40 | 0x80, ["sw_power_cap", "hw_thermal_slowdown", "hw_power_brake_slowdown"]),
        (0x401, ["gpu_idle", "reliability"]),
        (0x1000, ["unknown_0x1000"]),
        (0x800 | 0x8 | 0x4000, ["hw_slowdown", "unknown_0x800", "unknown_0x4000"]),
    ],
)
def test_decode_clock_reasons(mask: int, expected: list[str]) -> None:
    assert decode_clock_reasons(mask) == expected


def test_clock_reason_names_match_pynvml_constants() -> None:
    for bit, name in CLOCK_EVENT_REASONS:
        camel = "".join(word.capitalize() for word in name.split("_"))
        assert getattr(pynvml, f"nvmlClocksThrottleReason{camel}") == bit, name
        assert getattr(pynvml, f"nvmlClocksEventReason{camel}", bit) == bit, name
    # and every single-bit reason the installed pynvml defines is named (catches bits added upstream)
    named = {bit for bit, _ in CLOCK_EVENT_REASONS}
    for attr in dir(pynvml):
        value = getattr(pynvml, attr)
        is_reason = attr.startswith(("nvmlClocksThrottleReason", "nvmlClocksEventReason"))
        if is_reason and value & (value - 1) == 0:
            assert value in named | {0}, attr


def test_collector_constants_match_pynvml() -> None:
    assert collector.NVML_ERROR_DRIVER_NOT_LOADED == pynvml.NVML_ERROR_DRIVER_NOT_LOADED
    assert collector.NVML_ERROR_LIBRARY_NOT_FOUND == pynvml.NVML_ERROR_LIBRARY_NOT_FOUND
    assert collector._UNCORRECTED == pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    assert collector._VOLATILE == pynvml.NVML_VOLATILE_ECC
    assert collector._AGGREGATE == pynvml.NVML_AGGREGATE_ECC
    assert collector._ENABLED == pynvml.NVML_FEATURE_ENABLED == pynvml.NVML_DEVICE_MIG_ENABLE


def test_every_nvml_name_in_the_collector_exists_in_pynvml() -> None:
    # The collector looks functions up with getattr(..., None) to survive old pynvml releases, so a typo
    # would silently read as "missing from this pynvml": this catches it.
    names = set(re.findall(r"\bnvml(?:Init|Shutdown|System|Device)\w*", Path(collector.__file__).read_text()))
    assert "nvmlDeviceGetRemappedRows" in names
    assert {name for name in names if not hasattr(pynvml, name)} == set()


# ---- fixtures through the fake ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_output_shape_is_exact_and_json_serialisable(path: Path) -> None:
    result, _ = run(path.stem)
    assert list(result) == TOP_KEYS
    assert json.loads(json.dumps(result)) == result
    for gpu in result["gpus"]:
        assert set(gpu) == GPU_KEYS
        assert all(gpu[field] is None for field in gpu["unavailable"] if field in GPU_FIELDS)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_shutdown_follows_every_successful_init_and_only_those(path: Path) -> None:
    result, fake = run(path.stem)
    if result["status"] == "absent":
        assert fake.calls == ["nvmlInit"]
    else:
        assert fake.calls[0] == "nvmlInit"
        assert fake.calls[-1] == "nvmlShutdown"
        assert fake.calls.count("nvmlShutdown") == 1


def test_h200_node_healthy() -> None:
    result, _ = run("h200_8x_healthy")
    assert result["status"] == "ok" and result["message"] is None
    assert (result["driver_version"], result["cuda_driver_version"]) == ("570.86.15", "12.8")
    assert result["nvml_version"] == "12.570.86.15"
    assert [gpu["index"] for gpu in result["gpus"]] == list(range(8))
    assert len({gpu["uuid"] for gpu in result["gpus"]}) == 8
    for gpu in result["gpus"]:
        assert gpu["name"] == "NVIDIA H200" and gpu["uuid"].startswith("GPU-")
        assert gpu["compute_capability"] == "9.0"
        assert gpu["memory_total_bytes"] == 143771 * MiB and gpu["memory_used_bytes"] == 632 * MiB
        assert gpu["ecc_enabled"] is True
        assert (gpu["ecc_uncorrected_volatile"], gpu["ecc_uncorrected_aggregate"]) == (0, 0)
        assert (gpu["remap_pending"], gpu["remap_failure"]) == (False, False)
        assert (gpu["persistence_mode"], gpu["mig_enabled"], gpu["mig_devices"]) == (True, False, 0)
        assert gpu["throttle_reasons"] == ["gpu_idle"]
        # Hopper retires no pages (it remaps rows): NVML answers Not Supported, as nvidia-smi's N/A
        assert gpu["retired_pages_pending"] is None
        assert gpu["unavailable"] == {"retired_pages_pending": "Not Supported"}


def test_a100_uncorrected_ecc_and_pending_remap() -> None:
    result, _ = run("a100_ecc_remap_pending")
    healthy, bad = result["gpus"]
    assert (healthy["ecc_uncorrected_volatile"], healthy["ecc_uncorrected_aggregate"]) == (0, 0)
    assert (healthy["remap_pending"], healthy["remap_failure"]) == (False, False)
    assert (bad["ecc_uncorrected_volatile"], bad["ecc_uncorrected_aggregate"]) == (2, 6)
    assert (bad["remap_pending"], bad["remap_failure"]) == (True, False)
    assert bad["ecc_enabled"] is True and bad["compute_capability"] == "8.0"
    assert result["cuda_driver_version"] == "12.0"


@pytest.mark.parametrize(
    ("rows", "pending", "failure"),
    [([0, 4, 1, 0], True, False), ([0, 0, 0, 1], False, True), ([3, 5, 0, 0], False, False)],
)
def test_remapped_rows_tuple_positions(rows: list[int], pending: bool, failure: bool) -> None:
    # nvmlDeviceGetRemappedRows -> (correctable, uncorrectable, pending, failure)
    fixture = load("h100_mig")
    fixture["devices"][0]["nvmlDeviceGetRemappedRows"] = rows
    (gpu,) = run(fixture)[0]["gpus"]
    assert (gpu["remap_pending"], gpu["remap_failure"]) == (pending, failure)


@pytest.mark.parametrize(("current_pending", "enabled"), [([1, 0], True), ([0, 1], False), ([0, 0], False)])
def test_ecc_and_mig_modes_read_the_current_state_not_the_pending_one(
    current_pending: list[int], enabled: bool
) -> None:
    fixture = load("h100_mig")
    device = fixture["devices"][0]
    device["nvmlDeviceGetEccMode"] = device["nvmlDeviceGetMigMode"] = current_pending
    (gpu,) = run(fixture)[0]["gpus"]
    assert (gpu["ecc_enabled"], gpu["mig_enabled"]) == (enabled, enabled)
    assert gpu["mig_devices"] == (3 if enabled else 0)


def test_old_driver_throttle_reasons_come_from_the_throttle_function() -> None:
    # R525 lacks nvmlDeviceGetCurrentClocksEventReasons: NVMLError_FunctionNotFound, then the old name answers
    result, fake = run("a100_ecc_remap_pending")
    assert [gpu["throttle_reasons"] for gpu in result["gpus"]] == [["gpu_idle"], ["gpu_idle"]]
    assert all("throttle_reasons" not in gpu["unavailable"] for gpu in result["gpus"])
    assert fake.calls.count("nvmlDeviceGetCurrentClocksEventReasons") == 2
    assert fake.calls.count("nvmlDeviceGetCurrentClocksThrottleReasons") == 2


def test_mig_enabled_counts_mig_devices() -> None:
    result, fake = run("h100_mig")
    (gpu,) = result["gpus"]
    assert (gpu["mig_enabled"], gpu["mig_devices"]) == (True, 3)
    assert gpu["unavailable"] == {"retired_pages_pending": "Not Supported"}
    assert fake.calls.count("nvmlDeviceGetMigDeviceHandleByIndex") == 7  # every index up to the maximum


def test_mig_device_enumeration_error_marks_only_mig_devices() -> None:
    fixture = load("h100_mig")
    fixture["devices"][0]["nvmlDeviceGetMigDeviceHandleByIndex"] = {"error": pynvml.NVML_ERROR_NO_PERMISSION}
    (gpu,) = run(fixture)[0]["gpus"]
    assert (gpu["mig_enabled"], gpu["mig_devices"]) == (True, None)
    assert gpu["unavailable"]["mig_devices"] == "Insufficient Permissions"


def test_driver_without_gpu_is_ok_with_no_gpus() -> None:
    result, _ = run("driver_no_gpu")
    assert result == {
        "status": "ok",
        "message": None,
        "driver_version": "550.127.08",
        "cuda_driver_version": "12.4",
        "nvml_version": "12.550.127.08",
        "gpus": [],
    }


def test_no_driver_is_absent_with_nvml_message() -> None:
    result, _ = run("no_driver")
    assert result == NO_DRIVER


@pytest.mark.parametrize(
    ("code", "status", "message"),
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "absent", "NVML Shared Library Not Found"),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "absent", "Driver Not Loaded"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "error", "Insufficient Permissions"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "error", "RM has detected an NVML/RM version mismatch."),
    ],
)
def test_init_failure_status(code: int, status: str, message: str) -> None:
    result, fake = run({"nvmlInit": {"error": code}})
    assert (result["status"], result["message"], result["gpus"]) == (status, message, [])
    assert "nvmlShutdown" not in fake.calls


def test_unsupported_fields_are_recorded_not_fatal() -> None:
    result, fake = run("rtx3090_not_supported")
    assert result["status"] == "ok"
    # libcuda missing: _v2 says so, and the old function (which would make up a version) is not asked
    assert result["cuda_driver_version"] is None
    assert result["message"] == "cuda_driver_version: NVML Shared Library Not Found"
    assert "nvmlSystemGetCudaDriverVersion" not in fake.calls
    assert result["driver_version"] == "550.135"
    (gpu,) = result["gpus"]
    not_supported = {
        "ecc_enabled",
        "ecc_uncorrected_volatile",
        "ecc_uncorrected_aggregate",
        "retired_pages_pending",
        "remap_pending",
        "remap_failure",
        "mig_enabled",
        "mig_devices",
        "serial",
    }  # a GeForce board has no serial number (nvidia-smi: "Serial Number: N/A")
    assert gpu["unavailable"] == dict.fromkeys(not_supported, "Not Supported")
    assert all(gpu[field] is None for field in not_supported)
    assert (gpu["name"], gpu["compute_capability"]) == ("NVIDIA GeForce RTX 3090", "8.6")
    assert gpu["persistence_mode"] is False
    assert gpu["throttle_reasons"] == ["sw_power_cap", "sw_thermal_slowdown"]
    assert gpu["memory_total_bytes"] == 24576 * MiB


def test_lost_gpu_is_listed_with_its_error() -> None:
    result, _ = run("a100_gpu_lost")
    assert result["status"] == "ok"
    working, lost = result["gpus"]
    assert working["throttle_reasons"] == ["hw_slowdown"] and working["unavailable"] == {
        "retired_pages_pending": "Not Supported"
    }
    assert lost["index"] == 1
    assert lost["unavailable"] == {"handle": "GPU is lost"}
    assert all(lost[field] is None for field in GPU_FIELDS)


def test_device_count_failure_is_an_error_with_system_facts_kept() -> None:
    fixture = load("h200_8x_healthy") | {"nvmlDeviceGetCount": {"error": pynvml.NVML_ERROR_UNKNOWN}}
    result, fake = run(fixture)
    assert (result["status"], result["message"]) == ("error", "nvmlDeviceGetCount: Unknown Error")
    assert result["driver_version"] == "570.86.15" and result["gpus"] == []
    assert fake.calls[-1] == "nvmlShutdown"


def test_old_pynvml_bytes_are_decoded() -> None:
    fixture = load("h100_mig")
    fixture["nvmlSystemGetDriverVersion"] = b"550.54.15"
    fixture["devices"][0] |= {"nvmlDeviceGetName": b"NVIDIA H100 80GB HBM3", "nvmlDeviceGetUUID": b"GPU-1234"}
    result, _ = run(fixture)
    assert result["driver_version"] == "550.54.15"
    assert (result["gpus"][0]["name"], result["gpus"][0]["uuid"]) == ("NVIDIA H100 80GB HBM3", "GPU-1234")
    assert json.loads(json.dumps(result)) == result


def test_old_pynvml_without_newer_functions() -> None:
    missing = [
        "nvmlSystemGetCudaDriverVersion_v2",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetRemappedRows",
    ]
    fixture = load("a100_ecc_remap_pending") | {"missing_functions": missing}
    result, _ = run(fixture)
    assert result["status"] == "ok" and result["cuda_driver_version"] == "12.0"  # the old function answers
    gpu = result["gpus"][1]
    assert gpu["throttle_reasons"] == ["gpu_idle"]
    assert (gpu["remap_pending"], gpu["remap_failure"]) == (None, None)
    assert gpu["unavailable"]["remap_pending"] == "nvmlDeviceGetRemappedRows is missing from this pynvml"


def test_driver_without_any_clock_reason_function() -> None:
    fixture = load("h100_mig")
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        del fixture["devices"][0][name]
    (gpu,) = run(fixture)[0]["gpus"]
    assert gpu["throttle_reasons"] is None
    assert gpu["unavailable"]["throttle_reasons"] == "Function Not Found"


def _raise(exc: BaseException) -> Any:
    def function(*args: Any) -> Any:
        raise exc

    return function


def test_never_raises_on_a_non_nvml_exception_and_still_shuts_down(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = make_fake_pynvml(load("h200_8x_healthy"))
    monkeypatch.setattr(fake, "nvmlDeviceGetName", _raise(RuntimeError("boom")))
    result = get_nvidia(fake)
    assert (result["status"], result["message"], result["gpus"]) == ("error", "RuntimeError: boom", [])
    assert fake.calls[-1] == "nvmlShutdown"


def test_never_raises_when_init_raises_a_non_nvml_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = make_fake_pynvml(load("h200_8x_healthy"))
    monkeypatch.setattr(fake, "nvmlInit", _raise(OSError("libnvidia-ml.so.1: cannot open")))
    assert get_nvidia(fake)["status"] == "error"
    assert get_nvidia(fake)["message"] == "OSError: libnvidia-ml.so.1: cannot open"


def test_never_raises_on_a_module_that_is_not_pynvml() -> None:
    result = get_nvidia(types.ModuleType("not_pynvml"))
    assert result["status"] == "error" and str(result["message"]).startswith("AttributeError: ")


def test_failed_shutdown_does_not_spoil_the_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = make_fake_pynvml(load("driver_no_gpu"))
    monkeypatch.setattr(fake, "nvmlShutdown", _raise(pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)))
    result = get_nvidia(fake)
    assert (result["status"], result["driver_version"]) == ("ok", "550.127.08")


def test_missing_pynvml_is_unknown_not_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pynvml the driver was not asked: "absent" would say no driver (no GPU, a plugin to remove)."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    result = get_nvidia()
    assert result["status"] == "unknown" and "pynvml" in str(result["message"]) and result["gpus"] == []


# ---- the real pynvml on this machine ---------------------------------------------------------------------


def _nvml_library_loadable() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def test_real_pynvml_on_this_machine() -> None:
    """Without a driver (CI, this machine): NVML's own 'absent'. With one (a GPU node): the fixtures' reality check."""
    result = get_nvidia()
    assert json.loads(json.dumps(result)) == result
    if not _nvml_library_loadable():
        assert result == NO_DRIVER
        assert get_nvidia(pynvml) == result
        return
    assert result["status"] == "ok", result["message"]
    assert result["driver_version"] and result["nvml_version"]
    for index, gpu in enumerate(result["gpus"]):
        assert set(gpu) == GPU_KEYS and gpu["index"] == index
        assert gpu["name"] and gpu["uuid"].startswith("GPU-") and gpu["memory_total_bytes"] > 0
        assert all(isinstance(message, str) and message for message in gpu["unavailable"].values())


# ---- fidelity of the fake --------------------------------------------------------------------------------


def test_every_fake_function_is_a_real_pynvml_function_with_its_signature() -> None:
    fake = make_fake_pynvml({})
    functions = [name for name in dir(fake) if inspect.isfunction(getattr(fake, name))]
    # nvmlInit, nvmlShutdown, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, and the lists
    assert len(functions) == 4 + len(SYSTEM_FUNCTIONS) + len(DEVICE_FUNCTIONS)
    for name in functions:
        real = getattr(pynvml, name, None)
        assert callable(real), name
        assert inspect.signature(getattr(fake, name)) == inspect.signature(real), name


def test_fake_constants_and_exceptions_are_the_real_ones() -> None:
    fake = make_fake_pynvml({})
    assert fake.NVMLError is pynvml.NVMLError
    assert fake.NVMLError_NotSupported is pynvml.NVMLError_NotSupported
    assert fake.NVML_AGGREGATE_ECC == pynvml.NVML_AGGREGATE_ECC
    for name in dir(fake):
        if name.startswith(("NVML", "nvmlClocks")):
            assert getattr(fake, name) is getattr(pynvml, name), name


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_fixture_keys_are_real_function_names(path: Path) -> None:
    fixture = json.loads(path.read_text())
    system = {key for key in fixture if not key.startswith("_")} - FIXTURE_KEYS
    assert system <= set(SYSTEM_FUNCTIONS)
    for device in [fixture.get("device_defaults", {}), *fixture.get("devices", [])]:
        assert set(device) <= {*DEVICE_FUNCTIONS, "nvmlDeviceGetHandleByIndex"}
    for name in system | set(fixture.get("missing_functions", [])):
        assert callable(getattr(pynvml, name, None)), name


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_fixture_error_codes_are_real_nvml_errors_with_known_messages(path: Path) -> None:
    for code in error_codes(json.loads(path.read_text())):
        error_class = pynvml.nvmlExceptionClass(code)  # ValueError for a code NVML does not have
        assert issubclass(error_class, pynvml.NVMLError) and error_class is not pynvml.NVMLError
        # messages come from pynvml's own table, not from libnvidia-ml (absent here)
        assert not str(pynvml.NVMLError(code)).startswith("NVML Error with code"), code


def test_fake_raises_what_real_pynvml_raises() -> None:
    fake = make_fake_pynvml(load("no_driver"))
    with pytest.raises(pynvml.NVMLError_LibraryNotFound, match=r"^NVML Shared Library Not Found$"):
        fake.nvmlInit()
    # before a successful init, both refuse device queries the same way
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetCount()
    if not _nvml_library_loadable():
        with pytest.raises(pynvml.NVMLError_LibraryNotFound, match=r"^NVML Shared Library Not Found$"):
            pynvml.nvmlInit()


def test_fake_checks_arguments_against_the_real_signature() -> None:
    fake = make_fake_pynvml(load("h100_mig"))
    fake.nvmlInit()
    handle = fake.nvmlDeviceGetHandleByIndex(0)
    assert isinstance(handle, FakeHandle)
    with pytest.raises(TypeError):
        fake.nvmlDeviceGetTotalEccErrors(handle, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)
    assert fake.nvmlDeviceGetTotalEccErrors(handle, 1, 1) == 0
    assert isinstance(fake.nvmlDeviceGetCudaComputeCapability(handle), tuple)  # as the real one
    assert isinstance(fake.nvmlDeviceGetEccMode(handle), list)  # as the real one
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        fake.nvmlDeviceGetHandleByIndex(1)
    with pytest.raises(pynvml.NVMLError_NotFound):
        fake.nvmlDeviceGetMigDeviceHandleByIndex(handle, 3)


def test_the_identity_an_operator_pulls_a_board_by() -> None:
    """PCI bus id (canonical, as CUDA and sysfs write it), serial and UUID for each GPU, and what runs on it."""
    result, _ = run("h200_8x_healthy")
    ids = [(g["pci_bus_id"], g["serial"], g["uuid"][:4]) for g in result["gpus"]]
    assert ids[0] == ("0000:18:00.0", "1652024010000", "GPU-") and len({i[0] for i in ids}) == 8
    assert all(g["compute_processes"] == [] for g in result["gpus"])


def test_running_jobs_are_listed_and_an_old_driver_is_no_failure() -> None:
    fixture = load("h200_8x_healthy")
    fixture["devices"][3]["nvmlDeviceGetComputeRunningProcesses"] = [{"pid": 4242, "usedGpuMemory": 2**30}]
    result, _ = run(fixture)
    assert result["gpus"][3]["compute_processes"] == [{"pid": 4242, "used_memory_bytes": 2**30}]
    del fixture["device_defaults"]["nvmlDeviceGetComputeRunningProcesses"]
    result, _ = run(fixture)
    assert result["status"] == "ok" and result["gpus"][0]["compute_processes"] is None
    assert result["gpus"][0]["unavailable"]["compute_processes"] == "Function Not Found"


BUS_IDS = [("00000000:17:00.0", "0000:17:00.0"), (b"00000001:3B:00.0", "0001:3b:00.0")]
BUS_IDS.append(("0000:af:00.0", "0000:af:00.0"))


@pytest.mark.parametrize(("raw", "expected"), BUS_IDS)
def test_decode_bus_id(raw: bytes | str, expected: str) -> None:
    assert decode_bus_id(raw) == expected
