"""Fault spin_in_compile: XLA's compile of a probe's programs takes longer than any bound while it burns a CPU, as a
cold compile on a slow host does (a fresh TPU v5e host compiled fft for 19 s of CPU against a 20 s bound): the
probe's kit says "compiling" first, so envaudit can tell this from a hang. With ENVAUDIT_FAULT_BLOCK=1 the compile
blocks instead, using no CPU (a compile that waits on a lock): that is a hang, compiling or not."""

from __future__ import annotations

import os as _os
import runpy as _runpy
import time
from types import SimpleNamespace as _Namespace
from typing import Any

_here = _os.path.dirname(_os.path.abspath(__file__))
_hook = _Namespace(**_runpy.run_path(_os.path.join(_os.path.dirname(_here), "_hook.py")))  # tests/faults/_hook.py


def _patch(stages: Any) -> None:  # jax.stages: what it holds is typed by jax
    def spins(self: Any, *_: Any, **__: Any) -> Any:
        end = time.monotonic() + 600
        while time.monotonic() < end:
            if _os.environ.get("ENVAUDIT_FAULT_BLOCK") == "1":
                time.sleep(600)
            sum(range(10_000))  # busy, as a compiler is

    stages.Lowered.compile = spins


_hook.install("jax.stages", _patch)
