"""Fault spin_on_import: ``import jax`` never returns and burns a CPU meanwhile, like a CUDA wait on a hung GPU
(the CUDA runtime spin-waits by default) or a loop that NaNs made endless: a hang that computes."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any


class _Spin:
    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> None:
        if fullname == "jax":
            while True:
                pass


sys.meta_path.insert(0, _Spin())
