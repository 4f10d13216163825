"""`triage --output PATH` and `-q`, as the audit's: the reply written whole to the file (files/safewrite.py), one
line on stderr that says so unless -q, and never over the pasted text it answers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests.conftest import FIXTURES

PASTED = FIXTURES / "triage" / "25-h100-cuda12-driver-525.txt"


def test_the_reply_goes_to_the_file_and_stdout_gets_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["triage", str(PASTED), "-f", "markdown"])
    printed = capsys.readouterr().out
    reply = tmp_path / "reply.md"
    assert main(["triage", str(PASTED), "-f", "markdown", "-o", str(reply)]) == code
    out, err = capsys.readouterr()
    assert out == "" and reply.read_text(encoding="utf-8") == printed
    (said,) = err.strip().splitlines()
    assert re.fullmatch(rf"envaudit: (ok|info|warn|fail): reply written to {re.escape(str(reply))}", said), said
    assert main(["triage", str(PASTED), "--output", str(reply), "--quiet"]) == code
    assert capsys.readouterr() == ("", "")
    assert reply.read_text(encoding="utf-8").startswith("envaudit triage:")  # replaced by the text reply


def test_the_reply_never_replaces_the_text_it_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pasted = tmp_path / "issue.txt"
    pasted.write_bytes(PASTED.read_bytes())
    assert main(["triage", str(pasted), "-o", str(tmp_path / "." / "issue.txt")]) == Exit.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is the file triaged" in err[0]
    assert pasted.read_bytes() == PASTED.read_bytes()


def test_an_output_that_cannot_be_written_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["triage", str(PASTED), "-o", str(tmp_path / "no-such-dir" / "reply.txt")]) == Exit.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("envaudit: error: cannot write")
