"""Fault optax_update_raises: `import optax` works, and the update of `optax.adam` raises what a library that uses a
jax name jax removed raises on its first call (jaxopt 0.8.3's `OptaxSolver.run` and `jax.tree_map` with jax 0.6.0)."""

from __future__ import annotations

import os as _os
import runpy as _runpy
from types import SimpleNamespace as _Namespace
from typing import Any

_here = _os.path.dirname(_os.path.abspath(__file__))
_hook = _Namespace(**_runpy.run_path(_os.path.join(_os.path.dirname(_here), "_hook.py")))  # tests/faults/_hook.py


def _patch(optax: Any) -> None:  # a module: what it holds is typed by optax
    adam = optax.adam

    def broken(*args: Any, **kwargs: Any) -> Any:
        made = adam(*args, **kwargs)

        def update(*_: Any, **__: Any) -> Any:
            raise AttributeError("module 'jax' has no attribute 'tree_map'")

        return made._replace(update=update)

    optax.adam = broken


_hook.install("optax", _patch)
