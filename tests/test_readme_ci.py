"""The documentation of envaudit in CI, run: the README's GitHub Actions workflow's `run:` lines in a scratch
directory, as a runner runs them (`bash -e`, GitHub's default shell on Linux), with GITHUB_STEP_SUMMARY a file of the
test's; its pre-commit snippet and the CI page's [tool.envaudit] table against envaudit; and the CI page's measured
claim of what `--quick` cannot see (jaxlib 0.10.2: a fail and exit 1 from the rule in quick mode, a fail and exit 1
from the full audit's probe). Each is found by tests/docs.py wherever it lives: a snippet by the file it is for, a
claim by its heading.

The workflow's install step (`python -m pip install "jax-envaudit @ git+URL@REV"`, which
tests/realenv/test_recipes.py runs as printed against a git repository of this checkout) is replaced here by an
editable install of this checkout into the scratch environment that plays the runner's Python (`uv pip install -e
ROOT`: its `envaudit` command runs the working tree, committed or not); that environment also has the stack
installed (jax and jaxlib 0.10.1), as the GPU runner's has. Every other `run:` line runs verbatim.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests import docs
from tests.conftest import ROOT
from tests.recipes import NAME

UV = (sys.executable, "-m", "uv")
COUPLING = "jax==0.4.30\njaxlib==0.4.23\n"  # fail: jax 0.4.30 requires jaxlib >= 0.4.27
CURRENT = "jax==0.10.1\njaxlib==0.10.1\n"
WORKFLOW_COMMAND = re.compile(r"^::(error|warning|notice)( [a-z]+=[^:]*)?::[^\r\n]*$")


QUICK = "What `--quick` cannot see, and what it still fails"  # the heading of the measured claim
STRICT_GATE = "# pyproject.toml: a strict gate that ignores TF32 by design"  # the first line of the CI page's table


def workflow() -> dict[str, Any]:
    parsed: dict[str, Any] = yaml.safe_load(docs.block("yaml", "# .github/workflows/envaudit.yml"))
    return parsed


def runs(job: str) -> list[str]:
    return [step["run"] for step in workflow()["jobs"][job]["steps"] if "run" in step]


def is_install(command: str) -> bool:
    return "pip install" in command and "envaudit" in command


def test_the_workflow_installs_envaudit_from_its_repository_never_pypis_namesake() -> None:
    for job in ("plan", "audit"):
        installs = [c for c in runs(job) if is_install(c)]
        assert len(installs) == 1 and runs(job)[0] == installs[0], runs(job)  # first, and once
        # PyPI's "envaudit" is an unrelated environment-variable validator: the step must name a git URL, and the
        # distribution pyproject.toml builds (pip refuses a name its metadata does not have)
        assert re.fullmatch(rf'python -m pip install "{NAME} @ git\+URL@REV"', installs[0].strip()), installs[0]
    assert "envaudit plan -r requirements.txt --format github" in runs("plan")


def test_the_pre_commit_snippet_names_the_manifests_hook() -> None:
    config = yaml.safe_load(docs.block("yaml", "# .pre-commit-config.yaml"))
    manifest = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (repo,) = config["repos"]
    assert {h["id"] for h in repo["hooks"]} <= {h["id"] for h in manifest}
    assert "--each" in manifest[0]["entry"] and manifest[0]["args"] == ["--strict"]  # what the section says it runs


def test_the_ignore_keeps_a_strict_gate_green_on_tf32_by_design(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule the audit step ignores is the one an 8.0+ GPU warns of; the section's table does as the flag does."""
    (audit_step,) = [c for c in runs("audit") if "envaudit audit" in c]
    ignored = re.search(r'--ignore "([a-z0-9-]+):', audit_step)
    assert ignored and ignored[1] == "tf32-default-matmul-precision"
    monkeypatch.chdir(tmp_path)
    a100 = ["plan", "jax[cuda12]==0.10.1", "--driver", "580.65.06", "--compute-capability", "8.0"]
    assert main([*a100, "--strict"]) == Exit.FINDINGS  # the warn a strict gate fails on
    assert "tf32-default-matmul-precision" in capsys.readouterr().out
    assert main([*a100, "--strict", "--ignore", f"{ignored[1]}:by design"]) == Exit.OK
    table = docs.block("toml", STRICT_GATE)
    (tmp_path / "pyproject.toml").write_text(table, encoding="utf-8")
    assert main(a100) == Exit.OK  # strict = true and the ignore, from the table
    out = capsys.readouterr().out
    assert "tf32-default-matmul-precision" in out and "Ignored" in out


@dataclass(frozen=True)
class Runner:
    python: Path  # the runner's Python: envaudit (this checkout) and jax 0.10.1
    env: dict[str, str]


def _venv(where: Path, *requirements: str) -> Path:
    subprocess.run([*UV, "venv", "-q", "--python", sys.executable, str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    install = [*UV, "pip", "install", "-q", "--python", str(python), *requirements]
    subprocess.run(install, check=True, capture_output=True, timeout=600)
    return python


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    base = tmp_path_factory.mktemp("runner")
    python = _venv(base / "venv", "-e", str(ROOT), "jax==0.10.1", "jaxlib==0.10.1")  # the install step, replaced
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GITHUB_STEP_SUMMARY")}
    env |= {"PATH": f"{python.parent}{os.pathsep}{env.get('PATH', '')}", "VIRTUAL_ENV": str(python.parent.parent)}
    return Runner(python, env)


def _job(runner: Runner, job: str, where: Path, summary: Path) -> list[subprocess.CompletedProcess[str]]:
    """The job's `run:` lines after its install step, each as a runner runs a step, until one fails."""
    done = []
    for number, command in enumerate(c for c in runs(job) if not is_install(c)):
        script = where / f"step-{number}.sh"
        script.write_text(command, encoding="utf-8")
        env = runner.env | {"GITHUB_STEP_SUMMARY": str(summary)}
        step = subprocess.run(
            ["bash", "-e", str(script)], cwd=where, env=env, capture_output=True, text=True, timeout=300
        )
        done.append(step)
        if step.returncode:
            break
    return done


@pytest.mark.realenv
@pytest.mark.parametrize(("pins", "code"), [(COUPLING, 1), (CURRENT, 0)], ids=["coupling", "current"])
def test_the_plan_job_annotates_the_requirements_file(runner: Runner, tmp_path: Path, pins: str, code: int) -> None:
    (tmp_path / "requirements.txt").write_text(pins, encoding="utf-8")
    (step,) = _job(runner, "plan", tmp_path, tmp_path / "summary.md")
    assert step.returncode == code, step.stdout + step.stderr
    commands = [line for line in step.stdout.splitlines() if line.startswith("::")]
    assert all(WORKFLOW_COMMAND.match(line) for line in commands), commands  # one line each, properties escaped
    if code:
        # on the line that pins the jaxlib behind jax, so that the annotation shows on the pull request's line
        error = "::error file=requirements.txt,line=2,title=envaudit fail%3A jax-jaxlib-coupling::"
        assert any(c.startswith(error) for c in commands), commands
        assert "requirements.txt: jaxlib==0.4.30" in step.stdout  # the fix, in the annotation
    else:
        assert commands == [] and "envaudit: OK" in step.stdout


def _sarif_upload() -> tuple[dict[str, Any], dict[str, Any]]:
    """The sarif job and its upload step (GitHub's codeql-action upload-sarif)."""
    job: dict[str, Any] = workflow()["jobs"]["sarif"]
    (upload,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    return job, upload


def test_the_sarif_job_writes_the_log_its_upload_step_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job's envaudit step, run in this process (the README's words after `envaudit`), writes the file that the
    upload step uploads, valid SARIF 2.1.0 with the finding on its line; a finding (exit 1) lets the upload run."""
    from tests.formats import published

    job, upload = _sarif_upload()
    assert job["permissions"]["security-events"] == "write"  # upload-sarif's permission
    (command,) = [c for c in runs("sarif") if not is_install(c)]
    envaudit, tolerated = command.split("||")
    assert tolerated.strip() == "test $? -eq 1"
    argv = envaudit.split()
    assert argv[0] == "envaudit"
    (tmp_path / "requirements.txt").write_text(COUPLING, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENVAUDIT_NO_BUILD", "1")
    assert main(argv[1:]) == Exit.FINDINGS, capsys.readouterr().err
    log = json.loads((tmp_path / upload["with"]["sarif_file"]).read_text(encoding="utf-8"))
    assert published.problems(published.sarif(), log) == []
    (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "jax-jaxlib-coupling"]
    where = result["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == "requirements.txt" and where["region"]["startLine"] == 2


@pytest.mark.realenv
def test_the_sarif_job_runs_on_a_runner(runner: Runner, tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(COUPLING, encoding="utf-8")
    (step,) = _job(runner, "sarif", tmp_path, tmp_path / "summary.md")
    assert step.returncode == 0, step.stdout + step.stderr  # a finding is let through to the upload
    assert (tmp_path / _sarif_upload()[1]["with"]["sarif_file"]).is_file()


@pytest.mark.realenv
@pytest.mark.jax
def test_the_audit_job_writes_the_markdown_report_to_the_step_summary(runner: Runner, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("an earlier step's summary\n", encoding="utf-8")
    (step,) = _job(runner, "audit", tmp_path, summary)
    assert step.returncode == 0, step.stdout + step.stderr
    assert step.stdout.startswith("envaudit audit: exit 0 ")  # the log holds the exit line only
    written = summary.read_text(encoding="utf-8")
    assert written.startswith("an earlier step's summary\n")  # appended, as GitHub's summary file is
    report = written.removeprefix("an earlier step's summary\n")
    assert re.match(r"### envaudit report: \*\*ok\*\*", report), report[:200]
    assert "| jax (as imported) | 0.10.1" in report and "| component | version / state |" in report


@pytest.mark.realenv
@pytest.mark.jax
def test_quick_fails_the_release_whose_wrong_numbers_the_full_audit_computes(runner: Runner, tmp_path: Path) -> None:
    """The section's measurement: jaxlib 0.10.2, audited from outside with --quick and without."""
    broken = _venv(tmp_path / "jaxlib-0102", "jax==0.10.2", "jaxlib==0.10.2")
    envaudit = [str(runner.python), "-m", "envaudit", "--python", str(broken)]

    def audit(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*envaudit, *flags], capture_output=True, text=True, timeout=300, env=runner.env)

    quick = audit("--quick")
    assert quick.returncode == 1, quick.stdout + quick.stderr  # the rule alone: no probe ran its case
    assert quick.stdout.startswith("verdict: FAIL (jax not imported: quick mode)")
    assert "FAIL  jaxlib-0102-cpu-vmap-matvec-sum" in quick.stdout
    full = audit("--format", "json")
    assert full.returncode == 1, full.stderr
    report = json.loads(full.stdout)
    assert report["verdict"] == "fail"
    assert {f["id"]: f["severity"] for f in report["findings"]}["jaxlib-0102-cpu-vmap-matvec-sum"] == "fail"
    (probe,) = [p for p in report["probes"] if p["name"] == "known_regressions"]
    measured = probe["metrics"]["rel_err_jax39103"]
    stated = re.search(r"is ([0-9.]+) to ([0-9.]+) away \(relative\)", " ".join(docs.section(QUICK).split()))
    assert stated and measured > 1e-5
    # the README's range, as measured here: which rows come out wrong depends on the CPU (0.0078 and 0.0020 seen)
    low, high = float(stated[1]), float(stated[2])
    assert low / 2 < measured < high * 2, (measured, low, high)
