"""Fault fft_batch_scale: ``jnp.fft.fft``, ``ifft`` and ``rfft`` results scaled by (1 + delta) when more than one row
is transformed at once, as a wrong batched FFT plan (jax-ml/jax#27591) would be: the batch-1 path stays right.

delta comes from ENVAUDIT_FAULT_DELTA (default 1e-4); the scaling is a jax operation, so it holds under jit and
lax.map (whose chunks are batches too).
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

    d = _hook.delta(1e-4, "fft_batch_scale")

    def wrap(orig: Any) -> Any:
        @functools.wraps(orig)
        def transform(a: Any, *args: Any, **kwargs: Any) -> Any:
            out = orig(a, *args, **kwargs)
            return out * (1 + d) if jnp.ndim(a) > 1 and jnp.shape(a)[0] > 1 else out

        return transform

    for name in ("fft", "ifft", "rfft"):
        _hook.patch_attr([jnp.fft], name, wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
