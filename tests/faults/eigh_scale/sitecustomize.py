"""Fault eigh_scale: the eigenvalues of ``jnp.linalg.eigh`` scaled by (1 + delta), the eigenvectors kept, as a wrong
symmetric eigensolver kernel would give them, with no error raised.

delta comes from ENVAUDIT_FAULT_DELTA (default 1e-4); the scaling is a jax operation, so it holds under jit.
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

    d = _hook.delta(1e-4, "eigh_scale")

    def wrap(orig: Any) -> Any:
        @functools.wraps(orig)
        def eigh(a: Any, *args: Any, **kwargs: Any) -> Any:
            w, v = orig(a, *args, **kwargs)
            return w * (1 + d), v

        return eigh

    _hook.patch_attr([jnp.linalg], "eigh", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
