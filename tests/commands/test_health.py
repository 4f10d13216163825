"""`envaudit health`: one line of at most 80 characters, the exit contract, and the files beside the metrics."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from envaudit.child import state
from envaudit.cli import build_parser, main
from envaudit.commands import _shared
from envaudit.commands.health import (
    DEFAULT_TOTAL_S,
    MAX_LINE,
    PROM_NAME,
    REPORT_NAME,
    fit,
    health_line,
    save,
    status_text,
)
from envaudit.files.probecosts import NAME as PROBE_COSTS
from envaudit.formats import render
from envaudit.model.exitcodes import Terminated, UsageError
from envaudit.model.report import Finding, ProbeResult, Report, Subject
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
    assert {
        "envaudit_verdict",
        "envaudit_probe_status",
        "envaudit_probe_relative_error_ratio",
        "envaudit_last_run_timestamp_seconds",
        "envaudit_last_success_timestamp_seconds",
        "envaudit_duration_seconds",
    } <= families
    assert report["duration_s"] > 0
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
    monkeypatch.setattr(_shared, "run_audit", lambda **_: failing)

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


NHC_WATCHDOG_S = 30  # TIMEOUT=${TIMEOUT:-30} in LBNL NHC's `nhc` driver (github.com/mej/nhc, nhcmain_finalize_env)


def test_healths_default_bound_is_inside_nhcs_watchdog() -> None:
    args = build_parser().parse_args(["health"])
    assert args.total_timeout == DEFAULT_TOTAL_S < NHC_WATCHDOG_S


def _gauges(path: Path) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    return {
        f.name: {tuple(sorted(s.labels.items())): s.value for s in f.samples}
        for f in text_string_to_metric_families(path.read_text())
    }


def test_the_status_file_holds_the_exit_code_the_time_and_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What node-problem-detector's plugin and NHC's check_envaudit read: "<exit code> <unix time>", the line."""
    failing = sample_report()
    monkeypatch.setattr(_shared, "run_audit", lambda **_: failing)
    before = int(time.time())

    code = main(["health", "--status-file", str(tmp_path / "health.status"), "--probe", "dense_chain"])

    head, line, *rest = (tmp_path / "health.status").read_text().split("\n")
    rc, stamp = head.split(" ")
    assert code == 1 and (int(rc), line, rest) == (1, health_line(failing), [""])
    assert before <= int(stamp) <= time.time()
    assert capsys.readouterr().out == line + "\n"


def test_the_status_line_has_no_control_character() -> None:
    text = status_text(1, "envaudit FAIL x:\x1b]0;owned\x07 a\rb", 1e9)
    assert text == "1 1000000000\nenvaudit FAIL x: ]0;owned a b\n"


@pytest.mark.parametrize(
    ("raised", "code", "why"),
    [
        (RuntimeError("boom"), 3, "envaudit ERROR: internal error: RuntimeError: boom"),
        (Terminated(), 3, "envaudit ERROR: terminated (SIGTERM)"),
        (UsageError("no jax device 7 here"), 2, "envaudit ERROR: no jax device 7 here"),
    ],
    ids=["internal", "sigterm", "usage"],
)
def test_a_run_that_does_not_complete_says_so_and_keeps_the_last_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: BaseException, code: int, why: str
) -> None:
    """The status file gets the exit code; the textfile the verdict error, with the last success carried from the
    JSON report beside it, which such a run leaves as it is (the last audit that completed)."""
    kept = replace(sample_report(), findings=())
    save(kept, tmp_path)
    kept_bytes = (tmp_path / REPORT_NAME).read_bytes()

    def broken(**_: object) -> Report:
        raise raised

    monkeypatch.setattr(_shared, "run_audit", broken)
    status = tmp_path / "health.status"

    assert main(["health", "--prometheus-dir", str(tmp_path), "--status-file", str(status)]) == code

    head, line = status.read_text().splitlines()
    assert head.split(" ")[0] == str(code) and line.startswith(why) and len(line) <= MAX_LINE
    gauges = _gauges(tmp_path / PROM_NAME)
    assert gauges["envaudit_verdict"][(("verdict", "error"),)] == 1
    assert gauges["envaudit_last_success_timestamp_seconds"][()] == kept.created_timestamp()
    assert gauges["envaudit_last_run_timestamp_seconds"][()] > kept.created_timestamp()
    assert gauges["envaudit_duration_seconds"][()] >= 0
    assert "envaudit_gpus" not in gauges and "envaudit_probe_status" not in gauges  # nothing measured: no counts
    assert (tmp_path / REPORT_NAME).read_bytes() == kept_bytes


def test_without_a_completed_audit_kept_there_is_no_last_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**_: object) -> Report:
        raise RuntimeError("boom")

    monkeypatch.setattr(_shared, "run_audit", broken)
    assert main(["health", "--prometheus-dir", str(tmp_path)]) == 3
    gauges = _gauges(tmp_path / PROM_NAME)
    assert gauges["envaudit_verdict"][(("verdict", "error"),)] == 1
    assert "envaudit_last_success_timestamp_seconds" not in gauges
    assert sorted(p.name for p in tmp_path.iterdir()) == [PROM_NAME]  # no report: none completed


@pytest.mark.parametrize("where", ["missing/health.status", "."], ids=["no-directory", "a-directory"])
def test_a_status_file_that_cannot_be_one_is_usage_before_any_probing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    monkeypatch.setattr(_shared, "run_audit", lambda **_: pytest.fail("audited"))
    assert main(["health", "--status-file", str(tmp_path / where)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--status-file" in err


def test_a_status_file_that_cannot_be_written_is_said_and_the_verdict_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = sample_report()
    monkeypatch.setattr(_shared, "run_audit", lambda **_: failing)
    status = tmp_path / "health.status"
    status.mkdir()  # checked before the audit; made a directory after it, as a disk that fills meanwhile
    monkeypatch.setattr("envaudit.commands.health.check_status_file", lambda _: None)

    assert main(["health", "--prometheus-dir", str(tmp_path), "--status-file", str(status)]) == 1

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write {status}" in err and "(the verdict above stands)" in err
    assert _gauges(tmp_path / PROM_NAME)["envaudit_verdict"][(("verdict", "fail"),)] == 1


def test_a_slow_start_is_no_bad_usage_only_the_bound_the_user_gave_is() -> None:
    """On a loaded machine health's own start took 6 s of `--total-timeout 8` (its imports under a load of 8 on two
    cores): that left no probe's declared cost, and it said `--total-timeout 2 holds none of the probes' declared
    costs`, exit 2, quoting a bound nobody gave. The start is spent from the probes' share, and whatever no longer
    fits skips (state.plan); bad usage is a bound that holds none as given, and the message quotes it."""
    from envaudit.commands.options import Probing

    given = Probing(timeout=3, total_timeout=8)
    bounds = _shared.bounded(given, quick=False, budget=True, reserve=_shared.FINISH_S, spent=6.0)
    assert bounds.probes is not None and bounds.probes.total <= state.JAX_START_S  # what is left: jax's start
    idle = _shared.bounded(given, quick=False, budget=True, reserve=_shared.FINISH_S, spent=0.0)
    assert idle.probes is not None and idle.probes.total > bounds.probes.total
    with pytest.raises(UsageError, match=r"^--total-timeout 2\.5 holds none"):
        _shared.bounded(Probing(timeout=3, total_timeout=2.5), quick=False, budget=True, reserve=0.5, spent=0.0)


@pytest.mark.jax
def test_a_warming_run_keeps_every_probe_s_warm_cost_for_the_next_check_and_writes_no_node_state(
    child_env: dict[str, str], tmp_path: Path
) -> None:
    """A fresh TPU node's first `health` runs 5 of its 13 probes: their declared costs are a cold compilation
    cache's, and jax's start takes most of the bound. `health --warm` (at the node's boot) runs every probe to its
    end outside the total bound, which fills the cache and keeps each one's warm cost (files/probecosts.py), with
    which the next check plans (measured on a TPU v5e: all of them then ran). It writes no node state, exits 0
    whatever the verdict, and refuses the options that would write one. Nothing here depends on the machine's speed:
    the warm run has no total bound to leave a probe out."""
    cache = tmp_path / "cache"
    env = {**child_env, "ENVAUDIT_CACHE_DIR": str(cache)}
    warmed = envaudit_run(PYTHON, "health", "--warm", "--format", "json", env=env, timeout=300, cwd=tmp_path)
    assert warmed.returncode == 0, warmed.stderr
    ran = {p["name"] for p in json.loads(warmed.stdout)["probes"] if p["status"] != "skip"}
    assert len(ran) >= 10  # every default probe whose library is installed here (flax, neural-tangents may not be)
    (costs,) = cache.rglob(PROBE_COSTS)
    (remembered,) = json.loads(costs.read_text(encoding="utf-8")).values()
    assert set(remembered) == ran and all(0 < s < 120 for s in remembered.values())
    assert not list(cache.rglob(REPORT_NAME))  # no check's report: a warming run is none
    line = envaudit_run(PYTHON, "health", "--warm", env=env, timeout=300, cwd=tmp_path)
    assert line.returncode == 0 and line.stdout.startswith("envaudit warmed: "), line.stderr
    refused = envaudit_run(PYTHON, "health", "--warm", "--status-file", str(tmp_path / "s"), env=env, timeout=60)
    assert refused.returncode == 2 and "--warm writes no node state" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "s").exists()
