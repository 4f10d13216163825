"""`--python PATH`: another environment audited from this one, with the verdict it gets from inside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PYTHON, ROOT, envaudit_run

PROBES = ("--probe", "ntk", "--probe", "matmul_precision")


def audit(python: str, env: dict[str, str], *argv: str) -> tuple[int, dict[str, Any]]:
    proc = envaudit_run(python, "--format", "json", *argv, env=env, timeout=600, cwd=ROOT)
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.slow
def test_the_neural_tangents_environment_audited_from_outside_as_from_inside(
    nt_env: dict[str, str], nt_python: Path
) -> None:
    inside = audit(str(nt_python), nt_env, *PROBES)
    outside = audit(PYTHON, nt_env, "--python", str(nt_python.parent.parent), *PROBES)  # its directory will do
    for code, report in (inside, outside):
        assert code == 0 and report["facts"]["python"]["executable"] == str(nt_python)
    (_, a), (_, b) = inside, outside
    assert a["verdict"] == b["verdict"] and {f["id"] for f in a["findings"]} == {f["id"] for f in b["findings"]}
    assert a["facts"]["packages"] == b["facts"]["packages"] and b["facts"]["packages"]["jax"] == "0.4.25"
    assert a["facts"]["jax"]["jax_version"] == b["facts"]["jax"]["jax_version"] == "0.4.25"
    assert a["facts"]["requirements"] == b["facts"]["requirements"]
    assert [(p["name"], p["status"]) for p in a["probes"]] == [(p["name"], p["status"]) for p in b["probes"]]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["missing", "empty-dir", "not-python", "not-executable"])
def test_an_interpreter_that_is_none_is_bad_input(kind: str, child_env: dict[str, str], tmp_path: Path) -> None:
    target = {
        "missing": tmp_path / "nope",
        "empty-dir": tmp_path,
        "not-python": tmp_path / "fake",
        "not-executable": tmp_path / "plain",
    }[kind]
    if kind == "not-python":
        target.write_text("#!/bin/sh\necho 'hello from a shell script'\n")
        target.chmod(0o755)
    if kind == "not-executable":
        target.write_text("print('hi')\n")
    for verb in (["audit", "--quick"], ["health"]):
        proc = envaudit_run(PYTHON, *verb, "--python", str(target), env=child_env, timeout=120)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(f"envaudit: error: --python {target}") and "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("said", ['"abc"', "5", "[1, 2]", '{"version": 3}', '""'])
def test_an_interpreter_whose_python_facts_have_another_shape_is_bad_input(
    said: str, child_env: dict[str, str], tmp_path: Path
) -> None:
    """Its answer is checked as a report's facts are: one line and exit 2, never a ValueError's traceback (exit 3)."""
    said_back = refused(f'{{"python": {said}, "distributions": []}}', child_env, tmp_path)
    assert "not a Python interpreter envaudit can use (python" in said_back


def refused(answer: str, child_env: dict[str, str], tmp_path: Path) -> str:
    """What envaudit says of an interpreter that answers `answer`: one line and exit 2, no traceback."""
    target = tmp_path / "python"
    target.write_text(f"#!/bin/sh\necho '{answer}'\n")
    target.chmod(0o755)
    proc = envaudit_run(PYTHON, "audit", "--quick", "--python", str(target), env=child_env, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "answer",
    [
        '{"python": {}, "distributions": [{"name": "jax", "version": "1", "location": "/x", "requires": 5}]}',
        '{"python": {}, "distributions": [{"name": ["jax"], "version": {"a": 1}, "location": "", "requires": []}]}',
        '{"python": {}, "distributions": [], "markers": [1]}',
        '{"python": {}, "distributions": [7]}',
    ],
)
def test_an_interpreter_whose_distributions_have_another_shape_is_bad_input(
    answer: str, child_env: dict[str, str], tmp_path: Path
) -> None:
    """`"requires": 5` was a TypeError (exit 3); a list for a name was taken as the name "['jax']"."""
    assert "not a Python interpreter envaudit can use (its answer" in refused(answer, child_env, tmp_path)


@pytest.mark.slow
def test_this_interpreter_answers_in_the_shape_checked(child_env: dict[str, str]) -> None:
    proc = envaudit_run(PYTHON, "audit", "--quick", "--format", "json", "--python", PYTHON, env=child_env, timeout=120)
    assert proc.returncode in (0, 1) and json.loads(proc.stdout)["facts"]["packages"]["jax"], proc.stderr
