"""Fault default_precision: what a healthy NVIDIA GPU of compute capability >= 8.0 does at jax's default precision.

The float32 operands of every matmul (``lax.dot_general``) and convolution (``lax.conv_general_dilated``) whose
precision is DEFAULT or HIGH are rounded to ENVAUDIT_FAULT_MANTISSA mantissa bits (default 10: TF32; 7 is
bfloat16) with ``lax.reduce_precision``, as cuBLAS and cuDNN do on TF32 tensor cores; operations asked for at
HIGHEST (``precision=HIGHEST``, or ``jax_default_matmul_precision`` highest/float32 when traced) are left exact,
as on the GPU. The decision is taken when the operation is traced, so it holds under jit and autodiff.
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

FULL = {"highest", "float32", "f32_f32_f32", "f64_f64_f64"}


def mantissa() -> int:
    return int(_os.environ.get("ENVAUDIT_FAULT_MANTISSA", "10"))


def _reduced(jax: ModuleType, precision: Any) -> bool:
    """True when this operation runs below float32: DEFAULT or HIGH, asked for or inherited from the config."""
    names = [str(p).rsplit(".", 1)[-1].lower() for p in (precision if isinstance(precision, tuple) else (precision,))]
    if names == ["none"]:
        names = [str(jax.config.jax_default_matmul_precision).lower()]
    return not any(name in FULL for name in names)


def _patch(jax: ModuleType) -> None:
    import jax.numpy as jnp
    from jax._src.lax import convolution
    from jax._src.lax import lax as lax_internal

    bits = mantissa()

    def rounded(x: Any) -> Any:
        if jnp.result_type(x) != jnp.float32:  # TF32 and bfloat16 passes replace float32 arithmetic only
            return x
        return jax.lax.reduce_precision(x, exponent_bits=8, mantissa_bits=bits)

    def wrap(orig: Any) -> Any:
        @functools.wraps(orig)
        def op(lhs: Any, rhs: Any, *args: Any, **kwargs: Any) -> Any:
            position = 1 if orig.__name__ == "dot_general" else 7  # the argument after lhs, rhs that is precision
            precision = kwargs.get("precision", args[position] if len(args) > position else None)
            if _reduced(jax, precision):
                lhs, rhs = rounded(lhs), rounded(rhs)
            return orig(lhs, rhs, *args, **kwargs)

        return op

    _hook.patch_attr([jax.lax, lax_internal], "dot_general", wrap)
    _hook.patch_attr([jax.lax, convolution], "conv_general_dilated", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
