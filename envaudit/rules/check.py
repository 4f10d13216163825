"""A code check: what data cannot say (version couplings, what `pip check` would say, how the jax child ended, a
GPU's counters), declared beside the function that finds it, with the same metadata as a data rule.

A check's function returns each occurrence of its problem, carrying its own words and its own fix: the fix is
computed from the same values it found, where it found them, so nothing downstream reads a sentence back to recover
a package name or a version. The registry (`rules/registry.py`) lists every check, one line each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.report import Advice, Finding, Severity, Subject
from envaudit.model.scope import canonicalize_name
from envaudit.rules.signatures import Match, Signature

# active: evaluated; retired: an id no longer found, kept so that a saved report, an --ignore or a [tool.envaudit]
# that names it still reads (rules/registry.py lists the retired ids with what replaced them)
Lifecycle = Literal["active", "retired"]


@dataclass(frozen=True)
class Occurrence:
    detail: str  # what was found, for people
    fix: Fix = field(default_factory=Fix)  # what fixes this occurrence here; empty where no command can (the check's
    # own words then say what to do, in the detail)
    severity: Severity | None = None  # where this occurrence is less (or more) than the check's own: its severity
    about: str = ""  # what this occurrence is about where a check has one finding for each (a distribution): its
    # finding is then `<check>-<about>`, which a cause names by "@<about>:error"
    todo: str = ""  # what to do here, where it says more than the check's `fix` (the interpreter to name)


class Defaults:
    """What a cause answers the judge where it has nothing to say: the defaults of `Cause`'s queries (registry.py),
    for a code check and a retired id. A data rule answers each from its file (engine.Rule)."""

    @property
    def wrong_numbers(self) -> bool:
        """Whether its fault is wrong numbers that the known_regressions probe measures: a data rule's."""
        return False

    def workaround(self, facts: Facts) -> Fix:
        """Variables that avoid it where no release can, as a fix for these facts: a data rule's."""
        return Fix()

    def other_way(self, facts: Facts) -> Fix:
        """Another way out than its fix, as a fix for these facts: a data rule's."""
        return Fix()

    def off_default(self, facts: Facts) -> str:
        """The backend jax computes on by default here where its fault is in another one: a data rule's."""
        return ""

    def holds_back(self) -> str:
        """The library it holds jax back for, where no release of it works with a newer jax: a data rule's."""
        return ""


@dataclass(frozen=True)
class Check(Defaults):
    id: str
    severity: Severity
    title: str
    fix: str
    references: tuple[str, ...]
    run: Callable[[Facts], list[Occurrence]]  # each occurrence, with its own fix where it has one; empty: passes
    transient: bool = False  # the state of a moment (a GPU's counters, a hung driver), not of the environment
    board: bool = False  # a GPU board's health: `health` judges it, the import hook leaves it alone
    explains: tuple[str, ...] = ()  # what its fault makes fail too (envaudit/judge/causes.py): "probe:kind" or an id
    signatures: tuple[Signature, ...] = ()  # the messages users see when it bites (rules/signatures.py)
    lifecycle: Lifecycle = "active"
    # another way out than its occurrence's fix (the other direction: jax moved where the fix moves the library),
    # for the planner to weigh and a build to try where the fix does not install or run (judge/fixplan.py)
    other: Callable[[Facts], Fix] | None = None
    # what it makes of its messages where they are seen (its signatures' matches, the facts): its occurrence, or
    # None where they say nothing here; without it, a seen message is its finding as it stands (`seen`)
    said: Callable[[Facts, Sequence[Match]], Occurrence | None] | None = None
    # its signatures are general words (a message of a whole source): where another cause's message is seen on the
    # same line, that cause speaks and this one does not (rules/messages.py)
    defers: bool = False

    def other_way(self, facts: Facts) -> Fix:
        return self.other(facts) if self.other is not None else Fix()

    kind: Literal["check"] = "check"
    symptom: str = ""  # a data rule's; a check says what it found in each occurrence
    notes: str = ""
    pins: tuple[str, ...] = ()  # a data rule's; a check's fix is each occurrence's

    def findings(self, facts: Facts) -> list[Finding]:
        """One finding per occurrence: a command, or none (advice is said in the detail, never run)."""
        return [self.finding(occurrence) for occurrence in self.run(facts)]

    def finding(self, occurrence: Occurrence) -> Finding:
        subject = Subject("check", self.id, occurrence.about)
        advice = Advice(occurrence.todo or self.fix, occurrence.fix.install)
        severity = occurrence.severity or self.severity
        about = (canonicalize_name(occurrence.about),) if occurrence.about else ()
        return Finding(
            subject,
            severity,
            self.title,
            occurrence.detail,
            occurrence.fix,
            self.references,
            advice=advice,
            about=about,
        )

    def seen(self, facts: Facts, matches: Sequence[Match] = ()) -> Finding | None:
        """Its finding where its message is seen, whatever the facts say: what `said` makes of the matches, else
        what to do, no command (the facts that would choose one are the message's, not the environment's)."""
        if self.said is not None:
            occurrence = self.said(facts, matches)
            return None if occurrence is None else self.finding(occurrence)
        subject = Subject("check", self.id)
        return Finding(
            subject,
            self.severity,
            self.title,
            "its message is seen",
            references=self.references,
            advice=Advice(self.fix),
        )
