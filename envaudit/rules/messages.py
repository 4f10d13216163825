"""The messages the facts show, read with the registry's signatures (rules/signatures.py): jax's own exception,
what the libraries' imports raised, and what a bug report quotes; read once an evaluation (`scan`), for the findings
they add or quote (`apply`) and for the causes they name (rules/evaluation.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from envaudit.model.facts import Facts, ImportOutcome, Message
from envaudit.model.fixes import named
from envaudit.model.report import Clause, Finding
from envaudit.rules import imports
from envaudit.rules.registry import registry
from envaudit.rules.signatures import QUOTED, Match

JAX_FAILED = ("import_error", "crash", "timeout", "error")  # how a jax child ends with a message worth reading
MAX_WORDS = 20  # lines of a dead import's stderr read (child/runner.WORDS keeps as many)
MAX_MESSAGES = 50  # messages of a report read: each evaluation reads them again (a plan evaluates many times)


@functools.lru_cache(maxsize=256)
def in_text(text: str, first: int = 1) -> tuple[Match, ...]:
    """The matches in one message (`first`: the number of its first line). Cached: every evaluation of a plan, each
    link of its causes and each quote reads the same few messages again."""
    return tuple(registry().signatures.scan(text.splitlines(), first))


def from_jax(facts: Facts) -> list[Match]:
    """The signatures in the exception jax's child or the hook saw (its last lines; a match's line is 0: it is no
    bug report's line)."""
    if facts.jax.get("status") not in JAX_FAILED or not (said := facts.jax.get("message")):
        return []
    return [replace(m, line=0) for m in in_text("\n".join(str(said).splitlines()[-200:]))]


@dataclass(frozen=True)
class Scan:
    """The signatures the facts' messages show, by where each message was seen."""

    jax: tuple[Match, ...] = ()  # in the exception jax's child or the hook saw (`from_jax`)
    # each import that raised, in the facts' order: its distribution and the matches in what it raised (line 0)
    imports: tuple[tuple[str, tuple[Match, ...]], ...] = ()
    reported: tuple[Match, ...] = ()  # in the messages a bug report quotes (`Facts.messages`, each at its line)

    @property
    def matches(self) -> list[Match]:
        """Every match: jax's, then the imports', then the bug report's."""
        return [*self.jax, *(m for _, found in self.imports for m in found), *self.reported]

    def deferred(self, facts: Facts | None = None) -> Scan:
        """The same, each message's matches `deferred` apart (jax's exception, each import's, the report's)."""
        return Scan(
            deferred(self.jax, facts),
            tuple((d, deferred(found, facts)) for d, found in self.imports),
            deferred(self.reported, facts),
        )

    def by_import(self) -> dict[str, set[str]]:
        """Each distribution whose import raised -> the rules and checks its exception names as the cause."""
        found: dict[str, set[str]] = {}
        for distribution, matches in self.imports:
            found.setdefault(distribution, set()).update(m.owner for m in matches if m.signature.fires)
        return found


def scan(facts: Facts) -> Scan:
    """The facts' messages read once: jax's exception, each exception the libraries' imports raised
    (facts.jax.imports; line 0, as jax's), and the messages a bug report quotes. A module imported because its
    code was read to use a name jax lacks (`read`) is no user's import: what it raised is its library's warning,
    and makes no rule a finding at the rule's severity."""
    raised = tuple(
        (str(o.get("distribution")), tuple(replace(m, line=0) for m in in_text(said)))
        for o in imports.outcomes(facts)
        if o.get("status") == "error" and not o.get("read") and (said := _said(o))
    )
    deferring = registry().deferring
    reported = tuple(
        m
        for message in facts.messages[:MAX_MESSAGES]
        for m in in_text(message["text"], message["line"])
        # a line a log marks as information is no failure of jax's: its general words say nothing there (jax logs
        # at INFO each backend it tried and did not need)
        if not (message.get("informational") and m.owner in deferring)
    )
    return Scan(tuple(from_jax(facts)), raised, reported).deferred(facts)


def deferred(matches: Sequence[Match], facts: Facts | None = None) -> tuple[Match, ...]:
    """The matches, less those of a deferring cause (registry.deferring: a source's general words) on a line where
    another cause's signature matched: the cause that knows the message has the word on it. With the facts, a line
    where the others' signatures only state facts (they do not fire) and none of their causes is a finding here
    keeps the deferring cause's match: nobody else speaks for the message (a CUDA backend that failed to start where
    jax's own rule for it cannot decide)."""
    deferring = registry().deferring
    others: dict[int, list[Match]] = {}
    for m in matches:
        if m.owner not in deferring:
            others.setdefault(m.line, []).append(m)
    if facts is not None:
        speaking = {line for line, found in others.items() if _spoken_for(found, facts)}
    else:
        speaking = set(others)
    return tuple(m for m in matches if m.owner not in deferring or m.line not in speaking)


def _spoken_for(found: Sequence[Match], facts: Facts) -> bool:
    """Whether another cause speaks for the line: one of its signatures fires, or its cause is a finding here."""
    return any(m.signature.fires for m in found) or bool(explaining(facts, found))


def explaining(facts: Facts, matches: Sequence[Match]) -> frozenset[str]:
    """The causes whose signature matched without firing (its words alone are no finding) that are findings on
    these facts: their message is then explained (a triage's error line no cause explains is `unexplained-error`)."""
    quiet = {m.owner for m in matches if not m.signature.fires}
    return frozenset(o for o in quiet if (c := registry().get(o)) is not None and c.findings(facts))


def _said(outcome: ImportOutcome) -> str:
    """What a failed import showed: its exception, after the last lines it wrote on stderr where it killed the
    process (a module built for NumPy 1 prints NumPy's message, then the interpreter dies)."""
    lines = [*(str(line) for line in (outcome.get("stderr") or [])[-MAX_WORDS:]), str(outcome.get("error") or "")]
    return "\n".join(line for line in lines if line)


def messages(facts: Facts) -> list[Match]:
    """The signatures the facts' messages show (`scan`), in one list."""
    return scan(facts).matches


# what a fix may move that a message is about, beside the packages it names and its rule pins: jax's own packages
# and the CUDA wheels (a CUDA library's message is about the stack jax loads)
STACK = re.compile(r"^(jax|jaxlib|jax-(cuda|rocm)\d+-(plugin|pjrt)|nvidia-.+|libtpu.*)$")


def holds_after(message: Message, moved: set[str]) -> bool:
    """Whether a message a report quotes still holds once these packages moved: unless one of them is what it is
    about (a package it names, its rule's pins, jax's stack), the environment would print it again."""
    jax_moved = any(STACK.match(name) for name in moved)
    for match in in_text(message["text"]):
        cause = registry().by_id[match.owner]
        about = {f.removeprefix("package ") for f, _ in match.facts if f.startswith("package ")}
        concerned = about | {named(p) for p in cause.pins}
        if moved & concerned:
            return False
        # jax's stack moved: gone where the message is about that stack (its rule pins or names a part of it, or
        # names no package at all: jax's own words); a NumPy 1 module's message names NumPy, which a jax move
        # leaves as it was
        if jax_moved and (not concerned or any(STACK.match(name) for name in concerned)):
            return False
    return True


def apply(found: list[Finding], scanned: Scan, facts: Facts) -> list[Finding]:
    """The findings with what the messages show (`scanned`, of these facts): a finding whose message is seen quotes
    it; a rule or check whose firing message is seen and that did not fire on the facts is a finding, at its
    severity."""
    fired = {f.id for f in found}
    seen: dict[str, list[Match]] = {}
    for match in scanned.matches:
        seen.setdefault(match.owner, []).append(match)
    if not seen:
        return found
    quoted = {owner: [m for m in matches if m.line] for owner, matches in seen.items()}  # jax's: Evaluation.said
    made = [
        registry().seen(owner, facts, [m for m in matches if m.signature.fires])
        for owner, matches in seen.items()
        if owner not in fired and any(m.signature.fires for m in matches)
    ]
    found = found + [f for f in made if f is not None]
    return [f.said(_quote(quoted[f.id])) if quoted.get(f.id) else f for f in found]


def _quote(matches: list[Match]) -> Clause:
    return Clause("message", tuple(dict.fromkeys(f"line {m.line}: '{m.text[:QUOTED]}'" for m in matches[:2])))
