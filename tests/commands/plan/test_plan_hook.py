"""What the pre-commit hook (.pre-commit-hooks.yaml: its entry, its args, then the changed files) does with the files
an ordinary project commits: it fails on known-bad pins and on a file it cannot read, never on a file that holds no
resolution of an audited stack, which a commit hook cannot make (`--skip-unresolved`: one line, and a pass); and a
plain `envaudit plan FILE` at a prompt still says that such a file was not planned (exit 2, with the command that
makes a resolution)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests.conftest import ROOT

# a project that uses no jax: nothing envaudit audits
WEB_APP = """\
[project]
name = "billing-api"
version = "1.4.0"
requires-python = ">=3.10"
dependencies = ["fastapi>=0.110", "uvicorn[standard]", "sqlalchemy>=2"]

[project.optional-dependencies]
dev = ["pytest", "ruff"]
"""
# the start of keras's requirements-common.txt (keras-team/keras at 0036744c2cd4d12156b5cfabd2e5a84c53644680): ranges
# and bare names, NumPy and SciPy among them, no jax (requirements-jax-cuda.txt installs it)
KERAS_COMMON = "namex>=0.0.8\nblack>=22\nflake8\nisort\npytest\nnumpy\nscipy\npandas\nabsl-py\n"
COUPLING = "jax==0.4.30\njaxlib==0.4.23\n"  # a fail: jax 0.4.30 requires jaxlib >= 0.4.27
DOCS = "sphinx==7.2.6\nnumpy==1.26.4\nmyst-parser==2.0.0\n"  # pinned, audited NumPy, no jax


def hook(*files: str) -> list[str]:
    """The command line pre-commit runs for these changed files."""
    (manifest,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    program, *words = shlex.split(manifest["entry"])
    assert program == "envaudit"
    return [*words, *manifest["args"], *files]


@pytest.fixture(autouse=True)
def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative names, as pre-commit passes them from the repository's root
    Path("pyproject.toml").write_text(WEB_APP, encoding="utf-8")
    Path("requirements-common.txt").write_text(KERAS_COMMON, encoding="utf-8")
    Path("requirements-docs.txt").write_text(DOCS, encoding="utf-8")


def test_a_project_without_jax_commits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(hook("pyproject.toml")) == Exit.OK
    captured = capsys.readouterr()
    assert captured.err == ""
    said = [line for line in captured.out.splitlines() if line.startswith("not planned: ")]
    assert len(said) == 1 and "nothing to plan" in said[0], captured.out


def test_unpinned_requirements_commit_with_the_command_that_would_resolve_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(hook("requirements-common.txt")) == Exit.OK
    out = capsys.readouterr().out
    (said,) = [line for line in out.splitlines() if line.startswith("not planned: ")]
    assert "requirements-common.txt line 6: numpy is not pinned" in said
    assert "--report report.json -r requirements-common.txt" in said


def test_a_pinned_stack_without_jax_is_said_to_have_none_not_called_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(hook("requirements-docs.txt")) == Exit.OK
    out = capsys.readouterr().out
    assert "verdict:" not in out and "OK" not in out
    assert "no jax in it (numpy 1.26.4 only)" in out


def test_known_bad_pins_still_fail_the_commit_beside_those_files(capsys: pytest.CaptureFixture[str]) -> None:
    Path("requirements-old.txt").write_text(COUPLING, encoding="utf-8")
    files = ("pyproject.toml", "requirements-common.txt", "requirements-old.txt", "requirements-docs.txt")
    assert main(hook(*files)) == Exit.FINDINGS
    out = capsys.readouterr().out
    assert "FAIL  jax-jaxlib-coupling" in out and out.count("not planned: ") == 2


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", "[project\nname = 'x'\n"),  # not TOML
        ("requirements.txt", "jax==0.4.30 --hash\n"),  # an option pip refuses
        ("uv.lock", "version = 1\n[[package]]\nname = 3\n"),  # not a lock uv writes
    ],
)
def test_a_malformed_file_still_fails(capsys: pytest.CaptureFixture[str], name: str, text: str) -> None:
    Path(name).write_text(text, encoding="utf-8")
    assert main(hook(name)) == Exit.USAGE
    captured = capsys.readouterr()
    assert "not planned" not in captured.out
    assert len(captured.err.strip().splitlines()) == 1 and captured.err.startswith("envaudit: error: ")


def test_at_a_prompt_the_same_files_are_not_called_planned(capsys: pytest.CaptureFixture[str]) -> None:
    """Without the hook's flag a file that was not planned is exit 2: the user asked for a plan and got none."""
    assert main(["plan", "--no-build", "-r", "requirements-common.txt"]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "numpy is not pinned" in err and "--pip-report report.json" in err
    assert main(["plan", "--no-build", "pyproject.toml"]) == Exit.USAGE
    assert "nothing to plan" in capsys.readouterr().err
    assert main(["plan", "--no-build", "--skip-unresolved", "pyproject.toml"]) == Exit.OK  # the flag alone
    assert capsys.readouterr().out.startswith("not planned: ")
