"""Fault noise: tiny random noise on every matmul (``lax.dot_general``) and convolution result, fresh at every
execution, even of an already compiled function -- run-to-run nondeterminism like GPU atomics.

Each result x becomes x + x * delta * r with r standard normal from the host (``jax.pure_callback``, so the
noise is drawn when the program runs, not when it is traced) and delta from ENVAUDIT_FAULT_DELTA (default 1e-6).
The noise carries no gradient.
"""

from __future__ import annotations

import os as _os
import runpy as _runpy
from types import ModuleType
from types import SimpleNamespace as _Namespace

_here = _os.path.dirname(_os.path.abspath(__file__))
_hook = _Namespace(**_runpy.run_path(_os.path.join(_os.path.dirname(_here), "_hook.py")))  # tests/faults/_hook.py


def _patch(jax: ModuleType) -> None:
    from jax._src.lax import convolution
    from jax._src.lax import lax as lax_internal

    wrap = _hook.on_result(_hook.host_noise(jax, _hook.delta(1e-6, "noise")))
    _hook.patch_attr([jax.lax, lax_internal], "dot_general", wrap)
    _hook.patch_attr([jax.lax, convolution], "conv_general_dilated", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
