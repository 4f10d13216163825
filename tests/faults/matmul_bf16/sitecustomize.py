"""Fault matmul_bf16: the floating operands of every matmul (``lax.dot_general``, hence jnp.matmul, jnp.dot,
jnp.einsum and ``@``) rounded to bfloat16 and back, as a TPU's default-precision pass or a bf16 kernel would.
The result keeps its dtype; it holds under jit and autodiff.
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
    from jax._src.lax import lax as lax_internal

    def rounded(x: Any) -> Any:
        dtype = jnp.result_type(x)
        if not jnp.issubdtype(dtype, jnp.floating) or dtype == jnp.bfloat16:
            return x
        return jax.lax.convert_element_type(jax.lax.convert_element_type(x, jnp.bfloat16), dtype)

    def wrap(orig: Any) -> Any:
        @functools.wraps(orig)
        def dot_general(lhs: Any, rhs: Any, *args: Any, **kwargs: Any) -> Any:
            return orig(rounded(lhs), rounded(rhs), *args, **kwargs)

        return dot_general

    _hook.patch_attr([jax.lax, lax_internal], "dot_general", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
