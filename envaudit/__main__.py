"""`python -m envaudit` and the `envaudit` console script: one program, started here.

Loading the command line's modules takes a good part of a second on a cold disk, before `cli.main` can answer a
Ctrl-C. So this module imports nothing of envaudit's until it can answer one itself: an interrupt while they load is
noted, and said once they have loaded as one during the run is (one line, exit 3: the audit did not complete, as
the exit-code table says of any run cut short), never as a traceback. The noting starts earlier still, in
`envaudit/__init__.py`, the first of envaudit's code either way of starting runs (this module's own loading and
imports are then covered too); what comes before it is the interpreter's own start (site.py, finding the package),
where no code of envaudit's can answer.
"""

import signal
import sys

import envaudit

_asked = envaudit._interrupts  # a Ctrl-C while the modules load: answered once they have
_later = envaudit._noted


def main_entry() -> None:
    try:
        try:
            # While the modules load, an interrupt is only noted: a KeyboardInterrupt raised inside an import can
            # land in a callback whose exceptions CPython ignores (importlib's module-lock weakref callback), where
            # it is printed as "Exception ignored" and lost, and the command then runs on
            previous = signal.signal(signal.SIGINT, _later)
            if previous is _later:  # noted since the package started, which replaced Python's own handler only
                previous = signal.default_int_handler
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
