"""Fault tpu_held: another process holds the host's TPU. jax's first request for its devices raises what jax 0.10.2
with libtpu 0.0.42 raised on a TPU v5e host while a first process held the chip (measured; jax's own JAX_PLATFORMS
default on a TPU host, 'tpu,cpu', makes it raise rather than fall back to the CPU).
"""

from __future__ import annotations

import os as _os
import runpy as _runpy
from types import ModuleType
from types import SimpleNamespace as _Namespace
from typing import Any

_here = _os.path.dirname(_os.path.abspath(__file__))
_hook = _Namespace(**_runpy.run_path(_os.path.join(_os.path.dirname(_here), "_hook.py")))  # tests/faults/_hook.py

MESSAGE = (
    "Unable to initialize backend 'tpu': ABORTED: Internal error when accessing libtpu multi-process lockfile. "
    "Run \"$ sudo rm /tmp/libtpu_lockfile\". (set JAX_PLATFORMS='' to automatically choose an available backend)"
)


def _patch(jax: ModuleType) -> None:
    from jax._src import xla_bridge

    def backends(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(MESSAGE)

    xla_bridge.backends = backends


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
