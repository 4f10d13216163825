"""`--format json` on the verbs that list or show (rules, probes, hook status) and on health: the same values as the
text, for a program; an unknown name is one line and exit 2 in either format."""

from __future__ import annotations

import json

import pytest

from envaudit import rules as knowledge
from envaudit.cli import main
from envaudit.files import probefiles
from envaudit.model.exitcodes import Exit
from tests.conftest import PYTHON, envaudit_run


def printed(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main(list(argv)) == Exit.OK
    return json.loads(capsys.readouterr().out)


def test_rules_and_probes_as_json_list_what_the_text_lists(capsys: pytest.CaptureFixture[str]) -> None:
    every = printed(capsys, "rules", "--format", "json")
    assert isinstance(every, list) and [r["id"] for r in every] == [e.id for e in knowledge.catalogue()]
    one = printed(capsys, "rules", "nt-065-jax-060-import", "--format", "json")
    assert isinstance(one, dict) and one["severity"] == "fail" and one["pins"] == ["jax<0.6.0", "jaxlib<0.6.0"]
    probes = printed(capsys, "probes", "--format", "json")
    assert isinstance(probes, list) and {p["name"] for p in probes} == set(probefiles.available())
    for argv in (["rules", "no-such-rule"], ["probes", "no-such-probe"]):
        assert main([*argv, "--format", "json"]) == Exit.USAGE
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_hook_status_as_json_is_the_status_values(capsys: pytest.CaptureFixture[str]) -> None:
    found = printed(capsys, "hook", "status", "--format", "json")
    assert isinstance(found, dict) and [s["user"] for s in found["sites"]] == [False, True]
    assert all(isinstance(s["enabled"], bool) and s["path"].endswith(".pth") for s in found["sites"])
    assert found["cached"] is None or all({"severity", "id"} == set(c) for c in found["cached"])


@pytest.mark.jax
def test_health_prints_the_report_as_json_where_asked() -> None:
    done = envaudit_run(PYTHON, "health", "--probe", "determinism", "--format", "json", timeout=300)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report["mode"] == "audit" and [p["name"] for p in report["probes"]] == ["determinism"]
    line = envaudit_run(PYTHON, "health", "--probe", "determinism", timeout=300)
    assert len(line.stdout.strip().splitlines()) == 1 and line.stdout.startswith("envaudit ")  # the default
