"""Advice a plan gives when it cannot choose, followed: the command it suggests, run, must not come back to the
same error. Here the fork (inputs that install another stack on another Python): each Python it names is one the
inputs install jax for, and `--python` with it plans. tests/realenv/test_plan_advice.py follows the commands that
make a resolution (pip's report, `uv lock`), which need the package index."""

from __future__ import annotations

import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.specifiers import SpecifierSet

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests.conftest import FIXTURES

# a project that dropped Python 3.9 and moved to a newer jax from 3.12 on (no requires-python: a requirements file
# has none), NumPy for every Python
MARKED = """\
jax==0.4.30; python_version >= "3.10" and python_version < "3.12"
jaxlib==0.4.30; python_version >= "3.10" and python_version < "3.12"
jax==0.7.0; python_version >= "3.12"
jaxlib==0.7.0; python_version >= "3.12"
numpy==1.26.4
"""


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def suggested(err: str) -> list[str]:
    """The Pythons the fork's message tells the user to choose between."""
    (line,) = err.strip().splitlines()
    assert "say which with" in line, line
    return re.findall(r"--python (\d+\.\d+)", line.partition("say which with")[2])


def followed(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """Each choice the fork's message offers, taken: a plan, not the same error again."""
    assert main(argv) == Exit.USAGE
    pythons = suggested(capsys.readouterr().err)
    assert len(pythons) >= 2, pythons
    for python in pythons:
        code = main([*argv, "--python", python])
        captured = capsys.readouterr()
        assert code in (Exit.OK, Exit.FINDINGS), (python, captured.err)
        assert "jax" in captured.out  # a plan of jax's stack on that Python
    return None


def test_a_fork_of_a_lock_names_pythons_its_requires_python_admits(capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(FIXTURES / "plan-inputs" / "old-jax", "old-jax")
    argv = ["plan", "--no-build", "old-jax/uv.lock"]
    main(argv)
    err = capsys.readouterr().err
    admitted = SpecifierSet(tomllib.loads(Path("old-jax/uv.lock").read_text(encoding="utf-8"))["requires-python"])
    assert all(admitted.contains(f"{p}.0") for p in suggested(err)), err
    followed(capsys, argv)


def test_a_fork_of_requirements_names_pythons_their_markers_install_jax_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("requirements.txt").write_text(MARKED, encoding="utf-8")
    argv = ["plan", "--no-build", "-r", "requirements.txt"]
    main(argv)
    pythons = suggested(capsys.readouterr().err)
    jax_markers = [Marker(line.partition(";")[2]) for line in MARKED.splitlines() if line.startswith("jax==")]
    for python in pythons:  # never 3.9, where the file installs NumPy alone
        assert any(m.evaluate({"python_version": python}) for m in jax_markers), python
    followed(capsys, argv)


def test_each_plans_the_stacks_the_markers_make_and_no_jaxless_one(capsys: pytest.CaptureFixture[str]) -> None:
    Path("requirements.txt").write_text(MARKED, encoding="utf-8")
    assert main(["plan", "--no-build", "--each", "requirements.txt"]) == Exit.OK
    out = capsys.readouterr().out
    headings = [line for line in out.splitlines() if line.startswith("plan of ")]
    assert headings == [
        "plan of requirements.txt:",
        "plan of requirements.txt (Python 3.10):",
        "plan of requirements.txt (Python 3.12):",
    ]
    assert "no jax in it" not in out


def test_a_stack_that_has_jax_on_every_python_but_one_is_planned_for_those(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One jax for every Python the file installs it for: nothing to choose, so a plan, not a fork to settle."""
    Path("requirements.txt").write_text(
        'jax==0.4.30; python_version >= "3.10"\njaxlib==0.4.30; python_version >= "3.10"\nnumpy==1.26.4\n',
        encoding="utf-8",
    )
    code = main(["plan", "--no-build", "-r", "requirements.txt", "--format", "json"])
    captured = capsys.readouterr()
    assert code == Exit.OK, captured.err
    assert '"jax": "0.4.30"' in captured.out


def test_the_suggested_choices_are_command_line_words(capsys: pytest.CaptureFixture[str]) -> None:
    Path("requirements.txt").write_text(MARKED, encoding="utf-8")
    main(["plan", "--no-build", "-r", "requirements.txt"])
    err = capsys.readouterr().err
    which = err.partition("say which with ")[2].strip()
    words = [w for w in shlex.split(which.replace(" or ", " ")) if w != "--python"]
    assert words == suggested(err)
