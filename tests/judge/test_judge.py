"""The judge over the machines people run: the probes' metrics come from real runs on this CPU with faults that do
what each platform does by design (TF32 or bfloat16 rounding at the default precision, scatter-add atomics) or what
a broken one does (rounding at HIGHEST, a batch-dependent error, noise); the facts are those of a CPU, a V100, an
A100, an H100, an H200 and a TPU. Each is judged as that machine would be: right class, right severity."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import pytest

from envaudit import judge, rules
from envaudit.files import probefiles
from envaudit.model.facts import Facts
from envaudit.model.report import ProbeResult, ProbeStatus
from tests.conftest import facts_from
from tests.replay import audit_on_cpu

MEASURED = (*probefiles.numeric_names(), "flax_dtype")  # the numeric probes, and flax's dtypes (documented_default)
FAULTS = {  # name -> (faults composed, extra environment)
    "healthy": ("", {}),
    "tf32": ("default_precision", {}),
    "bf16": ("default_precision", {"ENVAUDIT_FAULT_MANTISSA": "7"}),
    "bf16_everywhere": ("matmul_bf16", {}),  # HIGHEST rounded too: a wrong answer on any machine
    "batch_scale": ("dense_batch_scale", {}),
    "scatter": ("scatter_noise", {}),
    "noise": ("noise", {}),
}


def gpu(capability: str, kind: str, **env: str) -> Facts:
    devices = [{"id": 0, "platform": "gpu", "device_kind": kind, "compute_capability": capability}]
    return facts_from(
        {
            "packages": {"jax": "0.10.1", "jaxlib": "0.10.1", "jax-cuda12-plugin": "0.10.1"},
            "nvidia": {
                "status": "ok",
                "driver_version": "570.86.15",
                "cuda_driver_version": "12.8",
                "gpus": [{"index": 0, "name": kind, "compute_capability": capability}],
            },
            "jax": {"status": "ok", "platform": "cuda", "backend": "gpu", "x64": False, "devices": devices},
            "env": env,
        }
    )


MACHINES = {
    "cpu": facts_from(
        {
            "packages": {"jax": "0.10.1", "jaxlib": "0.10.1"},
            "nvidia": {"status": "absent", "gpus": []},
            "jax": {"status": "ok", "platform": "cpu", "backend": "cpu", "x64": False},
        }
    ),
    "v100": gpu("7.0", "Tesla V100-SXM2-16GB"),
    "a100": gpu("8.0", "NVIDIA A100-SXM4-80GB"),
    "h100": gpu("9.0", "NVIDIA H100 80GB HBM3"),
    "h200": gpu("9.0", "NVIDIA H200"),
    "tpu": facts_from(
        {
            "packages": {"jax": "0.10.1", "jaxlib": "0.10.1", "libtpu": "0.0.21"},
            "nvidia": {"status": "absent", "gpus": []},
            "jax": {"status": "ok", "platform": "tpu", "backend": "tpu", "x64": False},
        }
    ),
}
GPUS_AT_8 = ("a100", "h100", "h200")


@cache
def measured(fault: str) -> tuple[ProbeResult, ...]:
    """The probes' results from one real audit on this CPU with the fault (cached for the module)."""
    faults, env = FAULTS[fault]
    argv = [arg for name in MEASURED for arg in ("--probe", name)]
    report = audit_on_cpu(faults, *argv, extra_env=env)
    return tuple(ProbeResult.from_dict(p) for p in report["probes"])


def verdict(fault: str, machine: str | Facts) -> dict[str, Any]:
    facts = MACHINES[machine] if isinstance(machine, str) else machine
    judged = judge.judge(measured(fault), facts)
    return {
        "severities": {f.id: f.severity for f in judged.findings},
        "statuses": {r.run.label: r.status for r in judged.results},
        "findings": judged.findings,
    }


@pytest.mark.jax
@pytest.mark.parametrize("machine", list(MACHINES))
def test_healthy_numbers_are_healthy_everywhere(machine: str) -> None:
    assert verdict("healthy", machine)["severities"] == {}


@pytest.mark.jax
@pytest.mark.parametrize("machine", list(MACHINES))
@pytest.mark.parametrize("fault", ["tf32", "bf16"])
def test_reduced_default_precision_is_documented_on_gpus_and_tpus_and_wrong_elsewhere(machine: str, fault: str) -> None:
    got = verdict(fault, machine)
    if machine in GPUS_AT_8:
        assert got["severities"] == {"tf32-default-matmul-precision": "warn"}
    elif machine == "tpu":
        assert got["severities"] == {"tpu-bf16-default-matmul-precision": "warn"}
    else:  # the CPU ignores precision settings, a V100 has no TF32: float32 is the class, and this is wrong
        assert got["severities"] == {judge.DEFAULT_PRECISION.id: "fail"}
    assert set(got["statuses"].values()) == ({"pass"} if machine in (*GPUS_AT_8, "tpu") else {"pass", "fail"})
    evidence = next(iter(got["findings"])).detail
    assert "dense_chain rel_err_batched_default=" in evidence and "bits" in evidence


@pytest.mark.jax
def test_the_warning_states_the_bits_and_how_to_get_float32() -> None:
    (finding,) = verdict("tf32", "h200")["findings"]
    assert finding.id == "tf32-default-matmul-precision" and "(9." in finding.detail  # ~10 bits
    assert not finding.fix  # jax's documented default is no fault: nothing to plan, float32 is said how to get
    assert "JAX_DEFAULT_MATMUL_PRECISION=float32" in finding.detail
    assert "https://github.com/jax-ml/jax/issues/18934" in finding.references


@pytest.mark.jax
@pytest.mark.parametrize("machine", list(MACHINES))
@pytest.mark.parametrize("fault", ["bf16_everywhere", "batch_scale"])
def test_wrong_answers_at_highest_fail_everywhere(machine: str, fault: str) -> None:
    got = verdict(fault, machine)
    assert got["severities"].get("probe-dense-chain") == "fail"
    assert got["statuses"]["dense_chain"] == "fail"
    detail = next(f.detail for f in got["findings"] if f.id == "probe-dense-chain")
    assert "at HIGHEST precision" in detail


@pytest.mark.jax
def test_batch_dependent_error_names_the_check_that_saw_it() -> None:
    detail = next(f.detail for f in verdict("batch_scale", "h200")["findings"] if f.id == "probe-dense-chain")
    assert "rel_diff_batched_vs_per_example" in detail and "rel_err_per_example" not in detail


@pytest.mark.jax
@pytest.mark.parametrize("machine", list(MACHINES))
def test_scatter_add_nondeterminism_is_by_design_only_on_gpus(machine: str) -> None:
    got = verdict("scatter", machine)
    if machine in ("cpu", "tpu"):
        assert got["severities"] == {"probe-determinism": "fail"}
    else:
        assert got["severities"] == {"gpu-nondeterministic-by-default": "info"}
        assert got["statuses"]["determinism"] == "pass"


@pytest.mark.jax
@pytest.mark.parametrize("flag", ["--xla_gpu_deterministic_ops=true", "--xla_gpu_exclude_nondeterministic_ops=true"])
def test_with_deterministic_ops_requested_a_gpu_must_be_bitwise(flag: str) -> None:
    got = verdict("scatter", gpu("9.0", "NVIDIA H200", XLA_FLAGS=f"--xla_dump_to=/tmp/d {flag}"))
    assert got["severities"] == {"probe-determinism": "fail"}


@pytest.mark.jax
def test_noisy_forward_programs_fail_on_a_cpu_and_warn_on_a_gpu() -> None:
    """XLA documents GEMMs and convolutions as possibly nondeterministic on GPUs: differences within float32
    rounding are a warning there; on a CPU any difference between reruns is a fault."""
    cpu, h200 = verdict("noise", "cpu"), verdict("noise", "h200")
    assert {"probe-dense-chain", "probe-determinism"} <= {k for k, v in cpu["severities"].items() if v == "fail"}
    assert "fail" not in h200["severities"].values()
    assert h200["severities"]["gpu-nondeterministic-by-default"] == "warn"


@pytest.mark.jax
def test_an_unknown_compute_capability_never_fails_for_the_default_precision() -> None:
    unknown = facts_from({"packages": {"jax": "0.10.1", "jaxlib": "0.10.1", "jax-cuda12-plugin": "0.10.1"}})
    got = verdict("tf32", unknown)
    assert got["severities"] == {judge.DEFAULT_PRECISION.id: "warn"}  # TF32 is possible, not established
    detail = got["findings"][0].detail  # what was measured, then what may explain it (as reports have said it)
    assert detail.startswith("[measured: ") and "] (possibly tf32-default-matmul-precision: " in detail, detail


@pytest.mark.jax
def test_highest_asked_for_on_an_a100_makes_float32_the_class() -> None:
    a100 = gpu("8.0", "NVIDIA A100-SXM4-80GB")
    highest = facts_from({**a100.to_dict(), "jax": {**a100.jax, "default_matmul_precision": "float32"}})
    assert verdict("tf32", highest)["severities"] == {judge.DEFAULT_PRECISION.id: "fail"}


@pytest.mark.jax
def test_merge_joins_probe_evidence_to_the_rule_that_fired() -> None:
    from envaudit import rules

    facts = MACHINES["h200"]
    merged = judge.merge(rules.evaluate(facts).findings, verdict("tf32", "h200")["findings"], facts)
    tf32 = [f for f in merged if f.id == "tf32-default-matmul-precision"]
    assert len(tf32) == 1 and tf32[0].source == "rule"
    assert "[matched: " in tf32[0].detail and "[measured: " in tf32[0].detail


@pytest.mark.jax
@pytest.mark.parametrize("x64", [True, False])
def test_flax_float32_params_under_x64_are_its_documented_default_not_a_failure(x64: bool) -> None:
    """Seed 000's trap: a float64 run of flax_dtype shows float32 default params. That is flax's documented
    default, explained by its rule whether x64 is on in the process or only in the run (--precision float64)."""
    report = audit_on_cpu("", "--probe", "flax_dtype", "--precision", "float64")
    results = [ProbeResult.from_dict(p) for p in report["probes"]]
    cpu = MACHINES["cpu"]
    facts = facts_from(
        {**cpu.to_dict(), "packages": {**cpu.packages, "flax": "0.12.8"}, "jax": {**cpu.jax, "x64": x64}}
    )
    judged = judge.judge(results, facts)
    assert {f.id: f.severity for f in judged.findings} == {"flax-param-dtype-float32-under-x64": "info"}
    (finding,) = judged.findings
    assert "param_dtype=jnp.float64" in finding.detail and "default_jacobian_dtype=float32" in finding.detail
    assert not finding.fix  # a change to the program is no shell command


@pytest.mark.jax
def test_an_explicit_float64_module_computing_float32_is_wrong() -> None:
    report = audit_on_cpu("flax_f32", "--probe", "flax_dtype", "--precision", "float64")
    judged = judge.judge([ProbeResult.from_dict(p) for p in report["probes"]], MACHINES["cpu"])
    wrong = next(f for f in judged.findings if f.id == "probe-flax-dtype")
    assert wrong.severity == "fail" and "explicit_output_dtype=float32" in wrong.detail


def probe(name: str, status: ProbeStatus = "pass", **metrics: object) -> ProbeResult:
    return ProbeResult(name, status, dict(metrics), 0.1, "")


def test_a_report_saved_before_two_precisions_is_read_as_it_was_measured() -> None:
    """Before 0.2 every error was measured at the default precision (TF32 on an H200) and reruns as absolute
    differences, scatter-add's included: a healthy H200's old report is not a wrong answer."""
    old = [
        probe(
            "dense_chain",
            precision="float32",
            rel_err_batched=1.05e-3,
            rel_diff_batched_vs_per_example=2e-4,
            max_abs_diff_rerun=0.0,
            output_dtype="float32",
        ),
        probe(
            "determinism",
            "fail",
            precision="float32",
            max_abs_diff_scatter_add=1.6e-4,
            max_abs_diff_big_sum=0.0,
            max_abs_diff_conv_grad=3e-6,
            max_abs_diff_mlp_batch=0.0,
            output_dtype="float32",
        ),
    ]
    got = {f.id: f.severity for f in judge.judge(old, MACHINES["h200"]).findings}
    assert got == {"tf32-default-matmul-precision": "warn", "gpu-nondeterministic-by-default": "info"}
    assert {f.id for f in judge.judge(old, MACHINES["cpu"]).findings} == {
        "probe-default-precision",
        "probe-determinism",
    }


def test_a_probes_own_failure_on_metrics_nobody_judges_stands() -> None:
    got = judge.judge([probe("dense_chain", "fail", max_rel_err=0.5), probe("ntk", "fail")], MACHINES["h200"])
    assert [r.status for r in got.results] == ["fail", "fail"]
    assert {f.id for f in got.findings} == {"probe-dense-chain", "probe-ntk"}


def test_wrong_answers_that_a_rule_explains_join_that_rule_as_one_failure() -> None:
    from envaudit import rules

    cpu = MACHINES["cpu"]
    fast = facts_from(
        {**cpu.to_dict(), "env": {"XLA_FLAGS": "--xla_cpu_enable_fast_math=true --xla_cpu_fast_math_honor_nans=false"}}
    )
    wrong = [probe(n, precision="float32", rel_err_batched=2e-3) for n in ("dense_chain", "conv_chain")]
    merged = judge.merge(rules.evaluate(fast).findings, judge.judge(wrong, fast).findings, fast)
    assert [(f.id, f.severity) for f in merged] == [("xla-cpu-fast-math-enabled", "fail")]
    assert "dense_chain rel_err_batched=" in merged[0].detail and "conv_chain rel_err_batched=" in merged[0].detail


def test_each_precision_of_a_both_run_is_its_own_finding() -> None:
    wrong = [
        replace(probe("dense_chain", precision=d, rel_err_batched=1.0), precision=d) for d in ("float32", "float64")
    ]
    ids = [f.id for f in judge.judge(wrong, MACHINES["cpu"]).findings]
    assert ids == ["probe-dense-chain-float32", "probe-dense-chain-float64"]


def test_a_rule_whose_condition_is_unknown_is_only_a_possibility() -> None:
    """The H200 facts say nothing of cuDNN: cudnn-9100-abi-break may explain a wrong answer, but is not its cause."""
    (finding,) = judge.judge(
        [probe("dense_chain", precision="float32", rel_err_batched="nan")], MACHINES["h200"]
    ).findings
    assert finding.id == "probe-dense-chain" and "possibly cudnn-9100-abi-break" in finding.detail
    assert not finding.fix and "what to do: envaudit probes dense_chain --script" in finding.detail  # advice, read


@pytest.mark.parametrize("preset", ["F16_F16_F32", "TF32_TF32_F32", "BF16_BF16_F32"])
def test_a_reduced_precision_algorithm_asked_for_is_its_class_even_on_a_v100(preset: str) -> None:
    v100 = MACHINES["v100"]
    asked = facts_from({**v100.to_dict(), "jax": {**v100.jax, "default_matmul_precision": preset}})
    got = judge.judge([probe("matmul_precision", precision="float32", rel_err_default=4e-3)], asked)
    assert {f.severity for f in got.findings} == {"warn"}


def test_negative_errors_and_a_missing_precision_are_not_trusted() -> None:
    cpu = MACHINES["cpu"]
    assert judge.judge([probe("ntk", precision="float32", neg_eig_rel=-0.5)], cpu).results[0].status == "fail"
    assert judge.judge([probe("ntk", precision="float32", rel_err_full="-inf")], cpu).results[0].status == "fail"
    float64 = judge.judge([probe("dense_chain", rel_err_batched=1e-16, output_dtype="float64")], cpu)
    assert float64.results[0].status == "pass"  # no `precision`: the dtype that came out says float64
    assert judge.judge([probe("dense_chain", rel_err_batched=1e-8, output_dtype="float64")], cpu).findings


@pytest.mark.jax
def test_rocm_nondeterminism_and_default_precision_are_one_finding_each() -> None:
    rocm = facts_from(
        {
            "packages": {"jax": "0.10.1", "jaxlib": "0.10.1", "jax-rocm60-plugin": "0.10.1"},
            "jax": {"status": "ok", "platform": "rocm", "x64": False},
        }
    )
    got = {f.id: f.severity for f in judge.judge(measured("tf32") + measured("scatter"), rocm).findings}
    assert got == {"probe-default-precision": "warn", "gpu-nondeterministic-by-default": "info"}


def test_a_rejudged_report_says_todays_words() -> None:
    stale = replace(probe("determinism", precision="float32", rerun_rel_diff_scatter_add=0.0), judgement="old words")
    assert judge.judge([stale], MACHINES["tpu"]).results[0].judgement == ""


def test_findings_for_probes_that_could_not_compute_say_what_to_do() -> None:
    """A raised import is not "a wrong answer"; a hang's fix first says how to tell it from a slow start."""
    facts = facts_from({"packages": {"jax": "0.10.1", "jaxlib": "0.10.1"}})
    raised = ProbeResult("ntk_nt", "fail", {"import_error": "ImportError: cannot import name 'X'"}, 1.0, "no import")
    (finding,) = judge.judge([raised], facts).findings
    assert "raised instead of computing" in finding.title and "wrong answer" not in finding.title
    hung = ProbeResult("ntk", "timeout", {"cpu_fraction": 0.0, "idle_cpus": 1.5}, 15.2, "no answer within 15 s")
    (finding,) = judge.judge([hung], facts).findings
    assert not finding.fix and "what to do: rerun it with more time (--timeout 31;" in finding.detail


def test_a_timeout_while_compiling_with_a_cpu_busy_is_slow_and_without_one_hangs() -> None:
    """The kit says "compiling" before XLA compiles (probes/_kit.progress); the runner measures the CPU from there."""
    facts = facts_from({"packages": {"jax": "0.10.2", "jaxlib": "0.10.2", "libtpu": "0.0.42.1"}})
    compiling = {"cpu_fraction": 0.95, "idle_cpus": 11.0, "cpu_s": 19.0, "cost_s": 2.0, "stage": "compiling"}
    for metrics, severity in (
        (compiling, "warn"),  # a cold compile on a fresh TPU host: 19 s of CPU, 10 times its declared cost
        ({**compiling, "cpu_fraction": 0.01, "cpu_s": 0.2}, "fail"),  # blocked in the compile: a hang
        ({**compiling, "stage": "compiled"}, "fail"),  # compiled, then spinning: a spin-wait on a hung device
    ):
        timed_out = ProbeResult("fft", "timeout", metrics, 20.0, "no answer within 20 s")
        (finding,) = judge.judge([timed_out], facts).findings
        assert finding.severity == severity, (metrics, finding.title)


def test_a_rule_that_names_a_probe_case_judges_that_case_when_measured_as_it_did_unmeasured() -> None:
    """neural-tangents 0.6.5 beside jax 0.5.3: the plan said nt-065-impl3-jax-0426 is a warning (implementations 1
    and 2 work); the audit measured implementation=3 raising and failed the same rule. The rule names that case
    ("ntk_nt:error_impl3"): measured, it stands at the rule's severity; a rule of wrong numbers, or one that names
    a kind of problem on every probe ("*:error"), is judged by the measurement."""
    facts = facts_from({"packages": {"jax": "0.5.3", "jaxlib": "0.5.3", "neural-tangents": "0.6.5"}})
    error = "AttributeError: module 'jax.interpreters.ad' has no attribute 'source_info_util'"
    metrics = {"error_impl1": "", "error_impl2": "", "error_impl3": error}
    raised = ProbeResult("ntk_nt", "fail", {k: v for k, v in metrics.items() if v}, 3.0, "implementation 3 raised")
    judged = judge.judge([raised], facts).findings
    found = {f.id: f.severity for f in judge.merge(rules.evaluate(facts).findings, judged, facts)}
    assert found.get("nt-065-impl3-jax-0426") == "warn", found
    assert "fail" not in found.values(), found
