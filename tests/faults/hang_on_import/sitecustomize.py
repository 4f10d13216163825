"""Fault hang_on_import: ``import jax`` never returns, like a driver call or a lock that waits forever."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any


class _Hang:
    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> None:
        if fullname == "jax":
            while True:
                time.sleep(3600)


sys.meta_path.insert(0, _Hang())
