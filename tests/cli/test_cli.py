"""The CLI contract, in-process through main(argv) -> int, plus end-to-end runs of `python -m envaudit`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests.conftest import PYTHON, ROOT, envaudit_run


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_clean_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("envaudit: error: ")
    return lines[0]


def test_quick_text_on_a_healthy_stack(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--quick")
    assert code == Exit.OK
    assert "verdict: OK" in out and "jax       skipped" in out


@pytest.mark.cpu_only
def test_quick_json_is_schema_v1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "audit", "--quick", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["schema"] == "envaudit/report/v1" and data["mode"] == "quick"
    assert data["facts"]["nvidia"]["status"] == "absent"
    assert data["facts"]["packages"]["jax"]


def _saved(tmp_path: Path, capsys: pytest.CaptureFixture[str], **facts_changes: object) -> Path:
    _, out, _ = run(capsys, "--quick", "--format", "json")
    data = json.loads(out)
    data["facts"].update(facts_changes)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    return path


def test_check_recomputes_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    healthy = _saved(tmp_path, capsys)
    assert run(capsys, "check", str(healthy))[0] == Exit.OK
    broken = _saved(tmp_path, capsys, jax={"status": "crash", "stage": "imported", "message": "killed by SIGSEGV"})
    code, out, _ = run(capsys, "check", str(broken), "--format", "json")
    assert code == Exit.FINDINGS
    assert "jax-broken" in [f["id"] for f in json.loads(out)["findings"]]


def test_strict_turns_warnings_into_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dup = [{"name": "jax", "versions": ["0.4.30", "0.4.25"], "locations": ["/a", "/b"]}]
    path = _saved(tmp_path, capsys, duplicates=dup)
    assert run(capsys, "check", str(path))[0] == Exit.OK
    assert run(capsys, "check", str(path), "--strict")[0] == Exit.FINDINGS


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("DIR", "is a directory"),
        ("", "the file is empty"),
        ("hello", "not valid JSON"),
        ('{"schema": "envaudit/report/v1", "facts": {', "not valid JSON"),
        ('{"schema": "other/v2"}', "schema is 'other/v2'"),
        ("[1, 2]", "report must be a JSON object"),
        ("[" * 100000, "nested too deeply"),
    ],
)
def test_check_bad_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, expected: str
) -> None:
    path = tmp_path / "r.json"
    if content == "DIR":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    code, out, err = run(capsys, "check", str(path))
    assert code == Exit.USAGE and out == ""
    assert expected in one_clean_line(err)


def test_check_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(b"\xff\xfe{}")
    code, _, err = run(capsys, "check", str(path))
    assert code == Exit.USAGE and "not UTF-8" in one_clean_line(err)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["--format", "yaml"], "invalid choice: 'yaml'"),
        (["audit", "--timeout", "soon"], "argument --timeout: expected a positive number of seconds, not 'soon'"),
        (["audit", "--timeout", "nan"], "not 'nan'"),
        (["rules", "no-such-rule"], "no rule 'no-such-rule'"),
        (["check"], "the following arguments are required: report"),
        (["health", "--total-timeout", "1"], "--total-timeout 1 is less than jax's start"),  # it looked like a hang
        (["audit", "--total-timeout", "0.5"], "--total-timeout 0.5 is less than jax's start"),
    ],
)
def test_bad_usage_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == Exit.USAGE
    assert expected in one_clean_line(err)


def test_output_is_written_atomically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.json"
    target.write_text("previous")
    code, out, err = run(capsys, "--quick", "--format", "json", "--output", str(target))
    assert code == 0 and out == "" and "report written to" in err
    assert json.loads(target.read_text())["schema"] == "envaudit/report/v1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temporary file left


def test_output_into_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "missing" / "report.json"
    code, _, err = run(capsys, "--quick", "--output", str(target))
    assert code == Exit.USAGE and "does not exist" in one_clean_line(err)
    assert not target.parent.exists()


def test_output_into_unwritable_directory(capsys: pytest.CaptureFixture[str]) -> None:
    # /proc refuses new files even to root, unlike a chmod 555 directory, so this test means the same as any user.
    code, _, err = run(capsys, "--quick", "--output", "/proc/envaudit-report.json")
    assert code == Exit.USAGE and "cannot write /proc/envaudit-report.json" in one_clean_line(err)
    assert not Path("/proc/envaudit-report.json").exists()


def test_output_onto_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--quick", "--output", str(tmp_path))
    assert code == Exit.USAGE and "is a directory" in one_clean_line(err)


def test_rules_lists_rules_and_checks(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules")
    assert code == 0 and "jax-broken" in out and "gpu-uncorrected-ecc" in out
    code, out, _ = run(capsys, "rules", "jax-broken")
    assert code == 0 and "fix: " in out and "see: https://" in out
    code, out, _ = run(capsys, "rules", "flax-trace-level-jax-0436")  # a rule's notes say what was verified where
    assert code == 0 and "pins: flax>=0.10.0" in out and "notes: " in out and "Measured in this project" in out


def modules_after(code: str, env: dict[str, str]) -> list[str]:
    """The modules a fresh interpreter holds after running `code`, sorted."""
    program = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([PYTHON, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return list(json.loads(proc.stdout.splitlines()[-1]))


def test_quick_never_imports_the_audited_stack(child_env: dict[str, str]) -> None:
    code = "from envaudit.cli import main\nassert main(['--quick', '--format', 'json', '--output', '/dev/null']) == 0"
    loaded = modules_after(code, child_env)
    assert not [m for m in loaded if m.split(".")[0] in ("jax", "jaxlib", "flax", "neural_tangents")]


def test_the_command_line_loads_no_knowledge_base_before_the_probe_child_starts(child_env: dict[str, str]) -> None:
    """The audit's wall time is the child's (jax's import, then the probes): what the parent loads before starting
    it adds to the whole audit (measured: the child started 0.19-0.23 s after the interpreter when the command line
    imported every verb's modules, 0.12 s now). The rules, the judge and the other verbs load while jax imports."""
    late = (
        "envaudit.rules.checks",
        "envaudit.rules.engine",
        "envaudit.judge",
        "envaudit.commands.compare.drift",
        "envaudit.commands.triage.triaged",
        "envaudit.collect.outside",
        "envaudit.files.reportfile",
    )
    loaded = modules_after("import envaudit.cli", child_env)
    assert not [m for m in late if m in loaded]


# What a verb that needs none of them must not load: the planner (and through it the rules' tables), what follows
# the probe child, and the fix planner (measured: `import envaudit.cli` held 61 envaudit modules, 0.14-0.16 s, when
# it imported every verb; 5, 0.02 s, with each verb loaded when used).
HEAVY = ("envaudit.commands.plan", "envaudit.child.runner", "envaudit.judge.fixplan")
PARSED = "import envaudit.cli as cli\ncli.run = lambda parsed: 0\nassert cli.main({argv!r}) == 0"
RUN = (
    "import contextlib, io\nfrom envaudit.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n    main({argv!r})"
)


@pytest.mark.parametrize(
    ("code", "argv"),
    [
        (PARSED, ["schema"]),
        (PARSED, ["hook", "status"]),
        (PARSED, ["--quick"]),
        (RUN, ["schema"]),
        (RUN, ["hook", "status"]),
    ],
)
def test_a_verb_loads_its_own_module_and_not_the_others(child_env: dict[str, str], code: str, argv: list[str]) -> None:
    """The budget is in modules, not seconds: a verb's command line (parsed, or run where it needs no rule) loads
    its own module and no other verb's, nor the planner, the probe child's runner or the fix planner."""
    loaded = [m for m in modules_after(code.format(argv=argv), child_env) if m.startswith("envaudit.")]
    verb = "audit" if argv[0].startswith("-") else argv[0]
    assert f"envaudit.commands.{verb}" in loaded
    assert not [m for m in loaded if m.startswith(HEAVY)]
    others = {f"envaudit.commands.{v}" for v in ("audit", "fix", "check", "plan", "health", "triage", "compare")}
    assert not [m for m in loaded if m in others - {f"envaudit.commands.{verb}"}]


def test_every_verb_is_named_by_the_module_that_holds_it(capsys: pytest.CaptureFixture[str]) -> None:
    """COMMANDS is the one list of verbs: each name is its module's own COMMAND's, and the parser built of that verb
    alone (what `envaudit VERB ...` parses with) is the full parser's for that verb: the same help, word for word."""
    from envaudit.cli import COMMANDS, build_parser, command, parser_for

    assert all(command(name).name == name for name in COMMANDS)
    full = build_parser()
    for name in COMMANDS:
        alone = parser_for([name, "--help"])
        assert alone is build_parser(name) and alone is not full
        helps = []
        for parser in (full, alone):
            with pytest.raises(SystemExit):
                parser.parse_args([name, "--help"])
            helps.append(capsys.readouterr().out)
        assert helps[0] == helps[1] and f"usage: envaudit {name}" in helps[0]
    assert parser_for(["--help"]) is parser_for(["nonsense"]) is full


@pytest.mark.jax
@pytest.mark.cpu_only
def test_end_to_end_full_audit_subprocess(child_env: dict[str, str]) -> None:
    proc = envaudit_run(PYTHON, "--format", "json", env=child_env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["mode"] == "audit" and data["verdict"] in ("ok", "warn")
    assert data["facts"]["jax"]["status"] == "ok" and data["facts"]["jax"]["platform"] == "cpu"


def test_version_and_help_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--version")[0] == 0
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "audit" in out and "plan" in out


def test_console_script_is_installed() -> None:
    from importlib.metadata import entry_points

    from envaudit.__main__ import main_entry  # what `python -m envaudit` runs: the same program

    scripts = {e.name: e for e in entry_points(group="console_scripts")}
    assert scripts["envaudit"].value == "envaudit.__main__:main_entry"
    assert scripts["envaudit"].load() is main_entry  # the installed script runs this checkout's command line


BASE_PYTHON = sys.base_prefix + "/bin/python3"  # the interpreter without this virtualenv's site-packages (no jax)


@pytest.fixture(scope="module")
def no_jax_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """envaudit's own runtime dependencies and nothing of the audited stack (a fresh machine after `pip install .`)."""
    target = tmp_path_factory.mktemp("nojax")
    needed = {"numpy": "numpy", "packaging": "packaging", "psutil": "psutil", "pynvml": "nvidia-ml-py"}
    probe = "import importlib.util as u, sys; print(' '.join(m for m in sys.argv[1:] if not u.find_spec(m)))"
    missing = subprocess.run([BASE_PYTHON, "-s", "-c", probe, *needed], capture_output=True, text=True, check=True)
    wanted = [needed[m] for m in missing.stdout.split()]  # only what the base interpreter lacks: no duplicates
    if wanted:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(target), *wanted],
            check=True,
            capture_output=True,
        )
    return target


@pytest.mark.slow
def test_a_machine_without_jax_says_there_is_nothing_to_audit_and_audits_another(
    no_jax_site: Path, tmp_path: Path
) -> None:
    """`pip install . && python -m envaudit` in an environment without jax: not an OK over skipped probes, but
    what is missing and where, and `--python` audits the environment that has jax from there."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT}:{no_jax_site}", "ENVAUDIT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [BASE_PYTHON, "-s", "-m", "envaudit", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["facts"]["jax"]["status"] == "absent" and "jax" not in report["facts"]["packages"]
    assert {p["status"] for p in report["probes"]} == {"skip"} and report["verdict"] == "warn"
    (nothing,) = [f for f in report["findings"] if f["id"] == "nothing-to-audit"]
    assert BASE_PYTHON in nothing["detail"] and "--python" in nothing["detail"] and not nothing["fix"]  # advice
    command = [BASE_PYTHON, "-s", "-m", "envaudit", "--quick", "--format", "json", "--python", sys.executable]
    other = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    audited = json.loads(other.stdout)
    assert other.returncode == 0 and audited["facts"]["python"]["executable"] == sys.executable, other.stderr
    assert "jax" in audited["facts"]["packages"] and "nothing-to-audit" not in {f["id"] for f in audited["findings"]}


def test_a_closed_pipe_is_quiet(child_env: dict[str, str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written, as after `| head -1` has its line
    proc = subprocess.run(
        [PYTHON, "-m", "envaudit", "rules"],
        env=child_env,
        stdout=write_end,
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    os.close(write_end)
    assert (proc.returncode, proc.stderr) == (3, "")


def test_every_verb_offers_the_formats_its_renderers_have() -> None:
    """The parser names the formats of triage and compare without importing them: the same names all the same,
    each accepted on its verb's command line."""
    from envaudit.cli import build_parser
    from envaudit.commands import compare, triage
    from envaudit.commands.compare import drift
    from envaudit.commands.triage import reply

    assert set(triage.FORMATS) == set(reply.RENDERERS)
    assert set(compare.FORMATS) == set(drift.RENDERERS)
    parser = build_parser()
    for argv, renderers in ((["triage", "-"], reply.RENDERERS), (["compare", "r.json"], drift.RENDERERS)):
        assert all(parser.parse_args([*argv, "--format", fmt]).format == fmt for fmt in renderers)
