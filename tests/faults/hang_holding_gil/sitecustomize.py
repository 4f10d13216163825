"""Fault hang_holding_gil: ``import jax`` blocks in a C call that never releases the GIL (a driver call made
through a binding that holds it), so no other Python thread of the process can run again."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Sequence
from typing import Any


class _Hang:
    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> None:
        if fullname == "jax":
            ctypes.PyDLL(None).sleep(3600)  # PyDLL: the GIL stays held for the whole call


sys.meta_path.insert(0, _Hang())
