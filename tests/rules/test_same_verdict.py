"""Same facts, same verdict: every data rule gives the same severity on the same facts whichever verb made them (an
audit's or --quick's live facts, a plan's, the import hook's, a pasted report's). A pasted report differs in one
way only: what it does not state is unknown, not absent, so a rule that needs an absence may not fire there; where
it fires, its severity is the others'."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envaudit import rules
from envaudit.model.facts import Facts, Origin
from envaudit.rules import engine
from tests.conftest import facts_from

ORIGINS: tuple[Origin, ...] = ("live", "plan", "hook")
EXAMPLES = [
    pytest.param(rule.id, example["facts"], id=f"{rule.id}-{n}")
    for rule in engine.load_rules()
    for n, example in enumerate(rule.examples)
    if example["match"]
]


def severity(facts: Facts, rule: str) -> str | None:
    return next((f.severity for f in rules.evaluate(facts).findings if f.id == rule), None)


@pytest.mark.parametrize(("rule", "fragment"), EXAMPLES)
def test_a_rule_gives_one_severity_in_every_verb(rule: str, fragment: dict[str, object]) -> None:
    facts = facts_from(fragment)
    found = {origin: severity(replace(facts, origin=origin), rule) for origin in ORIGINS}
    assert len(set(found.values())) == 1 and None not in found.values(), found
    pasted = severity(replace(facts, origin="triage"), rule)
    assert pasted in (None, found["live"]), (pasted, found)


def test_a_known_miscompile_of_the_backend_jax_computes_on_fails_wherever_no_probe_ran_it() -> None:
    """jaxlib 0.10.2 on an x86-64 CPU: FAIL in plan, quick, hook and a pasted report alike (it was FAIL in plan,
    WARN in --quick, WARN or OK in triage); on a TPU host, where only work put on the CPU is hit, WARN in all."""
    cpu = facts_from({"packages": {"jax": "0.10.2", "jaxlib": "0.10.2"}, "platform": {"machine": "x86_64"}})
    tpu = replace(cpu, jax={"status": "ok", "platform": "tpu"})
    every: tuple[Origin, ...] = (*ORIGINS, "triage")
    for origin in every:
        assert severity(replace(cpu, origin=origin, env={}), "jaxlib-0102-cpu-vmap-matvec-sum") == "fail", origin
        assert severity(replace(tpu, origin=origin, env={}), "jaxlib-0102-cpu-vmap-matvec-sum") == "warn", origin
