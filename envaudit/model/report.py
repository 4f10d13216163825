"""The report's data model: frozen dataclasses with an exact JSON round-trip (schema `envaudit/report/v1`).

A report is its facts (`envaudit/model/facts.py`), findings and probe results. Everything downstream of collection takes
a `Facts` value as an argument, so a live machine, a report saved on a cluster node last month and a what-if plan
are evaluated by the same code. Loading validates the shape and raises
`ReportError` with one readable sentence: the CLI turns it into exit 2, never a traceback. Every number must be a
finite float or a 64-bit integer: the formats and the judge compute in floats, where 10**400 is an OverflowError.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, TypedDict, TypeVar, cast, get_args

from envaudit.model import typecheck
from envaudit.model.build import BuildDocument
from envaudit.model.facts import Facts, ReportError
from envaudit.model.fixes import Fix, Plan

SCHEMA = "envaudit/report/v1"


def schema_id(name: str) -> str:
    """The `$id` of a document's JSON Schema (`envaudit schema` prints it) from its schema name: envaudit has no web
    address, so a URN of the name (`envaudit/report/v1` -> `urn:envaudit:report:v1`). A document envaudit writes
    names it in its `$schema`, so that a reader finds the schema: `envaudit schema urn:envaudit:report:v1`."""
    return "urn:" + name.replace("/", ":")


SCHEMA_ID = schema_id(SCHEMA)
INTEGERS = range(-(2**63), 2**64)  # what a 64-bit counter holds, signed or not (NVML's are unsigned)

Severity = Literal["fail", "warn", "info"]  # worst first
ProbeStatus = Literal["pass", "fail", "skip", "error", "timeout", "crash"]
Verdict = Literal["ok", "warn", "fail", "error"]
Mode = Literal["audit", "quick", "check", "plan", "triage", "hook"]  # which verb made a report
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
PROBE_STATUSES: tuple[ProbeStatus, ...] = get_args(ProbeStatus)
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
MODES: tuple[Mode, ...] = get_args(Mode)
JSONDict = dict[str, Any]


# Why a probe was not run: health's budget left it out (a skip), the total bound was spent before it (a timeout), or
# jax did not start in time in the child that reports its facts, and every probe starts jax (a timeout).
LeftOut = Literal["budget", "deadline", "jax"]
# A report (schema v1) stores it as the status and a metric: a skip with the probe's declared cost (declared_cost_s),
# a timeout flagged not_run: true, or one flagged jax_not_started: true (ProbeResult.from_dict reads them back).
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
    problem: str = ""  # a probe's: "" a wrong answer; error, crash or timeout; not-run; or a problem's kind
    label: str = ""  # a probe run's label (ProbeRun.label: its precision, when the audit ran several), for its id

    @classmethod
    def probe(cls, run: ProbeRun, problem: str = "") -> Subject:
        return cls("probe", run.probe, problem, run.label)

    @property
    def id(self) -> str:
        if self.kind == "probe":
            return "-".join(_slug(p) for p in ("probe", self.label or self.name, self.problem) if p)
        if self.kind == "device":
            return f"device-{self.name}"
        if self.kind == "precision":
            return f"probe-{self.name}-precision"
        if self.kind == "check" and self.problem:  # one finding per thing a check is about (a distribution)
            return f"{self.name}-{_slug(self.problem)}"
        return self.name


class _LocationOptional(TypedDict, total=False):
    line: int  # the line it starts on (1 the first), where the file has lines that say it


class LocationDocument(_LocationOptional):
    """Where a finding's cause is written: an input file of a plan, as its command line named it."""

    file: str


class _FindingOptional(TypedDict, total=False):
    title: str
    detail: str
    fix: str
    references: list[str]
    source: Literal["rule", "probe"]
    caused_by: str
    ignored: bool  # true: the user ignored it (--ignore, [tool.envaudit]); it counts toward no verdict
    ignore_reason: str  # why, as the user wrote it ("" if they gave no reason)
    location: LocationDocument  # a plan's: the input file and line of the requirement that causes it
    todo: str  # where no command fixes it (`fix` empty): that, and what to do, as every format says it


class FindingDocument(_FindingOptional):
    """A finding in a report (schema v1): its id and severity required."""

    id: str
    severity: Severity


class _DeviceOptional(TypedDict, total=False):
    digest_default: str
    rel_err_default: float | str
    verdict: str
    board: str
    uuid: str
    pci_bus_id: str


class DeviceAnswer(_DeviceOptional):
    """A device's answer in a probe result: its jax id and kind, digests of its bits, its error (a non-finite one
    travels as its text); the judge's verdict and the board it named."""

    id: int
    kind: str
    digest: str
    rel_err: float | str


DEVICE_FIELDS = frozenset(typecheck.hints(DeviceAnswer))  # required and optional alike


class _ProbeOptional(TypedDict, total=False):
    metrics: dict[str, Any]
    duration_s: float
    message: str
    judgement: str
    devices: list[DeviceAnswer]
    stderr: list[str]  # the last lines a child that died or hung wrote on stderr (redacted, bounded)
    compile_s: float  # of duration_s, the seconds it spent compiling, where the probe says when it compiles


class ProbeDocument(_ProbeOptional):
    """A probe result in a report (schema v1): its name and status required."""

    name: str
    status: ProbeStatus


class SettingsDocument(TypedDict, total=False):
    """The project settings a judging verb applied: the `[tool.envaudit]` file read, or one found and not trusted."""

    file: str  # the pyproject.toml whose [tool.envaudit] applied
    ignored: str  # the one found and left unread, with why (another user's, or writable by others)


class KnowledgeDocument(TypedDict):
    """How far the release knowledge that judged the report reaches (rules/tables/coverage.toml)."""

    jax: str  # the newest jax release every table keyed on jax covers
    released: str  # its first upload to PyPI


# `$schema` is no Python name: declared in the functional syntax (a report written before envaudit wrote it has none)
_Named = TypedDict("_Named", {"$schema": str}, total=False)


class _ReportOptional(_Named, total=False):
    knowledge: KnowledgeDocument
    settings: SettingsDocument
    mode: str
    duration_s: float  # seconds the audit took, collection to report (a live audit's; absent in older reports)


class ReportDocument(_ReportOptional):
    """A report (schema envaudit/report/v1) as read back; its facts are checked by Facts.from_dict."""

    schema: str
    envaudit_version: str
    created: str
    host: dict[str, Any]
    verdict: Verdict
    facts: dict[str, Any]
    findings: list[dict[str, Any]]  # each checked as a FindingDocument
    probes: list[dict[str, Any]]  # each checked as a ProbeDocument


@dataclass(frozen=True)
class Evidence:
    """One metric a probe measured for a finding, as shown, and the bound it was held to."""

    run: ProbeRun
    metric: str
    value: str  # as shown: "0.001 (9.9 bits)"
    bound: str  # what it was held to and why: "> 1e-05, the bound of float32 at HIGHEST precision"


@dataclass(frozen=True)
class Advice:
    """What a rule or check says to do, and what its fix costs: rendered "(the fix: ...)" where it has a command
    on this machine, else "(what to do: ...)"."""

    text: str  # the cause's own fix, in words
    pins: tuple[str, ...] = ()  # the requirements its fix installs, which the jaxlib wheel table prices
    cost: str = ""  # what they cost in Pythons ("; it needs Python 3.10 to 3.13"), set where they are priced
    command: bool = False  # whether the fix has a command here (decided where it is priced)


# The clauses later stages add to a finding, rendered after its words and what probes measured, in order:
# message: the lines of a report that show its message; seen: what this audit saw of its consequences;
# fixed_by: the finding whose step of the plan fixes it too; loops: its own fix leads back to an earlier state;
# note: the judge's own words on a probe's finding (a possible cause, what to do).
ClauseKind = Literal["message", "seen", "fixed_by", "loops", "note"]


@dataclass(frozen=True)
class Clause:
    kind: ClauseKind
    values: tuple[str, ...] = ()

    def render(self) -> str:
        if self.kind == "message":
            return f" (its message, seen: {'; '.join(self.values)})"
        if self.kind == "seen":
            return f" (seen here: {'; '.join(self.values)})"
        if self.kind == "fixed_by":
            return f" (the plan's fix of {self.values[0]} fixes it too)"
        if self.kind == "loops":
            return (
                " (its own fix leads back to a state the plan was in: no known release fixes it without breaking"
                " another)"
            )
        return "".join(self.values)


@dataclass(frozen=True)
class Location:
    """Where a finding's cause is written: a plan's input file as its command line named it, and the line of the
    requirement (or lock entry) in it (0: the file does not say, a pip report's JSON)."""

    file: str
    line: int = 0

    def to_dict(self) -> LocationDocument:
        found: LocationDocument = {"file": self.file}
        if self.line > 0:
            found["line"] = self.line
        return found

    @classmethod
    def from_dict(cls, data: LocationDocument) -> Location:
        return cls(data["file"], data.get("line", 0))


UNPROBED = (
    " [not measured: no probe ran its case here (a plan, --quick, the hook, a report without it), so a release known"
    " to compute wrong numbers fails]"
)


@dataclass(frozen=True)
class Finding:
    subject: Subject
    severity: Severity
    title: str
    words: str = ""  # its own words: what was found and why; `detail` adds the rest
    remedy: Fix = field(default_factory=Fix)  # its part of the fix, as values; `fix` is its command
    references: tuple[str, ...] = ()
    source: Literal["rule", "probe"] = "rule"  # code checks are rules too (docs/architecture.md: rule|probe)
    caused_by: str = ""  # the id of the root-cause finding this one is a consequence of (envaudit/judge/causes.py)
    measured: tuple[Evidence, ...] = ()  # what probes measured for it; shown after its words
    clauses: tuple[Clause, ...] = ()  # what later stages add, shown after the evidence
    ignored: str | None = (
        None  # the reason the user ignored it ("" none given); None: it counts (envaudit/judge/ignoring.py)
    )
    advice: Advice | None = None  # its cause's advice, shown after its words
    unprobed: bool = False  # a plan's rule of wrong numbers that only a probe could clear
    # the distributions whose releases decide it (a rule's conditions name them), the first the one it is most about
    about: tuple[str, ...] = ()
    location: Location | None = None  # a plan's: where the requirement that causes it is written

    @property
    def id(self) -> str:
        return self.subject.id

    @property
    def fix(self) -> str:
        """Its command: one shell line, or "" where there is none (what to do is then said in its detail)."""
        return self.remedy.command

    @property
    def todo(self) -> str:
        """The fix as a reply says it: its command, else that no command fixes it and what to do (its cause's
        advice), so that no format prints an empty fix."""
        if self.fix:
            return self.fix
        advice = self.advice.text if self.advice is not None else "its detail says what is known"
        return f"no command fixes this; what to do: {advice}"

    def said(self, *clauses: Clause) -> Finding:
        """The same finding with these clauses added after the ones it has."""
        return replace(self, clauses=self.clauses + clauses)

    @property
    def detail(self) -> str:
        """The detail as a report shows it, rendered here and nowhere else: its own words, its cause's advice, then
        what the probes measured, then what later stages said of it."""
        words = self.words
        if self.advice is not None:
            said = "the fix" if self.advice.command else "what to do"
            words += f" ({said}: {self.advice.text}{self.advice.cost})"
        if self.unprobed:
            words += UNPROBED
        after = "".join(c.render() for c in self.clauses)
        if not self.measured:
            return words + after
        values = ", ".join(f"{e.run.label} {e.metric}={e.value}" for e in self.measured)
        bounds = "; ".join(dict.fromkeys(e.bound for e in self.measured))  # several probes, each bound said once
        evidence = f"[measured: {values}; {bounds}]"
        return (f"{words} {evidence}" if words else evidence) + after

    def to_dict(self) -> JSONDict:
        return (
            {
                "id": self.id,
                "severity": self.severity,
                "title": self.title,
                "detail": self.detail,
                "fix": self.fix,
                **({} if self.fix else {"todo": self.todo}),
                "references": list(self.references),
                "source": self.source,
                "caused_by": self.caused_by,
            }
            | ({} if self.ignored is None else {"ignored": True, "ignore_reason": self.ignored})
            | ({} if self.location is None else {"location": self.location.to_dict()})
        )

    @property
    def counts(self) -> bool:
        """Whether it counts toward the verdict: it is not ignored."""
        return self.ignored is None

    @classmethod
    def from_dict(cls, data: object) -> Finding:
        obj = _checked(data, FindingDocument, "finding")
        return cls(
            subject=Subject("saved", obj["id"]),
            severity=obj["severity"],
            title=obj.get("title") or "",
            words=obj.get("detail") or "",
            remedy=Fix(saved=obj.get("fix") or ""),
            references=tuple(obj.get("references") or ()),
            source=obj.get("source") or "rule",
            caused_by=obj.get("caused_by") or "",
            ignored=(obj.get("ignore_reason") or "") if obj.get("ignored") else None,
            location=Location.from_dict(obj["location"]) if "location" in obj else None,
        )


def _compiling(value: object, duration: float) -> float | None:
    """A result's compile_s read back: seconds within its duration, else none."""
    if value is None:
        return None
    seconds = float(_number(value, "probe compile_s"))
    if not 0 <= seconds <= duration:
        raise ReportError("probe compile_s must be within its duration_s")
    return seconds


@dataclass(frozen=True)
class ProbeResult:
    probe: str  # the probe's name (its file's stem)
    status: ProbeStatus
    metrics: JSONDict = field(default_factory=dict)
    duration_s: float = 0.0
    message: str = ""  # the probe's own words (or the runner's, for a crash or a timeout)
    judgement: str = ""  # the judge's words on these metrics for this machine; rewritten by every `check`
    devices: tuple[JSONDict, ...] = ()  # per device: {id, kind, digest, rel_err}, when several were compared
    precision: str = ""  # the precision of this run, when the audit ran the probe at several
    left_out: LeftOut | None = None  # why it was not run, when it was not: no fault of the machine
    saved_name: str = ""  # the name a report gave it, where that is of another shape than a run's label
    stderr: tuple[str, ...] = ()  # a crashed or hung child's last lines on stderr: the evidence of what killed it
    compile_s: float | None = None  # of duration_s, what it spent compiling (probes/_kit.compile_all), where it says

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
        found |= {"stderr": list(self.stderr)} if self.stderr else {}
        found |= {"compile_s": round(self.compile_s, 4)} if self.compile_s is not None else {}
        return found | ({"devices": [dict(d) for d in self.devices]} if self.devices else {})

    @classmethod
    def from_dict(cls, data: object) -> ProbeResult:
        obj = _checked(data, ProbeDocument, "probe")
        status = obj["status"]
        duration = _number(obj.get("duration_s", 0.0), "probe duration_s")
        run = ProbeRun.from_label(obj["name"])
        metrics = obj.get("metrics") or {}
        left_out: LeftOut | None = None
        if status == "skip" and "declared_cost_s" in metrics:
            left_out = "budget"
        elif status == "timeout" and metrics.get("not_run") is True:  # the flag, not any value under its name
            left_out = "deadline"
        elif status == "timeout" and metrics.get("jax_not_started") is True:
            left_out = "jax"
        return cls(
            probe=run.probe,
            precision=run.precision,
            saved_name=run.saved,
            status=status,
            metrics=metrics,
            duration_s=float(duration),
            message=obj.get("message") or "",
            judgement=obj.get("judgement") or "",
            devices=_devices(obj.get("devices") or []),
            left_out=left_out,
            stderr=tuple(obj.get("stderr") or ()),
            compile_s=_compiling(obj.get("compile_s"), float(duration)),
        )


@dataclass(frozen=True)
class Settings:
    """Which `[tool.envaudit]` applied to a report (the command line's options are not recorded)."""

    file: str = ""
    ignored: str = ""

    def to_dict(self) -> SettingsDocument:
        found: SettingsDocument = {}
        if self.file:
            found["file"] = self.file
        if self.ignored:
            found["ignored"] = self.ignored
        return found


@dataclass(frozen=True)
class Report:
    facts: Facts
    findings: tuple[Finding, ...] = ()
    probes: tuple[ProbeResult, ...] = ()
    created: str = ""
    host: JSONDict = field(default_factory=dict)
    envaudit_version: str = ""
    mode: Mode = "audit"
    complete: bool = True  # False: the audit itself could not finish (verdict "error", exit 3)
    plan: Plan = field(default_factory=Plan)  # its fixes as one plan (computed, never read back: `check` replans)
    duration_s: float | None = None  # seconds the audit took (run_audit); None: not measured (a plan, an old report)
    settings: Settings | None = None  # the project settings a judging verb found (none: no [tool.envaudit] near)
    build: BuildDocument | None = None  # what a plan built and measured here (model/build.py); written, not read back
    knowledge: KnowledgeDocument | None = None  # how far the tables that judged it reach (none: an older report)

    @property
    def verdict(self) -> Verdict:
        if not self.complete:
            return "error"
        severities = {f.severity for f in self.findings if f.counts}
        return next((level for level in ("fail", "warn") if level in severities), "ok")

    def created_timestamp(self) -> float:
        """`created` as Unix seconds (0 when it is not ISO 8601), for the Prometheus last-run gauge."""
        try:
            return datetime.fromisoformat(self.created.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0

    @property
    def proof(self) -> str:
        """Whether its plan is proven: a plan's report says what its build found ("proven" or "unproven"); an
        audit's plan was built nowhere yet ("unproven"); "" where there is no command to prove."""
        if self.build is not None:
            return str(self.build.get("proof") or "unproven")
        return "unproven" if self.plan.fix.command else ""

    def to_dict(self) -> JSONDict:
        took = {} if self.duration_s is None else {"duration_s": round(self.duration_s, 3)}
        return {
            "$schema": SCHEMA_ID,
            "schema": SCHEMA,
            "envaudit_version": self.envaudit_version,
            "created": self.created,
            **took,
            "host": self.host,
            "mode": self.mode,
            **({"knowledge": dict(self.knowledge)} if self.knowledge is not None else {}),
            **({"settings": self.settings.to_dict()} if self.settings is not None else {}),
            "verdict": self.verdict,
            "facts": self.facts.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "probes": [p.to_dict() for p in self.probes],
            "plan": {
                "fix": self.plan.fix.command,
                "steps": [{"finding": s.finding, "fix": s.fix.command} for s in self.plan.steps],
                "remaining": list(self.plan.remaining),
                "loop": self.plan.loop,
                "declined": list(self.plan.declined),
                "held": [{"library": lib, "jax": jax} for lib, jax in self.plan.held],
                **({"kept": list(self.plan.kept)} if self.plan.kept else {}),
                **({"proof": self.proof} if self.proof else {}),
            },
            **({"build": dict(self.build)} if self.build is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: object) -> Report:
        if not isinstance(data, dict):
            raise ReportError("report must be a JSON object")
        if data.get("schema") != SCHEMA:
            raise ReportError(f"schema is {data.get('schema')!r}, expected {SCHEMA!r}")
        if "$schema" in data and data["$schema"] != SCHEMA_ID:  # absent in a report of an envaudit before it
            raise ReportError(f"$schema is {data['$schema']!r}, expected {SCHEMA_ID!r}")
        obj = _checked(data, ReportDocument, "report")
        _numbers(obj)
        took = obj.get("duration_s")
        if took is not None and took < 0:
            raise ReportError("report duration_s must not be negative")
        return cls(
            facts=Facts.from_dict(obj["facts"], obj.get("mode") or ""),
            findings=tuple(Finding.from_dict(f) for f in obj["findings"]),
            probes=tuple(ProbeResult.from_dict(p) for p in obj["probes"]),
            created=obj["created"],
            host=obj["host"],
            envaudit_version=obj["envaudit_version"],
            mode=_mode(obj.get("mode") or "audit"),
            complete=obj["verdict"] != "error",
            duration_s=None if took is None else float(took),
            settings=_settings(obj.get("settings")),
            knowledge=obj.get("knowledge"),
        )


def _settings(data: SettingsDocument | None) -> Settings | None:
    return None if data is None else Settings(file=data.get("file", ""), ignored=data.get("ignored", ""))


def _mode(text: str) -> Mode:
    """A saved report's mode, one the verbs write (a report from a later envaudit may say another: one line)."""
    if text not in MODES:
        raise ReportError(f"report mode {text!r} is none of {', '.join(MODES)}")
    return text


def _devices(data: list[DeviceAnswer]) -> tuple[JSONDict, ...]:
    """Each device's answer in a probe result (its jax id and kind, digests of its bits, its errors), one an id;
    what the report declares of it, nothing else."""
    found = [{k: v for k, v in obj.items() if k in DEVICE_FIELDS and v is not None} for obj in data]
    if len({d["id"] for d in found}) < len(found):
        raise ReportError("probe.devices has two answers for one device id")
    return tuple(found)


T = TypeVar("T")


def _checked(data: object, document: type[T], where: str) -> T:
    """`data` as the document its TypedDict declares (typecheck, as facts are): else one line of ReportError. A
    document itself is never null (a field of one may be)."""
    if data is None:
        raise ReportError(f"{where} must be a JSON object")
    if wrong := typecheck.problem(data, document, where):
        raise ReportError(wrong)
    return cast(T, data)


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
