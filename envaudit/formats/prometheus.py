"""The Prometheus text exposition format, for node_exporter's textfile collector.

Metric names carry the `envaudit_` prefix and base units (seconds); versions are `_info` gauges with labels and
value 1, as the Prometheus naming guide recommends, so a dashboard can join on them. Severities, verdicts and probe
statuses are emitted for every possible label value (0 or 1) so that an alert on `== 1` sees the change to 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from envaudit.devices import other_jobs
from envaudit.model import PROBE_STATUSES, SEVERITIES, VERDICTS, Report


def _escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: dict[str, object]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, help_text: str, samples: Iterable[tuple[dict[str, object], float]]) -> None:
        rows = list(samples)
        if not rows:
            return
        self.lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        self.lines += [f"{name}{_labels(labels)} {_number(value)}" for labels, value in rows]


def _error(value: object) -> float:
    """A device's error; a non-finite one travels as its text ("inf", "nan"), and is exported as what it says."""
    try:
        return float(value) if isinstance(value, int | float | str) else math.nan
    except ValueError:
        return math.nan


def _device(probe: str, device: dict[str, object]) -> dict[str, object]:
    """The labels that name one device's run of a probe: its id, and the UUID and PCI bus id an operator drains."""
    return {
        "probe": probe,
        "device": device["id"],
        "uuid": device.get("uuid", ""),
        "pci_bus_id": device.get("pci_bus_id", ""),
    }


def render(report: Report, *, color: bool = False) -> str:
    del color
    w = _Writer()
    facts = report.facts
    occurrences = Counter((f.id, f.severity, f.source) for f in report.findings)  # a series may appear only once
    w.family(
        "envaudit_info",
        "envaudit version and report mode.",
        [({"version": report.envaudit_version, "mode": report.mode}, 1)],
    )
    w.family(
        "envaudit_verdict",
        "1 for the verdict of the last audit, 0 for the others.",
        [({"verdict": v}, float(v == report.verdict)) for v in VERDICTS],
    )
    w.family(
        "envaudit_findings",
        "Number of findings of each severity.",
        [({"severity": s}, sum(f.severity == s for f in report.findings)) for s in SEVERITIES],
    )
    w.family(
        "envaudit_finding",
        "Active findings by id and severity (one finding id can occur several times, e.g. once per GPU).",
        [({"id": i, "severity": sev, "source": src}, n) for (i, sev, src), n in sorted(occurrences.items())],
    )
    w.family(
        "envaudit_package_info",
        "Installed versions of the audited stack.",
        [({"package": k, "version": v}, 1) for k, v in facts.packages.items()],
    )
    jax = facts.jax
    w.family(
        "envaudit_jax_info",
        "What jax reported in its child process.",
        [
            (
                {
                    "status": jax.get("status"),
                    "jax_version": jax.get("jax_version") or "",
                    "jaxlib_version": jax.get("jaxlib_version") or "",
                    "platform": jax.get("platform") or "",
                    "x64": str(bool(jax.get("x64"))).lower(),
                },
                1,
            )
        ],
    )
    nv = facts.nvidia
    w.family(
        "envaudit_nvidia_info",
        "NVIDIA driver facts from NVML.",
        [
            (
                {
                    "status": nv.get("status"),
                    "driver_version": nv.get("driver_version") or "",
                    "cuda_driver_version": nv.get("cuda_driver_version") or "",
                },
                1,
            )
        ],
    )
    w.family("envaudit_gpus", "Number of GPUs NVML reports.", [({}, len(nv.get("gpus") or []))])
    w.family(
        "envaudit_probe_status",
        "1 for each probe's status, 0 for the other statuses.",
        [({"probe": p.run.label, "status": s}, float(p.status == s)) for p in report.probes for s in PROBE_STATUSES],
    )
    w.family(
        "envaudit_probe_duration_seconds",
        "Wall time of each probe.",
        [({"probe": p.run.label}, p.duration_s) for p in report.probes],
    )
    w.family(
        "envaudit_probe_metric",
        "Numeric metrics of each probe (relative errors are dimensionless).",
        [
            ({"probe": p.run.label, "metric": k}, float(v))
            for p in report.probes
            for k, v in p.metrics.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        ],
    )
    verdicts = ("agrees", "differs", "wrong")  # every value, 0 or 1, so an alert on == 1 sees the change back
    w.family(
        "envaudit_device_probe_status",
        "Per device and probe: 1 for its verdict against the known answer and "
        "the node's other devices of its kind, 0 for the others.",
        [
            (
                {**_device(p.run.label, d), "status": v},
                float(d.get("verdict") == v),
            )
            for p in report.probes
            for d in p.devices
            for v in verdicts
        ],
    )
    w.family(
        "envaudit_device_probe_rel_err",
        "Per device and probe: its error against the float64 answer.",
        [
            (
                _device(p.run.label, d),
                _error(d["rel_err"]),
            )
            for p in report.probes
            for d in p.devices
        ],
    )
    w.family(
        "envaudit_gpu_compute_processes",
        "Other jobs' compute processes NVML saw on each GPU during the check.",
        [
            ({"gpu": g.get("index"), "uuid": g.get("uuid") or ""}, len(other_jobs(g, report.facts)))
            for g in nv.get("gpus") or []
            if isinstance(g.get("compute_processes"), list)
        ],
    )
    w.family(
        "envaudit_last_run_timestamp_seconds",
        "Unix time at which this report was created.",
        [({}, report.created_timestamp())],
    )
    return "\n".join(w.lines) + "\n"
