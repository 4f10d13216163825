"""known_regressions: which cases run for which jaxlib, and the cases against the jax installed here (where each
upstream bug is absent, so each must give numpy's exact answer; tests/realenv runs jaxlib 0.10.2, where one is not)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import PYTHON, ROOT

sys.path.insert(0, str(ROOT / "probes"))
import known_regressions as kr


@pytest.mark.parametrize(
    ("jaxlib", "cases"),
    [
        ("0.4.23", []),
        ("0.4.24", ["xla13054"]),
        ("0.4.28", ["xla13054"]),
        ("0.4.29", []),
        ("0.6.1", []),
        ("0.6.2", ["jax29537"]),
        ("0.7.0", []),
        ("0.10.1", []),
        ("0.10.2", ["jax39103"]),
        ("0.11.0", ["jax39103"]),
        ("0.12.0.1", ["jax39103"]),
    ],
)
def test_a_case_runs_from_its_first_affected_release_to_its_fix(
    jaxlib: str, cases: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ENVAUDIT_ALL_REGRESSIONS", raising=False)
    assert kr.applicable(jaxlib) == cases
    monkeypatch.setenv("ENVAUDIT_ALL_REGRESSIONS", "1")
    assert kr.applicable(jaxlib) == list(kr.CASES)


@pytest.mark.jax
@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_every_case_gives_the_exact_answer_where_its_bug_is_absent(precision: str) -> None:
    env = {**os.environ, "ENVAUDIT_ALL_REGRESSIONS": "1", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [PYTHON, str(ROOT / "probes" / "known_regressions.py"), "--precision", precision],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = json.loads(done.stdout)
    assert done.returncode == 0 and result["status"] == "pass", result
    assert {f"rel_err_{c}" for c in kr.CASES} <= set(result["metrics"])
    assert result["metrics"]["output_dtype"] == precision


@pytest.mark.jax
def test_with_no_case_for_this_jaxlib_it_is_a_skip_that_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kr, "applicable", lambda jaxlib: [])
    result = kr.run("float32")
    assert result["status"] == "skip" and "no known regression applies to jaxlib" in str(result["message"])


def test_versions_are_read_as_jax_reads_them() -> None:
    assert kr.numbers("0.4.25+cuda12.cudnn89") == (0, 4, 25) and kr.numbers("0.5.0rc1") == (0, 5, 0)
    assert kr.numbers("0.9.0.1") == (0, 9, 0, 1) and kr.numbers("dev") == ()
