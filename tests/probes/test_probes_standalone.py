"""The known-answer probes run as real programs (``python probes/x.py``) on the real jax, healthy and with faults.

Faults come from ``tests/faults/<fault>/sitecustomize.py`` put on the child's PYTHONPATH: they patch jax (or
flax) right after it is imported. Nothing here mocks jax.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from envaudit.files import probefiles
from tests.conftest import compiled

ROOT = Path(__file__).resolve().parents[2]
PROBES = ROOT / "probes"
FAULTS = ROOT / "tests" / "faults"
NUMERIC = probefiles.numeric_names()  # the numeric probes (their files declare it)
HAVE_NT = importlib.util.find_spec("neural_tangents") is not None
# Variables of the parent's environment that would change what the probes compute.
CLEARED = ("PYTHONPATH", "JAX_ENABLE_X64", "JAX_DEFAULT_MATMUL_PRECISION", "ENVAUDIT_FAULT_DELTA", "XLA_FLAGS")


def run_probe(
    name: str, *args: str, fault: str | None = None, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    child_env = {k: v for k, v in os.environ.items() if k not in CLEARED} | compiled()
    if fault is not None:
        child_env["PYTHONPATH"] = str(FAULTS / fault)
    child_env.update(env or {})
    return subprocess.run(
        [sys.executable, str(PROBES / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        env=child_env,
        timeout=timeout,
        cwd=ROOT,
    )


def result_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, f"expected one JSON line on stdout, got {proc.stdout!r}; stderr: {proc.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(lines[0])
    return result


def tripped(result: dict[str, Any]) -> set[str]:
    """The metrics whose thresholds are not met (numeric: an upper bound; string: the expected value)."""
    out = set()
    for key, bound in result["thresholds"].items():
        value = result["metrics"][key]
        if (value != bound) if isinstance(bound, str) else not (isinstance(value, (int, float)) and value <= bound):
            out.add(key)
    return out


def check_shape(result: dict[str, Any], name: str) -> None:
    assert set(result) - {"devices"} == {"name", "status", "metrics", "thresholds", "message"}
    assert result["name"] == name
    assert result["status"] in ("pass", "fail", "skip")
    assert isinstance(result["message"], str) and "\n" not in result["message"] and result["message"]
    for value in result["metrics"].values():
        assert isinstance(value, (int, float, str, bool))
    assert set(result["thresholds"]) <= set(result["metrics"])
    for bound in result["thresholds"].values():
        assert isinstance(bound, (int, float, str))


# On a GPU, scatter-add and backward convolutions differ between reruns by design, and a probe alone (unlike
# envaudit's judge) holds every rerun to the same bits: determinism passes alone only where no accelerator is.
ANYWHERE = [pytest.param(n, marks=pytest.mark.cpu_only) if n == "determinism" else n for n in NUMERIC]


@pytest.mark.jax
@pytest.mark.parametrize("name", [*ANYWHERE, "flax_dtype"])
def test_healthy_float32_passes(name: str) -> None:
    proc = run_probe(name, "--precision", "float32")
    result = result_of(proc)
    check_shape(result, name)
    assert (proc.returncode, result["status"]) == (0, "pass"), result["message"]
    assert tripped(result) == set()
    assert result["metrics"]["precision"] == "float32"


@pytest.mark.jax
@pytest.mark.parametrize("name", ANYWHERE)
def test_healthy_float64_passes(name: str) -> None:
    result = result_of(proc := run_probe(name, "--precision", "float64"))
    check_shape(result, name)
    assert (proc.returncode, result["status"]) == (0, "pass"), result["message"]
    assert result["metrics"]["output_dtype"] == "float64"


@pytest.mark.jax
def test_auto_follows_jax_enable_x64() -> None:
    result = result_of(run_probe("dense_chain", env={"JAX_ENABLE_X64": "1"}))
    assert result["metrics"]["precision"] == "float64"
    assert result["thresholds"]["rel_err_batched"] == 1e-12
    assert result_of(run_probe("matmul_precision"))["metrics"]["precision"] == "float32"


@pytest.mark.jax
def test_flax_default_params_are_float32_under_x64() -> None:
    """Seed 000's trap, on the healthy flax: a float64 request fails and names the fix; the fix itself works."""
    proc = run_probe("flax_dtype", "--precision", "float64")
    result = result_of(proc)
    assert (proc.returncode, result["status"]) == (1, "fail")
    assert "param_dtype=jnp.float64" in result["message"]
    assert tripped(result) == {"default_param_dtype", "default_jacobian_dtype"}
    assert result["metrics"]["explicit_jacobian_dtype"] == "float64"


@pytest.mark.jax
def test_ntk_nt_without_neural_tangents_skips() -> None:
    if HAVE_NT:
        pytest.skip("neural-tangents is installed here")
    proc = run_probe("ntk_nt")
    result = result_of(proc)
    check_shape(result, "ntk_nt")
    assert (proc.returncode, result["status"]) == (77, "skip")
    assert "not installed" in result["message"]


@pytest.mark.jax
def test_ntk_nt_installed_but_broken_fails_with_the_import_error(tmp_path: Path) -> None:
    """neural-tangents 0.6.5 under jax >= 0.6 imports with an ImportError: a finding, not a skip."""
    pkg = tmp_path / "neural_tangents"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError(\"cannot import name 'Jaxpr' from 'jax.core'\")\n")
    meta = tmp_path / "neural_tangents-0.6.5.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: neural-tangents\nVersion: 0.6.5\n")
    proc = run_probe("ntk_nt", env={"PYTHONPATH": str(tmp_path)})
    result = result_of(proc)
    check_shape(result, "ntk_nt")
    assert (proc.returncode, result["status"]) == (1, "fail")
    assert "Jaxpr" in result["metrics"]["import_error"]
    assert result["metrics"]["neural_tangents"] == "0.6.5"
    assert "does not import" in result["message"]


@pytest.mark.jax
@pytest.mark.parametrize(
    ("fault", "name", "args", "must_trip", "must_not_trip"),
    [
        (
            "conv_batch_scale",
            "conv_chain",
            (),
            {"rel_err_batched", "rel_diff_batched_vs_per_example"},
            {"rel_err_per_example"},
        ),
        (
            "dense_batch_scale",
            "dense_chain",
            (),
            {"rel_err_batched", "rel_err_chunked", "rel_diff_batched_vs_per_example"},
            {"rel_err_per_example"},
        ),
        ("dense_batch_scale", "ntk", (), {"rel_err_full", "rel_diff_chunked_1"}, {"rel_diff_chunked_4"}),
        ("matmul_bf16", "dense_chain", (), {"rel_err_batched", "rel_err_per_example"}, set()),
        ("matmul_bf16", "ntk", (), {"rel_err_full", "rel_err_chunked_1"}, {"neg_eig_rel"}),
        ("matmul_bf16", "matmul_precision", (), {"rel_err_highest"}, {"output_dtype"}),
        (
            "noise",
            "determinism",
            (),
            {"rerun_rel_diff_mlp_batch", "rerun_rel_diff_conv_grad"},
            {"rerun_rel_diff_big_sum"},
        ),
        ("noise", "dense_chain", (), {"rerun_rel_diff"}, set()),  # each rerun draws other noise
        ("noise", "conv_chain", (), {"rerun_rel_diff"}, set()),
        ("scatter_noise", "determinism", (), {"rerun_rel_diff_scatter_add"}, {"rerun_rel_diff_mlp_batch"}),
        (
            "flax_f32",
            "flax_dtype",
            ("--precision", "float64"),
            {"explicit_output_dtype", "rel_err_output"},
            {"explicit_param_dtype", "explicit_jacobian_dtype"},
        ),
    ],
)
def test_fault_is_caught(
    fault: str, name: str, args: tuple[str, ...], must_trip: set[str], must_not_trip: set[str]
) -> None:
    proc = run_probe(name, *args, fault=fault)
    result = result_of(proc)
    check_shape(result, name)
    assert (proc.returncode, result["status"]) == (1, "fail"), result["message"]
    assert must_trip <= tripped(result)
    assert not must_not_trip & tripped(result)


@pytest.mark.jax
@pytest.mark.cpu_only
@pytest.mark.parametrize(
    ("name", "metric"),
    [
        ("dense_chain", "rel_err_batched_default"),
        ("conv_chain", "rel_err_batched_default"),
        ("ntk", "rel_err_full_default"),
        ("matmul_precision", "rel_err_default"),
    ],
)
def test_default_precision_rounding_shows_in_the_default_run_only(name: str, metric: str) -> None:
    """What a GPU does at the default precision (TF32 operands, HIGHEST exact): the checks at HIGHEST pass, and
    the default run reports about TF32's 10 bits; without the rounding it reports float32's."""
    rounded = result_of(proc := run_probe(name, fault="default_precision"))
    assert (proc.returncode, rounded["status"], tripped(rounded)) == (0, "pass", set()), rounded["message"]
    assert 1e-4 < rounded["metrics"][metric] < 5e-3 and 8 < rounded["metrics"]["effective_bits_default"] < 13
    bf16 = result_of(run_probe(name, fault="default_precision", env={"ENVAUDIT_FAULT_MANTISSA": "7"}))
    assert rounded["metrics"][metric] < bf16["metrics"][metric] < 5e-2
    exact = result_of(run_probe(name))
    assert exact["metrics"][metric] < 1e-5 and exact["metrics"]["effective_bits_default"] > 18


@pytest.mark.jax
def test_highest_is_asked_for_whatever_the_users_default() -> None:
    """JAX_DEFAULT_MATMUL_PRECISION=float32 takes the default run to float32 too: the fault honours the config,
    as a GPU does, and so the fix that the TF32 rule gives is shown to work."""
    result = result_of(
        run_probe("dense_chain", fault="default_precision", env={"JAX_DEFAULT_MATMUL_PRECISION": "float32"})
    )
    assert result["metrics"]["rel_err_batched_default"] < 1e-5


@pytest.mark.jax
@pytest.mark.cpu_only
def test_matmul_bf16_leaves_about_8_bits() -> None:
    result = result_of(run_probe("matmul_precision", fault="matmul_bf16"))
    assert 6 < result["metrics"]["effective_bits_default"] < 11
    assert result_of(run_probe("matmul_precision"))["metrics"]["effective_bits_default"] > 18


@pytest.mark.jax
def test_a_fault_below_the_threshold_passes() -> None:
    """The scale faults are real knobs: far below float32 resolution the probe must not cry wolf."""
    proc = run_probe("conv_chain", fault="conv_batch_scale", env={"ENVAUDIT_FAULT_DELTA": "1e-9"})
    assert (proc.returncode, result_of(proc)["status"]) == (0, "pass")


def test_abort_on_import_is_a_signal() -> None:
    proc = run_probe("dense_chain", fault="abort_on_import", timeout=60)
    assert proc.returncode == -signal.SIGABRT
    assert proc.stdout == ""


@pytest.mark.slow
def test_hang_on_import_needs_the_callers_timeout() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_probe("dense_chain", fault="hang_on_import", timeout=3)


@pytest.mark.slow
def test_fault_hooks_import_nothing_costly() -> None:
    """A fault's sitecustomize must not import jax, flax or numpy itself (that would slow every start)."""
    code = "import sys; print(sorted(m for m in ('jax', 'flax', 'numpy') if m in sys.modules))"
    for fault in sorted(p.name for p in FAULTS.iterdir() if (p / "sitecustomize.py").exists()):
        env = {k: v for k, v in os.environ.items() if k not in CLEARED} | {"PYTHONPATH": str(FAULTS / fault)}
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30)
        assert (proc.returncode, proc.stdout.strip()) == (0, "[]"), (fault, proc.stderr)


@pytest.mark.jax
@pytest.mark.cpu_only
def test_probes_share_one_process_and_restore_x64() -> None:
    """The runner loads every probe by file path into one child and calls run(); x64 must be left as found."""
    script = textwrap.dedent(
        """
        import importlib.util, json, os, sys
        import jax
        out = []
        sys.path.insert(0, os.path.dirname(sys.argv[1]))  # the probes' kit
        for path in sys.argv[1:]:
            spec = importlib.util.spec_from_file_location("probe_" + path.rsplit("/", 1)[-1][:-3], path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            for precision in ("float64", "float32", "auto"):
                result = module.run(precision)
                assert result["name"] == module.NAME, result
                out.append([module.NAME, precision, result["status"], jax.config.jax_enable_x64])
        print(json.dumps(out))
        """
    )
    paths = [str(PROBES / f"{n}.py") for n in (*NUMERIC, "flax_dtype", "ntk_nt")]
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    proc = subprocess.run(
        [sys.executable, "-c", script, *paths], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout)
    assert len(rows) == 3 * len(paths)
    assert all(x64 is False for *_, x64 in rows)
    expected_fail = {("flax_dtype", "float64")}
    for name, precision, status, _ in rows:
        if name == "ntk_nt" and not HAVE_NT:
            assert status == "skip"
        else:
            assert status == ("fail" if (name, precision) in expected_fail else "pass"), (name, precision)


def test_module_docstrings_state_the_known_answer() -> None:
    for path in sorted(PROBES.glob("[!_]*.py")):
        text = path.read_text()
        assert "Known answer" in text and "Threshold" in text, path.name
        assert not re.search(r"^\s*(import|from)\s+envaudit", text, re.M), f"{path.name} must not import envaudit"
