"""The jax facts: parsed from captured stages, and from real children: real jax on the CPU, and real broken installs
(a fake `jax` package that crashes, hangs or fails to import, placed first on PYTHONPATH) giving distinct statuses
with their text, and the child's real exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envaudit.child.jaxfacts import parse, signal_name
from tests.conftest import PYTHON

CAPTURED_OK = [
    json.loads(line)
    for line in [
        '{"stage": "start", "python": "3.11.7"}',
        '{"stage": "imported", "jax_version": "0.4.30", "jaxlib_version": "0.4.30"}',
        '{"stage": "devices", "backend": "gpu", "platform": "cuda", "platform_version": "PJRT C API\\ncuda 12040",'
        ' "devices": [{"id": 0, "platform": "gpu", "device_kind": "NVIDIA A100-SXM4-80GB",'
        ' "compute_capability": "8.0"}], "x64": false, "default_matmul_precision": null,'
        ' "cuda_libraries": {"cuda_runtime": 12040, "cudnn": 90101}, "cuda_version": "12.4", "cudnn_version": "9.1.1"}',
        '{"stage": "first_use", "ok": true, "value": 3920.0}',
    ]
]
FACTS = "import json, sys; from envaudit.child import runner; print(json.dumps(runner.jax_facts({t}, {py!r})))"


def get_jax(timeout: float, env: dict[str, str], python: str = PYTHON) -> dict[str, Any]:
    """facts.jax as envaudit collects them, in a process with this environment (it is what is audited)."""
    from tests.conftest import ROOT

    env = {**env, "PYTHONPATH": ":".join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))}
    proc = subprocess.run(
        [PYTHON, "-c", FACTS.format(t=timeout, py=python)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 60,
    )
    assert proc.returncode == 0, proc.stderr
    facts: dict[str, Any] = json.loads(proc.stdout)
    return facts


def test_parse_captured_gpu_child() -> None:
    facts = parse(CAPTURED_OK, ended=None, timed_out=False, duration_s=2.5)
    assert facts["status"] == "ok" and facts["platform"] == "cuda"
    assert facts["cuda_version"] == "12.4" and facts["cudnn_version"] == "9.1.1"
    assert facts["devices"][0]["compute_capability"] == "8.0"


def test_parse_crash_after_import_is_a_crash_with_signal() -> None:
    facts = parse(CAPTURED_OK[:3], ended=-11, timed_out=False, duration_s=1.0, last_words="Segmentation fault")
    assert facts["status"] == "crash" and facts["signal"] == "SIGSEGV"
    assert facts["stage"] == "devices" and "SIGSEGV" in str(facts["message"])


def test_parse_wrong_first_answer() -> None:
    bad = [*CAPTURED_OK[:3], {"stage": "first_use", "ok": False, "value": 3921.0}]
    facts = parse(bad, ended=None, timed_out=False, duration_s=1.0)
    assert facts["status"] == "error" and "3921" in str(facts["message"])


def test_parse_child_that_ends_before_the_last_stage_says_its_exit_status() -> None:
    facts = parse(CAPTURED_OK[:2], ended=4, timed_out=False, duration_s=1.0, last_words="Fatal Python error: x")
    assert facts["status"] == "error" and facts["stage"] == "imported"
    assert str(facts["message"]) == "exited with status 4 before finishing: Fatal Python error: x"


def test_signal_names() -> None:
    assert signal_name(-6) == "SIGABRT" and signal_name(0) is None


@pytest.mark.jax
@pytest.mark.cpu_only
def test_real_jax_on_cpu(child_env: dict[str, str]) -> None:
    facts = get_jax(timeout=120, env=child_env)
    assert facts["status"] == "ok", facts
    assert facts["returncode"] == 0  # the child's real exit status
    assert facts["child_env"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"  # the one change it makes for GPUs
    assert facts["platform"] == "cpu" and facts["backend"] == "cpu"
    assert facts["x64"] is False and facts["default_matmul_precision"] is None
    assert facts["devices"][0]["platform"] == "cpu"
    import importlib.metadata as md

    assert facts["jax_version"] == md.version("jax")


@pytest.mark.jax
def test_real_jax_reports_x64_and_precision_from_environment(child_env: dict[str, str]) -> None:
    env = {**child_env, "JAX_ENABLE_X64": "1", "JAX_DEFAULT_MATMUL_PRECISION": "highest"}
    facts = get_jax(timeout=120, env=env)
    assert facts["x64"] is True and facts["default_matmul_precision"] == "highest"


def _fake_jax(tmp_path: Path, body: str, env: dict[str, str]) -> dict[str, str]:
    pkg = tmp_path / "fakejax" / "jax"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(body)
    return {**env, "PYTHONPATH": f"{pkg.parent}:{env['PYTHONPATH']}"}


@pytest.mark.jax
def test_import_error_is_its_own_status(tmp_path: Path, child_env: dict[str, str]) -> None:
    env = _fake_jax(tmp_path, "raise ImportError('numpy.core.multiarray failed to import')\n", child_env)
    facts = get_jax(timeout=60, env=env)
    assert facts["status"] == "import_error"
    assert str(facts["message"]) == "ImportError: numpy.core.multiarray failed to import"


@pytest.mark.jax
def test_segfault_is_a_crash(tmp_path: Path, child_env: dict[str, str]) -> None:
    env = _fake_jax(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", child_env)
    facts = get_jax(timeout=60, env=env)
    assert facts["status"] == "crash" and facts["signal"] == "SIGSEGV"
    assert facts["returncode"] == -11


@pytest.mark.jax
def test_hang_is_a_timeout(tmp_path: Path, child_env: dict[str, str]) -> None:
    env = _fake_jax(tmp_path, "import time\ntime.sleep(3600)\n", child_env)
    facts = get_jax(timeout=3, env=env)
    assert facts["status"] == "timeout" and "no answer within" in str(facts["message"])


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def test_no_jax_installed_is_absent(bare_python: str) -> None:
    facts = get_jax(timeout=60, env={"PATH": "/usr/bin:/bin"}, python=bare_python)
    assert facts["status"] == "absent"
    assert str(facts["message"]) == "ModuleNotFoundError: No module named 'jax'"


def test_an_interpreter_that_cannot_start_is_an_error_fact(tmp_path: Path) -> None:
    facts = get_jax(timeout=60, env={"PATH": "/usr/bin:/bin"}, python=str(tmp_path / "no-such-python"))
    assert facts["status"] == "error" and "could not start" in str(facts["message"])
