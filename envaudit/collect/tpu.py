"""The TPU chips a host has, read as jax reads them, and the kernel setting jax warns about on TPU v5e and newer.

jax counts a host's chips on its PCI bus (Google's vendor id, a device id per TPU generation) and, from v5e on,
warns at every start that "Transparent hugepages are not enabled" unless the kernel's mode is exactly `[always]`
(jax/_src/hardware_utils.py and cloud_tpu_init.py, jax-v0.10.1). Which device files this process can open is a
third number: a container or a VM may pass the host's PCI functions through but only some chips' files (measured
on a TPU v5e host lent here: four 0x0063 functions on the bus, one /dev/vfio group, one device jax sees). Reading
files only: nothing is opened, nothing is run, and a missing file is a fact, not an error.
"""

from __future__ import annotations

import re
from pathlib import Path

from envaudit.model.facts import TpuHost

GOOGLE_PCI_VENDOR = "0x1ae0"
# PCI device id -> TPU generation, jax's table (jax/_src/hardware_utils.py, jax-v0.10.1: _TPU_PCI_DEVICE_IDS)
TPU_PCI_DEVICES = {
    "0x0027": "v3",
    "0x0056": "plc",
    "0x005e": "v4",
    "0x0062": "v5p",
    "0x0063": "v5e",
    "0x006f": "v6e",
    "0x0076": "tpu7x",
}
# jax's TpuVersion order, for "v5e and newer"
ORDER = ("v2", "v3", "plc", "v4", "v5p", "v5e", "v6e", "tpu7x")


def selected(text: str) -> str | None:
    """The mode the kernel marks `[like this]` in /sys/kernel/mm/transparent_hugepage/enabled."""
    found = re.search(r"\[(\w+)\]", text)
    return found[1] if found else None


def _holds_tpu(sys_root: Path, group: str) -> bool:
    """Whether an IOMMU group (a /dev/vfio/N) holds a Google TPU function: vfio passes NICs and disks through too.
    Where the kernel does not say (a sandbox without /sys/kernel/iommu_groups), the group is not counted."""
    for vendor in (sys_root / "kernel/iommu_groups" / group / "devices").glob("*/vendor"):
        try:
            if vendor.read_text().strip() == GOOGLE_PCI_VENDOR:
                return True
        except OSError:
            continue
    return False


def read(sys_root: Path = Path("/sys"), dev_root: Path = Path("/dev")) -> TpuHost | None:
    """The host's TPU chips, or None where its PCI bus has none (most machines: no fact at all)."""
    versions: list[str | None] = []
    for vendor in sorted(sys_root.glob("bus/pci/devices/*/vendor")):
        try:
            if vendor.read_text().strip() != GOOGLE_PCI_VENDOR:
                continue
            device = (vendor.parent / "device").read_text().strip()
        except OSError:
            continue
        if device in TPU_PCI_DEVICES:
            versions.append(TPU_PCI_DEVICES[device])
    if not versions:
        return None
    groups = [p for p in dev_root.glob("vfio/*") if p.name.isdigit() and _holds_tpu(sys_root, p.name)]
    files = [*dev_root.glob("accel[0-9]*"), *groups]
    try:
        thp = selected((sys_root / "kernel/mm/transparent_hugepage/enabled").read_text())
    except OSError:
        thp = None
    return TpuHost(chips=len(versions), version=versions[0], device_files=len(files), transparent_hugepages=thp)
