"""Versions, parsed one way everywhere: packaging's PEP 440 `Version`, a release's numbers as jax compares them,
and a version without its local label (`0.4.25+cuda12` -> `0.4.25`). What is no version is None, never an error.
"""

from __future__ import annotations

import functools

from packaging.version import InvalidVersion, Version


@functools.lru_cache(maxsize=16384)  # a plan compares the same few hundred releases at every state it tries
def version_or_none(text: str) -> Version | None:
    try:
        return Version(text)
    except (InvalidVersion, ValueError):  # ValueError: a component beyond Python's 4300-digit int conversion
        return None


@functools.lru_cache(maxsize=16384)
def release(text: str) -> tuple[int, ...] | None:
    """A version's release numbers, as jax's own version checks compare them (0.4.25+cuda12 -> (0, 4, 25)), with
    trailing zeros cut as PEP 440 compares them: a pin `jaxlib==0.4.30.0` installs 0.4.30, which says "0.4.30"."""
    version = version_or_none(text)
    if version is None:
        return None
    found = version.release
    while len(found) > 1 and found[-1] == 0:
        found = found[:-1]
    return found


def public(text: str) -> str:
    """The version without its local label, as written (`0.4.25+cuda12` -> `0.4.25`; what is no version stays)."""
    return text.partition("+")[0]
