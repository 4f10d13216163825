"""The knowledge base: data rules (`data/*.toml`) and code checks, evaluated as one pure function of facts.

A new rule is one TOML file in `data/`; a new code check is its function and its `Check` declared beside it, and
one line in `registry.CHECKS`. The package imports its evaluators where they are called, so that a module that
needs only the accessors or the node counters (a plan's parser, the Prometheus format) does not load the whole
knowledge base before an audit has started its jax child.
"""

from __future__ import annotations

from dataclasses import dataclass

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.report import SEVERITIES, Finding, Severity


@dataclass(frozen=True)
class Entry:
    """One line of the catalogue `envaudit rules` prints: a data rule, a code check, or a retired id."""

    id: str
    severity: str
    title: str
    fix: str
    references: tuple[str, ...]
    kind: str  # "rule" | "check"
    symptom: str = ""
    notes: str = ""  # what was verified where (a rule's `notes`)
    pins: tuple[str, ...] = ()
    lifecycle: str = "active"  # or "retired": known, listed, never found

    @property
    def listed_as(self) -> str:
        """What `envaudit rules` and the README's table call it: rule, check, or retired."""
        return self.kind if self.lifecycle == "active" else "retired"


def evaluate(facts: Facts) -> list[Finding]:
    """All findings for a snapshot, worst first (stable within a severity)."""
    from envaudit.rules import messages
    from envaudit.rules.registry import registry

    found = messages.apply(registry().evaluate(facts), facts)
    return sorted(found, key=lambda f: SEVERITIES.index(f.severity))


def catalogue() -> list[Entry]:
    """Every id the registry knows, retired ones included (`envaudit rules` shows them as such)."""
    from envaudit.rules.registry import registry

    entries = [
        Entry(c.id, c.severity, c.title, c.fix, c.references, c.kind, c.symptom, c.notes, c.pins, c.lifecycle)
        for c in registry().causes
    ]
    return sorted(entries, key=lambda e: e.id)


def workaround(finding: str, facts: Facts) -> Fix:
    """The workaround of the rule a finding is of, as a fix for these facts (empty: none, or not a rule's)."""
    from envaudit.rules import engine
    from envaudit.rules.registry import registry

    rule = registry().get(finding)
    return rule.around(facts) if isinstance(rule, engine.Rule) else Fix()


def other_way(finding: str, facts: Facts) -> Fix:
    """The other way out of the rule a finding is of, as a fix for these facts (empty: none, or not a rule's)."""
    from envaudit.rules import engine
    from envaudit.rules.registry import registry

    rule = registry().get(finding)
    return rule.other(facts) if isinstance(rule, engine.Rule) else Fix()


def off_default(finding: str, facts: Facts) -> bool:
    """Whether a finding is of a rule whose fault is in a backend jax does not compute on by default here (an
    XLA:CPU miscompile on a TPU host): a probe that measures it on that backend does not make it a failure."""
    from envaudit.rules import engine
    from envaudit.rules.registry import registry

    rule = registry().get(finding)
    return isinstance(rule, engine.Rule) and bool(rule.off_default(facts))


def holds_back(finding: str) -> str:
    """The library a finding's rule holds jax back for, where no release of it works with a newer jax ("")."""
    from envaudit.rules import engine
    from envaudit.rules.registry import registry

    rule = registry().get(finding)
    return rule.holds_back() if isinstance(rule, engine.Rule) else ""


def severity_of(finding: str) -> Severity:
    """The severity a rule or check declares ("warn" for an id the registry does not know)."""
    from envaudit.rules.registry import registry

    cause = registry().get(finding)
    return cause.severity if cause is not None else "warn"


def wrong_numbers(finding: str) -> bool:
    """Whether a finding is of a rule of wrong numbers that the known_regressions probe measures."""
    from envaudit.rules import engine
    from envaudit.rules.registry import registry

    rule = registry().get(finding)
    return isinstance(rule, engine.Rule) and rule.wrong_numbers
