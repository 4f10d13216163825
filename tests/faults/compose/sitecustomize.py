"""Fault compose: several faults at once, named in ENVAUDIT_FAULTS (comma-separated directory names of faults that
patch a module after its import), e.g. ``default_precision,scatter_noise``: a healthy GPU at default settings.

Python imports one ``sitecustomize`` per process, and two import hooks that both delegate to the meta path would
recurse into each other, so this loads each named fault without installing it and installs one patch per target
module that applies theirs in the order given.
"""

from __future__ import annotations

import importlib.util as _util
import os as _os
from collections.abc import Callable
from types import ModuleType

_spec = _util.spec_from_file_location(
    "_envaudit_fault_hook", _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "_hook.py")
)
assert _spec is not None and _spec.loader is not None
_hook = _util.module_from_spec(_spec)
_spec.loader.exec_module(_hook)


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
