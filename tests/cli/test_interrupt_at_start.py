"""Ctrl-C while envaudit's modules load (a good part of a second on a cold disk) is answered as one during the run:
`envaudit: interrupted`, exit 3 (the audit did not complete), never a KeyboardInterrupt traceback. For both ways a
user starts it: `python -m envaudit` and the console script the checkout declares in pyproject.toml."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from envaudit.model.exitcodes import Exit
from tests.conftest import PYTHON, ROOT

# Standard library only, run at the interpreter's start (before envaudit): it says when envaudit's first module is
# asked for, and raises SIGINT in its own process when the module named in INTERRUPT_AT is, so the interrupt lands
# inside that import, deterministically; with INTERRUPT_IN_EXEC, inside an exec of a string there (as dataclasses
# builds its methods: CPython then takes the interrupt for an unhandled one even once it is caught).
SITECUSTOMIZE = """\
import os, signal, sys


class Interrupter:
    said = False

    def find_spec(self, name, path=None, target=None):
        if name in ("envaudit.__main__", "envaudit.cli") and not self.said:
            self.said = True
            print("loading envaudit", file=sys.stderr, flush=True)
        if name == os.environ.get("INTERRUPT_AT"):
            print("interrupting at " + name, file=sys.stderr, flush=True)
            if os.environ.get("INTERRUPT_IN_EXEC"):
                exec("import signal; signal.raise_signal(signal.SIGINT)", {})
            signal.raise_signal(signal.SIGINT)
        return None


sys.meta_path.insert(0, Interrupter())
"""


def _console_script() -> list[str]:
    """What the console script pip writes from the checkout's entry point runs: `from M import F; sys.exit(F())`."""
    module, function = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["envaudit"].split(":")
    return ["-c", f"import sys; from {module} import {function}; sys.exit({function}())"]


ENTRIES = {"python -m envaudit": ["-m", "envaudit"], "console script": _console_script()}


def _start(tmp_path: Path, entry: str, stdin: int, **env: str) -> subprocess.Popen[str]:
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("INTERRUPT_")}
    environ.update(PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), **env)
    return subprocess.Popen(
        [PYTHON, *ENTRIES[entry], "triage", "-"],  # triage reads its standard input: no jax, no child
        env=environ,
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=_ctrl_c_reaches_it,
    )


def _ctrl_c_reaches_it() -> None:
    """SIGINT at its default in the child, as in a terminal's foreground job: a suite started in the background (a
    non-interactive shell's `&`) passes SIGINT on ignored, Python then keeps it ignored, and the Ctrl-C sent never
    arrives (seen: the child read its closed input and answered it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("module", ["envaudit.cli", "argparse", "envaudit.commands.triage", "envaudit.cli.parser"])
@pytest.mark.parametrize("in_exec", [False, True], ids=["plain", "in a string exec"])
def test_an_interrupt_inside_each_import_is_one_line_and_exit_3(
    tmp_path: Path, entry: str, module: str, in_exec: bool
) -> None:
    proc = _start(tmp_path, entry, subprocess.DEVNULL, INTERRUPT_AT=module, INTERRUPT_IN_EXEC="1" if in_exec else "")
    _, err = proc.communicate(timeout=60)
    lines = [line for line in err.splitlines() if line != "loading envaudit"]
    assert (proc.returncode, lines) == (Exit.INTERNAL, [f"interrupting at {module}", "envaudit: interrupted"]), err


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("delay_s", [0.02, 0.05, 0.1, 0.2, 0.4])
def test_ctrl_c_early_is_one_line_and_exit_3(tmp_path: Path, entry: str, delay_s: float) -> None:
    """As a user presses Ctrl-C: SIGINT some time after envaudit's modules start loading; later than they take, it
    interrupts triage waiting for its input (kept open), which the command line answers the same way."""
    proc = _start(tmp_path, entry, subprocess.PIPE)
    assert proc.stderr is not None
    assert proc.stderr.readline() == "loading envaudit\n"
    time.sleep(delay_s)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (Exit.INTERNAL, "envaudit: interrupted\n"), err


def test_a_ctrl_c_python_wraps_in_another_error_is_still_an_interrupt(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SIGINT that lands in a class body's `__set_name__` (a dataclass field) reaches the command line as
    `RuntimeError: Error calling __set_name__ ...`, caused by the KeyboardInterrupt: seen in CI as "internal error"."""
    from envaudit import cli

    def wrapped(parsed: object) -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise RuntimeError(
                "Error calling __set_name__ on 'Field' instance 'probe_facts' in 'Outcome'"
            ) from interrupt

    monkeypatch.setattr(cli, "run", wrapped)
    assert cli.main(["schema"]) == Exit.INTERNAL
    assert capsys.readouterr().err == "envaudit: interrupted\n"
