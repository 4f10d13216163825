"""The Prometheus text exposition format, for node_exporter's textfile collector.

Metric names carry the `envaudit_` prefix and base units (seconds); versions are `_info` gauges with labels and
value 1, as the Prometheus naming guide recommends, so a dashboard can join on them. Severities, verdicts and probe
statuses are emitted for every possible label value (0 or 1) so that an alert on `== 1` sees the change to 0. A
probe's numeric metrics are one family per quantity and unit (relative errors, rerun differences, mantissa digits,
seconds), as the judge's table declares them (`families.py`), each series labelled {probe, metric}.

`envaudit_last_success_timestamp_seconds` is when the last audit that completed was made: this report's time when
it completed; for one that did not (verdict `error`), the time its writer says the last one that did was made
(`textfile`: `envaudit health` carries it from the report it kept), or nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from envaudit.formats import families
from envaudit.formats.style import PLAIN, Style
from envaudit.model.devices import other_jobs
from envaudit.model.report import PROBE_STATUSES, SEVERITIES, VERDICTS, Report


def _escape(value: object) -> str:
    """A label value as the exposition format writes it (backslash, newline and quote escaped), and no control or
    format character a saved report put in it (a terminal that shows the textfile acts on none)."""
    text = "".join(ch if ch.isprintable() or ch == "\n" else "\ufffd" for ch in str(value))
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


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


def _probe_families(report: Report) -> dict[families.Family, list[tuple[dict[str, object], float]]]:
    """Each exported family's samples, in the table's order: one per probe run and numeric metric it holds."""
    found: dict[families.Family, list[tuple[dict[str, object], float]]] = {f: [] for f in families.load().families}
    for p in report.probes:
        for key, raw in p.metrics.items():
            where, number = families.family(key), families.value(raw)
            if where is not None and number is not None:
                found[where].append(({"probe": p.run.label, "metric": key}, number))
    return found


def render(report: Report, *, style: Style = PLAIN) -> str:
    del style
    return textfile(report, None)


def textfile(report: Report, last_success: float | None) -> str:
    """The textfile of a report; `last_success`: when the last audit that completed was made, for a report of one
    that did not (a completed report is its own last success, whatever is given)."""
    w = _Writer()
    facts = report.facts
    counted = [
        f for f in report.findings if f.counts
    ]  # an ignored finding raises no alert (envaudit/judge/ignoring.py)
    occurrences = Counter((f.id, f.severity, f.source) for f in counted)  # a series may appear only once
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
        [({"severity": s}, sum(f.severity == s for f in counted)) for s in SEVERITIES],
    )
    w.family(
        "envaudit_ignored_findings",
        "Number of findings the node's settings ignore (--ignore, [tool.envaudit] ignore), counted in no verdict.",
        [({"severity": s}, sum(f.severity == s and not f.counts for f in report.findings)) for s in SEVERITIES],
    )
    w.family(
        "envaudit_finding",
        "Active findings (not ignored) by id and severity (one finding id can occur several times, e.g. once per GPU).",
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
    asked = nv.get("status") != "unknown"  # NVML was not asked (a run that did not complete): no count, not 0
    w.family("envaudit_gpus", "Number of GPUs NVML reports.", [({}, len(nv.get("gpus") or []))] if asked else [])
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
    for family, samples in _probe_families(report).items():
        w.family(family.name, family.help, samples)
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
    success = report.created_timestamp() if report.complete else last_success
    w.family(
        "envaudit_last_success_timestamp_seconds",
        "Unix time at which the last audit that completed (verdict not error) was made.",
        [] if success is None else [({}, success)],
    )
    w.family(
        "envaudit_duration_seconds",
        "Wall time of the whole audit, from collecting the facts to the assembled report.",
        [] if report.duration_s is None else [({}, report.duration_s)],
    )
    return "\n".join(w.lines) + "\n"
