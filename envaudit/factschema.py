"""The types of the fact fields that rules and formats read, checked when a saved report is loaded.

Facts are plain JSON so that old reports stay readable; but `check` re-evaluates facts from a file a user hands
us, and a wrong type deep inside (`"gpus": true`) must be a one-line input error, not a crash in a rule. Fields not
listed here are carried along unread. Every listed field may be missing or null.
"""

from __future__ import annotations

from typing import Any

# field -> expected type; a dict value describes the items of a list of objects; (list, T) a list of T
Shape = dict[str, Any]

GPU: Shape = {
    "index": int, "name": str, "uuid": str, "serial": str, "pci_bus_id": str, "compute_capability": str,
    "compute_processes": {"pid": int, "used_memory_bytes": int}, "ecc_uncorrected_volatile": int,
    "ecc_uncorrected_aggregate": int, "remap_pending": bool, "remap_failure": bool, "retired_pages_pending": bool,
    "throttle_reasons": (list, str),
}  # fmt: skip
DEVICE: Shape = {"id": int, "platform": str, "device_kind": str, "compute_capability": str, "local_hardware_id": int}
MEMORY: Shape = {"id": int, "peak_bytes_in_use": int, "bytes_in_use": int, "bytes_limit": int}
SHAPES: dict[str, Shape] = {
    "jax": {"status": str, "message": str, "stage": str, "platform": str, "backend": str, "cuda_version": str,
            "cudnn_version": str, "x64": bool, "default_matmul_precision": str, "devices": DEVICE, "returncode": int,
            "child_env": dict, "device_memory": MEMORY, "child_pids": (list, int)},
    "nvidia": {"status": str, "message": str, "driver_version": str, "cuda_driver_version": str, "gpus": GPU,
               "gpus_exact": bool},
}  # fmt: skip
ITEMS: dict[str, Shape] = {
    "requirements": {"package": str, "requires": str, "installed": str},
    "duplicates": {"name": str, "versions": (list, str), "locations": (list, str)},
}


def problem(value: Any, shape: Shape, where: str) -> str | None:
    """The first field of `value` (a JSON object) that does not have its shape, as a sentence; None if all do."""
    if not isinstance(value, dict):
        return f"{where} must be a JSON object"
    for key, kind in shape.items():
        item = value.get(key)
        if item is None:
            continue
        here = f"{where}.{key}"
        if isinstance(kind, dict):
            if not isinstance(item, list):
                return f"{here} must be a JSON array"
            for i, element in enumerate(item):
                if found := problem(element, kind, f"{here}[{i}]"):
                    return found
        elif isinstance(kind, tuple):
            each = kind[1]
            if not isinstance(item, list) or not all(isinstance(x, each) and not isinstance(x, bool) for x in item):
                return f"{here} must be an array of {'strings' if each is str else 'integers'}"
        elif not isinstance(item, kind) or (kind is int and isinstance(item, bool)):
            return f"{here} must be of JSON type {({bool: 'boolean', dict: 'object'}).get(kind, kind.__name__)}"
    return None


def facts_problem(facts: dict[str, Any]) -> str | None:
    for name, shape in SHAPES.items():
        if found := problem(facts.get(name, {}), shape, f"facts.{name}"):
            return found
    for name, shape in ITEMS.items():
        for i, item in enumerate(facts.get(name) or []):
            if found := problem(item, shape, f"facts.{name}[{i}]"):
                return found
    requires = facts.get("requires", {})  # each audited package's requirement strings on the others
    if not isinstance(requires, dict) or not all(isinstance(v, list) and all(isinstance(r, str) for r in v)
                                                 for v in requires.values()):  # fmt: skip
        return "facts.requires must map names to lists of requirement strings"
    return None
