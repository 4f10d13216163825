"""The process that asks NVML: `collect/nvml.py` runs this file by path, with envaudit's own interpreter, and reads
its answer.

NVML runs in the process that calls it: a driver whose management library crashes (a segfault in libnvidia-ml)
kills that process, and a pynvml that raises SystemExit ends it. Asked here, either ends this short-lived child and
the audit goes on to report it. The only argument is envaudit's `sys.path` as JSON, so pynvml and envaudit are found
here exactly as in envaudit. The protocol is the jax child's (`child/_main.py`): `ENVAUDIT {json}` lines on a
duplicate of stdout (fd 1 points at stderr, so nothing pynvml or a library prints can corrupt them): `asking` just
before NVML is asked (a death before it is not NVML's), then `answer` with the facts (`NvidiaFacts`).
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> int:
    sys.path[:] = [str(entry) for entry in json.loads(argv[0])]
    from envaudit.child._main import channel, die_with_parent, send
    from envaudit.collect import nvml

    die_with_parent()  # a parent killed while NVML hangs leaves no process behind
    out = channel()
    send(out, event="asking")
    try:
        facts = nvml.get_nvidia()
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, ...: what pynvml raised, said, not a dead end
        facts = nvml.raised(exc)
    send(out, event="answer", facts=facts)
    return 0


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # the answer is flushed; nothing to tear down that anyone waits for
