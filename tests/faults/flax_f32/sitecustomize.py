"""Fault flax_f32: ``flax.linen.Dense`` casts its output to float32, like flax's old ``dtype=float32`` default
(seed 000: "even though I run with JAX_ENABLE_X64=True, the result of apply_fn still has float32 dtype").
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


def _patch(linen: ModuleType) -> None:
    import jax.numpy as jnp

    dense = linen.Dense
    orig = dense.__call__

    @functools.wraps(orig)
    def __call__(self: Any, inputs: Any) -> Any:
        return orig(self, inputs).astype(jnp.float32)

    dense.__call__ = __call__


TARGET = "flax.linen"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
