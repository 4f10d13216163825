"""The report's data model: frozen dataclasses with an exact JSON round-trip (schema `envaudit/report/v1`).

A report is its facts (`envaudit/facts.py`), findings and probe results. Everything downstream of collection takes
a `Facts` value as an argument, so a live machine, a report saved on a cluster node last month and a what-if plan
are evaluated by the same code. Loading validates the shape and raises
`ReportError` with one readable sentence: the CLI turns it into exit 2, never a traceback. Every number must be a
finite float or a 64-bit integer: the formats and the judge compute in floats, where 10**400 is an OverflowError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from envaudit.facts import Facts, ReportError

SCHEMA = "envaudit/report/v1"
SEVERITIES = ("fail", "warn", "info")
PROBE_STATUSES = ("pass", "fail", "skip", "error", "timeout", "crash")
VERDICTS = ("ok", "warn", "fail", "error")
INTEGERS = range(-(2**63), 2**64)  # what a 64-bit counter holds, signed or not (NVML's are unsigned)

Severity = Literal["fail", "warn", "info"]
JSONDict = dict[str, Any]


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    title: str
    detail: str = ""
    fix: str = ""
    references: tuple[str, ...] = ()
    source: Literal["rule", "probe"] = "rule"  # code checks are rules too (docs/architecture.md: rule|probe)
    caused_by: str = ""  # the id of the root-cause finding this one is a consequence of (envaudit/causes.py)

    def to_dict(self) -> JSONDict:
        return {**vars(self), "references": list(self.references)}  # the fields, in their order

    @classmethod
    def from_dict(cls, data: object) -> Finding:
        obj = _expect(data, dict, "finding")
        severity = obj.get("severity")
        if severity not in SEVERITIES:
            raise ReportError(f"finding severity {severity!r} is not one of {', '.join(SEVERITIES)}")
        source = obj.get("source", "rule")
        if source not in ("rule", "probe"):
            raise ReportError(f"finding source {source!r} is not rule or probe")
        refs = _expect(obj.get("references", []), list, "finding.references")
        return cls(
            id=str(_expect(obj.get("id"), str, "finding.id")),
            severity=cast(Severity, severity),
            title=str(obj.get("title", "")),
            detail=str(obj.get("detail", "")),
            fix=str(obj.get("fix", "")),
            references=tuple(str(r) for r in refs),
            source=cast(Literal["rule", "probe"], source),
            caused_by=str(_expect(obj.get("caused_by", ""), str, "finding.caused_by")),
        )


@dataclass(frozen=True)
class ProbeResult:
    name: str
    status: str
    metrics: JSONDict = field(default_factory=dict)
    duration_s: float = 0.0
    message: str = ""  # the probe's own words (or the runner's, for a crash or a timeout)
    judgement: str = ""  # the judge's words on these metrics for this machine; rewritten by every `check`
    devices: tuple[JSONDict, ...] = ()  # per device: {id, kind, digest, rel_err}, when several were compared

    def to_dict(self) -> JSONDict:
        found = {
            "name": self.name,
            "status": self.status,
            "metrics": self.metrics,
            "duration_s": round(self.duration_s, 4),
            "message": self.message,
        }
        found |= {"judgement": self.judgement} if self.judgement else {}
        return found | ({"devices": [dict(d) for d in self.devices]} if self.devices else {})

    @classmethod
    def from_dict(cls, data: object) -> ProbeResult:
        obj = _expect(data, dict, "probe")
        status = obj.get("status")
        if status not in PROBE_STATUSES:
            raise ReportError(f"probe status {status!r} is not one of {', '.join(PROBE_STATUSES)}")
        duration = _number(obj.get("duration_s", 0.0), "probe duration_s")
        return cls(
            name=str(_expect(obj.get("name"), str, "probe.name")),
            status=str(status),
            metrics=_expect(obj.get("metrics", {}), dict, "probe.metrics"),
            duration_s=float(duration),
            message=str(obj.get("message", "")),
            judgement=str(obj.get("judgement", "")),
            devices=_devices(obj.get("devices", [])),
        )


@dataclass(frozen=True)
class Report:
    facts: Facts
    findings: tuple[Finding, ...] = ()
    probes: tuple[ProbeResult, ...] = ()
    created: str = ""
    host: JSONDict = field(default_factory=dict)
    envaudit_version: str = ""
    mode: str = "audit"  # audit | quick | plan | check
    complete: bool = True  # False: the audit itself could not finish (verdict "error", exit 3)

    @property
    def verdict(self) -> str:
        if not self.complete:
            return "error"
        severities = {f.severity for f in self.findings}
        return next((level for level in ("fail", "warn") if level in severities), "ok")

    def created_timestamp(self) -> float:
        """`created` as Unix seconds (0 when it is not ISO 8601), for the Prometheus last-run gauge."""
        try:
            return datetime.fromisoformat(self.created.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0

    def to_dict(self) -> JSONDict:
        return {
            "schema": SCHEMA,
            "envaudit_version": self.envaudit_version,
            "created": self.created,
            "host": self.host,
            "mode": self.mode,
            "verdict": self.verdict,
            "facts": self.facts.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "probes": [p.to_dict() for p in self.probes],
        }

    @classmethod
    def from_dict(cls, data: object) -> Report:
        obj = _expect(data, dict, "report")
        if obj.get("schema") != SCHEMA:
            raise ReportError(f"schema is {obj.get('schema')!r}, expected {SCHEMA!r}")
        for key in ("verdict", "facts", "findings", "probes", "created", "host", "envaudit_version"):
            if key not in obj:
                raise ReportError(f"report lacks the key {key!r}")
        if obj["verdict"] not in VERDICTS:
            raise ReportError(f"verdict {obj['verdict']!r} is not one of {', '.join(VERDICTS)}")
        _numbers(obj)
        return cls(
            facts=Facts.from_dict(obj["facts"], str(obj.get("mode", ""))),
            findings=tuple(Finding.from_dict(f) for f in _expect(obj["findings"], list, "findings")),
            probes=tuple(ProbeResult.from_dict(p) for p in _expect(obj["probes"], list, "probes")),
            created=str(obj["created"]),
            host=_expect(obj["host"], dict, "host"),
            envaudit_version=str(obj["envaudit_version"]),
            mode=str(obj.get("mode", "audit")),
            complete=obj["verdict"] != "error",
        )


DEVICE_KEYS: dict[str, type | tuple[type, ...]] = {  # a device's answer; a non-finite error travels as its text
    "id": int,
    "kind": str,
    "digest": str,
    "rel_err": (int, float, str),
    "digest_default": str,
    "rel_err_default": (int, float, str),
    "verdict": str,
    "board": str,
    "uuid": str,
    "pci_bus_id": str,
}


def _devices(data: object) -> tuple[JSONDict, ...]:
    """Each device's answer in a probe result (its jax id and kind, digests of its bits, its errors), one an id."""
    found = []
    for obj in _expect(data, list, "probe.devices"):
        _expect(_expect(obj, dict, "probe.devices[]").get("id"), int, "probe.devices[].id")
        if not all(isinstance(obj.get(k), DEVICE_KEYS[k]) for k in ("kind", "digest", "rel_err")):
            raise ReportError("probe.devices[] needs a kind and a digest (strings) and a rel_err")
        found.append({k: obj[k] for k, kind in DEVICE_KEYS.items() if isinstance(obj.get(k), kind)})
    if len({d["id"] for d in found}) < len(found):
        raise ReportError("probe.devices has two answers for one device id")
    return tuple(found)


def _expect(value: object, kind: type, where: str) -> Any:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ReportError(f"{where} must be a JSON {kind.__name__.replace('dict', 'object').replace('list', 'array')}")
    return value


def _number(value: object, where: str) -> float:
    """A number Python does float arithmetic on: a finite float, or an integer of 64 bits at most."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ReportError(f"{where} must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ReportError(f"{where} is not a finite number")
    if isinstance(value, int) and value not in INTEGERS:
        raise ReportError(f"{where} is an integer of {value.bit_length()} bits, beyond the 64 a report's numbers have")
    return float(value)


def _numbers(document: object) -> None:
    """Every number anywhere in a report (metrics, facts, host) is one `_number` takes; one pass, no recursion."""
    stack: list[tuple[object, str]] = [(document, "report")]
    while stack:
        value, where = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        stack += [(v, f"{where}.{k}" if isinstance(k, str) else f"{where}[{k}]") for k, v in items]
        if isinstance(value, int | float) and not isinstance(value, bool):
            _number(value, where)
