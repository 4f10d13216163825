"""Fault jax_0101_refused: ``import jax`` raises ImportError when the installed jax is 0.10.1, so that a fix which
moves jax to 0.10.1 makes the environment worse (the case `envaudit fix` must undo from its snapshot)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import metadata
from typing import Any


class _Refuse:
    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> None:
        if fullname == "jax" and metadata.version("jax") == "0.10.1":
            raise ImportError("injected fault: jax 0.10.1 does not import here (tests/faults/jax_0101_refused)")


sys.meta_path.insert(0, _Refuse())
