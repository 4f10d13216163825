"""Runs the child process (`_main.py`) and follows its events, so that a crash, a hang or an import error is a result.

One child reports the jax facts and then runs every task (a probe at one precision) in turn, on one jax import;
when it dies or hangs, whatever it was doing gets `crash` or `timeout` with its evidence, its process group is
killed (it runs in its own session, so a terminal's Ctrl-C does not reach it), and a new child runs the remaining
tasks. Every bound is enforced here, in the parent: a hung child cannot hang the audit. And the child cannot outlive
the parent: it watches a pipe only the parent holds (--parent-pipe), and ends its process group when that closes.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from envaudit.child import load
from envaudit.child._main import PREPARE_VARIABLE, decode
from envaudit.child.bounded import reap, watchdog
from envaudit.child.jaxfacts import signal_name
from envaudit.child.state import FACTS_STAGE, MAX_IMPORTS, Options, Outcome, Run, labels, parse_result, plan
from envaudit.files import probefiles
from envaudit.files.probefiles import Platform
from envaudit.model.facts import JaxFacts
from envaudit.model.redact import scrub
from envaudit.model.report import JSONDict

CHILD = Path(__file__).with_name("_main.py")


def accelerator_here(dev: Path = Path("/dev")) -> bool:
    """A chip's device file on this machine: a TPU's (/dev/accel*, or a /dev/vfio group: the v5e host lent here has
    /dev/vfio/3), an NVIDIA GPU's (/dev/nvidia0...), an AMD GPU's (/dev/kfd). Where one is, only one process may hold
    it (a TPU), or each process that starts jax there pays the accelerator's start: the probes that need no device
    run beside the one child that holds it (Options.beside)."""
    return _chips(dev) != "cpu"


def _chips(dev: Path) -> Platform:
    tpu = [*dev.glob("accel[0-9]*"), *(p for p in dev.glob("vfio/*") if p.name.isdigit())]
    return "tpu" if tpu else "gpu" if [*dev.glob("nvidia[0-9]*")] or (dev / "kfd").exists() else "cpu"


def platform_here(dev: Path = Path("/dev"), environ: Mapping[str, str] | None = None) -> Platform:
    """The platform class the probes will run on, from the chips' device files (before jax starts): what their
    declared costs are read for (probefiles.cost). JAX_PLATFORMS naming neither chip's platform is the CPU."""
    environ = os.environ if environ is None else environ
    asked = {p.strip().lower() for p in environ.get("JAX_PLATFORMS", "").split(",") if p.strip()}
    found = _chips(dev)
    names = {"tpu": {"tpu"}, "gpu": {"cuda", "gpu", "rocm"}, "cpu": {"cpu"}}[found]
    return found if not asked or asked & names else "cpu"


def run(opts: Options) -> Outcome:
    """Every task's result, in order, and (with opts.facts) what jax reported; never raises for a probe. The
    probes `opts.beside` names run at once in a second child, off the accelerator."""
    if any(name in opts.beside for name in opts.names):
        return _beside(opts)
    state = Run(opts, time.monotonic() + opts.total)
    while (state.pending or state.facts_wanted) and time.monotonic() < state.deadline:
        one_child(state)
        if state.jax_hung():  # a hang in `import jax` answers for every probe: a broken node answers in one bound
            state.not_started()
        elif state.backend_never_started():  # so does a backend that ended the process, for those that compute
            state.not_computed()
    if state.facts_wanted:  # the total bound ran out before a child could report them
        state.finish_facts(ended=None, timed_out=True, seconds=opts.total)
    return state.outcome()


def _beside(opts: Options) -> Outcome:
    """The probes `opts.beside` names in a second child with JAX_PLATFORMS=cpu (the imports probe imports libraries:
    on a TPU host, 11 s of TensorFlow's import measured beside a 1 s chip start), the others and the jax facts in
    the first, both under the same bounds; the results in the order asked for, the second's probe facts joined to
    the first's. The second child's thread is a daemon: an interrupt ends the audit, and its child with it."""
    aside = tuple(name for name in opts.names if name in opts.beside)
    first = replace(opts, names=tuple(name for name in opts.names if name not in aside), beside=())
    environ = dict(os.environ if opts.environ is None else opts.environ)
    second = replace(
        opts,
        names=aside,
        facts=False,
        beside=(),
        devices=(),
        progress=None,
        environ={**environ, "JAX_PLATFORMS": "cpu"},
    )
    plan(opts)  # every probe file read here, once, before two threads plan at once (probefiles._constants)
    done: list[Outcome] = []
    thread = threading.Thread(target=lambda: done.append(run(second)), name="envaudit-beside", daemon=True)
    thread.start()
    main = run(first)
    thread.join()
    if not done:  # it raised, as run() itself may only for the machine's own faults (no process could start)
        raise RuntimeError("the child beside the accelerator's could not be run")
    other = done[0]
    by_label = {r.run.label: r for r in [*main.results, *other.results]}
    facts = main.jax
    if facts is not None:
        facts.update(other.probe_facts)
    joined = cast(JaxFacts, {**main.probe_facts, **other.probe_facts})
    return Outcome([by_label[label] for label in labels(opts)], facts, joined)


def jax_facts(timeout: float, python: str = sys.executable) -> JaxFacts:
    """What jax reports, and nothing else: one child that runs the facts stages only."""
    facts = run(Options(timeout=timeout, total=timeout, python=python)).jax
    assert facts is not None  # run() always finishes the facts it was asked for
    return facts


LINE_LIMIT = 256 * 1024  # characters of one line read from a child; the rest of a longer line is dropped
QUEUED = 64  # lines read ahead of the parent: a child that writes faster waits on its pipe


def _pump(stream: Any, sink: queue.Queue[str | None] | Tail, stop: threading.Event) -> None:
    """Forward the stream's lines, each cut at LINE_LIMIT; into a bounded queue (put waits, so a flood stops at
    the pipe) or the tail deque. Ends at the end of the stream or when `stop` is set."""
    for line, read in _lines(stream):
        if isinstance(sink, Tail):
            sink.read += read
            if line:
                sink.lines.append(line.rstrip())
            continue
        if not line:
            continue
        while not stop.is_set():
            try:
                sink.put(line, timeout=0.1)
                break
            except queue.Full:
                continue
        if stop.is_set():
            return
    if isinstance(sink, queue.Queue):
        sink.put(None)  # the end (the parent drains the queue until this, unless it stopped reading)


def _lines(stream: Any) -> Iterator[tuple[str, int]]:
    """The stream's lines, none longer than LINE_LIMIT (an overlong one is cut there, its rest skipped, as ""), so
    that a child that prints without a newline (`cat /dev/zero`) is read in bounded memory; each with how many
    characters were read for it (what the child printed, skipped or not)."""
    skipping = False
    while chunk := stream.readline(LINE_LIMIT):
        ended = chunk.endswith("\n")
        yield ("" if skipping else chunk if ended else chunk + "\n"), len(chunk)
        skipping = not ended


WORDS = 20  # the last lines of a child's stderr kept as its last words (a NumPy 1 module's message, then a crash)
WORD_CHARS = 1000  # characters of each line kept


class Tail:
    """The last lines the child wrote on stderr (its last words when it dies), read by a thread of their own."""

    def __init__(self) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=WORDS)
        self.reader: threading.Thread | None = None
        self.read = 0  # characters read so far (a line past LINE_LIMIT counted as cut): how much the child printed

    def last(self) -> str:
        """Its last line, once the reader has seen the end of the stream (at most a second after the child is
        gone: a process it left behind may hold the stream), or "" when it wrote none."""
        if self.reader is not None:
            self.reader.join(timeout=1.0)
        return self.lines[-1] if self.lines else ""

    def words(self) -> tuple[str, ...]:
        """Its last lines (after `last`, which waits for the reader), each cut at WORD_CHARS and redacted."""
        self.last()
        return tuple(scrub(line[:WORD_CHARS]) for line in list(self.lines) if line.strip())


@dataclass
class Streamed:
    """What the running probe said as it went (probes/_kit.progress): the outcomes it found so far, by fact
    (`imports`, `calls`), and the one in flight; kept for a process that dies before its result."""

    found: dict[str, list[JSONDict]] = field(default_factory=dict)
    doing: JSONDict = field(default_factory=dict)

    def hear(self, event: JSONDict) -> None:
        facts, doing = event.get("facts"), event.get("doing")
        if isinstance(facts, dict):
            for name, outcomes in facts.items():
                kept = self.found.setdefault(str(name), [])
                if isinstance(outcomes, list) and len(kept) < MAX_IMPORTS:
                    kept += [o for o in outcomes if isinstance(o, dict)][: MAX_IMPORTS - len(kept)]
            self.doing = {}
        if isinstance(doing, dict):
            self.doing = doing


def _ahead(state: Run) -> dict[str, str]:
    """The first child's word to compile ahead (child/_main.prepare) the programs of the probes that reach their
    compile first (`COMPILES_FIRST`), on an accelerator's host: compiling there takes seconds a program (conv_chain
    4.4 s, fft 4.3 s cold on a TPU v5e) while its cores sit idle. Not in a child restarted after a crash or a hang:
    there each probe compiles in its own turn, so whatever dies is the one that was running."""
    if state.pids or state.opts.platform == "cpu":
        return {}
    ahead = [t.label for t in state.pending[1:] if probefiles.compiles_first(t.path)]
    return {PREPARE_VARIABLE: ",".join(ahead)} if ahead else {}


def one_child(state: Run) -> None:
    """One child over the pending tasks (and the jax facts while they are wanted); returns when it is gone."""
    left = state.deadline - time.monotonic()  # the total bound, as the child's clock reads it
    deadline = ["--deadline", f"{time.time() + left:.3f}"]
    argv = ["--parent-pipe", *deadline, *(["--facts"] if state.facts_wanted else [])]
    argv += [t.argument() for t in state.pending]
    with watchdog() as watch:  # the child's group dies with envaudit, even by SIGKILL
        try:
            # by path, not `-c` or `-m`: sys.path starts with the child's own directory, never the working one, so a
            # json.py the caller's directory holds is not imported. Not `-I` (nor `-P`, which would drop that own
            # directory): the audited environment is audited as its programs start, PYTHONPATH, the user site and
            # .pth files included; and its working directory is the caller's, where a relative PYTHONPATH entry
            # means what it means for the user's program
            proc = subprocess.Popen(
                [state.opts.python, str(CHILD), *argv],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                env=state.env | _ahead(state),
                start_new_session=True,  # stdin: the pipe the child watches; it ends with us, even by SIGKILL
            )
        except OSError as exc:
            return state.cannot_start(f"could not start {state.opts.python}: {exc.strerror or exc}")
        watch(proc)
        state.pids.append(proc.pid)
        if state.facts_wanted:
            state.tell("jax")
        _follow_child(state, proc)


def _follow_child(state: Run, proc: subprocess.Popen[str]) -> None:
    lines: queue.Queue[str | None] = queue.Queue(maxsize=QUEUED)
    tail = Tail()
    stop = threading.Event()
    sinks: tuple[tuple[Any, queue.Queue[str | None] | Tail], ...] = ((proc.stdout, lines), (proc.stderr, tail))
    for stream, sink in sinks:
        reader = threading.Thread(target=_pump, args=(stream, sink, stop), daemon=True)
        reader.start()
    tail.reader = reader
    try:
        _follow(state, proc, lines, tail)
    except BaseException:  # an interrupt (Ctrl-C) or a bug: the child, in its own session, must not outlive us
        reap(proc)
        raise
    finally:
        stop.set()  # a pump waiting on the full queue of a child that is gone ends


def _follow(state: Run, proc: subprocess.Popen[str], lines: queue.Queue[str | None], tail: Tail) -> None:
    """Read the child's events until it is gone; on a timeout kill it; then say how it ended."""
    reports_facts = state.facts_wanted
    current, since = (FACTS_STAGE if reports_facts else state.next_label()), time.monotonic()
    mark, printed = load.mark(proc.pid), tail.read
    started: set[str] = set()
    stage = ""  # what the running probe last said it was doing (probes/_kit.progress)
    streamed = Streamed()
    while True:
        bound = min(since + state.timeout_of(current), state.deadline)
        try:  # the bound is checked at every line: a child that keeps printing is no less late
            if time.monotonic() >= bound:
                raise queue.Empty
            line = lines.get(timeout=max(bound - time.monotonic(), 0.0))
        except queue.Empty:  # what it and the machine did meanwhile tells a loaded machine from a hang
            used = {**load.load(mark, load.mark(proc.pid)), "cost_s": state.cost_of(current)}
            if stage:
                used["stage"] = stage
            seconds = max(time.monotonic() - since, 1e-6)
            used["printed_kib_s"] = round((tail.read - printed) / 1024 / seconds, 1)  # a flood is no starved child
            code = reap(proc)
            return _ended(
                state, current, since, code, reports_facts, tail, timed_out=True, used=used, streamed=streamed
            )
        if line is None:  # the child closed its output: it is exiting, or hangs on the way out (atexit, a thread)
            code = _reap(proc, bound)
            return _ended(state, current, since, code, reports_facts, tail, timed_out=False, streamed=streamed)
        event = decode(line) or {}  # anything else on the channel is not ours, so never a probe's answer
        kind = event.get("event")
        if kind == "fact" and current == FACTS_STAGE:
            state.remember_fact(event)
        elif kind == "facts_done" and current == FACTS_STAGE:
            state.finish_facts(ended=None, timed_out=False, seconds=time.monotonic() - since)
            current, since, mark, printed = state.next_label(), time.monotonic(), load.mark(proc.pid), tail.read
        elif kind == "start" and state.is_pending(event.get("probe")) and event["probe"] not in started:
            current, since, mark, printed = str(event["probe"]), time.monotonic(), load.mark(proc.pid), tail.read
            stage, streamed = "", Streamed()
            started.add(current)  # once: a child that says it starts again does not get its bound again
            state.tell("start", current)
        elif kind in ("result", "error") and event.get("probe") == current and state.is_pending(current):
            state.remember_probe_facts(event.get("result"))
            state.report(parse_result(state.pending_task(current), event))
            since = time.monotonic()
        elif kind == "progress" and event.get("probe") == current and isinstance(event.get("stage"), str):
            # what it and the machine do from here is what its stage is judged by: tracing before a compile
            # that then blocks is CPU, and no evidence the compile progressed
            stage, mark, printed = str(event["stage"])[:32], load.mark(proc.pid), tail.read
            streamed.hear(event)
        elif kind == "memory":
            state.remember_memory(event.get("devices"))
        elif kind == "done":  # finished: do not wait for the end of output, which a forked grandchild may hold
            exit_by = min(time.monotonic() + 5.0, state.deadline)
            return _ended(state, current, since, _reap(proc, exit_by), reports_facts, tail, timed_out=False)


def _reap(proc: subprocess.Popen[str], bound: float) -> int | None:
    """The child's exit status once it has exited (killed if it lingers past `bound`; None if even then it does
    not exit); whatever it left behind in its process group (a forked helper, a stuck thread's process) is killed
    too."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=max(bound - time.monotonic(), 1.0))
    return reap(proc)


def _ended(
    state: Run,
    current: str | None,
    since: float,
    code: int | None,
    reports_facts: bool,
    tail: Tail,
    *,
    timed_out: bool,
    used: JSONDict | None = None,
    streamed: Streamed | None = None,
) -> None:
    """The child is gone: record its exit status, and blame whatever it had not finished. A timeout keeps what
    the child and its CPUs did meanwhile (`load.load`): computing but starved, or hung. A child that did not exit
    even after SIGKILL (`code` None: held in the kernel by a driver call) is a timeout too."""
    timed_out = timed_out or code is None
    streamed = streamed or Streamed()  # a child that said `done` has nothing in flight
    if reports_facts:
        state.facts_returncode = code  # the real exit status of the child that reported the jax facts
    seconds = time.monotonic() - since
    used = used or {}
    if current == FACTS_STAGE and state.facts_wanted:
        state.finish_facts(ended=code, timed_out=timed_out, seconds=seconds, last_words="\n".join(tail.words()))
        if state.facts is not None and timed_out:
            state.facts.update(cast(JaxFacts, used))  # what the child and its CPUs did (load.load)
    elif state.is_pending(current):
        task = state.pending_task(current)
        label = task.label
        if timed_out and seconds < task.timeout and time.monotonic() >= state.deadline:  # the run's total bound,
            # not its own, ended it: not run to its end, which says nothing of a hang (a cold TPU host's fft)
            why = f"not run to its end: the total bound was spent {seconds:.1f} s into it (its own: {task.timeout:g} s)"
            state.remember_lost(streamed.found, streamed.doing, why)
            state.report(task.result("timeout", {**used, "not_run": True}, seconds, why, left_out="deadline"))
        elif timed_out:  # its last words say what it was doing (the imports probe names the import in flight)
            last = tail.last()
            why = f"no answer within {task.timeout:g} s" + (f": {scrub(last)}" if last else "")
            state.remember_lost(streamed.found, streamed.doing, why)
            state.report(replace(task.result("timeout", used, seconds, why), stderr=tail.words()))
        elif code is not None:
            why = f"killed by {signal_name(code)}" if code < 0 else f"exited with status {code}"
            last = tail.last()
            detail = f"{why} while running {label}" + (f": {scrub(last)}" if last else "")
            words = tail.words()  # what it found before, and what killed it: read by the rules as a live error is
            state.remember_lost(streamed.found, streamed.doing, why, dead=True, stderr=words)
            result = task.result("crash" if code < 0 else "error", {"returncode": code}, seconds, detail)
            state.report(replace(result, stderr=words))
