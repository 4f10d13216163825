"""Fault dense_batch_scale: matmul results (``lax.dot_general``, so jnp.matmul and ``@`` too) scaled by
(1 + delta) when the left operand has two or more dimensions and its first (batch) dimension is > 1.

delta comes from ENVAUDIT_FAULT_DELTA (default 1e-4): a dense kernel whose batched path is wrong and whose
batch-1 path is right. Done with jax operations around the function, so it holds under jit and autodiff.
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
    from jax._src.lax import lax as lax_internal

    d = _hook.delta(1e-4, "dense_batch_scale")

    def wrap(orig: Any) -> Any:
        @functools.wraps(orig)
        def dot_general(lhs: Any, *args: Any, **kwargs: Any) -> Any:
            out = orig(lhs, *args, **kwargs)
            shape: tuple[int, ...] = getattr(lhs, "shape", ())
            return out + out * d if len(shape) >= 2 and shape[0] > 1 else out

        return dot_general

    _hook.patch_attr([jax.lax, lax_internal], "dot_general", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
