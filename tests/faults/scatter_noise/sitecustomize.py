"""Fault scatter_noise: what GPU atomics do to a scatter-add: the result differs in its last bits at every run.

Each result of ``lax.scatter_add`` (hence ``x.at[i].add(v)``) becomes y + y * delta * r with r standard normal
drawn on the host when the program runs (``jax.pure_callback``), delta from ENVAUDIT_FAULT_DELTA (default 1e-7,
float32's last bits), so an already compiled program differs between reruns, as XLA documents for scatter on GPUs.
"""

from __future__ import annotations

import os as _os
import runpy as _runpy
from types import ModuleType
from types import SimpleNamespace as _Namespace

_here = _os.path.dirname(_os.path.abspath(__file__))
_hook = _Namespace(**_runpy.run_path(_os.path.join(_os.path.dirname(_here), "_hook.py")))  # tests/faults/_hook.py


def _patch(jax: ModuleType) -> None:
    from jax._src.lax import slicing

    wrap = _hook.on_result(_hook.host_noise(jax, _hook.delta(1e-7, "scatter_noise")))
    _hook.patch_attr([jax.lax, slicing], "scatter_add", wrap)


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
