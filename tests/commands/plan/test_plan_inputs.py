"""`envaudit plan` of the files ML engineers have: uv.lock, pylock.toml, pyproject.toml, requirements files and pip's
installation report, on real files uv and pip wrote (tests/fixtures/plan-inputs/README.md says how each was made).

What each plan should find was read from the files themselves before envaudit read them, and is checked against
another tool's output of the same project where there is one: uv's own `uv pip compile` of the project (a
different path through uv) against envaudit's reading of uv.lock, `uv export`'s pylock.toml against uv.lock, pip's
requirements-file parser against envaudit's.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests.conftest import FIXTURES

INPUTS = FIXTURES / "plan-inputs"
OLD_JAX_311 = {  # what uv.lock installs on Python 3.11 (its numpy and scipy fork at 3.12)
    "jax": "0.4.20",
    "jaxlib": "0.4.20",
    "ml-dtypes": "0.7.0",
    "numpy": "2.4.6",
    "opt-einsum": "3.4.0",
    "scipy": "1.17.1",
}


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["plan", *argv, "--format", "json"])
    captured = capsys.readouterr()
    assert code in (Exit.OK, Exit.FINDINGS), captured.err
    return code, json.loads(captured.out)


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line a plan that cannot be evaluated says (exit 2, never a traceback)."""
    code = main(["plan", *argv])
    err = capsys.readouterr().err
    assert code == Exit.USAGE, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def ids(report: dict[str, Any]) -> set[str]:
    return {f["id"] for f in report["findings"]}


@pytest.fixture(autouse=True)
def _in_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(INPUTS)  # the paths a user types, relative, as the fixes then name them


def test_a_uv_lock_is_what_uv_sync_installs_for_the_python(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = plan(capsys, "old-jax/uv.lock", "--python", "3.11")
    assert report["facts"]["packages"] == OLD_JAX_311
    assert code == Exit.FINDINGS and "numpy2-with-jaxlib-before-0426" in ids(report)
    # uv.lock is made from the pyproject.toml beside it: that is where the requirement line goes
    # jax 0.4.20 also wraps scipy.linalg.tril at import, which the locked SciPy 1.17 no longer has: one plan, which
    # keeps NumPy 2 and SciPy by moving jax past both
    assert report["plan"]["fix"] == "in old-jax/pyproject.toml: jax!=0.10.2,>=0.4.26, jaxlib!=0.10.2,>=0.4.26"
    _, later = plan(capsys, "old-jax/uv.lock", "--python", "3.12")
    assert (later["facts"]["packages"]["numpy"], later["facts"]["packages"]["scipy"]) == ("2.5.5", "1.18.1")
    # without a Python the lock's forks disagree: a plan does not pick one
    said = refused(capsys, "old-jax/uv.lock")
    assert "numpy" in said and "2.4.6" in said and "2.5.5" in said and "--python" in said


def test_a_pyproject_reads_the_uv_lock_beside_it_with_its_extras_and_groups(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, base = plan(capsys, "old-jax/pyproject.toml", "--python", "3.11")
    assert base["facts"]["packages"] == OLD_JAX_311  # optax is the `opt` extra's: not installed unless asked
    _, extra = plan(capsys, "old-jax/pyproject.toml", "--python", "3.11", "--extra", "opt")
    assert extra["facts"]["packages"] == OLD_JAX_311 | {"optax": "0.1.7", "chex": "0.1.86"}
    _, every = plan(capsys, "old-jax/pyproject.toml", "--python", "3.11", "--all-extras")
    assert every["facts"]["packages"] == extra["facts"]["packages"]
    _, dev = plan(capsys, "old-jax/pyproject.toml", "--python", "3.11", "--group", "dev")  # pytest: not audited
    assert dev["facts"]["packages"] == OLD_JAX_311
    assert "'cuda'" in refused(capsys, "old-jax/pyproject.toml", "--python", "3.11", "--extra", "cuda")
    assert "'docs'" in refused(capsys, "old-jax/pyproject.toml", "--python", "3.11", "--group", "docs")
    assert "--extra" in refused(capsys, "-r", "jaxlib-0102/requirements.in", "--extra", "opt")  # nothing takes one


def test_uv_export_and_uv_pip_compile_of_the_project_plan_as_its_lock_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Three files uv wrote of one project, by three commands: each plan is the same stack."""
    _, lock = plan(capsys, "old-jax/uv.lock", "--python", "3.11", "--extra", "opt")
    _, pylock = plan(capsys, "old-jax/pylock.toml", "--python", "3.11")  # exported without the extra
    _, compiled = plan(capsys, "-r", "old-jax/requirements.txt")  # compiled for 3.11 with --extra opt
    _, positional = plan(capsys, "old-jax/requirements.txt")
    assert pylock["facts"]["packages"] == OLD_JAX_311
    assert compiled["facts"]["packages"] == lock["facts"]["packages"] == positional["facts"]["packages"]
    assert "numpy2-with-jaxlib-before-0426" in ids(pylock) & ids(compiled)
    # the file the lines are in; NumPy 2 kept (the plan's objective): jax and jaxlib past 0.4.26, which also leaves
    # jax 0.4.20's wrapper of SciPy's tril behind, each line the least constraint that excludes what fails
    lines = "jax!=0.10.2,>=0.4.26, jaxlib!=0.10.2,>=0.4.26"
    # with the extra `opt`: optax 0.1.7 and its chex follow jax (their removed-API uses on the main path)
    assert lock["plan"]["fix"] == f"in old-jax/pyproject.toml: {lines}, chex>=0.1.90, optax>=0.2.3"
    assert (
        compiled["plan"]["fix"].startswith("in old-jax/requirements.txt: jax")
        and "numpy" not in compiled["plan"]["fix"]
    )
    # a pylock.toml does not say what it was made from: the fix says so instead of naming a file
    assert pylock["plan"]["fix"] == f"in the requirements old-jax/pylock.toml was made from: {lines}"


def test_a_pip_report_is_its_environment_with_its_requirements(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = plan(capsys, "--pip-report", "jaxlib-0102/report.json")
    facts = report["facts"]
    assert facts["packages"]["jax"] == facts["packages"]["jaxlib"] == "0.10.2"
    assert facts["python"] == {"version": "3.11.7"} and facts["platform"] == {"system": "Linux", "machine": "x86_64"}
    assert "jaxlib<=0.10.2,>=0.10.1" in facts["requires"]["jax"]  # jax 0.10.2's Requires-Dist, as the report has it
    assert "ml-dtypes" in facts["requires"] and "numpy>=2.0.0" in facts["requires"]["ml-dtypes"]
    assert "jaxlib-0102-cpu-vmap-matvec-sum" in ids(report)
    # the lines it was resolved from are not known to pin jax: the least constraint that excludes what fails
    assert report["plan"]["fix"] == (
        "in the requirements jaxlib-0102/report.json was resolved from: jax!=0.10.2, jaxlib!=0.10.2"
    )
    # beside the requirements file it was resolved from, the fix names that file
    _, both = plan(capsys, "-r", "jaxlib-0102/requirements.in", "--pip-report", "jaxlib-0102/report.json")
    assert both["plan"]["fix"] == "in jaxlib-0102/requirements.in: jax==0.10.1, jaxlib==0.10.1"
    _, later = plan(capsys, "--pip-report", "jaxlib-0102/report.json", "--python", "3.12")  # pip#11198
    assert later["facts"]["python"] == {"version": "3.12"}


def test_a_hand_written_requirements_file_as_pip_reads_it(capsys: pytest.CaptureFixture[str]) -> None:
    """nested/: an include, a constraints file, a hash on a continued line, markers, an option line, a package not
    audited, an editable project and a pip-freeze line of envaudit itself."""
    _, report = plan(capsys, "-r", "nested/requirements.txt", "--python", "3.11")
    assert report["facts"]["packages"] == {"jax": "0.4.20", "jaxlib": "0.4.20", "numpy": "2.0.2", "scipy": "1.11.4"}
    # numpy's version is the constraint's: that is the line to change, to what scipy 1.11.4 declares (pip refuses
    # numpy 2.0.2 beside it), which is below 2 for jaxlib 0.4.20 too
    assert report["plan"]["fix"] == "in nested/constraints.txt: numpy<1.28.0,>=1.21.6"
    assert "planned-requirement-refused" in ids(report)
    _, later = plan(capsys, "-r", "nested/requirements.txt", "--python", "3.12")
    assert later["facts"]["packages"]["scipy"] == "1.12.0"
    said = refused(capsys, "-r", "nested/requirements.txt")
    assert "nested/requirements.txt line 10" in said and "scipy" in said and "--python" in said
    assert "recursively references itself" in refused(capsys, "-r", "loop/a.txt")


def test_requirements_come_from_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pip freeze | envaudit plan -r -`: the freeze of a local install of envaudit is no error."""
    import io
    import sys

    frozen = b"envaudit @ file:///home/user/src/envaudit\njax==0.4.30\njaxlib==0.4.30\nrequests==2.32.3\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(frozen)))
    _, report = plan(capsys, "-r", "-")
    assert report["facts"]["packages"] == {"jax": "0.4.30", "jaxlib": "0.4.30"}


def test_a_fix_for_requirements_from_standard_input_says_where_in_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-r -` names no file a person could open: the fix says standard input in words, never `in -:`."""
    import io
    import sys

    from envaudit.commands.plan.inputs.values import STDIN
    from envaudit.model import fixes

    assert fixes.STDIN == STDIN  # the readers' name for it is the one the fix renders
    crashing = b"jax==0.4.20\njaxlib==0.4.20\nnumpy==2.1.0\n"  # numpy2-with-jaxlib-before-0426: numpy<2 is written
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(crashing)))
    _, report = plan(capsys, "-r", "-")
    assert report["plan"]["fix"].startswith(f"in {fixes.file_named(STDIN)}: numpy<2"), report["plan"]["fix"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(crashing)))
    assert main(["plan", "-r", "-"]) == Exit.FINDINGS
    shown = capsys.readouterr().out
    assert "in -:" not in shown and "fix: in the requirements read from standard input: numpy<2" in shown


def test_pip_freeze_split_by_the_shell_is_read_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """`envaudit plan $(pip freeze)` splits `NAME @ URL` into three words; a wheel's file name states its version."""
    wheel = "https://storage.example/jaxlib-0.4.20%2Bcuda12.cudnn89-cp311-cp311-manylinux2014_x86_64.whl"
    _, report = plan(capsys, "jax==0.4.20", "envaudit", "@", "file:///home/user/src/envaudit", "jaxlib", "@", wheel)
    assert report["facts"]["packages"] == {"jax": "0.4.20", "jaxlib": "0.4.20+cuda12.cudnn89"}
    said = refused(capsys, "jax", "@", "git+https://github.com/jax-ml/jax")
    assert "direct reference" in said and "jax==X.Y.Z" in said


def test_arguments_and_files_mix(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = plan(capsys, "-r", "jaxlib-0102/requirements.in", "flax==0.8.5")
    assert report["facts"]["packages"]["flax"] == "0.8.5" and report["facts"]["packages"]["jax"] == "0.10.2"
    said = refused(capsys, "-r", "jaxlib-0102/requirements.in", "jax==0.10.1")
    assert "pinned twice" in said and "0.10.1" in said and "0.10.2" in said


def write(path: Path, text: str | bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def test_unpinned_requirements_say_how_to_resolve_them(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    reqs = write(tmp_path / "requirements.txt", "jax>=0.4\nrequests\n")
    said = refused(capsys, "-r", reqs)
    assert f"{reqs} line 1: jax>=0.4 is not pinned" in said
    assert f"pip install --dry-run --ignore-installed --report report.json -r {reqs}" in said
    assert "--pip-report report.json" in said
    project = write(
        tmp_path / "p" / "pyproject.toml", '[project]\nname = "p"\nversion = "1"\ndependencies = ["flax"]\n'
    )
    said = refused(capsys, project)
    assert "flax is not pinned" in said and "uv lock" in said
    # what the plan does not evaluate may stay unpinned
    only_other = write(tmp_path / "other.txt", "requests\njax==0.4.30\n")
    assert plan(capsys, "-r", only_other)[1]["facts"]["packages"] == {"jax": "0.4.30"}


def test_a_lock_older_than_its_pyproject_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """pyproject.toml asks jax 0.4.21 and the lock beside it still has 0.4.20: uv would lock again."""
    text = (INPUTS / "old-jax" / "pyproject.toml").read_text().replace("jax==0.4.20", "jax==0.4.21")
    write(tmp_path / "pyproject.toml", text)
    write(tmp_path / "uv.lock", (INPUTS / "old-jax" / "uv.lock").read_bytes())
    said = refused(capsys, str(tmp_path / "pyproject.toml"), "--python", "3.11")
    assert "jax==0.4.21" in said and "0.4.20" in said and "uv lock" in said


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("requirements.txt", b"jax==0.4.30\n\xff\xfe\n", "not UTF-8"),
        ("pyproject.toml", b"[project\nname = 1\n", "not valid TOML"),
        ("pyproject.toml", b'[project]\ndependencies = "jax==0.4.30"\n', "dependencies must be a JSON array"),
        ("uv.lock", b"version = 2\n", "envaudit reads uv.lock version 1"),
        ("uv.lock", b'version = 1\n[[package]]\nversion = "1"\n', "is missing 'name'"),
        ("pylock.toml", b'lock-version = "2.0"\npackages = []\n', "lock-version 1"),
        ("pylock.dev.toml", b"packages = []\n", "is missing 'lock-version'"),
        ("report.json", b'{"version": "0", "install": []}', "envaudit reads version 1"),
        ("report.json", b'{"version": "1", "install": [{"metadata": {"name": "jax"}}]}', "is missing 'version'"),
        ("report.json", b"{'version': 1}", "not valid JSON"),
        ("report.json", b"null", "must be a JSON object"),  # found by scripts.fuzz: exit 3 before
        ("report.json", b'{"version": "1", "install": [], "environment": {"python_full_version": NaN}}', "finite"),
        ("requirements.txt", b"jax==0.4.30 --frobnicate\n", "no such option: --frobnicate"),
        ("requirements.txt", b"-r https://example.com/r.txt\n", "a plan reads no network"),
        ("requirements.txt", b"-r missing.txt\n", "no such file"),
        ("requirements.txt", b"jax==0.4.30; python_version <<< '3'\n", "not a requirement pip reads"),
        ("requirements.txt", b"jax @ https://example.com/jax.tar.gz\n", "states no version"),
    ],
)
def test_a_bad_input_file_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    path = write(tmp_path / name, content)
    flag = ["--pip-report", path] if name.endswith(".json") else [path]
    said = refused(capsys, *flag)
    assert expected in said and path in said, said


def test_what_is_not_a_file_of_an_input_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import os

    assert "no such file" in refused(capsys, str(tmp_path / "absent" / "uv.lock"))
    os.mkdir(tmp_path / "requirements.txt")
    assert "is a directory" in refused(capsys, str(tmp_path / "requirements.txt"))
    os.mkfifo(tmp_path / "pylock.toml")  # never opened for writing: a blocking read would wait for ever
    assert "not a regular file" in refused(capsys, str(tmp_path / "pylock.toml"))
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:
        handle.truncate(17 * 2**20)  # sparse: beyond the bound without writing it
    assert "larger than 16 MiB" in refused(capsys, str(big))
    write(tmp_path / "reqs.in", "jax==0.4.30\n")
    assert "-r" in refused(capsys, str(tmp_path / "reqs.in"))  # a file of no known name: say how to give it
    assert "nothing to plan" in refused(capsys, "--python", "3.11")


MUTATED = ["old-jax/uv.lock", "old-jax/pylock.toml", "old-jax/pyproject.toml", "old-jax/requirements.txt"]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from([*MUTATED, "jaxlib-0102/report.json"]),
    cut=st.integers(min_value=0, max_value=400),
    length=st.integers(min_value=0, max_value=40),
    inserted=st.text(alphabet=string.printable + "é\u2028", max_size=30),
)
def test_real_inputs_cut_and_spliced_never_traceback(
    capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    cut: int,
    length: int,
    inserted: str,
) -> None:
    """A real file with a run of its lines replaced by junk: a plan, or one line of bad input, never a crash."""
    lines = (INPUTS / name).read_text().splitlines(keepends=True)
    at = cut % max(len(lines), 1)
    spliced = "".join([*lines[:at], inserted, *lines[at + length :]])
    where = tmp_path_factory.mktemp("mutated") / name
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(spliced)
    if name.endswith("pyproject.toml"):
        (where.parent / "uv.lock").write_text((INPUTS / "old-jax" / "uv.lock").read_text())
    argv = ["--pip-report", str(where)] if name.endswith(".json") else [str(where)]
    code = main(["plan", *argv, "--python", "3.11", "--format", "json"])
    captured = capsys.readouterr()
    assert code in (Exit.OK, Exit.FINDINGS, Exit.USAGE), captured.err
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    if code == Exit.USAGE:
        assert len(captured.err.strip().splitlines()) == 1


def test_over_a_range_the_fix_line_excludes_what_fails_and_keeps_the_range(capsys: pytest.CaptureFixture[str]) -> None:
    """A library's pyproject writes `jax~=0.10.0` and its lock resolves 0.10.2 (jax#39103): the line to write keeps
    the range and excludes the release that fails, as envaudit's own [jax] extra does, never `jax==0.10.1` in a
    library's metadata; where an input pins exactly, the fix pins exactly (the test above)."""
    _, report = plan(capsys, "library-range/pyproject.toml", "--python", "3.11")
    assert report["facts"]["packages"]["jaxlib"] == "0.10.2"
    assert report["plan"]["fix"] == "in library-range/pyproject.toml: jax!=0.10.2,~=0.10.0, jaxlib!=0.10.2"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", "[tool.ruff]\nline-length = 100\n"),  # a project's file that declares no project
        ("test-requirements.txt", "absl-py\nbuild\ncloudpickle\nhypothesis\npytest-xdist\nwheel\n"),  # jax's own
    ],
)
def test_nothing_to_plan_is_one_line_and_exit_2(
    name: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plan with nothing of the audited stack in it is bad input, not an OK: one line naming what was read."""
    path = tmp_path / name
    path.write_text(text)
    said = refused(capsys, str(path))
    assert said.removeprefix("envaudit: error: ").startswith(f"nothing to plan: {path} names no release of jax"), said
    assert "nothing to plan: the arguments name no release of jax" in refused(capsys, "requests==2.0")


@pytest.mark.parametrize(("extra", "jax", "plugin"), [("gpu", "0.5.3", "0.5.3"), ("cpu", "0.4.38", None)])
def test_a_locks_conflicting_extras_are_read_as_uv_reads_them(
    capsys: pytest.CaptureFixture[str], extra: str, jax: str, plugin: str | None
) -> None:
    """uv writes the extras `[tool.uv] conflicts` names into markers as conflict items (`extra ==
    'extra-11-conflicting-gpu'`): selected, they hold, as `uv export --extra` says (the fixture's README); neither
    selected, the lock installs NumPy and no jax."""
    _, report = plan(capsys, "conflicting-extras/uv.lock", "--python", "3.11", "--extra", extra)
    packages = report["facts"]["packages"]
    assert (packages.get("jax"), packages.get("jax-cuda12-plugin")) == (jax, plugin), packages
    _, neither = plan(capsys, "conflicting-extras/uv.lock", "--python", "3.11")
    assert "numpy" in neither["facts"]["packages"] and "jax" not in neither["facts"]["packages"]


def test_dynamic_extras_are_refused_as_dynamic_not_as_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """maxtext's pyproject.toml: `dynamic = ["optional-dependencies"]`, its extras made from requirements files by its
    build backend; `--extra tpu` names an extra that exists, which the file alone cannot say."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "m"\ndynamic = ["version", "optional-dependencies"]\ndependencies = ["jax==0.10.1"]\n',
        encoding="utf-8",
    )
    line = refused(capsys, str(tmp_path / "pyproject.toml"), "--extra", "tpu")
    assert "optional-dependencies are dynamic" in line and "no extra" not in line
    code, report = plan(capsys, str(tmp_path / "pyproject.toml"))  # without an extra, what it states is planned
    assert code == Exit.OK and report["facts"]["packages"]["jax"] == "0.10.1"


def test_a_project_s_requires_python_reaches_the_build(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alphafold3 (>=3.12) and axlearn (==3.12.*) were built on 3.11: the Pythons a project admits go to the build,
    which builds for no other (tests/commands/plan/test_build.py holds the choice)."""
    from envaudit.commands.plan import building

    seen: dict[str, Any] = {}
    real = building.report

    def spy(facts: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        return real(facts, **kwargs)

    monkeypatch.setattr(building, "report", spy)
    project = write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "p"\nversion = "1"\nrequires-python = ">=3.12"\n'
        'dependencies = ["jax==0.4.30", "jaxlib==0.4.30"]\n',
    )
    plan(capsys, project)
    assert seen["admitted"] and set(seen["admitted"]) <= {"3.12", "3.13", "3.14", "3.15"}
    plan(capsys, "jax==0.4.30", "jaxlib==0.4.30")
    assert seen["admitted"] == ()  # arguments say no Python: any
