"""The knowledge base: data rules (`data/*.toml`) and code checks, evaluated as one pure function of facts.

A new rule is one TOML file in `data/`; a new code check is its function and its `Check` declared beside it, and
one line in `registry.CHECKS`. The package imports its evaluators where they are called, so that a module that
needs only the accessors or the node counters (a plan's parser, the Prometheus format) does not load the whole
knowledge base before an audit has started its jax child.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from envaudit.model.facts import Facts
from envaudit.model.report import SEVERITIES

if TYPE_CHECKING:
    from envaudit.rules.evaluation import Evaluation


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


def evaluate(facts: Facts) -> Evaluation:
    """All findings for a snapshot, worst first (stable within a severity), and which finding names which: the
    facts' messages read once, for the findings they add or quote and the causes they name (rules/evaluation.py).
    The judge asks a finding's cause the rest (`registry().cause(id)`: `registry.Cause`'s queries)."""
    from envaudit.rules import evaluation, messages
    from envaudit.rules.registry import registry

    scanned = messages.scan(facts)
    found = messages.apply(registry().evaluate(facts), scanned, facts)
    return evaluation.Evaluation(
        facts,
        tuple(sorted(found, key=lambda f: SEVERITIES.index(f.severity))),
        evaluation.explained(facts, scanned),
        scanned.jax[0].text if scanned.jax else "",
    )


def catalogue() -> list[Entry]:
    """Every id the registry knows, retired ones included (`envaudit rules` shows them as such)."""
    from envaudit.rules.registry import registry

    entries = [
        Entry(c.id, c.severity, c.title, c.fix, c.references, c.kind, c.symptom, c.notes, c.pins, c.lifecycle)
        for c in registry().causes
    ]
    return sorted(entries, key=lambda e: e.id)
