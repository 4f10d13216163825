"""A broken NVIDIA driver must not break envaudit: a health check that never returns, or that dies with the driver's
library, is killed or logged by Slurm as "could not audit", and the node is never drained; the hook's cold path runs
inside a user's `import jax`. NVML is asked in a child process, and how that child ended is itself the finding: a
hang (`nvml-hung`), a death by signal (`nvml-crashed`), or a pynvml that raised or exited (an error that says so).

The fault `tests/faults/nvml_fixture` gives that child the faithful fake pynvml, answering from ENVAUDIT_FAKE_NVML.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from envaudit.collect import nvml
from envaudit.model.exitcodes import Exit
from envaudit.rules.registry import registry
from tests.commands.test_hook import CHAIN, import_jax, make_venv
from tests.conftest import PYTHON, ROOT, envaudit_run, facts_from
from tests.fakes.fake_pynvml import FIXTURE_VARIABLE

HANG = ROOT / "tests" / "faults" / "nvml_hang"
FIXTURE = ROOT / "tests" / "faults" / "nvml_fixture"
SEGFAULT = {"nvmlInit": {"crash": "segfault"}}
SYSTEM_EXIT = {"nvmlInit": {"raise": "SystemExit", "args": [3]}}


def fixture_file(directory: Path, fixture: dict[str, Any]) -> str:
    path = directory / "nvml-fixture.json"
    path.write_text(json.dumps(fixture))
    return str(path)


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Every Python this test starts asks the fake pynvml, answering from the fixture given."""

    def use(fixture: dict[str, Any]) -> None:
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FIXTURE), str(ROOT)]))
        monkeypatch.setenv(FIXTURE_VARIABLE, fixture_file(tmp_path, fixture))

    return use


def fault_env(child_env: dict[str, str], directory: Path, fixture: dict[str, Any]) -> dict[str, str]:
    return {
        **child_env,
        "PYTHONPATH": os.pathsep.join([str(FIXTURE), child_env["PYTHONPATH"]]),
        FIXTURE_VARIABLE: fixture_file(directory, fixture),
    }


def nvml_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "_nvml_child.py" in " ".join(p.cmdline())]


def script(directory: Path, body: str) -> str:
    """An "interpreter" that ignores its arguments and does `body` (sh), for the child's ways of ending."""
    path = directory / "python"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)  # killed, not yet reaped by its new parent
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
def test_a_hung_nvml_is_a_timeout_fact_within_its_bound(fake_nvml: Any) -> None:
    fake_nvml({"nvmlInit": {"hang": 3600}})
    facts = nvml.get_nvidia_within(0.5)
    assert facts["status"] == "timeout" and "did not answer within 0.5 s" in str(facts["message"])
    assert facts["gpus"] == [] and facts["driver_version"] is None
    assert nvml_children() == []  # the hung child was killed, not left behind in the driver


@pytest.mark.slow
def test_a_child_that_outlives_its_kill_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process in an uninterruptible driver call survives SIGKILL until the call returns, if ever (here: the
    bounded run never returns): the answer comes at the deadline and its grace all the same."""
    stuck = threading.Event()
    monkeypatch.setattr("envaudit.child.bounded.run", lambda *args, **kwargs: stuck.wait())
    start = time.monotonic()
    facts = nvml.Asking(0.2).answer()
    assert facts["status"] == "timeout" and "outlived its kill" in str(facts["message"])
    assert time.monotonic() - start < 0.2 + nvml.GRACE_S + 5.0  # the bound it promises, with a generous margin
    stuck.set()


def test_a_slow_but_answering_nvml_is_waited_for(fake_nvml: Any) -> None:
    fake_nvml({"nvmlInit": {"hang": 0.2, "error": 12}})
    assert nvml.get_nvidia_within(10.0)["status"] == "absent"


def test_a_healthy_fake_node_is_read_through_the_child(fake_nvml: Any) -> None:
    fixture = json.loads((ROOT / "tests" / "fixtures" / "nvml" / "h200_8x_healthy.json").read_text())
    fake_nvml(fixture)
    facts = nvml.get_nvidia_within()
    assert facts["status"] == "ok" and len(facts["gpus"]) == 8 and "returncode" not in facts


def test_a_segfault_in_nvml_is_a_crash_fact_not_a_crash_of_envaudit(fake_nvml: Any) -> None:
    fake_nvml(SEGFAULT)
    facts = nvml.get_nvidia_within()
    assert facts["status"] == "crash" and facts["signal"] == "SIGSEGV" and facts["returncode"] == -11
    assert "killed by SIGSEGV" in str(facts["message"]) and facts["gpus"] == []
    assert nvml_children() == []


def test_a_pynvml_that_raises_systemexit_is_a_dead_collector_not_a_late_one(fake_nvml: Any) -> None:
    fake_nvml(SYSTEM_EXIT)
    start = time.monotonic()
    facts = nvml.get_nvidia_within()
    assert facts["status"] == "error" and facts["message"] == "pynvml raised SystemExit: 3"
    assert time.monotonic() - start < nvml.NVML_TIMEOUT_S / 2  # said when it happened, well before the bound


def test_what_pynvml_raised_is_scrubbed_like_any_child_text(fake_nvml: Any) -> None:
    fake_nvml({"nvmlInit": {"raise": "SystemExit", "args": ["https://ops:hunter2hunter2@mirror.example/simple"]}})
    message = str(nvml.get_nvidia_within()["message"])
    assert message.startswith("pynvml raised SystemExit") and "hunter2hunter2" not in message


def test_a_pynvml_that_exits_is_an_error_with_its_exit_status(fake_nvml: Any) -> None:
    fake_nvml({"nvmlInit": {"exit": 7}})
    facts = nvml.get_nvidia_within()
    assert facts["status"] == "error" and facts["returncode"] == 7 and "signal" not in facts
    assert "exited with status 7 without answering" in str(facts["message"])


def test_a_death_before_nvml_is_asked_is_not_the_drivers(tmp_path: Path) -> None:
    """A child killed by a signal before it asked NVML (here: an "interpreter" that kills itself at once) is an
    error of the collector, not `nvml-crashed`, whose fix drains the node."""
    facts = nvml.Asking(10.0, python=script(tmp_path, "kill -SEGV $$")).answer()
    assert facts["status"] == "error" and facts["signal"] == "SIGSEGV", facts
    assert "killed by SIGSEGV before it asked NVML" in str(facts["message"])


def test_a_child_that_writes_without_end_is_cut_at_its_bound(tmp_path: Path) -> None:
    facts = nvml.Asking(10.0, python=script(tmp_path, "exec cat /dev/zero")).answer()
    assert facts["status"] == "error" and f"more than {nvml.LIMIT} bytes" in str(facts["message"])
    assert nvml_children() == []


def test_a_child_that_floods_both_outputs_is_cut_and_its_group_killed(tmp_path: Path) -> None:
    """Lines that keep coming (a wrapper's progress, or worse) are no answer and are not kept without end."""
    pid = tmp_path / "pid"
    flood = script(tmp_path, f'yes \'ENVAUDIT {{"event": "progress"}}\' >&2 & echo $! > {pid}; exec yes garbage')
    facts = nvml.Asking(10.0, python=flood).answer()
    assert facts["status"] == "error" and f"more than {nvml.LIMIT} bytes" in str(facts["message"])
    assert gone(int(pid.read_text())) and nvml_children() == []  # what the child started was killed with it


@pytest.mark.slow
def test_a_child_that_never_starts_asking_is_late_but_not_a_hung_driver(tmp_path: Path) -> None:
    """Still running at the deadline before NVML was asked (a Python start that hangs) is no `nvml-hung`."""
    facts = nvml.Asking(0.5, python=script(tmp_path, "exec sleep 3600")).answer()
    assert facts["status"] == "error" and "had not started within 0.5 s" in str(facts["message"])


def test_a_forged_answer_before_nvml_is_asked_is_not_taken(tmp_path: Path) -> None:
    """What the child's start prints (a sitecustomize) on its stdout is no answer: only the one after `asking`."""
    forged = 'ENVAUDIT {"event": "answer", "facts": {"status": "ok", "gpus": []}}'
    facts = nvml.Asking(10.0, python=script(tmp_path, f"echo '{forged}'; exit 4")).answer()
    assert facts["status"] == "error" and facts["returncode"] == 4


def test_an_interpreter_that_cannot_start_is_an_error() -> None:
    facts = nvml.Asking(10.0, python=str(Path(PYTHON).with_name("no-such-python"))).answer()
    assert facts["status"] == "error" and "could not start" in str(facts["message"])


def test_a_crashed_nvml_is_a_fail_finding_and_an_error_is_not() -> None:
    crashed = facts_from({"nvidia": {"status": "crash", "signal": "SIGSEGV", "message": "killed by SIGSEGV"}})
    found = {f.id: f for f in registry().evaluate_checks(crashed)}
    assert found["nvml-crashed"].severity == "fail" and found["nvml-crashed"].detail.startswith(
        "killed by SIGSEGV (what to do: drain the node"
    )
    said = facts_from({"nvidia": {"status": "error", "message": "pynvml raised SystemExit: 3"}})
    assert not {"nvml-crashed", "nvml-hung"} & {f.id for f in registry().evaluate_checks(said)}


@pytest.mark.slow
def test_quick_audit_of_a_node_whose_nvml_segfaults_is_a_complete_fail_report(
    child_env: dict[str, str], tmp_path: Path
) -> None:
    env = fault_env(child_env, tmp_path, SEGFAULT)
    proc = envaudit_run(PYTHON, "--quick", "--format", "json", env=env, timeout=120)
    assert proc.returncode == Exit.FINDINGS, proc.stderr[-800:]
    report = json.loads(proc.stdout)
    assert report["verdict"] == "fail" and report["facts"]["nvidia"]["status"] == "crash"
    crashed = [f for f in report["findings"] if f["id"] == "nvml-crashed"]
    assert [f["severity"] for f in crashed] == ["fail"] and "SIGSEGV" in crashed[0]["detail"]


@pytest.mark.slow
def test_quick_audit_says_what_pynvml_raised_and_no_hang(child_env: dict[str, str], tmp_path: Path) -> None:
    env = fault_env(child_env, tmp_path, SYSTEM_EXIT)
    proc = envaudit_run(PYTHON, "--quick", "--format", "json", env=env, timeout=120)
    report = json.loads(proc.stdout)
    nvidia = report["facts"]["nvidia"]
    assert nvidia["status"] == "error" and nvidia["message"] == "pynvml raised SystemExit: 3", nvidia
    assert "nvml-hung" not in {f["id"] for f in report["findings"]}


@pytest.mark.jax
def test_health_on_a_node_whose_nvml_segfaults_exits_1_with_its_line(child_env: dict[str, str], tmp_path: Path) -> None:
    """The Slurm wrapper drains on exit 1: the health line and both files, not a dead process (exit 139)."""
    proc = envaudit_run(
        PYTHON,
        "health",
        "--probe",
        "matmul_precision",
        "--prometheus-dir",
        str(tmp_path),
        env=fault_env(child_env, tmp_path, SEGFAULT),
        timeout=120,
    )
    assert proc.returncode == Exit.FINDINGS, proc.stdout + proc.stderr[-800:]
    assert proc.stdout.startswith("envaudit FAIL") and "nvml-crashed" in proc.stdout
    report = json.loads((tmp_path / "envaudit-report.json").read_text())
    assert "nvml-crashed" in {f["id"] for f in report["findings"]}
    assert 'envaudit_verdict{verdict="fail"} 1' in (tmp_path / "envaudit.prom").read_text()


@pytest.mark.jax
def test_health_on_a_node_whose_driver_hangs_exits_1_and_says_so(child_env: dict[str, str]) -> None:
    env = {**child_env, "PYTHONPATH": os.pathsep.join([str(HANG), child_env["PYTHONPATH"]])}
    proc = envaudit_run(
        PYTHON, "health", "--probe", "matmul_precision", env=env, timeout=120
    )  # a hang would be this timeout
    assert proc.returncode == 1 and proc.stdout.startswith("envaudit FAIL"), proc.stdout + proc.stderr
    assert "nvml-hung" in proc.stdout


@pytest.mark.slow
def test_quick_mode_on_that_node_returns_too(child_env: dict[str, str]) -> None:
    env = {**child_env, "PYTHONPATH": os.pathsep.join([str(HANG), child_env["PYTHONPATH"]])}
    proc = envaudit_run(PYTHON, "--quick", env=env, timeout=120)
    assert proc.returncode == 1 and "nvml-hung" in proc.stdout and "NVML did not answer" in proc.stdout


@pytest.mark.slow
@pytest.mark.jax
def test_the_hooks_cold_path_survives_a_segfaulting_nvml(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The hook asks NVML inside the user's `import jax`: a driver library that crashes must not kill their
    program (it did, by SIGSEGV); it is one warning, as a hung driver is."""
    python = make_venv(tmp_path_factory.mktemp("hooked") / "venv", CHAIN)
    subprocess.run([str(python), "-m", "envaudit", "hook", "enable"], check=True, capture_output=True)
    cache = tmp_path_factory.mktemp("cache")
    env = {"PYTHONPATH": os.pathsep.join([str(FIXTURE), str(ROOT)]), FIXTURE_VARIABLE: fixture_file(cache, SEGFAULT)}
    proc = import_jax(python, cache, **env)
    assert proc.returncode == 0 and proc.stdout.startswith("imported"), proc.stderr[-800:]
    assert "[nvml-crashed]" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fixture", "found", "words"),
    [
        ({"nvmlInit": {"error": 18}}, "nvml-error", "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
        ({"nvmlInit": {"error": 999}}, "nvml-error", "NVML_ERROR_UNKNOWN"),
        ("a100_gpu_lost", "gpu-lost", "NVML_ERROR_GPU_IS_LOST"),
    ],
    ids=["driver-library-mismatch", "unknown-error", "gpu-lost"],
)
def test_nvmls_own_words_for_a_broken_driver_or_gpu_fail_the_node(
    child_env: dict[str, str], tmp_path: Path, fixture: Any, found: str, words: str
) -> None:
    """The driver upgraded without a reboot, NVML's Unknown Error, a GPU fallen off the bus: NVML says so in its
    own error, and `health` said OK. Each is now a failure in NVIDIA's words, and the node's line names it."""
    if isinstance(fixture, str):
        fixture = json.loads((ROOT / "tests" / "fixtures" / "nvml" / f"{fixture}.json").read_text())
    env = fault_env(child_env, tmp_path, fixture)
    proc = envaudit_run(PYTHON, "--quick", "--format", "json", env=env, timeout=120)
    assert proc.returncode == Exit.FINDINGS, proc.stderr[-800:]
    finding = next(f for f in json.loads(proc.stdout)["findings"] if f["id"].startswith(found))
    assert finding["severity"] == "fail" and words in finding["detail"]


def test_an_nvml_error_that_may_be_the_callers_is_no_finding() -> None:
    denied = facts_from({"nvidia": {"status": "error", "message": "Insufficient Permissions", "error_code": 4}})
    assert "nvml-error" not in {f.id for f in registry().evaluate_checks(denied)}
