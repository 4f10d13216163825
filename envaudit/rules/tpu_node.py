"""The TPU host's own state, beside the stack: the kernel setting jax warns about at every start, chips the host
has that jax does not see, and a chip another process holds.

What jax and libtpu do here is read from their sources: jax warns "Transparent hugepages are not enabled" on TPU
v5e and newer unless the kernel's mode is `[always]` (jax/_src/cloud_tpu_init.py and hardware_utils.py,
jax-v0.10.1); libtpu takes a lock on /tmp/libtpu_lockfile for the whole process, and a second process fails to
start its TPU backend with "The TPU is already in use by process with pid N" where it can find that process, else
"Internal error when accessing libtpu multi-process lockfile. Run "$ sudo rm /tmp/libtpu_lockfile"." (XLA's
tpu_initialize_util.cc). Measured on a TPU v5e host with jax 0.10.2 and libtpu 0.0.42: a second process while a
first held the chip got the second message (the first was alive: lockf fails only while its holder lives, so
removing the file is no fix then), and a lock file left by a killed process did not stop the next start.
"""

from __future__ import annotations

from envaudit.collect.tpu import ORDER
from envaudit.model.facts import Facts
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.signatures import Signature

CLOUD_TPU_INIT = "https://github.com/jax-ml/jax/blob/jax-v0.10.1/jax/_src/cloud_tpu_init.py#L83"
TPU_LOCK = (
    "https://github.com/openxla/xla/blob/98d015bb365d327674602342aef3ce5e233da728/"
    "xla/stream_executor/tpu/tpu_initialize_util.cc#L{}"
)
THP_FROM = "v5e"  # jax warns from this generation on (hardware_utils.TpuVersion.v5e)
# where the chips a process may use are chosen, jax seeing fewer than the host has is intended
CHOSEN = ("TPU_VISIBLE_CHIPS", "TPU_VISIBLE_DEVICES", "TPU_CHIPS_PER_PROCESS_BOUNDS", "TPU_PROCESS_BOUNDS")
IN_USE = (
    "The TPU is already in use by process with pid",
    "Internal error when accessing libtpu multi-process lockfile",
    "The TPU is already in use by another process",
    "The TPU is already in use or the lock file is stale",
)


def hugepages_off(facts: Facts) -> list[Occurrence]:
    host = facts.platform.get("tpu") or {}
    version, mode = host.get("version"), host.get("transparent_hugepages")
    if version not in ORDER or ORDER.index(version) < ORDER.index(THP_FROM) or mode == "always":
        return []
    said = f"mode {mode}" if mode else "no /sys/kernel/mm/transparent_hugepage/enabled here"
    return [Occurrence(f"TPU {version} host, transparent hugepages: {said}")]


def chips_unseen(facts: Facts) -> list[Occurrence]:
    """jax computes on the TPU but sees fewer chips than this process can open: a chip the runtime could not start.
    Not where a variable chooses the chips, nor where no device file says how many this process may use, nor
    where jax did not report its devices (a plan's state after a move: jax there is not imported, nothing seen)."""
    host = facts.platform.get("tpu") or {}
    files = host.get("device_files") or 0
    if facts.jax.get("platform") != "tpu" or not files or any(facts.env.get(name) for name in CHOSEN):
        return []
    if facts.jax.get("status") != "ok" or "devices" not in facts.jax:
        return []
    seen = [d for d in facts.jax.get("devices") or [] if d.get("platform") == "tpu"]
    chips = {d.get("local_hardware_id", d.get("id")) for d in seen}
    if len(chips) >= files:
        return []
    return [Occurrence(f"jax sees {len(chips)} TPU chip(s); this process can open {files} chip device file(s)")]


def held(facts: Facts) -> list[Occurrence]:
    message = str(facts.jax.get("message") or "")
    if facts.jax.get("status") not in ("error", "import_error") or not any(m in message for m in IN_USE):
        return []
    return [Occurrence(message.strip().splitlines()[-1][:400])]


TPU_HUGEPAGES_OFF = Check(
    id="tpu-transparent-hugepages-off",
    severity="warn",
    title="transparent hugepages are not enabled on a TPU v5e or newer host: the TPU runtime starts and stops slowly",
    fix='enable them in the VM image or at boot: sudo sh -c "echo always > /sys/kernel/mm/transparent_hugepage/'
    "enabled\" (what jax's own warning says)",
    references=(CLOUD_TPU_INIT, "https://docs.kernel.org/admin-guide/mm/transhuge.html"),
    run=hugepages_off,
)
TPU_CHIPS_UNSEEN = Check(
    id="tpu-chips-unseen",
    severity="fail",
    title="jax sees fewer TPU chips than the host gives this process",
    fix="drain the node: look at the TPU runtime's log (/tmp/tpu_logs) and the kernel log, and restart the VM",
    references=("https://cloud.google.com/tpu/docs/troubleshooting/troubleshooting",),
    run=chips_unseen,
    transient=True,
)
TPU_HELD = Check(
    id="tpu-held-by-another-process",
    severity="warn",
    title="another process holds the TPU: jax cannot start its TPU backend here while it runs (busy, not broken)",
    fix="find it (sudo lsof -w /dev/accel* /dev/vfio/*) and audit when it has ended; remove /tmp/libtpu_lockfile "
    "only where no process holds the TPU",
    references=(TPU_LOCK.format(186), "https://github.com/jax-ml/jax/issues/10192"),
    run=held,
    transient=True,
    # jax's own words around it say its TPU backend failed to start ("Unable to initialize backend 'tpu'")
    explains=("jax-broken", "jax-platforms-unavailable", "jax:*"),
    signatures=(
        Signature("The TPU is already in use by process with pid {number}", TPU_LOCK.format(199)),
        Signature("Internal error when accessing libtpu multi-process lockfile", TPU_LOCK.format(199)),
    ),
)
