"""`python -m envaudit` and the `envaudit` console script: one program, started here.

Loading the command line's modules takes a good part of a second on a cold disk, before `cli.main` can answer a
Ctrl-C. So this module imports nothing of envaudit's until it can answer one itself: an interrupt while they load is
noted, and said once they have loaded as one during the run is (one line, exit 3: the audit did not complete), never
as a traceback.
"""

import signal
import sys

_asked: list[int] = []  # a Ctrl-C while the modules load: answered once they have


def _later(signum: int, frame: object) -> None:
    _asked.append(signum)


def main_entry() -> None:
    try:
        try:
            # While the modules load, an interrupt is only noted: a KeyboardInterrupt raised inside an import can
            # land in a callback whose exceptions CPython ignores (importlib's module-lock weakref callback), where
            # it is printed as "Exception ignored" and lost, and the command then runs on
            previous = signal.signal(signal.SIGINT, _later)
            from envaudit.cli import main_entry as command_line

            signal.signal(signal.SIGINT, previous)
            if _asked:
                raise KeyboardInterrupt
            command_line()
        except KeyboardInterrupt:  # once cli.main runs it answers one itself: this is the time before
            sys.stderr.write("envaudit: interrupted\n")
            from envaudit.model.exitcodes import Exit

            sys.exit(Exit.INTERNAL)
    finally:
        _forget_caught_interrupt()


def _forget_caught_interrupt() -> None:
    """CPython marks a KeyboardInterrupt that ends any evaluation of a string (`exec(text)`: dataclasses builds its
    methods so, at import) as unhandled even when a caller catches it, and `python -m` then dies by SIGINT instead
    of exiting with the code chosen. Every such evaluation clears the mark first (Python/pythonrun.c,
    run_eval_code_obj, `_Py_UnhandledKeyboardInterrupt = 0`), so one that ends normally leaves it clear. An interrupt
    that escapes this module is still marked afterwards, by `python -m` itself (Modules/main.c, pymain_run_module)."""
    eval("None")


if __name__ == "__main__":
    main_entry()
