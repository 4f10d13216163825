"""The report's data model: frozen dataclasses with an exact JSON round-trip (schema `envaudit/report/v1`).

A report is its facts (`envaudit/facts.py`), findings and probe results. Everything downstream of collection takes
a `Facts` value as an argument, so a live machine, a report saved on a cluster node last month and a what-if plan
are evaluated by the same code. Loading validates the shape and raises
`ReportError` with one readable sentence: the CLI turns it into exit 2, never a traceback. Every number must be a
finite float or a 64-bit integer: the formats and the judge compute in floats, where 10**400 is an OverflowError.
"""

from __future__ import annotations

import math
import re
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


# Why a probe was not run: health's budget left it out (a skip), or the total bound was spent before it (a timeout).
LeftOut = Literal["budget", "deadline"]
# A report (schema v1) stores it as the status and a metric: a skip with the probe's declared cost (declared_cost_s),
# or a timeout flagged not_run: true (ProbeResult.from_dict reads them back).
SubjectKind = Literal["rule", "check", "probe", "device", "precision", "saved"]
LABEL = re.compile(r"(?P<probe>[^\[\]]+)\[(?P<precision>[^\[\]]+)\]")  # name[precision], one of several runs
PROBE = re.compile(r"[^\[]*")  # of a saved name of another shape, the probe is what comes before its first "["


@dataclass(frozen=True)
class ProbeRun:
    """Which probe a result is of, and at which precision when the audit ran it at several ("" when at one)."""

    probe: str
    precision: str = ""
    saved: str = ""  # a name read from a report in another shape than these two make, kept as it was

    @property
    def label(self) -> str:
        """dense_chain, or dense_chain[float64] for one of several runs: the result's name in a report (v1)."""
        return self.saved or (f"{self.probe}[{self.precision}]" if self.precision else self.probe)

    @classmethod
    def from_label(cls, label: str) -> ProbeRun:
        """The inverse of `label`, for a report read back, where the model parses a result's name once. A name of
        another shape (a report edited by hand, `a[b`) is kept as it is, of the probe before its first "["."""
        if found := LABEL.fullmatch(label):
            return cls(found["probe"], found["precision"])
        if "[" not in label and "]" not in label:
            return cls(label)
        probe = PROBE.match(label)
        return cls(probe[0] if probe else label, saved=label)


def _slug(text: str) -> str:
    """A label as a finding id writes it: dense_chain[float64] -> dense-chain-float64."""
    return text.replace("[", "-").replace("]", "").replace("_", "-")


@dataclass(frozen=True)
class Subject:
    """What a finding is about, from which its id is derived (and never parsed back): a data rule or a code check
    (its id), a probe's run and its problem, a device (its jax id), the default precision of every probe, or, for a
    finding read back from a report, only the id the report stored."""

    kind: SubjectKind
    name: str  # the rule's or check's id, the probe, the device's jax id, or the stored id
    precision: str = ""  # a probe run's precision, when the audit ran several
    problem: str = ""  # a probe's: "" a wrong answer; error, crash or timeout; not-run; or a problem's kind
    label: str = ""  # a probe run's label (ProbeRun.label), which its id is written from

    @classmethod
    def probe(cls, run: ProbeRun, problem: str = "") -> Subject:
        return cls("probe", run.probe, run.precision, problem, run.label)

    @property
    def id(self) -> str:
        if self.kind == "probe":
            return "-".join(_slug(p) for p in ("probe", self.label or self.name, self.problem) if p)
        if self.kind == "device":
            return f"device-{self.name}"
        if self.kind == "precision":
            return f"probe-{self.name}-precision"
        return self.name


@dataclass(frozen=True)
class Evidence:
    """One metric a probe measured for a finding, as shown, and the bound it was held to."""

    run: ProbeRun
    metric: str
    value: str  # as shown: "0.001 (9.9 bits)"
    bound: str  # what it was held to and why: "> 1e-05, the bound of float32 at HIGHEST precision"


@dataclass(frozen=True)
class Finding:
    subject: Subject
    severity: Severity
    title: str
    words: str = ""  # its own words: what was found and why; `detail` adds what probes measured
    fix: str = ""
    references: tuple[str, ...] = ()
    source: Literal["rule", "probe"] = "rule"  # code checks are rules too (docs/architecture.md: rule|probe)
    caused_by: str = ""  # the id of the root-cause finding this one is a consequence of (envaudit/causes.py)
    measured: tuple[Evidence, ...] = ()  # what probes measured for it; shown after its words
    caveat: str = ""  # said after the evidence: a cause it may have that the facts cannot check

    @property
    def id(self) -> str:
        return self.subject.id

    @property
    def detail(self) -> str:
        """The detail as a report shows it: its own words, then what the probes measured, if they did."""
        if not self.measured:
            return self.words + self.caveat
        values = ", ".join(f"{e.run.label} {e.metric}={e.value}" for e in self.measured)
        bounds = "; ".join(dict.fromkeys(e.bound for e in self.measured))  # several probes, each bound said once
        evidence = f"[measured: {values}; {bounds}]"
        return (f"{self.words} {evidence}" if self.words else evidence) + self.caveat

    def to_dict(self) -> JSONDict:
        return {
            "id": self.id,
            "severity": self.severity,
            "title": self.title,
            "detail": self.detail,
            "fix": self.fix,
            "references": list(self.references),
            "source": self.source,
            "caused_by": self.caused_by,
        }

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
            subject=Subject("saved", str(_expect(obj.get("id"), str, "finding.id"))),
            severity=cast(Severity, severity),
            title=str(obj.get("title", "")),
            words=str(obj.get("detail", "")),
            fix=str(obj.get("fix", "")),
            references=tuple(str(r) for r in refs),
            source=cast(Literal["rule", "probe"], source),
            caused_by=str(_expect(obj.get("caused_by", ""), str, "finding.caused_by")),
        )


@dataclass(frozen=True)
class ProbeResult:
    probe: str  # the probe's name (its file's stem)
    status: str
    metrics: JSONDict = field(default_factory=dict)
    duration_s: float = 0.0
    message: str = ""  # the probe's own words (or the runner's, for a crash or a timeout)
    judgement: str = ""  # the judge's words on these metrics for this machine; rewritten by every `check`
    devices: tuple[JSONDict, ...] = ()  # per device: {id, kind, digest, rel_err}, when several were compared
    precision: str = ""  # the precision of this run, when the audit ran the probe at several
    left_out: LeftOut | None = None  # why it was not run, when it was not: no fault of the machine
    saved_name: str = ""  # the name a report gave it, where that is of another shape than a run's label

    @property
    def run(self) -> ProbeRun:
        return ProbeRun(self.probe, self.precision, self.saved_name)

    def metrics_text(self, limit: int = 4) -> str:
        """Its first metrics as `key=value` (floats in two digits), for where no sentence says more."""
        shown = []
        for key, value in self.metrics.items():
            if isinstance(value, float):
                shown.append(f"{key}={value:.2g}")
            elif isinstance(value, int | str | bool):
                shown.append(f"{key}={value}")
            if len(shown) == limit:
                break
        return " ".join(shown)

    def to_dict(self) -> JSONDict:
        found = {
            "name": self.run.label,
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
        run = ProbeRun.from_label(str(_expect(obj.get("name"), str, "probe.name")))
        metrics = _expect(obj.get("metrics", {}), dict, "probe.metrics")
        left_out: LeftOut | None = None
        if status == "skip" and "declared_cost_s" in metrics:
            left_out = "budget"
        elif status == "timeout" and metrics.get("not_run") is True:  # the flag, not any value under its name
            left_out = "deadline"
        return cls(
            probe=run.probe,
            precision=run.precision,
            saved_name=run.saved,
            status=str(status),
            metrics=metrics,
            duration_s=float(duration),
            message=str(obj.get("message", "")),
            judgement=str(obj.get("judgement", "")),
            devices=_devices(obj.get("devices", [])),
            left_out=left_out,
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
