"""The stacks of the third fix pass (tests/fixtures/fix-pass-3: 17 real environments, collected from upstream
threads, results.md): what a plan of each prints is a command an installer can run. A version below a bound that
the model chose (`1.12.999` under `<1.13`) is never printed as a pin; the twin builds the range as written
(tests/commands/plan/test_build.py)."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest

from envaudit.cli import main
from envaudit.model import fixes
from tests.conftest import FIXTURES

CASES: dict[str, Any] = tomllib.loads((FIXTURES / "fix-pass-3" / "cases.toml").read_text())["cases"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_plan_of_a_real_stack_pins_a_release_no_index_has(capsys: pytest.CaptureFixture[str], name: str) -> None:
    case = CASES[name]
    pins = [p for p in case["stack"] if "==" in p]
    main(["plan", *pins, "--python", case["python"], "--no-build", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    command = report["plan"]["fix"]
    named = [word.strip("'") for word in command.replace(",", " ").split() if "==" in word]
    assert not [w for w in named if fixes.placeholder(w.split("==", 1)[1])], command


def test_a_placeholder_is_told_from_a_release() -> None:
    assert fixes.placeholder("1.12.999") and fixes.placeholder("0.4.10.999")
    assert not fixes.placeholder("1.12.0") and not fixes.placeholder("2024.9.9") and not fixes.placeholder("0.4.30")
