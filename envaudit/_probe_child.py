"""Runs probes in a child process, one after another, sharing one jax import; reports each on a private channel.

Run by path as `_probe_child.py PRECISION [--facts] PROBE_FILE...`; with --facts it first reports what jax itself
says (the stages of collect/_jax_child.py), so that a full audit imports jax once. It imports only the standard
library (the probes import what they test). The protocol goes to a duplicate of the original stdout, and fd 1 is
pointed at stderr, so whatever a probe or a library prints cannot corrupt it. Each event is flushed before the next
probe starts, so when the process dies the parent knows which probe or stage was running.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import sys
import time
import traceback
from typing import Any, TextIO


def channel() -> TextIO:
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", buffering=1)


def send(out: TextIO, **event: Any) -> None:
    out.write("ENVAUDIT " + json.dumps(event, default=str) + "\n")
    out.flush()


def load(path: str) -> Any:
    name = "envaudit_probe_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load probe file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def facts(out: TextIO) -> None:
    """The jax facts stages (collect/_jax_child.py), reported as `fact` events before any probe runs."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "collect", "_jax_child.py")
    spec = importlib.util.spec_from_file_location("envaudit_jax_child", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(lambda stage, **data: send(out, event="fact", stage=stage, **data))


def main(argv: list[str]) -> int:
    # No cyclic garbage collection in this short-lived child: the jax import and the probes' tracing make many
    # objects, and collections kept re-scanning them (measured over the default set: 0.07-0.1 s less wall time,
    # the same peak memory, 254 MB); whatever is left is freed when the child exits.
    gc.disable()
    out = channel()
    precision, paths = argv[0], argv[1:]
    if paths[:1] == ["--facts"]:
        paths = paths[1:]
        facts(out)
        send(out, event="facts_done")
    for path in paths:
        label = os.path.splitext(os.path.basename(path))[0]
        send(out, event="start", probe=label)
        start = time.monotonic()
        try:
            result = load(path).run(precision)
            send(out, event="result", probe=label, result=result, duration_s=time.monotonic() - start)
        except ImportError as exc:
            text = f"{type(exc).__name__}: {exc}"
            send(out, event="error", probe=label, kind="import", error=text, duration_s=time.monotonic() - start)
        except BaseException as exc:  # a probe that raises is a finding with its text, not the end of the others
            text = f"{type(exc).__name__}: {exc}"
            send(out, event="error", probe=label, kind="exception", error=text,
                 trace=traceback.format_exc(limit=4), duration_s=time.monotonic() - start)  # fmt: skip
    send(out, event="done")
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stderr.flush()
    # Every event is flushed; what is left is the interpreter's and jax's teardown (atexit handlers, freeing the
    # backend and every module), 45-55 ms measured, which nobody waits for in a probe child.
    os._exit(code)
