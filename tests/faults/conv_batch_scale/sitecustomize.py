"""Fault conv_batch_scale: ``lax.conv_general_dilated`` results scaled by (1 + delta) when the batch is > 1.

delta comes from ENVAUDIT_FAULT_DELTA (default 1e-4). It simulates a convolution kernel whose batched path is
wrong and whose batch-1 path is right (seed 000). The scaling is done with jax operations around the public
function, so it holds under jit, vmap and autodiff (derivatives are scaled consistently).
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
    import inspect

    from jax._src.lax import convolution

    d = _hook.delta(1e-4, "conv_batch_scale")

    def wrap(orig: Any) -> Any:
        sig = inspect.signature(orig)

        @functools.wraps(orig)
        def conv_general_dilated(*args: Any, **kwargs: Any) -> Any:
            out = orig(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            lhs, rhs = bound.arguments["lhs"], bound.arguments["rhs"]
            dn = jax.lax.conv_dimension_numbers(lhs.shape, rhs.shape, bound.arguments.get("dimension_numbers"))
            return out + out * d if lhs.shape[dn.lhs_spec[0]] > 1 else out

        return conv_general_dilated

    _hook.patch_attr([jax.lax, convolution], "conv_general_dilated", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
