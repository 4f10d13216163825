"""The fifth adversarial round ("safe as root"), each finding reproduced: uv reads no configuration file from the
directories above a build's (a /tmp/uv.toml another user wrote) and no cache another user owns; every Python
envaudit starts imports nothing from the caller's working directory; `fix --restore` acts only on the environment
its snapshot names, read from the descriptor it checked; an output that cannot be written is no internal error; a
Ctrl-C while envaudit starts is no traceback; an error line quoting input shows no URL's credentials."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import venv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from envaudit.child import bounded, runner
from envaudit.cli import main
from envaudit.collect import build, nvml, outside
from envaudit.commands import fix as repair
from envaudit.commands import hook
from envaudit.files import safedir, safewrite
from envaudit.model.exitcodes import Exit
from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix, Target
from tests.cli.test_interrupt_at_start import SITECUSTOMIZE
from tests.conftest import PYTHON, ROOT, facts_from

UV = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))


class Spy:
    """`bounded.run` as the build calls it: each call's argv, working directory and environment noted, and uv's
    answer an error, so that the build stops at its first steps."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str | None, dict[str, str]]] = []
        self.modes: list[int] = []  # of each working directory, as the call found it

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        limit: int = bounded.LIMIT,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> bounded.Finished:
        self.calls.append((list(argv), cwd, dict(env or {})))
        self.modes.append(os.stat(cwd).st_mode & 0o777 if cwd else -1)
        return bounded.Finished(2, "", "error: not run by this test")


def built_with(spy: Spy, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bounded, "run", spy)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    build.measure(build.Stack({"six": "1.17.0"}, ["3.11"]), timeout=30, uv=("uv",))
    assert spy.calls, "the build ran no uv"


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$TMPDIR as a shared /tmp is: a uv.toml and a pyproject.toml another user wrote there, naming their index."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    (shared / "uv.toml").write_text('index-url = "http://127.0.0.1:9/planted"\ncache-dir = "/planted-cache"\n')
    (shared / "pyproject.toml").write_text('[tool.uv]\nindex-url = "http://127.0.0.1:9/planted"\n')
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return shared


def test_every_uv_a_build_runs_reads_no_configuration_file_from_its_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_tmp: Path
) -> None:
    spy = Spy()
    monkeypatch.chdir(shared_tmp)
    built_with(spy, monkeypatch, tmp_path)
    for argv, cwd, env in spy.calls:
        assert argv[1] == "--no-config", argv
        assert str(shared_tmp / "uv.toml") not in argv and "UV_CONFIG_FILE" not in env
        assert cwd is not None and Path(cwd).parent == shared_tmp and cwd != os.getcwd()
    assert set(spy.modes) == {0o700}


@pytest.mark.skipif(UV is None, reason="no uv here")
@pytest.mark.parametrize("mine", ["the user's own", "another's, or open to others"])
def test_uv_reads_the_users_own_file_by_name_and_not_one_in_a_directory_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_tmp: Path, mine: str
) -> None:
    """Run by the uv here: `cache-dir`, which `uv cache dir` prints, tells which file uv read."""
    config = tmp_path / "config"
    (config / "uv").mkdir(parents=True)
    (config / "uv" / "uv.toml").write_text(f'cache-dir = "{tmp_path / "users-cache"}"\n')
    if mine != "the user's own":
        (config / "uv" / "uv.toml").chmod(0o666)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.delenv("UV_CONFIG_FILE", raising=False)
    below = shared_tmp / "envaudit-build-x"
    below.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("UV_CACHE_DIR", "UV_NO_CONFIG")}
    assert UV is not None
    said = subprocess.run(
        [UV, *build.uv_options(), "cache", "dir"], cwd=below, env=env, capture_output=True, text=True, timeout=60
    )
    assert "planted" not in said.stdout + said.stderr
    assert ("users-cache" in said.stdout) == (mine == "the user's own"), said


NOBODY = 65534


def their_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str) -> str:
    """uv's cache as `variable` names it (UV_CACHE_DIR, or XDG_CACHE_HOME/uv), made here."""
    theirs = tmp_path / "theirs"
    (theirs / "uv").mkdir(parents=True)
    monkeypatch.delenv("UV_CACHE_DIR", raising=False)
    monkeypatch.setenv(variable, str(theirs / "uv" if variable == "UV_CACHE_DIR" else theirs))
    return str(theirs / "uv")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to give the cache to another user")
@pytest.mark.parametrize("variable", ["UV_CACHE_DIR", "XDG_CACHE_HOME"])
def test_roots_build_uses_no_uv_cache_another_user_owns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """As root under `sudo -E`: XDG_CACHE_HOME (or UV_CACHE_DIR) is a user's, and a wheel they put in that cache
    would be installed and imported by root."""
    named = their_cache(tmp_path, monkeypatch, variable)
    spy = Spy()
    built_with(spy, monkeypatch, tmp_path)
    assert {env["UV_CACHE_DIR"] for _, _, env in spy.calls} == {named}  # root's own: kept
    os.chown(Path(named).parent, NOBODY, NOBODY)
    os.chown(named, NOBODY, NOBODY)
    spy = Spy()
    built_with(spy, monkeypatch, tmp_path)
    for _, _, env in spy.calls:
        assert not env["UV_CACHE_DIR"].startswith(str(Path(named).parent)), env["UV_CACHE_DIR"]


@pytest.mark.parametrize("variable", ["UV_CACHE_DIR", "XDG_CACHE_HOME"])
def test_a_uv_cache_not_this_users_is_replaced_by_one_that_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """The same without root: the other user is played by this process's euid made another one (the seam is
    `safedir.owned`, which compares the directory's owner with os.geteuid())."""
    named = their_cache(tmp_path, monkeypatch, variable)
    home = tmp_path / "build"
    assert safedir.owned(named) and build.uv_environ(home)["UV_CACHE_DIR"] == named
    real = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: real + 1)
    assert not safedir.owned(named)
    assert build.uv_environ(home)["UV_CACHE_DIR"] == str(home / "uv-cache")  # no cache of envaudit's is this uid's


def test_fix_runs_uv_without_configuration_files_and_prints_it_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    fix = Fix(install=("six==1.17.0",), uninstall=("chex",), target=Target(python="/env/bin/python", tool="uv"))
    ran: list[str] = []

    def shell(command: str) -> int:
        ran.append(command)
        return 0

    monkeypatch.setattr(repair, "shell", shell)
    monkeypatch.setattr(repair, "distributions", lambda python, timeout: {})
    monkeypatch.setattr(repair, "debris", lambda python, timeout: repair.Debris())
    assert fix.command.startswith("uv pip uninstall")  # what the user reads
    repair._restore({"six": repair.Installed("six", "1.17.0", "uv")}, _uv_facts(), "/env/bin/python", 30, print)
    assert ran and ran[0].startswith("uv --no-config pip install"), ran


def _uv_facts() -> Facts:
    return facts_from({"python": {"executable": "/env/bin/python", "environment": "uv", "pip": False, "uv": True}})


PLANTED = """\
import os, sys
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "imported-" + __name__), "w") as f:
    f.write(" ".join(sys.argv))
raise SystemExit("planted " + __name__)
"""


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory another user prepared: a json.py and a pip.py that note being imported."""
    where = tmp_path / "cwd"
    where.mkdir()
    for name in ("json", "pip"):
        (where / f"{name}.py").write_text(PLANTED)
    monkeypatch.chdir(where)
    return where


def imported(where: Path) -> list[str]:
    return sorted(p.name for p in where.glob("imported-*"))


def test_hook_status_of_another_interpreter_imports_nothing_from_the_working_directory(planted: Path) -> None:
    hook.status(PYTHON)
    assert imported(planted) == []


def test_what_describes_an_interpreter_and_asks_nvml_imports_nothing_from_the_working_directory(
    planted: Path,
) -> None:
    outside.describe(PYTHON, 60)
    nvml.Asking(30, PYTHON).answer()
    assert imported(planted) == []


def test_the_fix_commands_python_imports_nothing_from_the_working_directory(planted: Path) -> None:
    assert repair.shell(f"{PYTHON} -m pip --version >/dev/null && {PYTHON} -c 'import json'") == 0
    assert imported(planted) == []


@pytest.mark.slow  # imports jax in the child
def test_the_jax_child_imports_nothing_from_the_working_directory(planted: Path) -> None:
    runner.jax_facts(120, PYTHON)
    assert imported(planted) == []


def two_venvs(tmp_path: Path) -> tuple[Path, Path]:
    """Two environments of one base Python: their bin/python resolve to the same file."""
    made = []
    for name in ("a", "b"):
        venv.create(tmp_path / name, with_pip=False, symlinks=True)
        made.append(tmp_path / name)
    assert os.path.realpath(made[0] / "bin" / "python") == os.path.realpath(made[1] / "bin" / "python")
    return made[0], made[1]


def test_a_restore_into_another_venv_of_the_same_base_python_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_venvs(tmp_path)
    prefix = os.path.realpath(a)
    document = {"python": str(a / "bin" / "python"), "prefix": prefix, "distributions": []}
    safewrite.create(tmp_path / "s.json", json.dumps(document))
    code = main(["fix", "--restore", str(tmp_path / "s.json"), "--python", str(b / "bin" / "python"), "--dry-run"])
    err = capsys.readouterr().err
    assert code == Exit.USAGE and err.count("\n") == 1, err
    assert prefix in err and os.path.realpath(b) in err and "--python" in err
    assert main(["fix", "--restore", str(tmp_path / "s.json"), "--python", str(a / "bin" / "python"), "--dry-run"]) in (
        Exit.OK,
        Exit.FINDINGS,
    )


def test_a_snapshot_swapped_for_a_link_between_its_check_and_its_read_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of a check by name and an open by name: the file is swapped for a link to one anybody may write
    just as it is opened."""
    path = tmp_path / "s.json"
    safewrite.create(path, json.dumps({"python": PYTHON, "distributions": []}))
    theirs = tmp_path / "theirs.json"
    theirs.write_text(json.dumps({"python": "/tmp/evil/python", "distributions": []}))
    theirs.chmod(0o666)
    real_open = os.open

    def swapping(file: object, flags: int, *args: object, **kwargs: object) -> int:
        if os.fspath(file) == str(path) and not path.is_symlink():  # type: ignore[call-overload]
            path.unlink()
            path.symlink_to(theirs)
        return real_open(file, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", swapping)
    with pytest.raises(safewrite.OutputError):
        repair.read_snapshot(path)


def closed_pipe() -> int:
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("args", [["schema"], ["--version"], ["rules", "--format", "json"]])
def test_a_reader_that_left_is_a_quiet_exit_3(args: list[str]) -> None:
    write = closed_pipe()
    try:
        done = subprocess.run(
            [PYTHON, "-m", "envaudit", *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (Exit.INTERNAL, ""), done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("args", [["schema"], ["--version"], ["rules"]])
def test_a_full_disk_is_one_line_and_exit_2(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [PYTHON, "-m", "envaudit", *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60
        )
    assert done.returncode == Exit.USAGE and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("envaudit: error: cannot write the output: No space left"), done.stderr


CONSOLE_SCRIPT = """\
import re
import sys
from envaudit.__main__ import main_entry
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main_entry())
"""


@pytest.mark.parametrize("entry", ["python -m envaudit", "console script"])
def test_ctrl_c_as_envaudits_main_module_loads_is_one_line(tmp_path: Path, entry: str) -> None:
    """The interrupt lands as the package's __main__ is found: after the interpreter's own start and the package's
    first lines, before the command line's modules (tests/cli/test_interrupt_at_start.py covers those)."""
    module = "envaudit.__main__"
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    script = tmp_path / "bin" / "envaudit"
    script.parent.mkdir()
    script.write_text(CONSOLE_SCRIPT)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("INTERRUPT_")}
    environ.update(PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), INTERRUPT_AT=module)
    start = ["-m", "envaudit"] if entry == "python -m envaudit" else [str(script)]
    done = subprocess.run(
        [PYTHON, *start, "triage", "-"],
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines = [line for line in done.stderr.splitlines() if line != "loading envaudit"]
    assert (done.returncode, lines) == (Exit.INTERNAL, [f"interrupting at {module}", "envaudit: interrupted"]), (
        done.stderr
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "flax @ git+https://user:SECRET@host/x"],
        ["plan", "-r https://user:SECRET@host/r.txt"],
    ],
)
def test_an_error_line_quoting_input_shows_no_urls_credentials(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == Exit.USAGE
    err = capsys.readouterr().err
    assert "SECRET" not in err and err.count("\n") == 1, err


def test_a_requirement_files_url_line_is_quoted_without_its_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text("jax==0.4.30\n-r https://user:tok3n@host/r.txt\n")
    assert main(["plan", str(tmp_path / "requirements.txt")]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "tok3n" not in err and "line 2" in err, err


def test_a_killed_runs_build_directory_is_swept_at_the_next_start_and_nothing_else_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGKILLed plan left its build environment in $TMPDIR (5,701 files, 635 MB). The next scratch directory's
    start removes such leftovers: this user's own private directories of that name, old enough, held by no run;
    never one a live run holds, a link, a recent one, or one of other permissions."""
    import fcntl

    from envaudit.files import safedir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tmp_path.chmod(0o700)
    old = time.time() - 2 * safedir.LEFTOVER_S

    def leftover(name: str, mode: int = 0o700, age: float = old) -> Path:
        path = tmp_path / name
        path.mkdir(mode=mode)
        (path / "env0").mkdir()
        (path / "env0" / "python").write_text("")
        path.chmod(mode)
        os.utime(path, (age, age))
        return path

    dead = leftover("envaudit-build-dead")
    live = leftover("envaudit-build-live")
    fresh = leftover("envaudit-build-fresh", age=time.time())
    odd = leftover("envaudit-build-open", mode=0o755)
    other = leftover("not-envaudit-build-x")
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "envaudit-build-link").symlink_to(target)
    holder = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        with safedir.scratch("envaudit-build-") as home:
            assert home.is_dir()
            assert not dead.exists()
            assert live.exists() and fresh.exists() and odd.exists() and other.exists() and target.exists()
            assert (tmp_path / "envaudit-build-link").is_symlink()
    finally:
        os.close(holder)
    assert not home.exists()


def one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "internal error" not in err, err
    return err


@pytest.mark.parametrize("name", ["a" * 300, "a/" * 3000])
def test_a_python_path_the_system_refuses_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    """Round 4's residual: a --python path over 255 bytes a component (or 4,096 in all) was exit 3, an internal
    error; it is bad input. The line quotes the path's end, not 6,000 bytes of it."""
    err = one_line_exit_2(capsys, ["--quick", "--python", str(tmp_path / name)])
    assert "too long" in err and len(err) < 300


@pytest.mark.parametrize("line", ["jax==0.4.{}", "jaxlib==0.4.30\njax==0.4.30\nflax==1.{}", "jax>=0.4,=={}"])
def test_a_version_of_thousands_of_digits_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, line: str
) -> None:
    """Round 4's residual: a 5,000-digit version in a requirements file was exit 3 (Python refuses to read an
    integer of more than 4,300 digits); no installer reads it either."""
    path = tmp_path / "requirements.txt"
    path.write_text(line.format("9" * 5000) + "\n")
    err = one_line_exit_2(capsys, ["plan", "--no-build", "-r", str(path)])
    assert "not a version" in err or "requirement" in err, err


@pytest.mark.parametrize(
    ("grow", "said"),
    [
        (lambda d: d["facts"]["packages"].update({f"pkg{i}": "1.0" for i in range(60_000)}), "60008 items"),
        (lambda d: d["facts"]["jax"].update(status="import_error", message="x" * 2_000_000), "2000000 characters"),
    ],
)
def test_a_report_of_more_than_any_environment_has_is_refused_before_it_is_judged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, grow: Any, said: str
) -> None:
    """Round 5: `check` and `compare` had no bound below the file's size cap: a 57 MiB report took 156 s and 1 GB
    (200,000 packages here: 18 s; a 30 MB message: 10 s and 500 MB). A collection of more items than any document
    envaudit writes, or a string longer than any, is bad input, said before the rules run."""
    document = json.loads((Path(__file__).parents[1] / "fixtures" / "tpu" / "tpu-v5e-jax0102-audit.json").read_text())
    grow(document)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(document))
    for verb in ("check", "compare"):
        err = one_line_exit_2(capsys, [verb, str(path)])
        assert said in err, err


def test_each_file_s_error_is_one_line_whatever_its_name_holds(capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the fuzzer's contract: `plan --each -r $'\\n\\n'` said its error in three lines (the name quoted as
    it is); each file's error is one line, as the command line's own are."""
    one_line_exit_2(capsys, ["plan", "--each", "-r", "\n\n"])


def test_a_version_in_another_script_s_digits_is_never_planned(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Found by the fuzzer: a pasted `jaxlib==0.3.25\\u0663` (Python's `\\d` reads Arabic-Indic digits) became a plan's
    requirement no installer reads, an internal error. Such a version is no fact, and a way whose requirement
    cannot be read is no way."""
    path = tmp_path / "paste.txt"
    path.write_text("pip install jax==0.3.25 jaxlib==0.3.25\u0663\nimport jax\n", encoding="utf-8")
    code = main(["triage", str(path), "--format", "json"])
    said = capsys.readouterr()
    assert code in (0, 1), said.err
    assert "0.3.25\u0663" not in said.out and "0.3.25" in said.out


def test_a_requirement_repeated_thousands_of_times_is_read_once() -> None:
    """Found by the fuzzer: a report whose optax requires `jax>=0.5.3` 3,002 times took 89 s to check (every state
    the plan tried read each copy again). A package's requirements are a set: read once."""
    from envaudit.model.facts import Facts

    document = json.loads((Path(__file__).parents[1] / "fixtures" / "tpu" / "tpu-v5e-jax0102-audit.json").read_text())
    document["facts"]["requires"] = {"optax": ["jax>=0.5.3"] * 3000 + ["chex"]}
    assert Facts.from_dict(document["facts"]).requires == {"optax": ["jax>=0.5.3", "chex"]}


def test_a_constraint_of_thousands_of_digits_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Found by the fuzz run after the requirements' own check: a constraints file's pin of 5,000 digits reached
    the check that a pinned version meets it (exit 3)."""
    (tmp_path / "constraints.txt").write_text(f"jaxlib=={'9' * 5000}\n")
    (tmp_path / "requirements.txt").write_text("-c constraints.txt\njax==0.4.30\njaxlib==0.4.30\n")
    err = one_line_exit_2(capsys, ["plan", "--no-build", "-r", str(tmp_path / "requirements.txt")])
    assert "thousands of digits" in err and len(err) < 300
