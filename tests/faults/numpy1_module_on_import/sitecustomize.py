"""Fault numpy1_module_on_import: ``import jax`` raises the ImportError NumPy 2 raises for a module compiled
against NumPy 1.x, with NumPy's own text (numpy/core/_multiarray_umath.py at v2.0.0, lines 22-31), so that the
audit's root is the rule that message names, not "jax does not import". NumPy's version is read from its
metadata: a fault imports nothing costly."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from importlib import metadata
from typing import Any

MESSAGE = textwrap.dedent(f"""
    A module that was compiled using NumPy 1.x cannot be run in
    NumPy {metadata.version("numpy")} as it may crash. To support both 1.x and 2.x
    versions of NumPy, modules must be compiled with NumPy 2.0.
    Some module may need to rebuild instead e.g. with 'pybind11>=2.12'.

    If you are a user of the module, the easiest solution will be to
    downgrade to 'numpy<2' or try to upgrade the affected module.
    We expect that some modules will need time to support NumPy 2.

    """)


class _Refuse:
    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> None:
        if fullname == "jaxlib":
            raise ImportError(MESSAGE)


sys.meta_path.insert(0, _Refuse())
