"""Fault flax_f32: ``flax.linen.Dense`` casts its output to float32, like flax's old ``dtype=float32`` default
(seed 000: "even though I run with JAX_ENABLE_X64=True, the result of apply_fn still has float32 dtype").
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


def _patch(linen: ModuleType) -> None:
    import jax.numpy as jnp

    dense = linen.Dense
    orig = dense.__call__

    @functools.wraps(orig)
    def __call__(self: Any, inputs: Any) -> Any:
        return orig(self, inputs).astype(jnp.float32)

    dense.__call__ = __call__


TARGET = "flax.linen"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
