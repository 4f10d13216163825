"""The engine: three-valued conditions, validation of rule files, and pip-like version matching."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envaudit.rules import engine
from envaudit.rules.engine import RuleError, parse_rule
from tests.conftest import facts_from

BASE = {
    "id": "t",
    "title": "t",
    "severity": "fail",
    "symptom": "s",
    "fix": "f",
    "references": ["https://x.org/1"],
}


def rule(when: dict[str, Any]) -> engine.Rule:
    return parse_rule({**BASE, "when": when}, "test")


def verdict(when: dict[str, Any], fragment: dict[str, Any]) -> bool | None:
    return rule(when).evaluate(facts_from(fragment))[0]


def test_local_label_matches_as_pip_does() -> None:
    facts = {"packages": {"jaxlib": "0.1.70+cuda102"}}
    assert verdict({"packages": {"jaxlib": "<0.1.72"}}, facts) is True
    assert verdict({"packages": {"jaxlib": "==0.1.70"}}, facts) is True
    assert verdict({"packages": {"jaxlib": ">=0.1.72"}}, facts) is False


def test_missing_fact_is_unknown_not_a_match() -> None:
    assert verdict({"cuda": "<11"}, {"packages": {"jaxlib": "0.4.30"}}) is None
    assert verdict({"driver": "<525"}, {}) is None
    assert verdict({"x64": True}, {}) is None
    assert verdict({"packages": {"jax": ">=0.6"}, "x64": True}, {"packages": {"jax": "0.4.1"}}) is False


def test_partial_versions_are_unknown_unless_the_whole_range_agrees() -> None:
    plugin = {"packages": {"jaxlib": "0.4.30", "jax-cuda12-plugin": "0.4.30"}}
    assert verdict({"cuda": "<13"}, plugin) is True
    assert verdict({"cuda": "<11"}, plugin) is False
    assert verdict({"cuda": "<12.3"}, plugin) is None


def test_partial_versions_and_equality_clauses() -> None:
    plugin = {"packages": {"jaxlib": "0.4.30", "jax-cuda12-plugin": "0.4.30"}}  # CUDA "12": any 12.x
    assert verdict({"cuda": ">=12.2,<12.4"}, plugin) is None  # 12.3 is possible, 12.0 too
    assert verdict({"cuda": "!=12.2"}, plugin) is None
    assert verdict({"cuda": "==12.2"}, plugin) is None
    assert verdict({"cuda": "==12.*"}, plugin) is True
    assert verdict({"cuda": "==11.8"}, plugin) is False
    assert verdict({"cuda": "!=11.8"}, plugin) is True
    exact = {"jax": {"status": "ok", "cuda_version": "12.3"}}
    assert verdict({"cuda": ">=12.2,<12.4"}, exact) is True and verdict({"cuda": "!=12.3"}, exact) is False


def test_a_fact_that_is_not_a_version_is_unknown() -> None:
    facts = {"nvidia": {"status": "ok", "driver_version": "N/A", "gpus": []}, "packages": {"nvidia-cudnn-cu12": "9.x"}}
    assert verdict({"driver": "<525"}, facts) is None
    assert verdict({"libraries": {"cudnn": "<9"}}, facts) is None


def test_environment_of_a_bug_report_is_unknown_and_of_a_plan_what_it_says() -> None:
    """A pasted report that does not show XLA_FLAGS says nothing of it; a plan runs with what --env gives, only."""
    unset = {"env": {"XLA_FLAGS": {"unset": True}}}
    assert verdict(unset, {"origin": "triage", "jax": {"status": "unknown", "platform": "cuda"}, "env": {}}) is None
    assert verdict(unset, {"origin": "plan", "jax": {"status": "unknown", "platform": "cuda"}, "env": {}}) is True
    flagged = {"XLA_FLAGS": "--xla_gpu_deterministic_ops=true"}
    assert verdict(unset, {"origin": "plan", "jax": {"status": "unknown"}, "env": flagged}) is False


def test_any_and_env() -> None:
    when = {"any": [{"env": {"XLA_FLAGS": {"contains": "fast_math=true"}}}, {"x64": True}]}
    assert verdict(when, {"env": {"XLA_FLAGS": "--xla_cpu_enable_fast_math=true"}}) is True
    assert verdict(when, {"env": {}}) is None  # x64 unknown
    assert verdict(when, {"env": {}, "jax": {"status": "ok", "x64": False}}) is False
    assert verdict({"env": {"NVIDIA_TF32_OVERRIDE": {"unset": True}}}, {"env": {}}) is True
    lacks = {"xla_flags": {"--xla_disable_hlo_passes": {"lacks_item": "onednn-matmul-rewriter"}}}
    assert verdict(lacks, {"env": {}}) is True  # unset: the workaround is not there
    assert verdict(lacks, {"env": {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}}) is True
    assert verdict(lacks, {"env": {"XLA_FLAGS": "--xla_disable_hlo_passes=algsimp,onednn-matmul-rewriter"}}) is False
    assert verdict(lacks, {"env": {"XLA_FLAGS": "--xla_disable_hlo_passes=<redacted>"}}) is None  # hidden: unknown
    # a bug report that does not state XLA_FLAGS: taken as without the workaround (one that states it is read)
    assert verdict(lacks, {"origin": "triage", "env": {}}) is True
    stated = {"origin": "triage", "env": {"XLA_FLAGS": "--xla_disable_hlo_passes=onednn-matmul-rewriter"}}
    assert verdict(lacks, stated) is False
    empty = {"xla_flags": {"--xla_cpu_experimental_ynn_fusion_type": {"not_equals": ""}}}
    assert verdict(empty, {"env": {"XLA_FLAGS": "--xla_cpu_experimental_ynn_fusion_type="}}) is False
    assert verdict(empty, {"env": {"XLA_FLAGS": "--xla_cpu_experimental_ynn_fusion_type=dot"}}) is True
    last_wins = "--xla_cpu_experimental_ynn_fusion_type= --xla_cpu_experimental_ynn_fusion_type=dot"
    assert verdict(empty, {"env": {"XLA_FLAGS": last_wins}}) is True


def test_a_workaround_flag_survives_redaction_so_the_rule_sees_it() -> None:
    from envaudit.model.redact import select_env

    for flag in ("--xla_disable_hlo_passes=algsimp,onednn-matmul-rewriter", "--xla_cpu_experimental_ynn_fusion_type="):
        assert select_env({"XLA_FLAGS": flag}) == {"XLA_FLAGS": flag}


def test_evidence_names_the_matching_facts() -> None:
    r = rule({"packages": {"neural-tangents": "<=0.6.5", "jax": ">=0.6.0"}})
    facts = facts_from({"packages": {"neural-tangents": "0.6.5", "jax": "0.10.2"}})
    ok, evidence = r.evaluate(facts)
    assert ok is True
    assert "matched: neural-tangents 0.6.5" in r.finding(evidence, facts).detail


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({**BASE, "when": {"packagez": {}}}, "unknown condition 'packagez'"),
        ({**BASE, "when": {"cuda": "about 11"}}, "bad specifier"),
        ({**BASE, "when": {}}, "non-empty"),
        ({**BASE, "references": ["http://insecure"], "when": {"x64": True}}, "https"),
        ({**BASE, "severity": "fatal", "when": {"x64": True}}, "severity"),
        ({**BASE, "colour": 1, "when": {"x64": True}}, "unknown key"),
        ({**BASE, "when": {"env": {"XLA_FLAGS": {"equal": "x"}}}}, "contains/equals/not_in/unset/set"),
        ({k: v for k, v in BASE.items() if k != "fix"} | {"when": {"x64": True}}, "missing 'fix'"),
        ({**BASE, "title": 3, "when": {"x64": True}}, "title must be of JSON type string"),
        ({**BASE, "when": {"x64": True}, "examples": [{"match": True, "fact": {}}]}, r"examples\[0\] has the unknown"),
        ({**BASE, "when": {"x64": True}, "examples": [{"facts": {}}]}, r"examples\[0\] is missing 'match'"),
        ({**BASE, "when": {"x64": True}, "pins": "numpy<2"}, "pins must be a JSON array"),
    ],
)
def test_malformed_rules_are_refused(data: dict[str, Any], message: str) -> None:
    with pytest.raises(RuleError, match=message):
        parse_rule(data, "bad.toml")


def test_file_name_must_equal_id(tmp_path: Path) -> None:
    (tmp_path / "other.toml").write_text(
        'id = "t"\ntitle = "t"\nseverity = "warn"\nsymptom = "s"\nfix = "f"\nreferences = ["https://x.org"]\n'
        "[when]\nx64 = true\n"
    )
    with pytest.raises(RuleError, match="differs from the file name"):
        engine.load_rules(tmp_path)


def test_explains_entries_are_read_once_into_what_they_name() -> None:
    """A finding id, a probe's problem, how jax ended: parsed where they are declared, matched as values."""
    from envaudit.rules import explains

    finding, problem, jax = explains.parse(("jax-broken", "conv_chain:rerun", "jax:*"))
    assert finding.names_finding("jax-broken") and not finding.names_problem("jax-broken", "")
    assert problem.names_problem("conv_chain", "rerun") and not problem.names_problem("ntk", "rerun")
    assert problem.names_problem("conv_chain", "error", "rerun")  # a kind, or its metric
    assert jax.names_problem("jax", "import_error") and not jax.names_finding("jax")
