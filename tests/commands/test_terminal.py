"""The command line on a real terminal (a pseudo-terminal made by util-linux `script`): its width, colour by the
conventions (NO_COLOR, FORCE_COLOR, TERM=dumb, --color), the short view, and one progress line on stderr that is
gone before the report; a pipe gets the whole report, plain."""

from __future__ import annotations

import io
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from envaudit.commands import terminal
from envaudit.formats import text
from tests.conftest import FIXTURES, ROOT

H200 = FIXTURES / "replay" / "h200-default-settings.json"
ANSI = re.compile(r"\033\[[0-9;]*[A-Za-z]")
SCRIPT = shutil.which("script")


class Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("mode", "tty", "environ", "coloured"),
    [
        ("auto", True, {}, True),
        ("auto", False, {}, False),
        ("auto", True, {"NO_COLOR": "1"}, False),
        ("auto", True, {"NO_COLOR": ""}, True),  # set but empty: not set (no-color.org)
        ("auto", True, {"TERM": "dumb"}, False),
        ("auto", False, {"FORCE_COLOR": "1"}, True),
        ("auto", False, {"FORCE_COLOR": ""}, False),
        ("never", True, {"FORCE_COLOR": "1"}, False),
        ("always", False, {"NO_COLOR": "1"}, True),  # what the user typed wins over the environment
    ],
)
def test_colour_follows_the_conventions(mode: str, tty: bool, environ: dict[str, str], coloured: bool) -> None:
    assert terminal.color(mode, Stream(tty), environ) is coloured


def on_a_terminal(command: str, env: dict[str, str], cols: int = 60) -> str:
    """What a terminal `cols` wide shows for `command` (stdout and stderr both on it), control sequences kept."""
    assert SCRIPT, "util-linux script makes the pseudo-terminal"
    inner = f"stty cols {cols} rows 50; {command}"
    proc = subprocess.run([SCRIPT, "-qec", inner, "/dev/null"], env=env, capture_output=True, timeout=300, cwd=ROOT)
    shown = proc.stdout.decode()  # not text=True: its universal newlines would make the progress line's \r a \n
    assert proc.returncode in (0, 1), shown + proc.stderr.decode()
    return shown.replace("\r\n", "\n")  # the terminal's own line ends


def envaudit(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "envaudit", *args])


def terminal_env(child_env: dict[str, str], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in child_env.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES")}
    return {**env, "TERM": "xterm-256color", **extra}


@pytest.mark.slow
def test_a_terminal_gets_its_width_colour_and_the_short_view(child_env: dict[str, str]) -> None:
    shown = on_a_terminal(envaudit("check", str(H200)), terminal_env(child_env))
    assert "\033[33;1mWARN" in shown  # the warning in yellow
    plain = ANSI.sub("", shown)
    lines = plain.splitlines()
    assert lines[0] == "verdict: WARN"
    # a command is never wrapped (it could not be pasted), nor is one word longer than the width (code in advice)
    unbreakable = r"^ +(fix|see): |^ +(\w+: )?\S+$"
    too_wide = [line for line in lines[2:] if len(line) > 60 and not re.match(unbreakable, line)]
    assert not too_wide
    assert " ".join(text.HINT.split()) in " ".join(plain.split()) and "see: https://" not in plain  # the short view
    full = ANSI.sub("", on_a_terminal(envaudit("check", str(H200), "-v"), terminal_env(child_env)))
    assert "see: https://github.com/jax-ml/jax/issues/18934" in full and text.HINT not in full


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "args"),
    [({"NO_COLOR": "1"}, ()), ({"TERM": "dumb"}, ()), ({}, ("--color", "never"))],
)
def test_a_terminal_can_refuse_colour(child_env: dict[str, str], extra: dict[str, str], args: tuple[str, ...]) -> None:
    shown = on_a_terminal(envaudit("check", str(H200), *args), terminal_env(child_env, **extra))
    assert "verdict: WARN" in shown and not ANSI.search(shown)


def test_a_pipe_gets_the_whole_report_plain(child_env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "envaudit", "check", str(H200)],
        env=terminal_env(child_env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not ANSI.search(proc.stdout) and text.HINT not in proc.stdout and "see: https://" in proc.stdout
    assert proc.stderr == ""  # no progress line on a pipe


@pytest.mark.jax
def test_progress_is_one_line_on_stderr_gone_before_the_report(child_env: dict[str, str]) -> None:
    audit = envaudit("--probe", "matmul_precision", "--no-cache")
    shown = on_a_terminal(audit, terminal_env(child_env), cols=100)
    before, report = shown.split("verdict: ", 1)
    steps = [s for s in ANSI.sub("\n", before).replace("\r", "\n").splitlines() if s.strip()]
    assert steps[0] == "envaudit: collecting facts"
    assert any(s.startswith("envaudit: importing jax in ") for s in steps)
    assert any(s.startswith("envaudit: probe 1/1: matmul_precision") for s in steps)
    assert before.endswith(terminal.ERASE) and "envaudit: " not in report  # erased before the report
    quiet = on_a_terminal(envaudit("--probe", "matmul_precision", "-q"), terminal_env(child_env), cols=100)
    assert quiet.startswith("verdict: ")  # -q: no progress at all
