"""The judge's data is complete and consistent with the probes: every metric a probe bounds itself has a kind the
judge judges, on a CPU the judge is never more lenient than a probe alone, and every rule's `explains` names a probe
and a kind that exist."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from typing import Any

import pytest

from envaudit import judge
from envaudit.files import probefiles
from envaudit.judge import table
from envaudit.model.report import ProbeResult
from envaudit.rules import engine
from envaudit.rules.registry import CHECKS
from tests.conftest import ROOT, compiled
from tests.judge.test_judge import MACHINES

PROBES = [name for name in probefiles.available() if name != "ntk_nt"]  # ntk_nt needs its own environment
CLEARED = ("PYTHONPATH", "JAX_ENABLE_X64", "JAX_DEFAULT_MATMUL_PRECISION", "XLA_FLAGS")


@cache
def standalone(fault: str | None) -> tuple[dict[str, Any], ...]:
    """Every probe's own output (with its thresholds), run in one process, with the fault if any."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED} | compiled()
    if fault:
        env["PYTHONPATH"] = str(ROOT / "tests" / "faults" / fault)
    cmd = [sys.executable, str(ROOT / "scripts" / "bench_sensitivity.py"), "--child", ",".join(PROBES), "--seeds", "0"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return tuple(json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{"))


@pytest.mark.jax
def test_every_metric_a_probe_bounds_is_judged() -> None:
    data = table.load()
    for result in standalone(None):
        for metric in result["thresholds"]:
            assert data.kind_of(metric) != table.REPORT, (result["name"], metric)


@pytest.mark.jax
@pytest.mark.parametrize(
    "fault",
    [None, "noise", "matmul_bf16", "dense_batch_scale", "conv_batch_scale", "scatter_noise", "default_precision"],
)
def test_on_a_cpu_the_judge_fails_whatever_a_probe_alone_fails(fault: str | None) -> None:
    results = [ProbeResult(r["name"], r["status"], r["metrics"], 0.0, r["message"]) for r in standalone(fault)]
    judged = {r.run.label: r.status for r in judge.judge(results, MACHINES["cpu"]).results}
    alone = {r.run.label: r.status for r in results}
    assert {n for n, s in alone.items() if s == "fail"} <= {n for n, s in judged.items() if s == "fail"}
    if fault is None:  # a healthy CPU: every probe passes, or skips as it says it did (no case for this jaxlib)
        assert set(judged.values()) <= {"pass", "skip"} and "pass" in judged.values()
        assert all(judged[n] == "pass" for n, s in alone.items() if s != "skip")


def test_every_explains_entry_names_a_probe_and_a_kind_or_a_judged_metric() -> None:
    """Each entry is probe:kind, probe:metric, @distribution:kind (a distribution some probe needs), or (no colon)
    the id of a check or rule that exists, or of a check's finding about one thing (import-fails-jax)."""
    probes, kinds = {*probefiles.available(), "*", "jax"}, {*table.KINDS, *table.STATUSES, "*"}  # jax: jax-broken
    probes |= {f"@{d}" for path in probefiles.available().values() for d in probefiles.requires(path)}
    ids = {c.id for c in CHECKS} | {r.id for r in engine.load_rules()}
    for rule in engine.load_rules():
        for entry in rule.explains:
            if ":" not in entry:  # a finding's id: a rule's, a check's, or one of a check's per thing (`<check>-<it>`)
                assert entry in ids or any(entry.startswith(f"{c.id}-") for c in CHECKS), (rule.id, entry)
                continue
            probe, _, what = entry.partition(":")
            assert probe in probes and (what in kinds or table.kind(what) != table.REPORT), (rule.id, entry)


def test_each_kind_has_a_name_that_the_table_maps_to_it() -> None:
    """The naming conventions docs/architecture.md promises a newcomer, checked against the table."""
    data = table.load()
    examples = {
        "rel_err_batched": "error",
        "rel_diff_chunked_4": "error",
        "neg_eig_rel": "error",
        "rel_err_batched_default": "default_error",
        "rel_err_default": "default_error",
        "rel_fn_err_log_jit": "platform_error",
        "rel_residual_eigh": "platform_error",
        "rerun_rel_diff": "rerun",
        "rerun_rel_diff_scatter_add": "nondeterministic",
        "output_dtype": "dtype",
        "default_param_dtype": "documented_default",
        "error_impl3": "raised",
        "import_error": "raised",
        "wrong_nan": "wrong_count",
        "wrong_cases": table.REPORT,
        "subnormals_flushed": table.REPORT,
        "effective_bits_default": table.REPORT,
        "bitwise_equal_batched_per_example": table.REPORT,
    }
    assert {name: data.kind_of(name) for name in examples} == examples


@pytest.mark.parametrize(
    "bad",
    [
        {"metric": [{"pattern": "x", "kind": "nonsense"}], "error": {"float32": 1e-5, "float64": 1e-12}},
        {"metric": [], "error": {"float32": 1e-5}, "class": {}},
        {"metric": [], "error": {"float32": 1e-5, "float64": 1e-12}, "class": {"float32": {"bound": 1e-5}}},
    ],
)
def test_a_malformed_table_is_refused_with_its_reason(bad: dict[str, Any]) -> None:
    with pytest.raises(table.TableError):
        table.parse({"class": {}, **bad})
