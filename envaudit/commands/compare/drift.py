"""`envaudit compare`: drift across the nodes of a fleet, from their saved JSON reports.

Nodes are grouped by an environment fingerprint (audited package versions, driver, CUDA, platform, x64, matmul
precision, the variables that change numerics). Nodes outside the largest group drift in software, and each is
told which facts differ from the majority. Within a group of identical software, every probe's answer is digested
(status and the metrics that are answers, bit for bit): the same program on the same stack gives the same bits on
the CPU and on one GPU model, so a node whose digest differs from its group's majority is the signature of a faulty
device. What may differ between healthy runs is left out, by the judge's kinds (envaudit/model/metrics.toml):
rerun differences (nondeterministic by design on GPUs) and reported-only metrics such as timings. One pass over
the reports, hashing only: linear in their number.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from envaudit.files import reportfile
from envaudit.formats import PLAIN, Renderers, Style, as_json
from envaudit.formats.summary import clean
from envaudit.judge import table
from envaudit.model.facts import ReportError
from envaudit.model.report import ProbeResult, Report, schema_id
from envaudit.model.scope import SELF

SCHEMA = "envaudit/compare/v1"  # what Comparison.to_dict writes; its JSON Schema is compare/schema.py's COMPARE


@dataclass(frozen=True)
class Drift:
    node: str  # the node: its report's host
    kind: Literal["environment", "probe"]  # its software differs from the majority's, or its probes' answers do
    details: tuple[str, ...]  # what differs, one line each


@dataclass(frozen=True)
class Comparison:
    nodes: int
    environments: int
    majority: int
    drift: tuple[Drift, ...] = field(default_factory=tuple)
    duplicates: tuple[str, ...] = ()  # hosts that several reports name (each is still its own node)
    skipped: tuple[str, ...] = ()  # files in a directory that are not reports: "path: why"

    def to_dict(self) -> dict[str, Any]:
        return {
            "$schema": schema_id(SCHEMA),
            "schema": SCHEMA,
            "nodes": self.nodes,
            "environments": self.environments,
            "majority_size": self.majority,
            "drift": [{"node": d.node, "kind": d.kind, "details": list(d.details)} for d in self.drift],
            "duplicates": list(self.duplicates),
            "skipped": list(self.skipped),
        }


def environment(report: Report) -> dict[str, str]:
    """The facts whose difference between nodes is drift, flattened to comparable strings."""
    f = report.facts
    gpus = f.nvidia.get("gpus") or []
    env = {f"package {k}": v for k, v in f.packages.items() if k not in SELF}
    env |= {f"env {k}": v for k, v in f.env.items() if not k.startswith("ENVAUDIT_")}
    env |= {
        "driver": str(f.nvidia.get("driver_version")),
        "CUDA (driver)": str(f.nvidia.get("cuda_driver_version")),
        "GPU models": ", ".join(sorted({str(g.get("name")) for g in gpus})),
        "GPU count": str(len(gpus)),
        "platform": str(f.jax.get("platform")),
        "x64": str(f.jax.get("x64")),
        "matmul precision": str(f.jax.get("default_matmul_precision")),
    }
    return env


ANSWERS = ("error", "default_error", "dtype", "documented_default", "raised")  # the kinds that are answers


def varies(probe: ProbeResult) -> bool:
    """Its reruns differed on its own node (a GPU's nondeterministic GEMM or convolution)."""
    return any(table.kind(k) in ("rerun", "nondeterministic") and v not in (0, 0.0) for k, v in probe.metrics.items())


def answer(probe: ProbeResult, reproducible: bool) -> list[Any]:
    """What two healthy runs of a probe on identical software and devices give bit for bit; where its reruns differ
    on some node (`reproducible` false), no numbers do, and the answer is its status, dtypes and errors raised."""
    exact = ANSWERS if reproducible else ("dtype", "documented_default", "raised")
    return [probe.status, {k: v for k, v in probe.metrics.items() if table.kind(k) in exact}]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _majority(counter: Counter[str]) -> str:
    return max(sorted(counter), key=lambda key: counter[key])  # ties: deterministic


def compare(reports: list[tuple[str, Report]]) -> Comparison:
    envs = {node: environment(r) for node, r in reports}
    fingerprint = {node: _digest(env) for node, env in envs.items()}
    groups = Counter(fingerprint.values())
    majority = _majority(groups) if groups else ""
    reference = next((envs[n] for n in envs if fingerprint[n] == majority), {})
    drift: list[Drift] = []
    for node, env in envs.items():
        if fingerprint[node] != majority:
            keys = sorted(set(env) | set(reference))
            diff = [
                f"{k}: {env.get(k, 'absent')} (majority: {reference.get(k, 'absent')})"
                for k in keys
                if env.get(k) != reference.get(k)
            ]
            drift.append(Drift(node, "environment", tuple(diff)))
    # (fingerprint, probe, device) -> node -> digest; device None is the probe's own answer on its default device
    answers: dict[tuple[str, str, int | None], dict[str, str]] = defaultdict(dict)
    unstable = {(fingerprint[n], p.run.label) for n, r in reports for p in r.probes if varies(p)}
    for node, report in reports:
        for probe in report.probes:
            reproducible = (fingerprint[node], probe.run.label) not in unstable
            answers[(fingerprint[node], probe.run.label, None)][node] = _digest(answer(probe, reproducible))
            for device in probe.devices if reproducible else ():  # each device's bits, against the same device
                answers[(fingerprint[node], probe.run.label, int(device["id"]))][node] = str(device["digest"])
    for (_, probe_name, device_id), by_node in sorted(
        answers.items(), key=lambda item: (item[0][:2], -1 if item[0][2] is None else item[0][2])
    ):
        usual = _majority(Counter(by_node.values()))
        what = probe_name if device_id is None else f"{probe_name} on device {device_id}"
        for node, digest in sorted(by_node.items()):
            if digest != usual and len(by_node) > 2:
                drift.append(
                    Drift(
                        node,
                        "probe",
                        (
                            f"{what}: answer differs from the {len(by_node) - 1} other "
                            "nodes with identical software (a faulty device?)",
                        ),
                    )
                )
    return Comparison(len(reports), len(groups), groups[majority] if groups else 0, tuple(drift))


@dataclass(frozen=True)
class Loaded:
    reports: list[tuple[str, Report]]  # (unique node name, report), in a fixed order whatever the arguments' order
    duplicates: tuple[str, ...]
    skipped: tuple[str, ...]


def load(paths: list[Path]) -> Loaded:
    """Reports from files and directories (*.json inside). A file named on the command line must be a report (else
    exit 2); a file in a directory that is not one is skipped and reported. A node is named by its host, else by
    its file; a host named by several reports keeps each as its own node, named with its file, and is reported."""
    found: list[tuple[Path, bool]] = []
    for path in paths:
        try:
            directory = path.is_dir()
        except (OSError, ValueError):  # a name too long, a NUL, a lone surrogate: read as a file, which says why
            directory = False
        found += [(p, False) for p in sorted(path.glob("*.json"))] if directory else [(path, True)]
    if not found:
        raise ReportError(f"no JSON reports in {', '.join(map(str, paths))}")
    loaded, skipped = [], []
    for path, named in dict.fromkeys(found):
        try:
            loaded.append((path, reportfile.read_report(path)))
        except ReportError as exc:
            if named:
                raise
            skipped.append(str(exc))
    if not loaded:
        raise ReportError(f"no readable reports among {len(found)} file(s): {skipped[0]}")
    loaded.sort(key=lambda item: (str(item[1].host.get("hostname") or item[0].stem), str(item[0])))
    hosts = Counter(str(r.host.get("hostname") or p.stem) for p, r in loaded)
    names: set[str] = set()
    reports = []
    for path, report in loaded:
        host = str(report.host.get("hostname") or path.stem)
        name = host if hosts[host] == 1 else f"{host} ({path})"
        while name in names:  # a host literally named like another's "host (file)": still one node each
            name += "'"
        names.add(name)
        reports.append((name, report))
    return Loaded(reports, tuple(sorted(h for h, n in hosts.items() if n > 1)), tuple(skipped))


def text(result: Comparison, *, style: Style = PLAIN) -> str:
    """Lines for a terminal: every name and value a report gave (a host, an environment variable, a file's name in a
    skip) goes through the formats' one `clean`."""
    del style  # drift is said in words: DRIFT, DUPLICATE, SKIPPED
    lines = [
        f"{result.nodes} nodes, {result.environments} distinct environment(s); the majority has {result.majority}",
    ]
    lines += [
        f"DRIFT {clean(d.node)} ({clean(d.kind)}): {clean(detail)}"
        for d in result.drift
        for detail in d.details or ("?",)
    ]
    lines += [
        f"DUPLICATE host {clean(host)}: several reports name it; each is compared as its own node"
        for host in result.duplicates
    ]
    lines += [f"SKIPPED {clean(why)}" for why in result.skipped]
    lines.append("no drift" if not result.drift else f"{len({d.node for d in result.drift})} node(s) drift")
    return "\n".join(lines) + "\n"


RENDERERS: Renderers[Comparison] = Renderers(text=text, json=as_json)  # JSON escaped by json.dumps
