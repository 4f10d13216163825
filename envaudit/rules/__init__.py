"""The knowledge base: data rules (`data/*.toml`) and code checks, evaluated as one pure function of facts.

A new rule is one TOML file in `data/`; a new code check is one entry in `checks.CHECKS`. Nothing else changes.
The package imports its evaluators where they are called, so that a module that needs only the accessors or the
node counters (a plan's parser, the Prometheus format) does not load the whole knowledge base before an audit has
started its jax child.
"""

from __future__ import annotations

from dataclasses import dataclass

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.report import SEVERITIES, Finding


@dataclass(frozen=True)
class Entry:
    """One line of the catalogue `envaudit rules` prints: a data rule or a code check."""

    id: str
    severity: str
    title: str
    fix: str
    references: tuple[str, ...]
    kind: str  # "rule" | "check"
    symptom: str = ""
    notes: str = ""  # what was verified where (a rule's `notes`)
    pins: tuple[str, ...] = ()


def evaluate(facts: Facts) -> list[Finding]:
    """All findings for a snapshot, worst first (stable within a severity)."""
    from envaudit.rules import checks, engine, signatures

    found = signatures.apply(engine.evaluate(facts) + checks.evaluate(facts), facts)
    return sorted(found, key=lambda f: SEVERITIES.index(f.severity))


def catalogue() -> list[Entry]:
    from envaudit.rules import checks, engine

    entries = [
        Entry(r.id, r.severity, r.title, r.fix, r.references, "rule", r.symptom, r.notes, r.pins)
        for r in engine.load_rules()
    ]
    entries += [Entry(c.id, c.severity, c.title, c.fix, c.references, "check") for c in checks.CHECKS]
    return sorted(entries, key=lambda e: e.id)


def workaround(finding: str, facts: Facts) -> Fix:
    """The workaround of the rule a finding is of, as a fix for these facts (empty: none, or not a rule's)."""
    from envaudit.rules import engine

    rule = next((r for r in engine.load_rules() if r.id == finding), None)
    return rule.around(facts) if rule is not None else Fix()
