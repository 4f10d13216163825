"""`envaudit plan --each`: each input file planned as the environment it installs, one report after another, as the
pre-commit hook (.pre-commit-hooks.yaml) runs it on every changed file at once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests.conftest import FIXTURES

CPU = "jax==0.10.1\njaxlib==0.10.1\n"
YANKED = "jax==0.4.0\njaxlib==0.4.0\n"  # a warn: rule jax-040-yanked
COUPLING = "jax==0.4.30\njaxlib==0.4.23\n"  # a fail: jax 0.4.30 requires jaxlib >= 0.4.27


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative names, as pre-commit passes them from the repository's root


def write(name: str, text: str) -> str:
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    Path(name).write_text(text, encoding="utf-8")
    return name


def sections(out: str) -> dict[str, str]:
    """Each report of the output, by the file its heading names."""
    found: dict[str, str] = {}
    name = None
    for line in out.splitlines():
        if line.startswith("plan of ") and line.endswith(":"):
            name = line.removeprefix("plan of ").removesuffix(":")
            found[name] = ""
        elif name is not None:
            found[name] += line + "\n"
    return found


def test_files_that_pin_jax_differently_are_each_their_own_plan(capsys: pytest.CaptureFixture[str]) -> None:
    cpu, bad = write("requirements-cpu.txt", CPU), write("requirements-old.txt", COUPLING)
    assert main(["plan", cpu, bad]) == Exit.USAGE  # as one environment, jax is pinned twice
    assert "pinned twice" in capsys.readouterr().err
    assert main(["plan", "--each", cpu, bad]) == Exit.FINDINGS  # the worst of the two plans
    out = sections(capsys.readouterr().out)
    assert list(out) == [cpu, bad]
    assert "verdict: OK" in out[cpu] and "jax-jaxlib-coupling" not in out[cpu]
    assert "verdict: FAIL" in out[bad] and "FAIL  jax-jaxlib-coupling" in out[bad]
    assert f"in {bad}: jaxlib==0.4.30" in out[bad]  # the fix names the file that decides the version


def test_strict_fails_on_a_warn_as_the_hook_runs_it(capsys: pytest.CaptureFixture[str]) -> None:
    yanked = write("requirements.txt", YANKED)
    assert main(["plan", "--each", yanked]) == Exit.OK
    assert main(["plan", "--each", "--strict", yanked]) == Exit.FINDINGS
    assert "WARN  jax-040-yanked" in capsys.readouterr().out


def test_a_file_that_cannot_be_planned_is_one_line_and_the_others_are_still_planned(
    capsys: pytest.CaptureFixture[str],
) -> None:
    unpinned = write("requirements-dev.txt", "jax>=0.4\n")
    bad = write("requirements.txt", COUPLING)
    assert main(["plan", "--each", unpinned, bad]) == Exit.USAGE
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"envaudit: error: {unpinned} line 1: jax>=0.4 is not pinned"), err
    out = sections(captured.out)
    assert list(out) == [unpinned, bad] and "verdict" not in out[unpinned]
    assert "FAIL  jax-jaxlib-coupling" in out[bad]


def test_a_pyproject_and_the_uv_lock_beside_it_are_one_plan(capsys: pytest.CaptureFixture[str]) -> None:
    project = Path("project")
    shutil.copytree(FIXTURES / "plan-inputs" / "old-jax", project)
    other = write("other/requirements.txt", CPU)
    argv = [
        "plan",
        "--each",
        "--python",
        "3.11",
        "project/uv.lock",
        "project/pyproject.toml",
        other,
        "./other/requirements.txt",
    ]
    assert main(argv) == Exit.FINDINGS
    out = sections(capsys.readouterr().out)
    assert list(out) == ["project/pyproject.toml", other]  # the lock is the project's; a file named twice is once
    assert "numpy2-with-jaxlib-before-0426" in out["project/pyproject.toml"]  # numpy 2.4.6 is what uv.lock resolves
    assert main(["plan", "--each", "--python", "3.11", "project/uv.lock"]) == Exit.FINDINGS  # a lock alone is a plan
    assert list(sections(capsys.readouterr().out)) == ["project/uv.lock"]


def test_a_requirements_file_of_any_name_is_planned_with_r(capsys: pytest.CaptureFixture[str]) -> None:
    deps = write("deps.in", COUPLING)
    assert main(["plan", "--each", "-r", deps]) == Exit.FINDINGS
    assert "FAIL  jax-jaxlib-coupling" in sections(capsys.readouterr().out)[deps]


def test_the_heading_cannot_carry_a_terminals_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    name = write("deps-\x1b]0;owned\x07.in", CPU)  # git allows any byte but NUL and / in a name
    assert main(["plan", "--each", "-r", name]) == Exit.OK
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "plan of deps-\ufffd]0;owned\ufffd.in:" in out


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["jax==0.4.30"], "'jax==0.4.30' is not a file a plan reads"),
        (["--pip-report", "report.json"], "a --pip-report is one environment's"),
        (["--format", "json"], "--format json is one document"),
        (["--output", "report.txt"], "--output takes one report"),
    ],
)
def test_what_each_cannot_do_is_one_line(capsys: pytest.CaptureFixture[str], extra: list[str], said: str) -> None:
    write("requirements.txt", CPU)
    assert main(["plan", "--each", "requirements.txt", *extra]) == Exit.USAGE
    captured = capsys.readouterr()
    assert captured.out == "" and not Path("report.txt").exists()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], lines


def test_each_with_no_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--each"]) == Exit.USAGE
    assert capsys.readouterr().err.strip() == "envaudit: error: nothing to plan: --each plans the input files named"


def test_a_lock_that_forks_by_python_is_planned_for_each_of_its_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    """old-jax/uv.lock resolves numpy 2.4.6 below Python 3.12 and 2.5.5 from it: without --python, the hook plans
    it once per stack, each report labelled by its Python (it used to be exit 2 until --python was given)."""
    shutil.copytree(FIXTURES / "plan-inputs" / "old-jax", "old-jax")
    code = main(["plan", "--each", "old-jax/uv.lock", "--format", "text"])
    out = capsys.readouterr().out
    found = sections(out)
    assert list(found) == ["old-jax/uv.lock", "old-jax/uv.lock (Python 3.11)", "old-jax/uv.lock (Python 3.12)"]
    assert "numpy 2.4.6" in found["old-jax/uv.lock (Python 3.11)"]
    assert "numpy 2.5.5" in found["old-jax/uv.lock (Python 3.12)"]
    assert code == Exit.FINDINGS  # jaxlib 0.4.20 under NumPy 2 fails on both
    assert main(["plan", "--each", "old-jax/uv.lock", "--python", "3.12"]) == Exit.FINDINGS  # one Python: one plan
    assert list(sections(capsys.readouterr().out)) == ["old-jax/uv.lock"]
