"""A question asked under a time bound, in a thread of its own: how the collectors that read files which may hang (a
lookup through PATH on a hung network file system, jaxlib's flags read for XLA_FLAGS) stay bounded. Apart from
`envaudit.collect` itself, which imports the collectors: a collector takes nothing from its package's `__init__`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def within(seconds: float, ask: Callable[[], T], name: str) -> T | None:
    """What `ask()` answers, or None if it has not answered within `seconds`: it runs in a daemon thread, left
    behind if it hangs (a call into a hung driver or file system cannot be interrupted), which never keeps the
    process alive."""
    answer: list[T] = []
    asker = threading.Thread(target=lambda: answer.append(ask()), name=name, daemon=True)
    asker.start()
    asker.join(seconds)
    return answer[0] if answer else None
