"""Fault abort_on_import: ``import jax`` aborts the process (SIGABRT), like a jaxlib built for another CPU or a
CUDA library that fails to load.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any


class _Abort:
    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> None:
        if fullname == "jax":
            os.abort()


sys.meta_path.insert(0, _Abort())
