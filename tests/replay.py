"""Reports of GPU nodes, made on the CPU: a real audit run with a fault that does what a GPU does by design, whose
facts are then replaced by those of a GPU node, as the real collectors give them for that node.

The probes run for real on the CPU's jax; `tests/faults/default_precision` rounds default-precision matmuls and
convolutions to TF32 (HIGHEST is left exact, as on the GPU) and `tests/faults/scatter_noise` makes scatter-add
differ between reruns, as GPU atomics do. The NVIDIA facts come from the real NVML collector over the fake pynvml
and a recorded node (`tests/fixtures/nvml/`); the jax facts are the CPU's, with the platform and devices of that
node, and the findings are judged from those facts. The result is what `envaudit audit --format json` would save on
such a node at default settings, and what a later `envaudit check` replays. `python -m tests.replay` rewrites the
committed fixture (tests/fixtures/replay).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from envaudit.collect.nvml import get_nvidia
from tests.conftest import FIXTURES, ROOT, envaudit_run
from tests.fakes.fake_pynvml import make_fake_pynvml

FAULTS = ROOT / "tests" / "faults"
GPU_DEFAULTS = "default_precision,scatter_noise"  # a healthy Ampere-or-newer GPU at jax's default settings
NODES = {  # node -> (NVML fixture, the device kind jax reports, compute capability)
    "h200": ("h200_8x_healthy", "NVIDIA H200", "9.0"),
    "a100": ("a100_ecc_remap_pending", "NVIDIA A100-SXM4-80GB", "8.0"),
}
REPLAY = FIXTURES / "replay" / "h200-default-settings.json"
EIGHT_DEVICES = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}  # the node's eight GPUs, each probed


def audit_on_cpu(faults: str, *argv: str, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """A real full audit of this checkout's environment with the named faults (tests/faults/compose)."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_ENABLE_X64", "JAX_DEFAULT_MATMUL_PRECISION")}
    env |= {"PYTHONPATH": os.pathsep.join([str(FAULTS / "compose"), str(ROOT)]), "ENVAUDIT_FAULTS": faults}
    env |= extra_env or {}
    proc = envaudit_run(sys.executable, "audit", "--format", "json", *argv, env=env, timeout=600, cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def as_gpu_node(report: dict[str, Any], node: str = "h200", gpus: int = 8) -> dict[str, Any]:
    """The same measurements, with the facts of an NVIDIA node: NVML as the collector reads it there, jax on cuda
    with its devices, and the CUDA plugin and PJRT packages of the installed jaxlib."""
    fixture_name, kind, capability = NODES[node]
    fixture = json.loads((FIXTURES / "nvml" / f"{fixture_name}.json").read_text())
    facts = report["facts"]
    jaxlib = facts["packages"]["jaxlib"]
    facts["packages"] |= {"jax-cuda12-plugin": jaxlib, "jax-cuda12-pjrt": jaxlib}
    facts["nvidia"] = get_nvidia(make_fake_pynvml(fixture))
    device = {"platform": "gpu", "device_kind": kind, "compute_capability": capability}
    facts["env"].pop("XLA_FLAGS", None)  # the CPU's simulated devices are the node's GPUs
    facts.pop("xla_flags", None)  # and what XLA_FLAGS said of this machine's jaxlib, where it lies here
    for probe in report["probes"]:
        for each in probe.get("devices") or []:
            each["kind"] = kind
    facts["jax"] |= {
        "backend": "gpu",
        "platform": "cuda",
        "devices": [{"id": i, **device, "local_hardware_id": i} for i in range(gpus)],
        "platform_version": "PJRT C API\ncuda 12080 (simulated on the CPU)",
        "cuda_version": "12.8",
    }
    facts["python"] |= {"executable": "/opt/venv/bin/python", "prefix": "/opt/venv", "pythonpath": ""}  # none of here
    report["host"] = {"hostname": f"{node}-simulated"}
    return judged_there(report)


def judged_there(report: dict[str, Any]) -> dict[str, Any]:
    """The report as the node itself would have saved it: its findings and verdict from its own facts."""
    from envaudit.judge import assemble
    from envaudit.model.report import Report

    saved = Report.from_dict(report)
    return assemble.judged(saved.facts, saved.probes, mode="audit", saved=saved).to_dict()


def replayed() -> list[str]:
    """`--probe` for each probe of the committed replay: the GPU node's measurements made again are of those
    probes (a probe added since runs in every other audit; on eight simulated devices each costs eight runs)."""
    saved = json.loads(REPLAY.read_text())
    return [arg for probe in saved["probes"] for arg in ("--probe", probe["name"])]


def write_fixture() -> Path:
    report = as_gpu_node(audit_on_cpu(GPU_DEFAULTS, "--no-cache", extra_env=EIGHT_DEVICES))
    REPLAY.parent.mkdir(parents=True, exist_ok=True)
    REPLAY.write_text(json.dumps(report, indent=2) + "\n")
    return REPLAY


if __name__ == "__main__":
    print(f"wrote {write_fixture()}")
