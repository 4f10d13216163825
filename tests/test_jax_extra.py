"""The `[jax]` extra leaves out exactly the releases envaudit's own rules fail on the CPU of this machine.

`pip install ".[jax]"` that installed a release the audit then fails would be envaudit recommending a broken
environment. Which releases those are is the rules' (envaudit/rules/data), not this file's: each rule is evaluated
on the facts of a CPU machine like this one with jax and jaxlib at one release, for every release the extra could
resolve to: those the wheel table lists for a Python envaudit supports (its requires-python). Older ones (jaxlib
0.1.68, whose rule is a fail) have no wheel there, and a yanked one (0.4.32) a resolver only takes pinned with ==.
A rule fails a release where it is of severity fail, or where it explains a probe's problem (a warn whose probe
measures the wrong numbers here, which makes the audit's finding a fail).
"""

from __future__ import annotations

import functools
import platform
import tomllib
from collections.abc import Iterator, Mapping
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from envaudit.files import probefiles
from envaudit.model.facts import Facts, JaxFacts, PlatformFacts
from envaudit.rules import engine
from envaudit.rules.engine import Rule
from tests.conftest import ROOT

STACK = ("jax", "jaxlib")


def _package_conditions(when: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Each (package, specifier) a rule's `when` states of jax or jaxlib, its `any` alternatives included."""
    for name, spec in when.get("packages", {}).items():
        if name in STACK:
            yield name, spec
    for alternative in when.get("any", []):
        yield from _package_conditions(alternative)


def _releases() -> set[str]:
    """The jaxlib releases with a wheel for a Python that envaudit's requires-python admits (the wheel table's)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    supported = SpecifierSet(project["requires-python"])
    table = tomllib.loads((ROOT / "envaudit" / "rules" / "tables" / "jaxlib-wheels.toml").read_text())
    return {v for python, versions in table["versions"].items() if supported.contains(python) for v in versions}


def _fails(rule: Rule) -> bool:
    measured = any(e.partition(":")[0] in probefiles.available() for e in rule.explains if ":" in e)
    return rule.severity == "fail" or measured


def _on_this_cpu(version: str) -> Facts:
    return Facts(
        packages={"jax": version, "jaxlib": version},
        platform=PlatformFacts(system=platform.system(), machine=platform.machine()),
        jax=JaxFacts(status="unknown", platform="cpu"),
        origin="plan",
    )


@functools.cache
def failed() -> dict[tuple[str, str], tuple[str, ...]]:
    """(release, id of a rule that fails it on this machine's CPU) -> the packages of jax's the rule names."""
    found = {}
    for version in sorted(_releases()):
        facts = _on_this_cpu(version)
        for rule in engine.load_rules():
            if _fails(rule) and rule.evaluate(facts)[0]:
                found[version, rule.id] = tuple(dict.fromkeys(name for name, _ in _package_conditions(rule.when)))
    return found


def extra_here(package: str) -> SpecifierSet:
    """What the `[jax]` extra allows of a package on this machine: its requirements whose marker holds, together."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    requirements = [Requirement(line) for line in extras["jax"]]
    allowed = SpecifierSet()
    for req in requirements:
        if req.name == package and (req.marker is None or req.marker.evaluate()):
            allowed &= req.specifier
    return allowed


def test_the_rules_fail_some_release_here() -> None:
    """The derivation finds what it is for (a rule this machine's CPU fails): the tests below are not vacuous."""
    assert failed()


def test_the_jax_extra_excludes_every_release_a_rule_fails_here() -> None:
    """Excluded in one of the packages the rule names is enough: the combination it condemns cannot resolve."""
    allowed = {name: extra_here(name) for name in STACK}
    admitted = [
        (version, rule)
        for (version, rule), names in failed().items()
        if all(allowed[name].contains(version, prereleases=True) for name in names)
    ]
    assert not admitted, f"the [jax] extra allows releases envaudit fails: {admitted}"


def test_the_jax_extra_excludes_nothing_the_rules_do_not_fail() -> None:
    """An exclusion without its rule (one narrowed or removed) would keep a good release from users. A jax release
    is excluded with the jaxlib a rule names (jax pins its own jaxlib from 0.4.30), which saves the resolver a try."""
    condemned = {version for version, _ in failed()}
    for name in STACK:
        excluded = {s.version for s in extra_here(name) if s.operator == "!="}
        assert excluded <= condemned, f"{name}: excluded without a rule that fails it here: {excluded - condemned}"
