"""The TPU host's state: its chips read as jax reads them (from a /sys and /dev laid out as the TPU v5e host lent
here has them), transparent hugepages as jax judges them, chips jax does not see, a chip another process holds.

The facts around the checks are those of the real TPU v5e host's audit (tests/fixtures/tpu), with the one fact
each test is about changed; the held chip's message is the one measured there (a second jax while a first ran).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from envaudit import rules
from envaudit.collect import tpu
from envaudit.judge import causes
from envaudit.model.facts import Facts, TpuHost
from envaudit.model.fixes import Fix
from envaudit.rules import installing
from tests.conftest import FIXTURES

# measured on the TPU v5e host (jax 0.10.2, libtpu 0.0.42.1) while another process held the chip
HELD = (
    "Unable to initialize backend 'tpu': ABORTED: Internal error when accessing libtpu multi-process lockfile. "
    "Run \"$ sudo rm /tmp/libtpu_lockfile\". (set JAX_PLATFORMS='' to automatically choose an available backend)"
)


def host(
    tmp_path: Path,
    devices: dict[str, tuple[str, str]],
    thp: str | None,
    files: list[str],
    groups: dict[str, str] | None = None,
) -> TpuHost | None:
    """`groups`: IOMMU group -> the PCI function in it (what /sys/kernel/iommu_groups says of /dev/vfio/N)."""
    sys_root, dev_root = tmp_path / "sys", tmp_path / "dev"
    for group, slot in (groups or {}).items():
        member = sys_root / "kernel/iommu_groups" / group / "devices" / slot
        member.mkdir(parents=True)
        (member / "vendor").write_text(devices.get(slot, ("0x8086", ""))[0] + "\n")
    for slot, (vendor, device) in devices.items():
        (sys_root / "bus/pci/devices" / slot).mkdir(parents=True)
        (sys_root / "bus/pci/devices" / slot / "vendor").write_text(vendor + "\n")
        (sys_root / "bus/pci/devices" / slot / "device").write_text(device + "\n")
    if thp is not None:
        (sys_root / "kernel/mm/transparent_hugepage").mkdir(parents=True)
        (sys_root / "kernel/mm/transparent_hugepage/enabled").write_text(thp + "\n")
    for name in files:
        (dev_root / name).parent.mkdir(parents=True, exist_ok=True)
        (dev_root / name).touch()
    return tpu.read(sys_root, dev_root)


V5E = {f"0000:00:0{n}.0": ("0x1ae0", "0x0063") for n in (8, 9, "a", "b")}  # the lent host's bus, as read there


def test_the_lent_hosts_bus_is_four_v5e_chips_one_of_them_its_own(tmp_path: Path) -> None:
    found = host(tmp_path, V5E, None, ["vfio/3", "vfio/vfio"], {"3": "0000:00:0b.0"})
    assert found == TpuHost(chips=4, version="v5e", device_files=1, transparent_hugepages=None)


def test_a_vfio_group_counts_as_a_chip_only_where_it_holds_a_tpu(tmp_path: Path) -> None:
    nic = {**V5E, "0000:00:05.0": ("0x8086", "0x1572")}  # a NIC passed through vfio beside the chip
    found = host(tmp_path, nic, None, ["vfio/3", "vfio/7", "vfio/9"], {"3": "0000:00:0b.0", "7": "0000:00:05.0"})
    assert found is not None and found["device_files"] == 1  # group 9: the kernel does not say, not counted


def test_no_google_tpu_on_the_bus_is_no_fact(tmp_path: Path) -> None:
    other = {"0000:00:01.0": ("0x8086", "0x1237"), "0000:00:02.0": ("0x1ae0", "0x0001")}  # Intel; a Google NIC
    assert host(tmp_path, other, "[always] madvise never", ["accel0"]) is None


@pytest.mark.parametrize(
    ("text", "mode"), [("[always] madvise never", "always"), ("always [madvise] never", "madvise"), ("", None)]
)
def test_the_selected_mode_is_the_bracketed_one(text: str, mode: str | None) -> None:
    assert tpu.selected(text) == mode


def tpu_host_facts(**host_facts: object) -> Facts:
    report = json.loads((FIXTURES / "tpu" / "tpu-v5e-jax0102-audit.json").read_text())
    facts = Facts.from_dict(report["facts"], report["mode"])
    base = TpuHost(chips=1, version="v5e", device_files=1, transparent_hugepages="always")
    return replace(facts, platform={**facts.platform, "tpu": TpuHost(**{**base, **host_facts})})  # type: ignore[typeddict-item]


def ids(facts: Facts) -> dict[str, str]:
    return {f.id: f.severity for f in rules.evaluate(facts).findings}


@pytest.mark.parametrize(
    ("version", "mode", "warned"),
    [("v5e", None, True), ("v5e", "madvise", True), ("v6e", "never", True), ("v5e", "always", False),
     ("v4", None, False), ("v5p", "madvise", False)],
)  # fmt: skip
def test_hugepages_are_judged_as_jax_judges_them(version: str, mode: str | None, warned: bool) -> None:
    found = ids(tpu_host_facts(version=version, transparent_hugepages=mode))
    assert (found.get("tpu-transparent-hugepages-off") == "warn") is warned


def test_a_chip_the_process_can_open_that_jax_does_not_see_fails_unless_chips_were_chosen() -> None:
    assert "tpu-chips-unseen" not in ids(tpu_host_facts(chips=4, device_files=1))  # the lent host: one of four
    missing = tpu_host_facts(chips=4, device_files=4)
    assert ids(missing)["tpu-chips-unseen"] == "fail"
    chosen = replace(missing, env={**missing.env, "TPU_VISIBLE_CHIPS": "0"})
    assert "tpu-chips-unseen" not in ids(chosen)
    on_cpu = replace(missing, jax={**missing.jax, "platform": "cpu"})
    assert "tpu-chips-unseen" not in ids(on_cpu)  # jax not on the TPU: the rules of why say so, not this one


def test_a_planned_state_invents_no_unseen_chip() -> None:
    """Every planned TPU state after a jax move showed tpu-chips-unseen (no device list kept: 0 chips < 1 device file),
    "still failing after it": a plan's jax is not imported, so it has seen no chip, and says nothing of them."""
    missing = tpu_host_facts(chips=4, device_files=4)
    after = installing.after(missing, Fix(install=("jax[tpu]==0.10.1", "jaxlib==0.10.1")))
    assert after.packages["jax"] == "0.10.1" and after.jax.get("platform") == "tpu"
    assert "tpu-chips-unseen" not in ids(after)
    assert "tpu-chips-unseen" not in ids(tpu_host_facts(chips=4, device_files=1))


def test_a_chip_held_by_another_process_is_busy_not_broken() -> None:
    facts = tpu_host_facts()
    held = replace(facts, jax={**facts.jax, "status": "error", "stage": "devices", "message": HELD})
    evaluated = rules.evaluate(held)
    by_id = {f.id: f for f in evaluated.findings}
    assert by_id["tpu-held-by-another-process"].severity == "warn"
    assert "multi-process lockfile" in by_id["tpu-held-by-another-process"].detail
    linked = {f.id: f for f in causes.link(evaluated.findings, evaluated)}
    assert linked["jax-broken"].caused_by == "tpu-held-by-another-process"  # no failure of its own: the node is busy
    assert [f.id for f in linked.values() if f.severity == "fail" and not f.caused_by] == []


def test_a_tpu_that_fails_to_start_for_another_reason_stays_a_failure() -> None:
    facts = tpu_host_facts()
    other = "Unable to initialize backend 'tpu': INTERNAL: Failed to get global TPU topology."
    broken = replace(facts, jax={**facts.jax, "status": "error", "stage": "devices", "message": other})
    evaluated = rules.evaluate(broken)
    linked = causes.link(evaluated.findings, evaluated)
    assert "tpu-held-by-another-process" not in {f.id for f in linked}
    assert any(f.severity == "fail" and not f.caused_by for f in linked)


def test_what_ran_apart_from_the_held_chip_keeps_its_own_failure() -> None:
    """The imports probe runs in its own child on the CPU where a chip is: a library that fails to import there
    fails whatever another process held; the probes that needed the chip are capped with jax."""
    from envaudit.model.report import Finding, Subject

    facts = tpu_host_facts()
    held = replace(facts, jax={**facts.jax, "status": "error", "stage": "devices", "message": HELD})
    on_cpu = Finding(Subject("probe", "imports", "error"), "fail", "probe imports raised")
    on_chip = Finding(Subject("probe", "dense_chain", "error"), "fail", "probe dense_chain raised")
    evaluated = rules.evaluate(held)
    linked = {f.id: f for f in causes.link([*evaluated.findings, on_cpu, on_chip], evaluated)}
    assert linked[on_chip.id].caused_by and linked[on_chip.id].severity == "warn"
    assert linked[on_cpu.id].severity == "fail"
