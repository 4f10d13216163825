"""Fault device_corrupt: one device of a node computes wrong numbers (a bad HBM stack, a degraded SM): every float
array that lives on the device with jax id ENVAUDIT_FAULT_DEVICE (default 2) reaches the host multiplied by
(1 + delta), delta from ENVAUDIT_FAULT_DELTA (default 1e-4). The other devices are untouched. It patches the host
copy as a program's output shards are read (``Shard.data``), so it holds whatever program ran there; run with
several CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=4).
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
    from jax._src import array

    bad, d = int(_os.environ.get("ENVAUDIT_FAULT_DEVICE", "2")), _hook.delta(1e-4, "device_corrupt")
    data: Any = vars(array.Shard)["data"]  # the property object itself, not its value

    @functools.wraps(data.fget)
    def corrupted(self: Any) -> Any:
        value = data.fget(self)
        if int(self.device.id) == bad and value is not None and jnp.issubdtype(value.dtype, jnp.floating):
            return value * value.dtype.type(1 + d)  # computed on that device, as its wrong answer would be
        return value

    setattr(array.Shard, "data", property(corrupted))  # noqa: B010 - a property replaces a property


TARGET = "jax"
if __name__ == "sitecustomize":  # loaded by tests/faults/compose under another name: no install
    _hook.install(TARGET, _patch)
