"""Where a plan's finding is written: the input file, as the command line named it, and the line of the requirement
or lock entry that causes it, carried from the reader to the finding as values (`Finding.location`), so that
`--format github` lands each annotation on that line of a pull request (`file=`, `line=`) and the JSON report says
it (`location`).

The expected line is found here from the file's own text (the line that writes the requirement, or the lock's entry
of the release), never from what envaudit printed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from envaudit.cli import main
from envaudit.commands.plan.inputs import tomllines
from envaudit.model.exitcodes import Exit
from tests.conftest import FIXTURES
from tests.formats.test_github import commands

INPUTS = FIXTURES / "plan-inputs"


def annotated(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, dict[str, str]]:
    """Each annotation's properties, by the finding id its title names."""
    code = main(["plan", *argv, "--format", "github"])
    out, err = capsys.readouterr()
    assert code == Exit.FINDINGS, err
    return {props["title"].split(": ", 1)[1]: props for _, props, _ in commands(out)}


def line_of(path: Path, pattern: str) -> int:
    """The first line of a file that the pattern matches (1 the first)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, start=1) if re.search(pattern, text))


def lock_entry(path: Path, name: str, version: str) -> int:
    """The line of `name = NAME` of the lock entry whose next line is `version = VERSION`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(
        i
        for i, text in enumerate(lines, start=1)
        if text == f'name = "{name}"' and lines[i] == f'version = "{version}"'
    )


@pytest.fixture
def inputs(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(INPUTS)  # relative names, as a workflow gives them
    return INPUTS


def test_a_requirements_file_pins_the_annotation_to_its_line(capsys: pytest.CaptureFixture[str], inputs: Path) -> None:
    found = annotated(capsys, "-r", "jaxlib-0102/requirements.in")
    expected = line_of(inputs / "jaxlib-0102" / "requirements.in", r"^jaxlib==0\.10\.2")
    assert found["jaxlib-0102-cpu-vmap-matvec-sum"] | {"title": ""} == {
        "file": "jaxlib-0102/requirements.in",
        "line": str(expected),
        "title": "",
    }


def test_an_included_file_is_named_as_the_include_joins_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "requirements.txt").write_text("# the project\n-r sub/base.txt\n", encoding="utf-8")
    (tmp_path / "sub" / "base.txt").write_text("numpy==2.2.6\n\njax==0.10.2\njaxlib==0.10.2  # the bad one\n")
    monkeypatch.chdir(tmp_path)
    found = annotated(capsys, "-r", "requirements.txt")
    assert found["jaxlib-0102-cpu-vmap-matvec-sum"]["file"] == "sub/base.txt"
    assert found["jaxlib-0102-cpu-vmap-matvec-sum"]["line"] == "4"


def test_a_pyproject_pins_it_to_the_requirements_line(capsys: pytest.CaptureFixture[str], inputs: Path) -> None:
    found = annotated(capsys, "old-jax/pyproject.toml", "--python", "3.11")
    # NumPy 2 with jaxlib 0.4.20: the line to change is jaxlib's, which the pyproject pins (the lock agrees)
    expected = line_of(inputs / "old-jax" / "pyproject.toml", r'"jaxlib==0\.4\.20"')
    assert found["numpy2-with-jaxlib-before-0426"]["file"] == "old-jax/pyproject.toml"
    assert found["numpy2-with-jaxlib-before-0426"]["line"] == str(expected)


def test_an_extras_requirement_on_a_line_of_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "1"\ndependencies = []  # "jaxlib==0.10.2" in a comment is no line\n\n'
        "[project.optional-dependencies]\n"
        '"CPU" = [\n  "jax==0.10.2",\n  \'jaxlib==0.10.2\',  # the bad one\n]\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    found = annotated(capsys, "pyproject.toml", "--extra", "cpu")
    assert found["jaxlib-0102-cpu-vmap-matvec-sum"] | {"title": ""} == {
        "file": "pyproject.toml",
        "line": "9",
        "title": "",
    }


@pytest.mark.parametrize("named", ["library-range/uv.lock", "library-range/pyproject.toml"])
def test_a_uv_lock_pins_it_to_the_locked_release(capsys: pytest.CaptureFixture[str], inputs: Path, named: str) -> None:
    """The pyproject writes a range (jax~=0.10.0); the lock decides jaxlib 0.10.2: its entry is the line."""
    found = annotated(capsys, named, "--python", "3.11")
    expected = lock_entry(inputs / "library-range" / "uv.lock", "jaxlib", "0.10.2")
    assert found["jaxlib-0102-cpu-vmap-matvec-sum"]["file"] == "library-range/uv.lock"
    assert found["jaxlib-0102-cpu-vmap-matvec-sum"]["line"] == str(expected)


def test_a_pylock_pins_it_to_its_package_entry(capsys: pytest.CaptureFixture[str], inputs: Path) -> None:
    found = annotated(capsys, "old-jax/pylock.toml", "--python", "3.11")
    expected = lock_entry(inputs / "old-jax" / "pylock.toml", "jaxlib", "0.4.20")
    assert found["numpy2-with-jaxlib-before-0426"]["file"] == "old-jax/pylock.toml"
    assert found["numpy2-with-jaxlib-before-0426"]["line"] == str(expected)


def test_a_pip_report_names_its_file_without_a_line_and_json_says_it(
    capsys: pytest.CaptureFixture[str], inputs: Path
) -> None:
    del inputs
    found = annotated(capsys, "--pip-report", "jaxlib-0102/report.json")
    assert found["jaxlib-0102-cpu-vmap-matvec-sum"] | {"title": ""} == {"file": "jaxlib-0102/report.json", "title": ""}
    assert main(["plan", "-r", "jaxlib-0102/requirements.in", "--format", "json"]) == Exit.FINDINGS
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    [finding] = report["findings"]
    assert finding["location"] == {"file": "jaxlib-0102/requirements.in", "line": 2}


def test_a_plan_of_arguments_has_no_location(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "jax==0.10.2", "jaxlib==0.10.2", "--format", "github"]) == Exit.FINDINGS
    [(_, props, _)] = commands(capsys.readouterr().out)
    assert set(props) == {"title"}


def test_toml_lines_know_keys_comments_and_strings() -> None:
    text = (
        'description = """\n"jax==1" is in a string\n"""\n'
        "[project]  # a comment\n"
        'dependencies = [ # "jax==2" in a comment\n'
        '  "jax==0.4.20", "jaxlib==0.4.20",\n'
        "  'numpy<2',\n"
        "]\n"
        "[dependency-groups]\n"
        '"dev" = ["pytest", {include-group = "lint"}]\n'
        "lint.x = ['ruff']\n"
    )
    found = tomllines.array_strings(text)
    assert found[(("project", "dependencies"), "jax==0.4.20")] == 6
    assert found[(("project", "dependencies"), "jaxlib==0.4.20")] == 6
    assert found[(("project", "dependencies"), "numpy<2")] == 7
    assert found[(("dependency-groups", "dev"), "pytest")] == 10
    assert found[(("dependency-groups", "lint", "x"), "ruff")] == 11
    assert not [k for k in found if k[1] in ("jax==1", "jax==2")]
    lock = '[[package]]\nname = "a"\nversion = "1"\n[package.metadata]\nname = "b"\n\n[[package]]\nname = "a"\n'
    assert tomllines.entries(lock, "package") == {("a", "1"): 2, ("a", ""): 8}
