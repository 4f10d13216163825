"""Finds the probes and runs them in child processes, so that a crash, a hang or an import error is a result.

One child runs the probes in turn (one jax import for all); when it dies or hangs, the probe it was running gets
`crash` or `timeout`, the child is killed with its process group, and a new child runs the remaining probes. The
children inherit the user's environment, which is what is audited, plus jax's persistent compilation cache in
envaudit's cache directory (unless the user set one, or `--no-cache`), so repeated node checks compile nothing.
"""

from __future__ import annotations

import ast
import collections
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envaudit import cachedir
from envaudit.collect.jaxinfo import kill_group, parse_child, signal_name
from envaudit.model import ProbeResult

CHILD = Path(__file__).with_name("_probe_child.py")
PREFIX = "ENVAUDIT "


def probes_dir() -> Path:
    """Probes ship inside the wheel as envaudit/_probes; in a checkout they are the top-level probes/."""
    shipped = Path(__file__).with_name("_probes")
    return shipped if shipped.is_dir() else Path(__file__).resolve().parent.parent / "probes"


def available() -> dict[str, Path]:
    return {p.stem: p for p in sorted(probes_dir().glob("*.py")) if not p.name.startswith("_")}


def summary(path: Path) -> str:
    """The first line of a probe's docstring, read without importing it (importing would import jax)."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return docstring.splitlines()[0] if docstring else ""


@dataclass(frozen=True)
class Options:
    names: tuple[str, ...]
    precision: str = "auto"  # auto | float32 | float64
    timeout: float = 120.0  # per probe
    total: float = 600.0  # whole run
    cache: bool = True


def child_env(cache: bool) -> dict[str, str]:
    env = dict(os.environ)
    if cache and "JAX_COMPILATION_CACHE_DIR" not in env:
        env["JAX_COMPILATION_CACHE_DIR"] = str(cachedir.cache_dir() / "jax-compilation-cache")
        env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
        env.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
    return env


def parse_result(name: str, event: dict[str, Any]) -> ProbeResult:
    """A result or error event from the child as a ProbeResult; anything malformed is 'error' (pure)."""
    duration = float(event.get("duration_s") or 0.0)
    if event.get("event") == "error":
        kind = str(event.get("kind", "exception"))
        return ProbeResult(name, "error", {"error_kind": kind}, duration, str(event.get("error", "")))
    result = event.get("result")
    if not isinstance(result, dict) or result.get("status") not in ("pass", "fail", "skip"):
        return ProbeResult(name, "error", {"error_kind": "unreadable"}, duration, f"unreadable result: {result!r:.200}")
    metrics = result.get("metrics") if isinstance(result.get("metrics"), dict) else {}
    return ProbeResult(name, str(result["status"]), dict(metrics or {}), duration, str(result.get("message") or ""))


def _pump(stream: Any, sink: queue.Queue[str | None] | collections.deque[str]) -> None:
    for line in stream:
        sink.put(line) if isinstance(sink, queue.Queue) else sink.append(line.rstrip())
    if isinstance(sink, queue.Queue):
        sink.put(None)


FACTS = "(jax facts)"  # a pseudo-probe: the stages of collect/_jax_child.py, run first in the probe child


def _one_child(
    pending: list[str], opts: Options, deadline: float, done: Callable[[ProbeResult], None], facts: list[str]
) -> None:
    """Run one child over `pending`, reporting each probe through `done`; returns when the child is gone."""
    paths = [str(available()[n]) for n in pending if n != FACTS]
    flag = ["--facts"] if pending[0] == FACTS else []
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), opts.precision, *flag, *paths], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, encoding="utf-8", errors="replace", env=child_env(opts.cache),
        start_new_session=True,
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()
    tail: collections.deque[str] = collections.deque(maxlen=5)
    for stream, sink in ((proc.stdout, lines), (proc.stderr, tail)):
        threading.Thread(target=_pump, args=(stream, sink), daemon=True).start()
    try:
        _follow(proc, lines, tail, pending, opts, deadline, done, facts)
    except BaseException:  # an interrupt (Ctrl-C) or a bug: the child, in its own session, must not outlive us
        kill_group(proc)
        proc.wait()
        raise


def _follow(
    proc: subprocess.Popen[str],
    lines: queue.Queue[str | None],
    tail: collections.deque[str],
    pending: list[str],
    opts: Options,
    deadline: float,
    done: Callable[[ProbeResult], None],
    facts: list[str],
) -> None:
    """Read the child's events until it is gone, reporting each probe through `done`; times out and kills it."""
    current, since = pending[0], time.monotonic()
    while True:
        wait = min(since + opts.timeout, deadline) - time.monotonic()
        try:
            line = lines.get(timeout=max(wait, 0.0))
        except queue.Empty:
            kill_group(proc)
            proc.wait()
            if current in pending:
                why = f"no answer within {opts.timeout:g} s"
                done(ProbeResult(current, "timeout", {}, time.monotonic() - since, why))
            return
        if line is None:  # the child closed its output: it is exiting, or hangs on the way out (atexit, a thread)
            try:
                code = proc.wait(timeout=max(min(since + opts.timeout, deadline) - time.monotonic(), 1.0))
            except subprocess.TimeoutExpired:
                kill_group(proc)
                code = proc.wait()
            if current in pending:
                status = "crash" if code < 0 else "error"
                why = f"killed by {signal_name(code)}" if code < 0 else f"exited with status {code}"
                detail = f"{why} while running {current}" + (f": {tail[-1]}" if tail else "")
                done(ProbeResult(current, status, {"returncode": code}, time.monotonic() - since, detail))
            return
        try:
            event = json.loads(line[len(PREFIX) :]) if line.startswith(PREFIX) else None
        except ValueError:
            event = None
        if not isinstance(event, dict):
            continue  # not ours: the protocol has its own channel, so this cannot be a probe's answer
        kind = event.pop("event", None)
        if kind == "fact" and current == FACTS:
            facts.append(json.dumps(event))
        elif kind == "facts_done" and current == FACTS:
            done(ProbeResult(FACTS, "pass", {"returncode": 0}, time.monotonic() - since))
            current, since = (pending[0] if pending else ""), time.monotonic()
        elif kind == "start" and event.get("probe") in pending:
            current, since = str(event["probe"]), time.monotonic()
        elif kind in ("result", "error") and event.get("probe") == current:
            done(parse_result(current, {"event": kind, **event}))
            since = time.monotonic()


@dataclass(frozen=True)
class Outcome:
    results: list[ProbeResult]
    jax: dict[str, Any] | None  # facts.jax as the probe child saw it, when it was asked to report them


def run_probes(opts: Options, progress: Callable[[str], None] | None = None, *, facts: bool = False) -> Outcome:
    """Every named probe's result, in order, and (with `facts`) what jax reported; never raises for a probe."""
    unknown = [n for n in opts.names if n not in available()]
    results: dict[str, ProbeResult] = {n: ProbeResult(n, "error", {}, 0.0, "no such probe") for n in unknown}
    pending = ([FACTS] if facts else []) + [n for n in opts.names if n not in unknown]
    deadline = time.monotonic() + opts.total
    fact_lines: list[str] = []

    def done(result: ProbeResult) -> None:
        results[result.name] = result
        if result.name in pending:
            pending.remove(result.name)
        if progress and result.name != FACTS:
            progress(f"probe {result.name}: {result.status} ({result.duration_s:.1f} s)")

    while pending and time.monotonic() < deadline:
        _one_child(pending, opts, deadline, done, fact_lines)
    for name in pending:
        results[name] = ProbeResult(name, "timeout", {}, 0.0, f"not run: the total bound of {opts.total:g} s was spent")
    jax = None
    if facts:
        seen = results[FACTS]
        code = seen.metrics.get("returncode")
        jax = parse_child("\n".join(fact_lines), seen.message, code if isinstance(code, int) else None,
                          seen.status == "timeout", seen.duration_s)  # fmt: skip
    return Outcome([results[n] for n in opts.names], jax)
