"""Fault noise: tiny random noise on every matmul (``lax.dot_general``) and convolution result, fresh at every
execution, even of an already compiled function -- run-to-run nondeterminism like GPU atomics.

Each result x becomes x + x * delta * r with r standard normal from the host (``jax.pure_callback``, so the
noise is drawn when the program runs, not when it is traced) and delta from ENVAUDIT_FAULT_DELTA (default 1e-6).
The noise carries no gradient.
"""

from __future__ import annotations

import functools
import importlib.util as _util
import os as _os
from types import ModuleType
from typing import Any

_spec = _util.spec_from_file_location(
    "_envaudit_fault_hook", _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "_hook.py")
)
assert _spec is not None and _spec.loader is not None
_hook = _util.module_from_spec(_spec)
_spec.loader.exec_module(_hook)


def _patch(jax: ModuleType) -> None:
    import jax.numpy as jnp
    import numpy as np
    from jax._src.lax import convolution
    from jax._src.lax import lax as lax_internal

    d = _hook.delta(1e-6, "noise")
    rng = np.random.default_rng()

    def noisy(out: Any) -> Any:
        if not jnp.issubdtype(out.dtype, jnp.floating):
            return out
        shape, dtype = out.shape, out.dtype
        r = jax.pure_callback(lambda: rng.standard_normal(shape).astype(dtype), jax.ShapeDtypeStruct(shape, dtype))
        return out + out * jax.lax.stop_gradient(r) * d

    def wrap(orig: Any) -> Any:
        @functools.wraps(orig)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return noisy(orig(*args, **kwargs))

        return wrapped

    _hook.patch_attr([jax.lax, lax_internal], "dot_general", wrap)
    _hook.patch_attr([jax.lax, convolution], "conv_general_dilated", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
