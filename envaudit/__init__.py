"""envaudit: tells whether a JAX environment computes the right numbers.

The package is importable without jax, flax or neural-tangents: those are what it audits, so nothing here imports
them in the envaudit process (they are examined through `importlib.metadata` and in child processes).

Started as a program (`python -m envaudit`, the console scripts), this is the first of envaudit's code that runs:
from here on a Ctrl-C is noted, and `__main__` answers it as one during the run is (one line, never a traceback).
Imported as a library, or by the import hook's `.pth` line, it changes no signal handler.
"""

import sys as _sys

__version__ = "0.2.0"


class EnvAuditWarning(UserWarning):
    """Category of the import-time hook's warnings, so `-W error::envaudit.EnvAuditWarning` works."""


_interrupts: list[int] = []  # SIGINT while envaudit's program starts, before __main__ can answer one


def _noted(signum: int, frame: object) -> None:
    _interrupts.append(signum)


def _starting_as_program() -> bool:
    """Whether this import is envaudit's program starting: runpy locating `-m envaudit` (sys.argv[0] is "-m" until
    the module is found; the hook's `.pth` line runs before runpy is imported), or a console script whose file is
    the main module (`envaudit`, `jax-envaudit`)."""
    argv = getattr(_sys, "argv", None) or [""]
    if argv[0] == "-m" and "runpy" in _sys.modules:
        return True
    main = str(getattr(_sys.modules.get("__main__"), "__file__", "") or "")
    return main.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".exe") in ("envaudit", "jax-envaudit")


if _starting_as_program():
    import signal as _signal

    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:  # SIG_IGN (a background job) stays
        _signal.signal(_signal.SIGINT, _noted)
