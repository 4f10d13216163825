"""The knowledge base as data: every rule's own examples, the seed environments, and a healthy stack."""

from __future__ import annotations

import re
from typing import Any

import pytest

from envaudit import rules
from envaudit.collect import collect
from envaudit.model.scope import ENV_NAMES, ENV_PREFIXES, PATH_NAMES
from envaudit.rules import api_removals, engine
from tests.conftest import ROOT, facts_from

RULES = engine.load_rules()


def test_every_rule_file_is_one_rule_with_a_unique_id() -> None:
    """Nothing in rules/data is skipped when the rules load, and no two rules (nor a rule and a check) share an id:
    a finding's id names one rule."""
    from envaudit.rules.registry import CHECKS

    ids = [r.id for r in RULES]
    assert sorted(ids) == sorted(path.stem for path in engine.DATA.glob("*.toml"))
    assert len(set(ids)) == len(ids) and not set(ids) & {c.id for c in CHECKS}
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9.-]*", i) for i in ids)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_examples(rule: engine.Rule) -> None:
    outcomes = {bool(e["match"]) for e in rule.examples}
    assert outcomes == {True, False}, "each rule needs a matching and a non-matching example"
    for example in rule.examples:  # by its conditions, or by its messages where the example quotes one
        facts = facts_from(example["facts"])
        got = rule.evaluate(facts)[0] or rule.id in {f.id for f in rules.evaluate(facts).findings}
        assert bool(got) is bool(example["match"]), example


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_text_is_usable(rule: engine.Rule) -> None:
    assert rule.references and all(r.startswith("https://") for r in rule.references)
    assert rule.fix.strip() and rule.symptom.strip() and "\n" not in rule.title


def _env_vars(when: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(when, dict):
        found |= set(when.get("env", {}))
        for sub in when.get("any", []):
            found |= _env_vars(sub)
    return found


def test_rules_only_name_collected_environment_variables() -> None:
    for rule in RULES:
        for var in _env_vars(rule.when):
            assert var in ENV_NAMES | PATH_NAMES or var.startswith(ENV_PREFIXES), (rule.id, var)


SEED_002 = {
    "packages": {"jax": "0.2.19", "jaxlib": "0.1.70+cuda102", "flax": "0.3.4", "neural-tangents": "0.3.7"},
    "nvidia": {
        "status": "ok",
        "driver_version": "440.33.01",
        "cuda_driver_version": "10.2",
        "gpus": [{"index": 0, "name": "Tesla V100", "compute_capability": "7.0"}],
    },
}


def test_seed_002_cuda102_ntk_is_a_fail_citing_nt_122() -> None:
    found = [f for f in rules.evaluate(facts_from(SEED_002)).findings if f.severity == "fail"]
    assert any("neural-tangents/issues/122" in ref for f in found for ref in f.references), found


def test_seed_000_flax_under_x64_is_a_finding() -> None:
    facts = facts_from(
        {
            "packages": {"jax": "0.2.28", "jaxlib": "0.1.76", "flax": "0.3.6"},
            "jax": {"status": "ok", "platform": "cpu", "x64": True},
        }
    )
    assert any("flax" in f.id for f in rules.evaluate(facts).findings)


def test_healthy_current_cpu_stack_has_no_fail() -> None:
    facts = collect()
    assert "jax" in facts.packages
    assert [f for f in rules.evaluate(facts).findings if f.severity == "fail"] == []


def test_readme_lists_every_rule() -> None:
    readme = (ROOT / "README.md").read_text()
    family = f"`{api_removals.FAMILY}<library>`"  # one row for the derived check of each library
    missing = [
        e.id
        for e in rules.catalogue()
        if f"`{e.id}`" not in readme and not (e.id.startswith(api_removals.FAMILY) and family in readme)
    ]
    assert missing == []
