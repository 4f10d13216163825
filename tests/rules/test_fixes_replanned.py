"""A fix is a claim: each rule's pinned fix, applied to each of the rule's matching examples, leaves no failure
when the whole knowledge base runs again, and can be installed on a Python the example allows."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from envaudit import rules
from envaudit.judge import causes
from envaudit.model import fixes
from envaudit.model.facts import Facts
from envaudit.rules import accessors, engine, extras, wheels
from tests.conftest import facts_from
from tests.planfix import requested

PINNED = [r for r in engine.load_rules() if r.pins]


FAR = "999"  # what pip installs where a requirement has no upper bound: the newest release, of any major


def chosen(requirement: str, end: int) -> tuple[str, str]:
    """A version pip could pick for the requirement: the lowest (end 0) or the highest (end -1) that it allows
    among the versions its bounds name, and a far future one where nothing bounds it above."""
    req = Requirement(requirement)
    named = [*fixes.candidates(str(req.specifier)), FAR]
    allowed = sorted((v for v in named if req.specifier.contains(v, prereleases=True)), key=Version)
    assert allowed, requirement
    return req.name, allowed[end]


PLUGIN_ROWS = extras.CUDA_EXTRA.load()["plugin"]
PLUGIN_PINS = {(row["name"], version): row["pins"] for row in PLUGIN_ROWS for version in row["versions"]}


def extra(requirement: str, version: str, end: int) -> dict[str, str]:
    """What `jax[cudaNN]` at `version` installs beside it (rules/extras.py, from the release's METADATA), and the
    nvidia-* wheels its plugin pins, each where `end` says pip could pick it."""
    req = Requirement(requirement)
    if req.name != "jax" or not req.extras:
        return {}
    moved = extras.implied(version, set(req.extras))
    # a CUDA plugin's own Requires-Dist pins its PJRT package (jax-cuda13-plugin 0.12.1: jax-cuda13-pjrt==0.12.1),
    # which the extra itself stopped naming at jax 0.12.1: pip installs it with the plugin
    moved |= {n.replace("-plugin", "-pjrt"): v for n, v in moved.items() if n.endswith("-plugin")} | moved
    newest = {row["name"]: row["pins"] for row in PLUGIN_ROWS}  # a release after the table: its newest pins
    pins = [p for name, v in moved.items() for p in PLUGIN_PINS.get((name, v), newest.get(name, ())) if "=" in p]
    return moved | dict(chosen(pin, end) for pin in pins)


def applied(facts: Facts, command: str, end: int) -> Facts:
    asked = requested(command)
    assert not (asked.remove or asked.unset or asked.export or asked.options), command  # installs, and only that
    packages = dict(facts.packages)
    for requirement in asked.requirements:
        name, version = chosen(requirement, end)
        packages |= {name: version} | extra(requirement, version, end)
    return replace(facts, packages=packages, messages=[])  # what the environment printed was before the fix


def test_there_are_pinned_fixes_to_prove_and_an_open_bound_is_read_as_pip_reads_it() -> None:
    assert len(PINNED) >= 5
    assert chosen("nvidia-cudnn-cu12>=8.9.4", -1) == ("nvidia-cudnn-cu12", FAR)  # today that is 9.x
    assert chosen("nvidia-cudnn-cu12>=8.9.4,<9", -1)[1].startswith("8.")
    assert chosen("numpy<2", 0) == chosen("numpy<2", -1) == ("numpy", "1.999")


@pytest.mark.parametrize("rule", PINNED, ids=lambda r: r.id)
def test_each_pinned_fix_leaves_no_failure_and_installs_somewhere(rule: engine.Rule) -> None:
    for example in (e for e in rule.examples if e["match"]):
        facts = facts_from(example["facts"])
        found = rules.evaluate(facts).findings
        finding = next(f for f in found if f.id == rule.id)
        assert finding.fix.split()[1:4] == ["-m", "pip", "install"], finding.fix
        before = {f.id for f in found if f.severity == "fail" and f.id != rule.id}  # the example's other faults
        for end in (0, -1):  # the oldest release the fix allows, and the newest
            fixed = applied(facts, finding.fix, end)
            evaluated = rules.evaluate(fixed)
            left = [f.id for f in causes.link(evaluated.findings, evaluated) if f.severity == "fail"]
            left = [i for i in left if i not in before]
            assert left == [], (rule.id, finding.fix, fixed.packages, left)
            if accessors.platform(facts) == "cuda":  # a fix on a GPU machine must not leave jax on the CPU
                assert accessors.platform(fixed) == "cuda", (rule.id, finding.fix, fixed.packages)
        pythons = wheels.pythons(rule.pins)
        here = wheels.python_of(facts)
        assert pythons is None or (pythons and (here is None or here in pythons)), (rule.id, pythons, here)
