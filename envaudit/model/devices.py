"""Which NVIDIA board each jax device is, so that a device computing wrong numbers names the board to pull.

jax exposes no PCI bus id or UUID for a device, only `local_hardware_id`, the CUDA ordinal inside the audited
process; NVML names boards by UUID, serial and PCI bus id, and "the NVML index may not correlate with other APIs,
such as the CUDA device index" (NVML docs). So the mapping is derived, never assumed (pure, from facts):
- CUDA_VISIBLE_DEVICES lists which GPUs the process sees, in its order: ordinal i is its i-th entry. A UUID
  entry (`GPU-...`, or a unique prefix of one) names its board; an index entry counts GPUs in CUDA's device order.
- CUDA's device order is fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, which orders by ascending bus id (the
  probe child asks for it whenever that changes no index of CUDA_VISIBLE_DEVICES). In bus order, without
  CUDA_VISIBLE_DEVICES, ordinal i is the i-th GPU by bus id. Fastest first is a heuristic: then only a single GPU
  maps, and otherwise the board is unknown, and said to be.
- A MIG instance is not a board of its own here: unknown. Nor is any mapping trusted when NVML and jax count
  different GPUs (a GPU in MIG mode, or one CUDA cannot open, is missing from CUDA's numbering, not NVML's).
Beside that, which of a board's compute processes are other jobs' (`other_jobs`): the rules read it to tell a busy
node from a hang, and the Prometheus format counts them.
"""

from __future__ import annotations

from typing import Any

from envaudit.model.facts import GPU, Facts, Process


def _bus_order(gpus: list[GPU]) -> list[GPU] | None:
    if not all(isinstance(g.get("pci_bus_id"), str) for g in gpus):
        return None
    return sorted(gpus, key=lambda g: str(g["pci_bus_id"]))


def visible(facts: Facts) -> list[GPU] | None:
    """The NVML GPUs the audited process sees, in CUDA ordinal order; None when that cannot be told."""
    gpus = [g for g in facts.nvidia.get("gpus") or [] if isinstance(g, dict)]
    child_env: dict[str, Any] = facts.jax["child_env"] if isinstance(facts.jax.get("child_env"), dict) else {}
    order = str(child_env.get("CUDA_DEVICE_ORDER") or facts.env.get("CUDA_DEVICE_ORDER") or "FASTEST_FIRST")
    by_bus = _bus_order(gpus) if order.upper() == "PCI_BUS_ID" else None
    chosen = facts.env.get("CUDA_VISIBLE_DEVICES")
    if chosen is None:
        return by_bus if by_bus is not None else (gpus if len(gpus) == 1 else None)
    found = []
    for entry in (e.strip() for e in chosen.split(",")):
        if entry.startswith("GPU-"):
            matches = [g for g in gpus if str(g.get("uuid") or "").startswith(entry)]
            if len(matches) != 1:
                return None
            found.append(matches[0])
        elif entry.isdigit() and by_bus is not None and int(entry) < len(by_bus):
            found.append(by_bus[int(entry)])
        elif entry.isdigit() or entry.startswith("MIG-"):
            return None  # an index in fastest-first order, or a MIG instance: not a board we can name
        else:
            break  # CUDA stops at the first entry it cannot read
    return found


def board(jax_id: int, facts: Facts) -> GPU | None:
    """The NVML GPU behind jax device `jax_id`, or None (no NVIDIA GPU, or the mapping cannot be told)."""
    jax_gpus = [d for d in facts.jax.get("devices") or [] if isinstance(d, dict) and d.get("platform") == "gpu"]
    devices = [d for d in jax_gpus if d.get("id") == jax_id]
    ordinal = devices[0].get("local_hardware_id") if devices else None
    seen = visible(facts)
    if not isinstance(ordinal, int) or seen is None or len(seen) != len(jax_gpus) or not 0 <= ordinal < len(seen):
        return None  # a count that differs: some GPU is numbered by one and not the other, so no index can be trusted
    if any(g.get("mig_enabled") for g in facts.nvidia.get("gpus") or [] if isinstance(g, dict)):
        return None
    return seen[ordinal]


def describe(jax_id: int, kind: str, facts: Facts) -> str:
    """'jax device 2 = GPU 2 (NVIDIA H200, PCI 0000:3a:00.0, UUID GPU-..., serial ...)', or what is known."""
    gpu = board(jax_id, facts)
    if gpu is None:
        known = kind if kind.lower() == "cpu" else f"{kind}; its board cannot be told from these facts"
        return f"jax device {jax_id} ({known})"
    parts = [str(gpu.get("name") or kind)]
    parts += [
        f"{label} {value}"
        for label, value in (("PCI", gpu.get("pci_bus_id")), ("UUID", gpu.get("uuid")), ("serial", gpu.get("serial")))
        if value
    ]
    return f"jax device {jax_id} = GPU {gpu.get('index')} ({', '.join(parts)})"


def short(jax_id: int, kind: str, facts: Facts) -> str:
    """The few words that fit a node check's line: 'GPU 2 (PCI 0000:3a:00.0, jax 2)' or 'jax device 2 (cpu)'."""
    gpu = board(jax_id, facts)
    if gpu is None:
        return f"jax device {jax_id} ({kind})"
    where = f"PCI {gpu['pci_bus_id']}, " if gpu.get("pci_bus_id") else ""
    return f"GPU {gpu.get('index')} ({where}jax {jax_id})"


def other_jobs(gpu: GPU, facts: Facts) -> list[Process]:
    """The GPU's processes with a compute context that are not envaudit's own probe children (NVML is read while
    they run). In a container NVML may give host pids, which then do not match: a job is never hidden, though."""
    ours = {p for p in facts.jax.get("child_pids") or [] if isinstance(p, int)}
    return [p for p in gpu.get("compute_processes") or [] if isinstance(p, dict) and p.get("pid") not in ours]
