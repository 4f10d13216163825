"""Fault call_hangs: `import optax` works, and `optax.adam` never returns, like a call that waits on a lock."""

from __future__ import annotations

import os as _os
import runpy as _runpy
import time
from types import SimpleNamespace as _Namespace
from typing import Any

_here = _os.path.dirname(_os.path.abspath(__file__))
_hook = _Namespace(**_runpy.run_path(_os.path.join(_os.path.dirname(_here), "_hook.py")))  # tests/faults/_hook.py


def _patch(optax: Any) -> None:  # a module: what it holds is typed by optax
    def hangs(*_: Any, **__: Any) -> Any:
        time.sleep(600)

    optax.adam = hangs


_hook.install("optax", _patch)
