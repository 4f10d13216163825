"""Shared by the fault ``sitecustomize`` modules: run a patch right after a module is first imported.

A fault directory is put first on PYTHONPATH of a child process; its ``sitecustomize`` registers an
``AfterImport`` finder on ``sys.meta_path``. The finder imports nothing itself (importing jax in sitecustomize
would slow every Python start): when the target module is first imported it lets the other finders locate it
and wraps that loader's ``exec_module`` so that the patch runs on the fully executed module, before the
importer sees it. The patch runs once; the finder stays silent when the target is not installed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any


def delta(default: float, fault: str = "") -> float:
    """The fault's size: ENVAUDIT_FAULT_DELTA_<FAULT> (for one of several composed faults), else
    ENVAUDIT_FAULT_DELTA, else the fault's default."""
    return float(
        os.environ.get(f"ENVAUDIT_FAULT_DELTA_{fault.upper()}", os.environ.get("ENVAUDIT_FAULT_DELTA", default))
    )


class AfterImport:
    def __init__(self, target: str, patch: Callable[[ModuleType], None]) -> None:
        self.target, self.patch, self.done = target, patch, False

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> ModuleSpec | None:
        if fullname != self.target or self.done:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: ModuleSpec | None = find(fullname, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        loader: Any = spec.loader
        inner = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            inner(module)
            if not self.done:
                self.done = True
                self.patch(module)

        loader.exec_module = exec_module
        return spec


def install(target: str, patch: Callable[[ModuleType], None]) -> None:
    """Patch ``target`` right after its first import (once per process)."""
    if not any(isinstance(f, AfterImport) and f.target == target for f in sys.meta_path):
        sys.meta_path.insert(0, AfterImport(target, patch))


def patch_attr(
    modules: Sequence[ModuleType], name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> None:
    """Replace ``name`` by ``wrap(original)`` in every module given that holds the same original object."""
    original = getattr(modules[0], name)
    wrapped = wrap(original)
    for module in modules:
        if getattr(module, name, None) is original:
            setattr(module, name, wrapped)


def on_result(transform: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A ``wrap`` for patch_attr: the original function, with ``transform`` applied to its result."""
    import functools

    def wrap(orig: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(orig)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return transform(orig(*args, **kwargs))

        return wrapped

    return wrap


def host_noise(jax: ModuleType, size: float) -> Callable[[Any], Any]:
    """x -> x + x * size * r for floating x, r standard normal drawn on the host when the program runs
    (``jax.pure_callback``, so a compiled program differs at every execution), carrying no gradient. The draws
    come from a seeded generator (ENVAUDIT_FAULT_SEED, default 0): every execution gets new noise, and every run
    of a test the same sequence, so that a test of what the judge makes of the noise cannot pass or fail by chance
    (unseeded, the tail of one run in a few crossed the rerun bound a test holds a GPU to)."""
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(int(os.environ.get("ENVAUDIT_FAULT_SEED", "0")))

    def noisy(out: Any) -> Any:
        if not jnp.issubdtype(out.dtype, jnp.floating):
            return out
        shape, dtype = out.shape, out.dtype
        r = jax.pure_callback(lambda: rng.standard_normal(shape).astype(dtype), jax.ShapeDtypeStruct(shape, dtype))
        return out + out * jax.lax.stop_gradient(r) * size

    return noisy


def load(fault: str) -> ModuleType:
    """The module of ``tests/faults/<fault>/sitecustomize.py``, loaded under another name so that it does not
    install itself (tests/faults/compose installs several faults' patches as one)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), fault, "sitecustomize.py")
    spec = importlib.util.spec_from_file_location(f"_envaudit_fault_{fault}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no fault {fault!r}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
