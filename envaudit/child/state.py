"""What a probe run is asked to do and what it has learnt so far, across the children it takes.

`Options` is the whole request (which probes, at which precisions, under which bounds); `tasks` turns it into the
child's argument list; `Run` holds the tasks still to report, the results, the jax facts' events and the real
exit status of the child that reported them. The children inherit the user's environment, which is what is
audited, with the changes `child_env` makes, and reports in facts.jax.child_env: jax's persistent compilation
cache in envaudit's cache directory, no GPU memory preallocation (XLA takes 75 % of every GPU otherwise, so an
audit beside a running job would fail or starve it), and CUDA devices numbered in PCI bus order (so that a jax
device maps to the board NVML names). A variable the user set is never changed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from envaudit.child import jaxfacts
from envaudit.files import cachedir, probefiles
from envaudit.files.probefiles import Platform
from envaudit.model.facts import DeviceMemory, JaxFacts, ReportError
from envaudit.model.redact import scrub, scrub_all
from envaudit.model.report import JSONDict, LeftOut, ProbeResult, ProbeRun, ProbeStatus

COMPILATION_CACHE = "jax-compilation-cache"  # in envaudit's cache directory
USES_CACHE, USES_VARIABLE = "library-uses", "ENVAUDIT_USES_CACHE"  # the imports probe's readings, and how it is told
MAX_FACT_EVENTS = 64  # a child reports one fact per stage (five stages): more is a flood
MAX_DEVICES = 1024  # devices whose memory statistics are kept
# the jax facts a probe may report (the imports probe's): never the stages' own
PROBE_FACTS: tuple[Literal["imports", "calls"], ...] = ("imports", "calls")
MAX_IMPORTS = 1000  # imports kept: an environment has a few dozen libraries that depend on jax
FACTS_STAGE = " jax facts"  # what a child does before its first task when it reports the facts (no probe's label)


@dataclass(frozen=True)
class Progress:
    """What a run is doing now, for the CLI's progress line (envaudit/commands/terminal.py renders it): the jax child
    starting (`jax`), a task starting (`start`) or done (`done`, with its status and time). `index` counts from 1
    among the run's `total` tasks."""

    stage: Literal["jax", "start", "done"]
    label: str = ""
    index: int = 0
    total: int = 0
    status: str = ""
    seconds: float = 0.0
    python: str = ""


@dataclass(frozen=True)
class Options:
    names: tuple[str, ...] = ()
    precision: str = "auto"  # auto | float32 | float64 | both (each probe at float32, then at float64)
    timeout: float = 120.0  # per probe, and for the jax facts
    total: float = 600.0  # everything together
    cache: bool = True
    facts: bool = True  # report what jax says before the first probe
    progress: Callable[[Progress], None] | None = field(default=None, compare=False)
    python: str = sys.executable  # the interpreter whose environment is audited
    devices: tuple[int, ...] = ()  # jax device ids the per-device runs compare (all local devices if empty)
    budget: bool = False  # run only the probes whose declared costs fit the total bound (health); skip the rest
    environ: dict[str, str] | None = field(default=None, compare=False)  # the child's environment before
    # child_env's changes, where it is not this process's (a built plan's: collect/build.py)
    beside: tuple[str, ...] = ()  # probes run in a second child at once, off the accelerator (JAX_PLATFORMS=cpu):
    # the imports probe where a chip is here (runner.ACCELERATOR_FILES), which only one process may hold
    platform: Platform = "cpu"  # the platform class the probes run on (runner.platform_here): their costs' column
    # what each probe run (by label) took here the last time it ran to its end with the compilation cache
    # (files/probecosts.py): its cost where it is known, for the cache is warm then
    costs: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Task:
    run: ProbeRun  # the probe, and its precision when the audit runs it at several
    precision: str  # the precision the child runs it at
    path: Path
    timeout: float = 120.0  # its own bound: the run's per-probe bound, or twice its declared cost if that is more
    cost: float = 1.0  # its declared cost (probefiles.cost)

    @property
    def label(self) -> str:
        """The task's token in the child protocol (the run's label: a label holds no colon)."""
        return self.run.label

    def argument(self) -> str:
        """LABEL:PRECISION:BOUND:PATH, as the child reads it (`_main.py`): the bound in seconds, for a probe that
        keeps to it (the imports probe stops starting imports in time)."""
        return f"{self.label}:{self.precision}:{self.timeout:g}:{self.path}"

    def result(
        self,
        status: ProbeStatus,
        metrics: JSONDict,
        duration_s: float,
        message: str,
        devices: tuple[JSONDict, ...] = (),
        left_out: LeftOut | None = None,
    ) -> ProbeResult:
        run = self.run
        return ProbeResult(
            run.probe, status, metrics, duration_s, message, devices=devices, precision=run.precision, left_out=left_out
        )


@dataclass(frozen=True)
class Outcome:
    results: list[ProbeResult]
    jax: JaxFacts | None  # facts.jax, when Options.facts asked for it
    probe_facts: JaxFacts = field(default_factory=lambda: JaxFacts())  # what the probes reported (in `jax` too)


NO_CALLS = "ENVAUDIT_NO_CALLS"  # why the imports probe makes no smoke call (probes/imports.py reads it)
JAX_START_S = 2.0  # the jax facts child's declared cost: measured 0.9-2.0 s on a 2-core CPU beside other work
# jax's start by platform class where it is not the CPU's: a TPU v5e host's first `import jax` and chip start took
# 9-12.2 s (jax 0.10.2, libtpu 0.0.42.1, measured 2026-12-05/06), the facts child's share of a fresh node's check
# 9.3-10.1 s on 2026-12-08; it covers XLA's first compile too (a trivial program's: 0.6 s, the next 0.07 s), which
# the probes' TPU costs leave out (measured after another compiled); no GPU is measured here (the CPU's used)
JAX_START_BY_PLATFORM_S: dict[str, float] = {"tpu": 12.5}
BUDGET_SHARE = 0.6  # of the total bound, for the probes' declared costs: the rest is for starting jax and slack


def jax_start(platform: str) -> float:
    """jax's declared start on this platform class (the facts child's cost)."""
    return JAX_START_BY_PLATFORM_S.get(platform, JAX_START_S)


def budget(opts: Options) -> float:
    """What the probes' costs may add up to under the total bound (health): its share, and never more than what
    jax's start on this platform leaves of it."""
    return max(min(opts.total * BUDGET_SHARE, opts.total - jax_start(opts.platform)), 0.0)


def _runs(opts: Options) -> list[tuple[ProbeRun, str]]:
    """Every run asked for, in order, with the precision it runs at (which its name says when there are several)."""
    passes = ("float32", "float64") if opts.precision == "both" else (opts.precision,)
    return [(ProbeRun(n, p if len(passes) > 1 else ""), p) for p in passes for n in opts.names]


# what a probe compiled ahead still costs in its turn on an accelerator's host: its run, its programs compiled
# while the probes before it ran (TPU v5e, jax 0.10.2, cold, 2026-12-08: 0.02-0.13 s each of dense_chain, fft,
# ieee_special, linalg and ntk, whose compiles took 0.3-4.2 s one after the other)
AHEAD_RUN_S = 0.2


@dataclass(frozen=True)
class Span:
    """What the tasks planned so far take in the first child (`plan`), as their declared costs say: the tasks run in
    turn, and on an accelerator's host the probes compiled ahead (`COMPILES_FIRST`, after the first task: the
    runner's `_ahead`), whose compiles run at once in the kit's pool from the child's start, beside those turns."""

    turns: float = 0.0  # the costs of the tasks that compile in their own turn, one after another
    compiles: float = 0.0  # the longest declared cost of those compiled ahead: their compiles run at once
    runs: float = 0.0  # their runs, once compiled (AHEAD_RUN_S each)

    @property
    def seconds(self) -> float:
        return max(self.turns, self.compiles) + self.runs

    def then(self, cost: float, ahead: bool) -> Span:
        if ahead:
            return Span(self.turns, max(self.compiles, cost), self.runs + AHEAD_RUN_S)
        return Span(self.turns + cost, self.compiles, self.runs)


def plan(opts: Options) -> tuple[list[Task], list[ProbeResult]]:
    """The tasks to run, in order, and (with opts.budget) those left out because their declared costs do not fit
    the total bound, as skipped results that say so. On an accelerator's host the probes compiled ahead cost their
    runs in their turns, their compiles overlapping the others' (`Span`): charged one after another, a fresh TPU
    node's check left out 6 of 11 probes that all ran, cold, in 17.4 s of its 25 s bound."""
    known = probefiles.available()
    todo: list[Task] = []
    skipped: list[ProbeResult] = []
    spent = Span()
    measured = dict(opts.costs)
    for run, precision in _runs(opts):
        task = Task(run, precision, known[run.probe])
        cost = measured.get(run.label) or probefiles.cost(task.path, opts.platform)
        # compiled ahead as the runner asks (not the first task, which compiles itself); a cost measured here is
        # what it took in its turn already
        ahead = opts.platform != "cpu" and bool(todo) and run.label not in measured
        after = spent.then(cost, ahead and probefiles.compiles_first(task.path))
        if opts.budget and after.seconds > budget(opts):
            said = "its cost here" if run.label in measured else f"its declared cost on a {opts.platform.upper()}"
            why = (
                f"not run: {said} ({cost:g} s) does not fit the total bound of {opts.total:g} s with jax's start "
                f"and the others; give a larger --total-timeout to include it (a warm compilation cache costs less)"
            )
            skipped.append(task.result("skip", {"declared_cost_s": cost}, 0.0, why, left_out="budget"))
            continue
        spent = after
        todo.append(replace(task, timeout=max(opts.timeout, 2 * cost), cost=cost))
    return todo, skipped


def labels(opts: Options) -> list[str]:
    return [run.label for run, _ in _runs(opts)]


def tasks(opts: Options) -> list[Task]:
    return plan(opts)[0]


def uses_cache() -> dict[str, str]:
    """The variable that tells the imports probe where to keep its readings of the libraries' code
    (probes/calls/_uses.py) between runs: a private directory of envaudit's cache ({} where there is none)."""
    uses = cachedir.private(USES_CACHE)
    return {USES_VARIABLE: str(uses)} if uses is not None else {}


def child_env(cache: bool, environ: dict[str, str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """The child's environment, and the variables envaudit set in it (pure given `environ`)."""
    base = dict(os.environ if environ is None else environ)
    changes = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    if all(v.strip().startswith(("GPU-", "MIG-")) for v in base.get("CUDA_VISIBLE_DEVICES", "").split(",") if v):
        # CUDA numbers devices fastest first unless told otherwise, and NVML by PCI bus id; so that the child's
        # device i is the i-th visible GPU by bus id (and envaudit can name the board), it asks for bus order,
        # unless CUDA_VISIBLE_DEVICES lists indices, whose meaning this would change
        changes["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    # made private (0700, every directory on the way verified) before the child starts: jax would create it
    # after its import, and whoever made it first in that gap would own the programs root loads
    directory = cachedir.private(COMPILATION_CACHE) if cache and "JAX_COMPILATION_CACHE_DIR" not in base else None
    if directory is not None:  # None: no cache that is safe to load programs from
        changes["JAX_COMPILATION_CACHE_DIR"] = str(directory)
        changes["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
        changes["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    if cache:
        changes |= uses_cache()
    changes = {k: v for k, v in changes.items() if k not in base}  # what the user set wins
    return {**base, **changes}, changes


def parse_result(task: Task, event: dict[str, Any]) -> ProbeResult:
    """A result or error event from the child as a ProbeResult; anything malformed is 'error'; its text scrubbed of
    what facts.env redacts (pure given os.environ)."""
    duration = float(event.get("duration_s") or 0.0)
    if event.get("event") == "error":
        kind = str(event.get("kind", "exception"))
        return task.result("error", {"error_kind": kind}, duration, scrub(str(event.get("error", ""))))
    result = event.get("result")
    status = result.get("status") if isinstance(result, dict) else None
    if not isinstance(result, dict) or status not in ("pass", "fail", "skip"):
        why = f"unreadable result: {scrub(repr(result))[:200]}"  # cut after: a URL cut short keeps its secret
        return task.result("error", {"error_kind": "unreadable"}, duration, why)
    metrics = result.get("metrics") if isinstance(result.get("metrics"), dict) else {}
    try:  # the devices' answers, as the model validates them in a saved report
        devices = tuple(
            ProbeResult.from_dict({"name": task.label, "status": "pass", "devices": result["devices"]}).devices
            if result.get("devices")
            else ()
        )
    except ReportError:
        return task.result("error", {"error_kind": "unreadable"}, duration, "unreadable devices in the result")
    message = scrub(str(result.get("message") or ""))  # an exception's text may quote XLA_FLAGS
    metrics = scrub_all(dict(metrics or {}))  # an error_* metric is an exception's text
    found = task.result(cast(ProbeStatus, status), metrics, duration, message, devices)
    compiling = event.get("compile_s")
    if isinstance(compiling, int | float) and not isinstance(compiling, bool) and 0 <= compiling <= duration:
        found = replace(found, compile_s=float(compiling))
    return found


def users_info(info: str, changes: dict[str, str]) -> str:
    """jax.print_environment_info() as the user's own process prints it: jax lists every JAX_* and XLA_* variable
    as a `NAME=VALUE` line, and those envaudit set for its child (`child_env`) are not the user's."""
    ours = {f"{name}={value}" for name, value in changes.items()}
    return "\n".join(line for line in info.split("\n") if line not in ours)


class Run:
    """One run's state across its children."""

    def __init__(self, opts: Options, deadline: float) -> None:
        self.opts, self.deadline = opts, deadline
        self.pending, skipped = plan(opts)
        self.order = labels(opts)  # the results come back in the order asked for, the skipped ones in place
        self.results: dict[str, ProbeResult] = {r.run.label: r for r in skipped}
        self.env, self.changes = child_env(opts.cache, opts.environ)
        if opts.devices:  # the probes' kit reads it: the per-device runs compare only these
            self.env["ENVAUDIT_DEVICES"] = self.changes["ENVAUDIT_DEVICES"] = ",".join(map(str, opts.devices))
        self.facts_wanted = opts.facts
        self.fact_events: list[dict[str, Any]] = []
        self.facts: JaxFacts | None = None
        self.facts_returncode: int | None = None
        self.memory: dict[int, dict[str, int]] = {}
        self.probe_facts: JaxFacts = {}  # what the probes reported as jax facts (the imports probe's imports)
        self.pids: list[int] = []  # every child started: their GPU contexts are envaudit's, not another job's

    def is_pending(self, label: object) -> bool:
        return any(t.label == label for t in self.pending)

    def pending_task(self, label: object) -> Task:
        """The pending task of this protocol label (the caller asked `is_pending`)."""
        return next(t for t in self.pending if t.label == label)

    def timeout_of(self, label: str | None) -> float:
        """The bound of what the child is doing: a task's own, or the run's (for the jax facts)."""
        return next((t.timeout for t in self.pending if t.label == label), self.opts.timeout)

    def cost_of(self, label: str | None) -> float:
        """The declared cost of what the child is doing: a task's, or jax's start (for the jax facts)."""
        return next((t.cost for t in self.pending if t.label == label), jax_start(self.opts.platform))

    def next_label(self) -> str | None:
        return self.pending[0].label if self.pending else None

    def report(self, result: ProbeResult) -> None:
        label = result.run.label
        self.results[label] = result
        self.pending = [t for t in self.pending if t.label != label]
        self.tell("done", label, status=result.status, seconds=result.duration_s)

    def tell(
        self, stage: Literal["jax", "start", "done"], label: str = "", status: str = "", seconds: float = 0
    ) -> None:
        """The progress callback, if the CLI gave one, told what this run does now."""
        if self.opts.progress is None:
            return
        index = self.order.index(label) + 1 if label in self.order else 0
        event = Progress(stage, label, index, len(self.order), status, seconds, self.opts.python)
        self.opts.progress(event)

    def finish_facts(self, *, ended: int | None, timed_out: bool, seconds: float, last_words: str = "") -> None:
        self.facts = jaxfacts.parse(
            self.fact_events, ended=ended, timed_out=timed_out, duration_s=seconds, last_words=last_words
        )
        self.facts_wanted = False

    def cannot_start(self, why: str) -> None:
        """The interpreter could not be started at all: the facts and every pending task say why."""
        if self.facts_wanted:
            self.facts, self.facts_wanted = {"status": "error", "message": why, "stage": None}, False
        for task in list(self.pending):
            self.report(task.result("error", {"error_kind": "start"}, 0.0, why))

    def jax_hung(self) -> bool:
        """The child that reports the jax facts ran out of time before jax had started: every later child would
        spend its own bound the same way, since every probe starts jax."""
        return self.facts is not None and self.facts.get("status") == "timeout" and bool(self.pending)

    def backend_never_started(self) -> bool:
        """The child that reports the jax facts ended (an error or a crash, not a timeout) before jax listed its
        devices: its backend did not start (XLA ends the process on a flag it does not know, a platform that is not
        there), and every probe that computes would die the same way in a child of its own (13 of them, 1.4 s each,
        measured with an unknown XLA flag). Those that compute on no device (the imports probe) still run."""
        facts = self.facts
        return (
            facts is not None
            and facts.get("status") in ("error", "crash", "import_error")
            and facts.get("stage") in (None, "start", "import", "imported")
            and any(not probefiles.off_device(task.path) for task in self.pending)
        )

    def not_computed(self) -> None:
        """Each pending task that computes on a device, as a consequence of jax's start, without a child of its own."""
        facts = self.facts or {}
        said = f"{facts.get('status')}: {facts.get('message')}"
        why = f"not run: jax did not start in the child that reports its facts ({said})"
        self.env[NO_CALLS] = why  # the imports probe still imports, and makes no smoke call: one would end it too
        for task in [t for t in self.pending if not probefiles.off_device(t.path)]:
            status: ProbeStatus = "crash" if facts.get("status") == "crash" else "error"  # as its own child would
            self.report(task.result(status, {"jax_not_started": True}, 0.0, why, left_out="jax"))

    def not_started(self) -> None:
        """Each pending task as a consequence of jax's start, without a child of its own."""
        stage = (self.facts or {}).get("stage")
        why = (
            f"not run: jax did not finish starting within {self.opts.timeout:g} s (its last stage: {stage}) in the "
            "child that reports its facts"
        )
        for task in list(self.pending):
            self.report(task.result("timeout", {"jax_not_started": True}, 0.0, why, left_out="jax"))

    def remember_fact(self, event: dict[str, Any]) -> None:
        """A stage's fact; a child that keeps reporting facts (a flood) is not remembered past MAX_FACT_EVENTS."""
        if len(self.fact_events) < MAX_FACT_EVENTS:
            self.fact_events.append(event)

    def remember_memory(self, devices: object) -> None:
        """Each device's allocator statistics; after a restart, the larger peak of the two children (at most
        MAX_DEVICES devices: more is a flood, not a machine)."""
        for entry in devices[:MAX_DEVICES] if isinstance(devices, list) else []:
            if len(self.memory) >= MAX_DEVICES and isinstance(entry, dict) and entry.get("id") not in self.memory:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("id"), int):
                old = self.memory.get(entry["id"], {})
                merged = {**old, **{k: int(v) for k, v in entry.items() if isinstance(v, int)}}
                merged["peak_bytes_in_use"] = max(old.get("peak_bytes_in_use", 0), merged.get("peak_bytes_in_use", 0))
                self.memory[entry["id"]] = merged

    def remember_probe_facts(self, result: object) -> None:
        """The jax facts a probe's result reports (`facts`: the imports probe's `imports`), each of the type
        facts.JaxFacts declares (the child's word is checked as a stage's is) and scrubbed as facts.env is."""
        said = result.get("facts") if isinstance(result, dict) else None
        if isinstance(said, dict):
            kept = jaxfacts.declared({k: v for k, v in said.items() if k in PROBE_FACTS})
            for name in PROBE_FACTS:  # each a list of outcomes, a few dozen in a real environment
                if len(kept.get(name, ())) > MAX_IMPORTS:
                    kept[name] = kept[name][:MAX_IMPORTS]
            self.probe_facts.update(scrub_all(kept))

    def remember_lost(
        self,
        found: dict[str, list[JSONDict]],
        doing: JSONDict,
        why: str,
        *,
        dead: bool = False,
        stderr: tuple[str, ...] = (),
    ) -> None:
        """The outcomes a probe streamed before its process died or was cut (`found`, real as they are), and the
        one it had in flight (`doing`): where the process died, an error with its last words (`stderr`: what a
        module printed before the crash names its cause, as a live exception would); where it was cut, not
        tried (a bound is no evidence against a library)."""
        facts: dict[str, list[JSONDict]] = {k: list(v) for k, v in found.items() if k in PROBE_FACTS}
        for name, item in doing.items():
            if name in PROBE_FACTS and isinstance(item, dict):
                kind = "importing" if name == "imports" else "calling"
                lost: JSONDict = {**item, "status": "error" if dead else "not_tried", "error": f"{why} while {kind}"}
                facts.setdefault(name, []).append(lost | ({"stderr": list(stderr)} if dead and stderr else {}))
        if facts:
            self.remember_probe_facts({"facts": facts})

    def outcome(self) -> Outcome:
        for task in self.pending:
            why = f"not run: the total bound of {self.opts.total:g} s was spent"
            self.results[task.label] = task.result("timeout", {"not_run": True}, 0.0, why, left_out="deadline")
        if self.facts is not None:
            self.facts.update(self.probe_facts)
            self.facts["returncode"] = self.facts_returncode
            self.facts["child_env"] = dict(self.changes)
            if info := self.facts.get("environment_info"):
                self.facts["environment_info"] = scrub(users_info(info, self.changes))  # as facts.env redacts
            self.facts["child_pids"] = list(self.pids)
            if self.memory:
                self.facts["device_memory"] = [cast(DeviceMemory, self.memory[i]) for i in sorted(self.memory)]
        return Outcome(
            [self.results[label] for label in self.order], self.facts, cast(JaxFacts, dict(self.probe_facts))
        )
