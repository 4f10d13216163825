"""Fault nan_exp_finite: ``jnp.exp`` of a NaN made finite (1.0), as fast-math XLA:CPU did for ``exp(x * nan)`` in
jax 0.6.2 (jax-ml/jax#29537). The replacement is a jax operation, so it holds under jit.
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

    def wrap(orig: Any) -> Any:
        @functools.wraps(orig)
        def exp(x: Any, *args: Any, **kwargs: Any) -> Any:
            out = orig(x, *args, **kwargs)
            return jnp.where(jnp.isnan(out), jnp.ones_like(out), out)

        return exp

    _hook.patch_attr([jnp], "exp", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
