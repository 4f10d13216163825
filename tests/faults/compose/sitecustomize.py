"""Fault compose: several faults at once, named in ENVAUDIT_FAULTS (comma-separated directory names of faults that
patch a module after its import), e.g. ``default_precision,scatter_noise``: a healthy GPU at default settings.

Python imports one ``sitecustomize`` per process, and two import hooks that both delegate to the meta path would
recurse into each other, so this loads each named fault without installing it and installs one patch per target
module that applies theirs in the order given.
"""

from __future__ import annotations

import os as _os
import runpy as _runpy
from collections.abc import Callable
from types import ModuleType
from types import SimpleNamespace as _Namespace

_here = _os.path.dirname(_os.path.abspath(__file__))
_hook = _Namespace(**_runpy.run_path(_os.path.join(_os.path.dirname(_here), "_hook.py")))  # tests/faults/_hook.py


def _combined(patches: list[Callable[[ModuleType], None]]) -> Callable[[ModuleType], None]:
    def patch(module: ModuleType) -> None:
        for each in patches:
            each(module)

    return patch


_by_target: dict[str, list[Callable[[ModuleType], None]]] = {}
for _name in filter(None, _os.environ.get("ENVAUDIT_FAULTS", "").split(",")):
    _fault = _hook.load(_name.strip())
    _by_target.setdefault(_fault.TARGET, []).append(_fault._patch)
for _target, _patches in _by_target.items():
    _hook.install(_target, _combined(_patches))
