"""The low findings of the fourth adversarial round, each reproduced: a word XLA_FLAGS hides is not named by the
finding that refuses it; a saved report's HTML is text in Markdown and its control characters are not in the
Prometheus textfile; triage quotes no URL's credentials or query; a home directory anywhere is `~` in what is
shared; an error line shows what a file's key held as text; a child that floods a line without end until its bound
hangs, however busy the machine; a version that is no version in a paste is no exit 3."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envaudit import judge
from envaudit.cli import main
from envaudit.commands.triage.triaged import triage
from envaudit.formats import render
from envaudit.model.facts import XlaFlag
from envaudit.model.report import ProbeResult, Report
from envaudit.rules import node
from envaudit.rules.registry import registry
from tests.conftest import FIXTURES, facts_from
from tests.judge.test_judge import MACHINES

H200 = FIXTURES / "replay" / "h200-default-settings.json"


def saved(**changes: object) -> dict[str, object]:
    document: dict[str, object] = json.loads(H200.read_text())
    facts = document["facts"]
    assert isinstance(facts, dict)
    facts["packages"] = {**facts["packages"], **changes}
    return document


def test_a_word_xla_flags_hides_is_not_named_by_the_finding_that_refuses_it() -> None:
    entry: XlaFlag = {"shown": "<redacted>", "name": "hunter2word", "defined": False}
    facts = facts_from(
        {
            "env": {"XLA_FLAGS": "<redacted>"},
            "xla_flags": {"status": "ok", "variable": "<redacted>", "entries": [entry]},
            "jax": {"status": "error"},
        }
    )
    (found,) = [f for f in registry().evaluate_checks(facts) if f.id == "xla-flags-invalid"]
    assert "hunter2word" not in found.detail and "names no flag" in found.detail


def test_a_saved_reports_html_is_text_in_markdown_and_its_controls_are_not_in_prometheus() -> None:
    report = Report.from_dict(saved(flax="<img src=x onerror=alert(1)>", jax="0.4.30\x07\x1b[2J\u202e"))
    markdown = render(report, "markdown")
    assert "<img" not in markdown.split("<details>")[0] and "&lt;img src=x onerror=alert(1)&gt;" in markdown
    textfile = render(report, "prometheus")
    assert not any(ch in textfile for ch in "\x07\x1b\u202e")


def test_triage_quotes_no_urls_credentials_or_query() -> None:
    text = (
        "jax 0.4.30\njaxlib==0.4.30 --index-url https://user:hunter2@pypi.example.com/simple?token=abc123\n"
        "RuntimeError: failed to fetch https://bob:pw9@host/x?token=zzz\n"
    )
    result = triage(text.encode())
    from envaudit.commands.triage import reply

    for fmt in ("text", "json", "markdown"):
        said = reply.RENDERERS.render(result, fmt)
        assert not any(secret in said for secret in ("hunter2", "abc123", "pw9", "zzz")), fmt


def test_a_home_directory_anywhere_is_tilde_in_what_is_shared() -> None:
    document = saved()
    facts = document["facts"]
    assert isinstance(facts, dict)
    facts["python"] = {**facts["python"], "home": "/scratch/users/alice", "executable": "/scratch/users/alice/v/bin/py"}
    shared = render(Report.from_dict(document), "markdown")
    assert "alice" not in shared and "~/v/bin/py" in shared


def test_an_error_line_shows_what_a_key_held_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = saved(**{"bad\nkey\x1b[31m": 1})
    (tmp_path / "r.json").write_text(json.dumps(document))
    assert main(["check", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "bad\\nkey\\x1b[31m" in err


def test_a_child_that_floods_until_its_bound_hangs_however_busy() -> None:
    """A line that never ends, printed at hundreds of MB/s while the scheduler kept it waiting too: it had CPU to
    print, so it is no starved child."""
    flooding = {"cpu_fraction": 0.4, "wait_fraction": 0.5, "printed_kib_s": 600_000.0, "cpus": 2, "idle_cpus": 0.0}
    assert not node.starved(flooding, MACHINES["cpu"])
    result = ProbeResult("flood", "timeout", dict(flooding), 3.0, "no answer within 3 s: xxxx")
    assert {f.severity for f in judge.judge([result], MACHINES["cpu"]).findings} == {"fail"}


@pytest.mark.slow
@pytest.mark.parametrize("version", ["\u0663.\u0662", "1e309", "nan", "inf", "9" * 5000])
@pytest.mark.parametrize("form", ["jax-cuda12-plugin=={v}", "jax-cuda12-plugin   {v}", "jax_cuda12_plugin: {v}"])
def test_a_version_that_is_no_version_in_a_paste_is_no_exit_3(tmp_path: Path, version: str, form: str) -> None:
    paste = tmp_path / "paste.txt"
    paste.write_text("jax==0.4.30\njaxlib==0.4.30\n" + form.format(v=version) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "envaudit", "triage", str(paste)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr, done.stderr
