"""Fault eager_sqrt: ``jnp.sqrt`` scaled by (1 + delta) when it runs eagerly (outside any trace), right under jit: an
eager-only wrong answer like jax-ml/jax#40633 (the sqrt of a constant), which every jitted test passes.

delta comes from ENVAUDIT_FAULT_DELTA (default 1e-4).
"""

from __future__ import annotations

import functools
import os as _os
import runpy as _runpy
from types import ModuleType
from types import SimpleNamespace as _Namespace
from typing import Any

_here = _os.path.dirname(_os.path.abspath(__file__))
_hook = _Namespace(**_runpy.run_path(_os.path.join(_os.path.dirname(_here), "_hook.py")))  # tests/faults/_hook.py


def _patch(jax: ModuleType) -> None:
    import jax.numpy as jnp
    from jax._src import core

    d = _hook.delta(1e-4, "eager_sqrt")

    def wrap(orig: Any) -> Any:
        @functools.wraps(orig)
        def sqrt(x: Any, *args: Any, **kwargs: Any) -> Any:
            out = orig(x, *args, **kwargs)
            return out * (1 + d) if core.trace_state_clean() else out  # clean: no jit or grad is tracing

        return sqrt

    _hook.patch_attr([jnp], "sqrt", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
