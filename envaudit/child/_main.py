"""The child process: what jax itself reports, then the probes one after another, all on one jax import.

Run by path as ``_main.py [--parent-pipe] [--deadline TIME] [--facts] LABEL:PRECISION:BOUND:PROBE_FILE...`` by the
interpreter being audited, so it imports only the standard library (the probes import what they test,
``_jaxfacts.py`` is loaded by path); the parent imports it only for its protocol constants. TIME is the run's total
bound as `time.time()` reads it; each probe's BOUND (seconds), or what is left of TIME if less, is in its
environment as ENVAUDIT_PROBE_BOUND_S while it runs. The protocol (one ``ENVAUDIT {json}`` line per
event) goes to a duplicate of the original stdout while fd 1 is pointed at stderr, so whatever a probe or a
library prints cannot corrupt it.
Each event is flushed before the next step starts, so when the process dies the parent knows what was running.

Events, in order: ``fact`` (one per jax facts stage, with --facts) and ``facts_done``; per task ``start``, any
``progress`` (probes/_kit.progress: a stage, the outcomes found so far, the one in flight), then ``result`` or
``error``; ``memory`` (each device's allocator statistics after the probes); ``done``.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import signal
import sys
import threading
import time
import traceback
from types import ModuleType
from typing import Any, TextIO

PREFIX = "ENVAUDIT "
BOUND_VARIABLE = "ENVAUDIT_PROBE_BOUND_S"  # the running probe's bound in seconds (probes/_kit.py reads it)
PREPARE_VARIABLE = "ENVAUDIT_PREPARE"  # labels of the tasks whose programs are compiled ahead (comma-separated)


def channel() -> TextIO:
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", buffering=1)


_SENDING = threading.Lock()  # a probe's thread may tell its progress while the main thread sends an event


def send(out: TextIO, **event: Any) -> None:
    line = PREFIX + json.dumps(event, default=str) + "\n"
    with _SENDING:
        out.write(line)
        out.flush()


def decode(line: str) -> dict[str, Any] | None:
    """An event of the protocol `send` writes, or None for anything else printed on that channel (pure): not ours,
    not JSON, or nested deeper than Python's stack."""
    if not line.startswith(PREFIX):
        return None
    try:
        event = json.loads(line[len(PREFIX) :])
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


_LOADED: dict[str, ModuleType] = {}  # path -> the probe's module, loaded once for both threads
_LOADING = threading.Lock()


def probe_module(path: str) -> ModuleType:
    """The probe file's module, loaded once (the preparing thread and the run share it)."""
    with _LOADING:
        if path not in _LOADED:
            if os.path.dirname(path) not in sys.path:  # a probe imports its kit (_kit.py) from beside it
                sys.path.insert(0, os.path.dirname(path))
            _LOADED[path] = load(path, "envaudit_probe_" + os.path.splitext(os.path.basename(path))[0])
        return _LOADED[path]


def prepare(tasks: list[tuple[str, str, str]]) -> None:
    """Compile ahead, in this thread and the kit's pool, what each of these probes (label, precision, path) will
    compile when its turn comes (probes/_kit.prepare): on an accelerator's host compiling takes seconds a program
    and the cores are idle while one probe runs. What fails here is left for the probe's own run to say."""
    for _label, precision, path in tasks:
        try:
            module = probe_module(path)
            module.kit.prepare(module.run, precision)
        except BaseException:  # its own run reports it, under its own bound
            continue


def load(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_RUNNING: list[tuple[TextIO, str]] = []  # the probe running now, for envaudit_progress
# the running probe's seconds of compiling so far (-1: it said nothing of compiling), and when it last began
_COMPILING: list[float] = [-1.0, 0.0]


def envaudit_progress(stage: str, facts: Any = None, doing: Any = None) -> None:
    """What the running probe says it is doing (probes/_kit.progress: "compiling", "compiled"), sent as an event,
    with the outcomes it found so far and the one in flight where it gives them (the parent keeps them for a crash)."""
    if stage == "compiling":
        _COMPILING[:] = [max(_COMPILING[0], 0.0), time.monotonic()]
    elif stage == "compiled" and _COMPILING[1]:
        _COMPILING[:] = [_COMPILING[0] + time.monotonic() - _COMPILING[1], 0.0]
    if _RUNNING:
        out, label = _RUNNING[-1]
        extra = {k: v for k, v in (("facts", facts), ("doing", doing)) if isinstance(v, dict) and v}
        send(out, event="progress", probe=label, stage=stage, **extra)


def run_task(out: TextIO, label: str, precision: str, path: str) -> None:
    send(out, event="start", probe=label)
    _RUNNING[:] = [(out, label)]
    _COMPILING[:] = [-1.0, 0.0]
    start = time.monotonic()
    try:
        module = probe_module(path)
        result = module.run(precision)
        took = time.monotonic() - start
        said = {"compile_s": _COMPILING[0]} if _COMPILING[0] >= 0 else {}
        send(out, event="result", probe=label, result=result, duration_s=took, **said)
    except ImportError as exc:
        text = f"{type(exc).__name__}: {exc}"
        send(out, event="error", probe=label, kind="import", error=text, duration_s=time.monotonic() - start)
    except BaseException as exc:  # a probe that raises is a finding with its text, not the end of the others
        text = f"{type(exc).__name__}: {exc}"
        send(
            out,
            event="error",
            probe=label,
            kind="exception",
            error=text,
            trace=traceback.format_exc(limit=4),
            duration_s=time.monotonic() - start,
        )


def die_with_parent() -> None:
    """The kernel kills this child when its parent dies (Linux's PR_SET_PDEATHSIG): watch_parent needs the GIL,
    which a C call that never returns can hold for ever. The watcher stays, for the processes the child started
    and for a parent that died before this call."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def watch_parent() -> None:
    """With --parent-pipe, fd 0 is a pipe whose other end only the parent holds: when it reads end-of-file the
    parent is gone (even by SIGKILL, which no handler sees), and this child and whatever it started end too."""
    while os.read(0, 4096):
        pass
    os.killpg(os.getpgrp(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    # No cyclic garbage collection in this short-lived child: the jax import and the probes' tracing make many
    # objects, and collections kept re-scanning them (measured over the default set: 0.07-0.1 s less wall time,
    # the same peak memory, 254 MB); whatever is left is freed when the child exits.
    gc.disable()
    out = channel()
    here = os.path.dirname(os.path.abspath(__file__))
    facts = load(os.path.join(here, "_jaxfacts.py"), "envaudit_jaxfacts")
    tasks = argv
    if tasks[:1] == ["--parent-pipe"]:
        tasks = tasks[1:]
        die_with_parent()
        threading.Thread(target=watch_parent, name="envaudit-parent", daemon=True).start()
    deadline = float("inf")  # the run's total bound as a time (time.time()), when the parent gives one
    if tasks[:1] == ["--deadline"]:
        deadline, tasks = float(tasks[1]), tasks[2:]
    if tasks[:1] == ["--facts"]:
        tasks = tasks[1:]
        facts.stages(lambda stage, **data: send(out, event="fact", stage=stage, **data))
        send(out, event="facts_done")
    parsed = [task.split(":", 3) for task in tasks]  # LABEL:PRECISION:BOUND:PATH, only a path may hold a colon
    ahead = set(filter(None, os.environ.get(PREPARE_VARIABLE, "").split(",")))
    if ahead:  # the first task compiles itself; those after it are compiled while it runs
        later = [(label, precision, path) for label, precision, _, path in parsed[1:] if label in ahead]
        threading.Thread(target=prepare, args=(later,), name="envaudit-prepare", daemon=True).start()
    for label, precision, bound, path in parsed:
        # the probe's own bound, or what is left of the total if less: for a probe that keeps to it (kit.bound_s)
        os.environ[BOUND_VARIABLE] = f"{max(min(float(bound), deadline - time.time()), 0.0):.3f}"
        run_task(out, label, precision, path)
    send(out, event="memory", devices=facts.device_memory())
    send(out, event="done")
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stderr.flush()
    # Every event is flushed; what is left is the interpreter's and jax's teardown (atexit handlers, freeing the
    # backend and every module), 45-55 ms measured, which nobody waits for in a probe child.
    os._exit(code)
