"""An evaluation of facts (`rules.evaluate`): the findings, and which finding names which.

A cause names what its fault makes fail too: what it declares (its `explains`: registry.Registry.declared) and what
the messages the facts show add. jax's own exception names its cause, a stronger link than any guess; so does a
library's import error, unless a rule declares itself that import's cause (then that rule is the cause of the
message's rule too: one root cause); and a library whose import raised in another library's code, which failed too,
is that one's consequence. The messages are read once, where the findings are made (`messages.scan`), so the judge
(judge/causes.py) links a report's findings, and quotes what its consequences raised, by asking the evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from envaudit.model.facts import Facts
from envaudit.model.report import Finding, Subject
from envaudit.rules import calls, checks, imports
from envaudit.rules.explains import Names
from envaudit.rules.messages import Scan
from envaudit.rules.registry import registry

JAX_BROKEN = checks.JAX_BROKEN.id  # the finding that jax cannot be imported or used
STATUS_KINDS = ("error", "crash", "timeout")  # probe statuses that are a finding of their own (Subject.problem)


@dataclass(frozen=True)
class Evaluation:
    """What `rules.evaluate` returns: the facts' findings, what each cause names on them, and what jax said."""

    facts: Facts
    findings: tuple[Finding, ...]  # worst first (stable within a severity)
    explains: Mapping[str, tuple[Names, ...]]  # each cause's id -> what it names: declared, and what messages add
    jax_line: str = ""  # the line of jax's exception a signature matched ("": none)

    def naming(self, findings: Sequence[Finding]) -> dict[str, tuple[str, ...]]:
        """Which finding names which, among these (the evaluation's, with what the probes found): each finding's id
        -> the ids of the others that name it, in their order."""
        named: dict[str, tuple[str, ...]] = {}
        for found in findings:
            subject = _subject(found, self.facts)
            named[found.id] = tuple(
                other.id
                for other in findings
                if other.id != found.id and any(_names(e, found, subject) for e in self.explains.get(other.id, ()))
            )
        return named

    def said(self, found: Finding) -> str:
        """The message the facts hold of a finding's error, as it was printed: for jax-broken in a live audit or the
        hook, the line of jax's exception that names its cause (else the exception); for a library's import or
        smoke call, what it raised; "" for another finding."""
        if found.subject == Subject("check", JAX_BROKEN):
            if self.facts.origin not in ("live", "hook"):
                return ""
            return self.jax_line or str(self.facts.jax.get("message") or "")
        if found.subject.kind == "check" and found.subject.name == calls.CHECK:
            return calls.error_of(self.facts, found.subject.problem)
        if found.subject.kind == "check" and found.subject.problem:
            return imports.error_of(self.facts, found.subject.problem)
        return ""


def explained(facts: Facts, scanned: Scan) -> dict[str, tuple[Names, ...]]:
    """What each cause names on these facts: what it declares, and what the messages (`scanned`) add."""
    declared = dict(registry().declared)
    for named in {m.owner for m in scanned.jax if m.signature.fires}:  # jax's own message names its cause
        declared[named] = (*declared.get(named, ()), Names(subject="jax", kind="*"))
    for distribution, owners in scanned.by_import().items():  # so does a library's import error,
        failed = imports.finding_id(distribution)  # unless a rule declares itself that import's cause: then that
        known = [  # rule is the cause of the message's rule too (one root cause)
            rule
            for rule, entries in declared.items()
            if rule not in owners and any(_names_import(e, distribution, failed) for e in entries)
        ]
        for named in owners:
            for rule in known:
                declared[rule] = (*declared.get(rule, ()), Names(finding=named))
            if not known:
                declared[named] = (*declared.get(named, ()), Names(subject=f"@{distribution}", kind="error"))
    for distribution, raiser in imports.blamed(facts).items():  # it raised in another library's code, which fails
        blamed = imports.finding_id(raiser)
        declared[blamed] = (*declared.get(blamed, ()), Names(finding=imports.finding_id(distribution)))
    return declared


def _subject(finding: Finding, facts: Facts) -> tuple[str, str] | None:
    """The (subject, kind) that a "subject:kind" entry names, for a finding that stands for a problem rather than a
    condition: a probe that errored, crashed or timed out, and jax-broken, whose kind is how the jax child ended."""
    if finding.subject.kind == "probe" and finding.subject.problem in STATUS_KINDS:
        return finding.subject.name, finding.subject.problem
    if finding.subject == Subject("check", JAX_BROKEN):
        return "jax", str(facts.jax.get("status", ""))
    return None


def _names_import(entry: Names, distribution: str, finding_id: str) -> bool:
    """Whether a declared entry names the import failure of a distribution (by it, its id, or its check's)."""
    return entry.names_failure_of(distribution) or entry.names_finding(finding_id) or entry.names_finding(imports.CHECK)


def _names(entry: Names, finding: Finding, subject: tuple[str, str] | None) -> bool:
    about = finding.subject.problem if finding.subject.kind == "check" else ""  # a check's finding of one thing
    if entry.finding:  # its id, or its check's (which names the finding of every thing it is about)
        return entry.names_finding(finding.id) or (bool(about) and entry.names_finding(finding.subject.name))
    if about and entry.names_failure_of(about, calls.KIND if finding.subject.name == calls.CHECK else "error"):
        return True
    return subject is not None and entry.names_problem(*subject)
