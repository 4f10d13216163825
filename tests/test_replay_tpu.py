"""Replays of the one report made on a real accelerator: a Google TPU v5e host (jax, jaxlib 0.10.2, libtpu 0.0.42.1),
audited and health-checked by scripts/gpu-check.sh (tests/fixtures/tpu/README.md says how and what it measured).

What the chip measured must stay what envaudit concludes from it: HIGHEST runs clean, the default precision's
bfloat16 errors by design (a warning, never a failure), and the one real fault: XLA:CPU's jax#39103 on the host's CPU.
Its plan, pasted, must leave no failure and no further fix: libtpu moves with jax to the build jax's tpu extra pins.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from envaudit import rules
from envaudit.files import probefiles
from envaudit.judge import causes
from envaudit.model import fixes
from envaudit.model.facts import Facts
from envaudit.model.report import Report
from tests.conftest import FIXTURES, PYTHON, envaudit_run
from tests.planfix import requested

TPU = FIXTURES / "tpu"
NUMERIC = probefiles.numeric_names()  # the numeric probes (their files declare it)
FLOAT32_BOUND = 1e-5  # the kit's float32 tolerance at HIGHEST
LIBTPU = [  # libtpu releases on the package index around the pins the plans meet (pip index versions libtpu)
    "0.0.11", "0.0.11.1", "0.0.11.3", "0.0.11.4", "0.0.40", "0.0.41", "0.0.42", "0.0.42.1", "0.0.43.2", "0.0.44",
]  # fmt: skip


def replayed(name: str, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    path = tmp_path / name
    path.write_bytes((TPU / name).read_bytes())
    proc = envaudit_run(PYTHON, "check", str(path), "--format", "json", timeout=120)
    assert proc.stderr == "", proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return proc.returncode, report


@pytest.mark.parametrize("name", ["tpu-v5e-jax0102-audit.json", "tpu-v5e-jax0102-health.json"])
def test_the_tpu_host_warns_of_the_cpu_bug_beside_the_chip(name: str, tmp_path: Path) -> None:
    """jax#39103 is an XLA:CPU miscompile: the probe measures it on the host's CPU, but jax computes on the TPU by
    default there, so only work a program places on the CPU is hit: a warning, and the node stays in service."""
    code, report = replayed(name, tmp_path)
    assert code == 0 and report["verdict"] == "warn"
    assert {f["id"] for f in report["findings"] if f["severity"] == "fail"} == set()
    warned = {f["id"]: f for f in report["findings"] if f["severity"] == "warn"}
    assert "jaxlib-0102-cpu-vmap-matvec-sum" in warned and "tpu-bf16-default-matmul-precision" in warned
    assert "jax computes on tpu by default here" in warned["jaxlib-0102-cpu-vmap-matvec-sum"]["detail"]
    assert "libtpu-outside-jax-pin" not in warned  # 0.0.42.1 is what jax[tpu]==0.10.2 pins
    assert "probe-ntk-nt-not-run" not in warned  # health's bound left out a probe that could not run here
    probes = {p["name"]: p for p in report["probes"]}
    assert probes["known_regressions"]["status"] == "fail"  # what the CPU computed, as measured
    for probe in NUMERIC:
        assert probes[probe]["status"] == "pass", probes[probe]


def test_the_chip_measured_highest_clean_and_the_default_in_bfloat16() -> None:
    """The measurements themselves, as the chip gave them: what the replay above rests on."""
    report = Report.from_dict(json.loads((TPU / "tpu-v5e-jax0102-audit.json").read_text()))
    assert report.facts.jax["platform"] == "tpu"
    metrics = {p.probe: p.metrics for p in report.probes}
    highest = [metrics[p][k] for p in NUMERIC for k in metrics[p] if k in ("rel_err_batched", "rel_err_highest")]
    default = [metrics[p][k] for p in NUMERIC for k in metrics[p] if k.startswith("rel_err") and k.endswith("default")]
    assert len(highest) == 3 and all(isinstance(e, float) and e < FLOAT32_BOUND for e in highest)
    assert len(default) == 4 and all(isinstance(e, float) and 1e-3 < e < 2**-7 for e in default)  # bf16: 7 bits
    assert all(v == 0.0 for k, v in metrics["determinism"].items() if k.startswith("rerun_rel_diff"))


def pip_picks(requirement: str) -> tuple[str, str]:
    """The newest release pip could install for a pin: an exact one, or a libtpu release the wildcard allows."""
    req = Requirement(requirement)
    allowed = [v for v in (*fixes.candidates(str(req.specifier)), *LIBTPU) if req.specifier.contains(v)]
    assert allowed, requirement
    return req.name, max(allowed, key=Version)


def test_the_plan_moves_nothing_and_the_findings_own_fix_keeps_libtpu_in_step(tmp_path: Path) -> None:
    """A warning never forces a downgrade: the one plan leaves jax where it is and says it left the fix out. The
    finding's own fix, for whoever runs work on the CPU, moves jax through its tpu extra: pasted, libtpu moves to
    the build jax[tpu]==0.10.1 pins, and nothing fails or asks for a fix after it."""
    _, report = replayed("tpu-v5e-jax0102-audit.json", tmp_path)
    plan = report["plan"]
    assert plan["fix"] == "" and plan["remaining"] == [] and not plan["loop"]
    assert plan["declined"] == ["jaxlib-0102-cpu-vmap-matvec-sum"]
    own = next(f["fix"] for f in report["findings"] if f["id"] == "jaxlib-0102-cpu-vmap-matvec-sum")
    asked = requested(own)
    assert sorted(asked.requirements) == ["jax[tpu]==0.10.1", "jaxlib==0.10.1", "libtpu==0.0.41.*"]
    facts = Facts.from_dict(report["facts"])
    moved = dict(pip_picks(r) for r in asked.requirements)
    after = replace(facts, packages={**facts.packages, **moved}, jax={}, messages=[])
    evaluated = rules.evaluate(after)
    left = causes.link(evaluated.findings, evaluated)
    assert [f.id for f in left if f.severity == "fail"] == []
    assert [(f.id, f.fix) for f in left if f.fix] == []


NT_HOST = ("tpu-v5e-nt065-audit.json", "tpu-v5e-nt065-health.json")


@pytest.mark.slow  # an interpreter replays a report that imports the whole judge: a second each
@pytest.mark.parametrize("name", NT_HOST)
def test_the_tpu_host_with_neural_tangents_fails_for_it_alone(name: str, tmp_path: Path) -> None:
    """The issue's TPU host, measured: flax 0.12.8, optax, orbax, TensorFlow 2.21 (CPU) and neural-tangents 0.6.5
    beside jax[tpu] 0.10.2. One failure, neural-tangents' import, with its consequences folded under it."""
    code, report = replayed(name, tmp_path)
    assert code == 1
    roots = {f["id"] for f in report["findings"] if f["severity"] == "fail" and not f["caused_by"]}
    assert roots == {"nt-065-jax-060-import"}
    assert "requirement-unsatisfied" not in {f["id"] for f in report["findings"]}  # tensorflow-cpu is tensorflow


@pytest.mark.slow  # an interpreter replays a report, then plans: a second
def test_its_one_plan_keeps_libtpu_numpy_2_and_exports_nothing(tmp_path: Path) -> None:
    """What an engineer would write: jax[tpu] at 0.5.3 (the newest that neural-tangents 0.6.5 imports with) with
    the libtpu its extra pins, the libraries that need a newer jax moved to their newest releases that accept it,
    NumPy 2 kept, no variable, and jax said to be held for neural-tangents, with the other ways named. Pasted into
    the facts, it leaves no failure and no further fix."""
    _, report = replayed("tpu-v5e-nt065-audit.json", tmp_path)
    plan = report["plan"]
    asked = requested(plan["fix"])
    assert {"jax[tpu]==0.5.3", "jaxlib==0.5.3", "libtpu==0.0.11.*"} <= set(asked.requirements), plan["fix"]
    assert not asked.export and "export" not in plan["fix"] and "XLA_FLAGS" not in plan["fix"]
    assert not any(r.startswith(("numpy", "ml-dtypes", "tensorflow")) for r in asked.requirements), plan["fix"]
    assert asked.pins["flax"] == "0.10.6"  # flax 0.12.8 needs jax >= 0.10.0; 0.10.6 is the newest for 0.5.3
    assert plan["held"] == [{"library": "neural-tangents", "jax": "0.5.3"}] and plan["remaining"] == []
    facts = Facts.from_dict(report["facts"])
    moved = dict(pip_picks(r) for r in asked.requirements)
    after = replace(facts, packages={**facts.packages, **moved}, jax={"status": "unknown", "platform": "tpu"})
    evaluated = rules.evaluate(after)
    left = [f for f in causes.link(evaluated.findings, evaluated) if not f.caused_by]
    assert [f.id for f in left if f.severity == "fail"] == []
    assert [(f.id, f.fix) for f in left if f.fix and f.severity == "fail"] == []
