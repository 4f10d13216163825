"""`envaudit health`: one line of at most 80 characters, the exit contract, and the files beside the metrics."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from envaudit import audit
from envaudit.cli import main
from envaudit.formats import render
from envaudit.health import MAX_LINE, PROM_NAME, REPORT_NAME, fit, health_line
from envaudit.model import Finding, ProbeResult, Report, Subject
from tests.conftest import PYTHON, ROOT, envaudit_run, sample_report


def test_line_names_the_worst_finding_within_80_characters() -> None:
    report = sample_report()
    line = health_line(report)
    assert line.startswith("envaudit FAIL demo-fail: ") and len(line) <= MAX_LINE
    long = Finding(Subject("rule", "x" * 50), "fail", "y" * 100)
    line = health_line(Report(report.facts, findings=(long, long)))
    assert len(line) == MAX_LINE and line.endswith("...") and "(+1 more)" in line


def test_ok_and_error_lines() -> None:
    facts = sample_report().facts
    ok = Report(facts, probes=(ProbeResult("a", "pass"), ProbeResult("b", "skip")))
    assert health_line(ok) == "envaudit OK: 0 fail, 0 warn; 1/2 probes pass"
    assert health_line(Report(facts, complete=False)).startswith("envaudit ERROR")


def test_fit_collapses_whitespace() -> None:
    assert fit("a\n  b\tc") == "a b c"


@pytest.mark.jax
@pytest.mark.cpu_only  # OK, not WARN: an accelerator's documented reduced precision is a warning
def test_health_writes_metrics_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["health", "--prometheus-dir", str(tmp_path), "--probe", "dense_chain"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("\n") == 1 and len(out.rstrip("\n")) <= MAX_LINE and out.startswith("envaudit OK")
    report = json.loads((tmp_path / "envaudit-report.json").read_text())
    assert [p["name"] for p in report["probes"]] == ["dense_chain"]
    families = {f.name for f in text_string_to_metric_families((tmp_path / "envaudit.prom").read_text())}
    assert {"envaudit_verdict", "envaudit_probe_status", "envaudit_last_run_timestamp_seconds"} <= families
    assert sorted(p.name for p in tmp_path.iterdir()) == ["envaudit-report.json", "envaudit.prom"]


@pytest.mark.jax
def test_health_with_a_faulty_stack_exits_1_with_one_line(child_env: dict[str, str], tmp_path: Path) -> None:
    fault = ROOT / "tests" / "faults" / "conv_batch_scale"
    env = {**child_env, "PYTHONPATH": f"{fault}{os.pathsep}{child_env['PYTHONPATH']}"}
    proc = envaudit_run(
        PYTHON, "health", "--probe", "conv_chain", "--prometheus-dir", str(tmp_path), env=env, timeout=120
    )
    assert proc.returncode == 1
    assert proc.stdout == "envaudit FAIL probe-conv-chain: probe conv_chain computed a wrong answer\n"
    prom = (tmp_path / "envaudit.prom").read_text()
    assert 'envaudit_verdict{verdict="fail"} 1' in prom


@pytest.mark.jax
def test_a_fail_verdict_exits_1_even_when_the_textfile_cannot_be_written(
    child_env: dict[str, str], tmp_path: Path
) -> None:
    """The Slurm wrapper drains on exit 1 and only logs exit 2: a bad node whose metrics directory is full,
    read-only or blocked must still exit 1, with the write failure said beside the verdict."""
    (tmp_path / "envaudit.prom").mkdir()  # the textfile cannot be replaced (as a full or read-only disk)
    fault = ROOT / "tests" / "faults" / "conv_batch_scale"
    env = {**child_env, "PYTHONPATH": f"{fault}{os.pathsep}{child_env['PYTHONPATH']}"}
    proc = envaudit_run(
        PYTHON, "health", "--probe", "conv_chain", "--prometheus-dir", str(tmp_path), env=env, timeout=120
    )
    assert proc.returncode == 1 and proc.stdout.startswith("envaudit FAIL probe-conv-chain")
    assert proc.stderr.startswith("envaudit: error: cannot write") and "the verdict above stands" in proc.stderr


@pytest.mark.parametrize("blocked", [[REPORT_NAME], [PROM_NAME], [PROM_NAME, REPORT_NAME]], ids=str)
def test_each_file_is_tried_the_textfile_first_and_every_failure_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], blocked: list[str]
) -> None:
    """node_exporter serves the textfile: a report that could not be written (envaudit-report.json alone blocked)
    kept the textfile from being tried, and the last run's OK stayed scraped while the node was failing."""
    failing = sample_report()
    for name, fmt in ((PROM_NAME, "prometheus"), (REPORT_NAME, "json")):
        if name in blocked:
            (tmp_path / name).mkdir()  # cannot be replaced, as on a full or read-only disk
        else:
            (tmp_path / name).write_text(render(replace(failing, findings=()), fmt))  # the last run's: OK
    monkeypatch.setattr(audit, "run_audit", lambda **_: failing)

    code = main(["health", "--prometheus-dir", str(tmp_path), "--probe", "dense_chain"])

    out, err = capsys.readouterr()
    assert (code, out) == (1, health_line(failing) + "\n")  # the verdict and its exit code stand
    if PROM_NAME not in blocked:
        assert 'envaudit_verdict{verdict="fail"} 1' in (tmp_path / PROM_NAME).read_text()
    if REPORT_NAME not in blocked:
        assert json.loads((tmp_path / REPORT_NAME).read_text())["verdict"] == "fail"
    assert err.count("\n") == 1 and err.startswith("envaudit: error: ") and "(the verdict above stands)" in err, err
    for name in (PROM_NAME, REPORT_NAME):
        assert (f"cannot write {tmp_path / name}:" in err) == (name in blocked), err


def test_health_into_a_missing_directory_is_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["health", "--prometheus-dir", str(tmp_path / "nope"), "--probe", "matmul_precision"])
    assert code == 2 and "is not a directory" in capsys.readouterr().err


def test_a_user_without_home_still_gets_an_audit(tmp_path: Path) -> None:
    """No HOME and no passwd entry (a bare container user): the cache moves to a temporary place, never exit 3."""
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME", "ENVAUDIT_CACHE_DIR")}
    env["PYTHONPATH"] = str(ROOT)
    nobody = ["setpriv", "--reuid", "54321", "--regid", "54321", "--clear-groups"]
    proc = subprocess.run(
        [*nobody, PYTHON, "-m", "envaudit", "--quick", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] in ("ok", "warn")


@pytest.mark.jax
@pytest.mark.cpu_only  # OK, not WARN: an accelerator's documented reduced precision is a warning
def test_an_unwritable_cache_does_not_change_the_health_verdict(child_env: dict[str, str], tmp_path: Path) -> None:
    env = {**child_env, "ENVAUDIT_CACHE_DIR": "/proc/envaudit-cache"}
    proc = envaudit_run(PYTHON, "health", "--probe", "matmul_precision", env=env, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("envaudit OK"), proc.stderr
