"""Triage reproduces a report's stack where it installs here: the stack the text states is built (its CPU twin) and
measured, and the measurement joins the facts the rules read. A stack that fails there is "reproduced here" with
what raised; one that runs is "not reproduced here"; the rest of a pasted list constrains the install (the
dependency a library pulls in is the release the report has) but is never installed for its own sake."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from envaudit.collect import build
from envaudit.commands.triage import reply
from envaudit.commands.triage.triaged import Building, triage

pytestmark = pytest.mark.realenv


@pytest.fixture(autouse=True)
def building(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build turned on (the unit tests turn it off), its temporary directories under the test's own."""
    assert build.uv_command() is not None, "the test extra installs uv"
    monkeypatch.delenv("ENVAUDIT_NO_BUILD", raising=False)
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))


def test_a_stack_that_fails_here_is_reproduced_with_what_raised() -> None:
    """jaxlib 0.4.25 was built against NumPy 1; under NumPy 2 its first array operation fails (jax-ml/jax's
    CHANGELOG, jaxlib 0.4.26: the first release built against NumPy 2)."""
    text = b"pip freeze\njax==0.4.25\njaxlib==0.4.25\nnumpy==2.0.0\nml-dtypes==0.4.0\n"
    (env,) = triage(text, Building(timeout=300)).environments
    assert env.reproduction is not None and env.reproduction.status == "reproduced", env.reproduction
    assert env.reproduction.measured is not None and env.reproduction.measured["installed"]["numpy"] == "2.0.0"
    assert env.report.facts.jax.get("status") in ("error", "crash")  # the measurement joined the facts
    assert "reproduced here: in the stack the report states, jax ended" in reply.text(triage(text))


def test_a_stack_that_runs_here_is_not_reproduced_and_a_list_only_constrains_it() -> None:
    text = (
        b"Package    Version\n---------- -------\njax        0.4.30\njaxlib     0.4.30\nnumpy      1.26.4\n"
        b"flax       0.8.5\nmsgpack    1.0.8\npywin32    306\n"
    )
    (env,) = triage(text, Building(timeout=300)).environments
    assert env.reproduction is not None and env.reproduction.status == "not_reproduced", env.reproduction
    measured = env.reproduction.measured
    assert measured is not None
    assert measured["installed"]["msgpack"] == "1.0.8"  # flax's dependency, at the report's release
    assert "pywin32" not in measured["installed"]  # stated, required by nothing here: not installed
    assert env.report.verdict == "ok"
    assert "_Not reproduced here_: the stack the report states built here" in reply.markdown(triage(text))


def test_a_report_of_jax_alone_is_built_with_what_installed_then() -> None:
    """ "Incompatibility with jax 0.4.27": the reporter's jax imported, so it had a jaxlib no newer than it, and
    NumPy and SciPy of its time (NumPy 2.0 and SciPy 1.14 came after jax 0.4.28's upload, 2024-05-09). Built with
    today's, the twin failed where the reporter's had not."""
    (env,) = triage(b"Incompatibility with jax 0.4.27\nimport jax\n", Building(timeout=300)).environments
    assert env.reproduction is not None and env.reproduction.measured is not None, env.reproduction
    installed = env.reproduction.measured["installed"]
    assert installed["jaxlib"] == "0.4.27" and installed["numpy"].startswith("1."), installed
    assert env.reproduction.status == "not_reproduced" and env.report.verdict == "ok", env.reproduction
