"""What a user chooses not to be told twice: `--ignore RULE[:REASON]`, `--strict`, and `[tool.envaudit]` in the
project's pyproject.toml. An ignored finding is shown with its reason and counts toward no verdict, exit code, plan
or metric; a misspelt id or a wrong table is one line and exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envaudit.cli import main
from envaudit.formats import prometheus
from envaudit.model.exitcodes import Exit
from envaudit.model.report import Report
from tests.conftest import FIXTURES

H200 = FIXTURES / "replay" / "h200-default-settings.json"  # an 8-GPU H200 at default settings: TF32 warns
TF32 = "tf32-default-matmul-precision"


@pytest.fixture(autouse=True)
def _in_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test runs in a project directory of its own, so no pyproject.toml above it is read by accident."""
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return project


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object], str]:
    code = main(["check", str(H200), "--format", "json", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def findings(document: dict[str, object]) -> dict[str, dict[str, object]]:
    listed = document["findings"]
    assert isinstance(listed, list)
    return {f["id"]: f for f in listed}


def test_strict_fails_on_a_warning_and_ignoring_it_with_a_reason_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert check(capsys)[0] == Exit.OK  # a warning alone passes
    code, document, _ = check(capsys, "--strict")
    assert code == Exit.FINDINGS and document["verdict"] == "warn"
    code, document, _ = check(capsys, "--strict", "--ignore", f"{TF32}:we set HIGHEST in our code")
    assert code == Exit.OK and document["verdict"] == "ok"
    ignored = findings(document)[TF32]
    assert ignored["ignored"] is True and ignored["ignore_reason"] == "we set HIGHEST in our code"
    assert "ignored" not in findings(document)["gpu-nondeterministic-by-default"]  # only what was named


def test_an_ignored_finding_is_shown_apart_and_counted_in_no_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(H200), "--ignore", f"{TF32}:trained in TF32", "-v"]) == Exit.OK
    text = capsys.readouterr().out
    counted, ignored = text.split("Ignored (1: counted in no verdict)")
    assert TF32 not in counted and "; 1 ignored)" in counted and "verdict: OK" in counted
    assert TF32 in ignored and "ignored: trained in TF32" in ignored
    report = Report.from_dict(check(capsys, "--ignore", TF32)[1])
    metrics = prometheus.render(report)
    assert f'envaudit_finding{{id="{TF32}"' not in metrics
    assert 'envaudit_findings{severity="warn"} 0' in metrics
    assert 'envaudit_ignored_findings{severity="warn"} 1' in metrics


def test_an_id_no_rule_has_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, document, err = check(capsys, "--ignore", "tf32-default-matmul-precison")  # misspelt
    assert code == Exit.USAGE and not document
    assert err.count("\n") == 1 and "tf32-default-matmul-precison" in err and "Traceback" not in err


def test_the_plan_takes_no_step_for_an_ignored_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "jax==0.10.2", "jaxlib==0.10.2", "--format", "json"]) == Exit.FINDINGS
    planned = json.loads(capsys.readouterr().out)
    assert "jax==0.10.1" in planned["plan"]["fix"]  # jaxlib 0.10.2 computes wrong numbers on the CPU
    rule = next(f["id"] for f in planned["findings"] if f["severity"] == "fail")
    assert main(["plan", "jax==0.10.2", "jaxlib==0.10.2", "--format", "json", "--ignore", rule]) == Exit.OK
    ignored = json.loads(capsys.readouterr().out)
    assert ignored["plan"]["fix"] == "" and ignored["verdict"] == "ok"
    assert findings(ignored)[rule]["ignored"] is True


def write_project(project: Path, table: str) -> None:
    (project / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n{table}\n')


def test_the_project_table_sets_strict_ignore_and_format(
    _in_a_project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(_in_a_project, "[tool.envaudit]\nstrict = true\n")
    assert check(capsys)[0] == Exit.FINDINGS
    assert check(capsys, "--no-strict")[0] == Exit.OK  # the command line wins
    write_project(
        _in_a_project, f'[tool.envaudit]\nstrict = true\n[tool.envaudit.ignore]\n{TF32} = "trained in TF32"\n'
    )
    code, document, _ = check(capsys)
    assert code == Exit.OK and findings(document)[TF32]["ignore_reason"] == "trained in TF32"
    nested = _in_a_project / "src" / "pkg"
    nested.mkdir(parents=True)
    write_project(_in_a_project, '[tool.envaudit]\nformat = "markdown"\n')
    monkeypatch.chdir(nested)  # found from a directory below, as ruff finds its own table
    assert main(["check", str(H200)]) == Exit.OK
    assert capsys.readouterr().out.startswith("### envaudit report:")


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ("[tool.envaudit]\nstrict = 'yes'\n", "strict"),
        ("[tool.envaudit]\nstric = true\n", "stric"),
        ("[tool.envaudit]\nformat = 'html'\n", "html"),
        ("[tool.envaudit.ignore]\nno-such-rule = 'x'\n", "no-such-rule"),
        ("[tool.envaudit.ignore]\ntf32-default-matmul-precision = 3\n", "tf32-default-matmul-precision"),
        ("[tool.envaudit]\nstrict = true\nstrict = false\n", "pyproject.toml"),
    ],
)
def test_a_wrong_table_is_one_line_and_exit_2(
    _in_a_project: Path, capsys: pytest.CaptureFixture[str], table: str, said: str
) -> None:
    write_project(_in_a_project, table)
    code, document, err = check(capsys)
    assert code == Exit.USAGE and not document
    assert err.count("\n") == 1 and said in err and "Traceback" not in err


def test_a_pyproject_without_the_table_is_not_read(_in_a_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_project(_in_a_project, "[tool.ruff]\nline-length = 120\n")
    assert check(capsys, "--strict")[0] == Exit.FINDINGS  # nothing in it changed the verdict, and nothing broke
    (_in_a_project / "pyproject.toml").write_bytes(b"\xff\xfe not toml [tool.envaudit")
    code, _, err = check(capsys)
    assert code == Exit.USAGE and err.count("\n") == 1


def test_health_says_nothing_of_an_ignored_finding(capsys: pytest.CaptureFixture[str]) -> None:
    from envaudit.commands import health

    report = Report.from_dict(json.loads(H200.read_text()))
    assert "1 warn" in health.health_line(report)
    again = Report.from_dict(check(capsys, "--ignore", TF32)[1])
    assert "0 fail, 0 warn" in health.health_line(again)


@pytest.mark.parametrize("how", ["writable by others", "another user's"])
def test_a_project_table_another_user_could_write_is_not_applied_and_the_report_says_so(
    _in_a_project: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """The attack: a table planted in a parent directory ignores the NVML and jax failures of root's `health`. A
    pyproject.toml another user owns or may write is not read (nor a parent's instead); the report names it."""
    if how == "another user's" and os.geteuid() != 0:
        pytest.skip("needs root, to give the file to another user")
    write_project(_in_a_project, "[tool.envaudit]\nstrict = true\n")
    project = _in_a_project / "pyproject.toml"
    if how == "writable by others":
        project.chmod(0o666)
    else:
        os.chown(project, 65534, 65534)
    code, document, _ = check(capsys)
    assert code == Exit.OK  # strict = true was not applied: the H200's warning passes
    settings = document["settings"]
    assert isinstance(settings, dict) and "file" not in settings and str(project) in settings["ignored"]
    project.chmod(0o644)
    os.chown(project, os.geteuid(), os.getegid())
    code, document, _ = check(capsys)
    assert code == Exit.FINDINGS and document["settings"] == {"file": str(project)}


def test_the_settings_file_judged_is_the_file_read(
    _in_a_project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 5: the table was judged by its name, then opened by name again (another user could swap the file in
    between). It is read once, from the descriptor its owner and mode were judged on; a link in its place is not
    followed to a file that would pass."""
    from envaudit.files import reportfile

    write_project(_in_a_project, "[tool.envaudit]\nstrict = true\n")
    by_name = reportfile.read_bounded

    def read_bounded(path: Path, *rest: object) -> bytes:
        assert Path(path).name != "pyproject.toml", "the settings read a second time, by name"
        return by_name(path, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(reportfile, "read_bounded", read_bounded)
    code, document, _ = check(capsys)
    assert code == Exit.FINDINGS and document["settings"] == {"file": str(_in_a_project / "pyproject.toml")}
    real = _in_a_project / "real.toml"
    (_in_a_project / "pyproject.toml").rename(real)
    (_in_a_project / "pyproject.toml").symlink_to(real)
    code, document, _ = check(capsys)
    assert code == Exit.OK and "not a regular file" in str(document["settings"])
