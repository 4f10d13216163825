"""Triage on text nobody vouches for: huge, binary, escapes, crafted Markdown, standard input, bad paths."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envaudit.commands.triage import reply
from envaudit.commands.triage.extract import MAX_BYTES, MAX_LINES
from envaudit.commands.triage.triaged import TriageError, triage
from tests.conftest import PYTHON, ROOT

ENV_INFO = b"jax:    0.4.25\njaxlib: 0.4.25\nnumpy:  2.0.2\npython: 3.11.8 (main)\n"


def cli(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [PYTHON, "-m", "envaudit", "triage", *argv], input=stdin, env=env, capture_output=True, timeout=120
    )


def test_a_known_bad_paste_from_stdin_is_exit_1_with_the_rule_and_its_line() -> None:
    proc = cli("-", stdin=ENV_INFO)
    out = proc.stdout.decode()
    assert proc.returncode == 1 and "numpy2-with-jaxlib-before-0426" in out and "line 3: numpy:  2.0.2" in out
    md = cli("-", "--format", "markdown", stdin=ENV_INFO).stdout.decode()
    assert "| numpy | `2.0.2` | line 3: `numpy:  2.0.2` |" in md and "Could you also tell us" in md


@pytest.mark.slow
def test_huge_and_long_texts_are_read_bounded_and_say_so() -> None:
    huge = ENV_INFO + b"x" * (MAX_BYTES + 10)
    result = triage(huge)
    assert result.truncated and result.environments[0].report.facts.packages["jax"] == "0.4.25"
    many = ENV_INFO + b"noise\n" * (MAX_LINES + 5)
    assert triage(many).truncated


@pytest.mark.slow
def test_binary_or_empty_text_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with pytest.raises(TriageError):
        triage(os.urandom(50_000))
    blob = tmp_path / "blob"
    blob.write_bytes(os.urandom(50_000))
    for argv in ([str(blob)], [str(tmp_path / "missing")], [str(tmp_path)], ["/dev/zero"]):
        proc = cli(*argv)
        assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1 and b"Traceback" not in proc.stderr, argv


def test_escapes_never_reach_the_terminal_and_markdown_cells_stay_closed() -> None:
    crafted = b"\x1b[31mjax:    0.4.25\x1b[0m\njaxlib: 0.4.25 | evil `code`\x1b]0;title\x07\nnumpy:  2.0.2\n"
    result = triage(crafted)
    assert result.environments[0].report.facts.packages["jax"] == "0.4.25"
    for fmt in ("text", "markdown", "json"):
        assert "\x1b" not in reply.RENDERERS.render(result, fmt) and "\x07" not in reply.RENDERERS.render(result, fmt)
    md = reply.RENDERERS.render(triage(b"jax:    0.4.25\nflax 0.8.5 | x | y version\n"), "markdown")
    assert all(line.count("|") - line.count("\\|") == 4 for line in md.splitlines() if line.startswith("| flax"))


ADVERSARIAL = [  # lines that made the first patterns backtrack for hours (a nested quantifier, runs of \s*)
    "jaxlib 0.4.2" + "a" * 980 + "!",
    "jax" + " " * 990 + "!",
    "jax==" + "1." * 490 + "x",
    "Requirement already satisfied: jax in " + "(a)" * 320 + " x",
    "python version " + "3." * 490,
    "Flax, jax, jaxlib versions: " + "0.1." * 240,
    "tensorflow version is " + "1." * 480 + "!",
    "python" + " " * 990 + "!",  # spaces shared out between three quantifiers: 7 s a line
    "CUDA" + " " * 990 + "!",
    "driver version" + "\t" * 980 + "!",
    "|   0  NVIDIA" + " " * 980 + "!",
    "a." * 499 + "a",  # a wheel's name started after every dot
]


@pytest.mark.slow
def test_no_line_makes_a_pattern_backtrack() -> None:
    """Each adversarial line, 1,000 characters, 200 times: a pattern that backtracks takes hours, these take
    milliseconds (the bound below only keeps a regression from hanging the suite)."""
    text = "\n".join(ADVERSARIAL * 200).encode()
    code = (
        "import sys; from envaudit.commands.triage import extract; "
        "print(len(extract.seen(extract.lines(sys.stdin.buffer.read())[0])))"
    )
    proc = subprocess.run(
        [PYTHON, "-c", code], input=text, capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert proc.returncode == 0, proc.stderr
