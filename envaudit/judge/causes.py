"""One root cause, one failure: which findings are consequences of another, so a user reads the cause first.

When `import jax` fails, every probe fails the same way, and the reason jax fails (a jaxlib that does not match,
NumPy 2 under an old jaxlib, a stale jax earlier on PYTHONPATH) is a finding of its own: nine failures with one
cause among them is a puzzle, one failure with eight consequences is an answer. A finding that another explains
gets that finding's id in `caused_by` (the root's, through any chain); the formats show the roots and fold the
consequences under them. The verdict keeps its meaning: a root takes the worst severity of what it causes (as
merged probe evidence does, `judge.merge`), so the worst severity in the report is the same with or without links.

What explains what is declared where the cause is defined, in its `explains` (a data rule's TOML, a check's entry):
- "subject:kind": a probe's problem (`probe:crash`; `*` for any), where the subject `jax` is the finding that jax
  cannot be imported or used (`jax-broken`) and its kind is how the jax child ended (`import_error`, `crash`...);
- a finding id without a colon: a check that another check's fault makes fire (a stale jax on PYTHONPATH makes
  jax and jaxlib disagree).
A finding present in the report is one whose condition held, so naming is enough: no cause is guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from envaudit.files import probefiles
from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.report import SEVERITIES, Clause, Finding, ProbeResult, Severity, Subject
from envaudit.rules import calls, imports, messages
from envaudit.rules.explains import Names
from envaudit.rules.registry import registry

JAX_BROKEN = "jax-broken"
STATUS_KINDS = ("error", "crash", "timeout")  # probe statuses that are a finding of their own (Subject.problem)


def not_applicable(results: Sequence[ProbeResult], facts: Facts) -> list[ProbeResult]:
    """A probe that could not run because a distribution it needs is not installed (jax, or its `REQUIRES`) is
    skipped, not broken: a machine without flax has no flax problem, even when jax fails too. Nor is one that
    health's bound left out a warning then: it would not have run with any bound (measured: every default `health`
    of a node without neural-tangents warned that ntk_nt did not fit)."""
    known = probefiles.available()
    found = []
    for result in results:
        path = known.get(result.probe)
        missing = [d for d in probefiles.requires(path) if d not in facts.packages] if path else []
        # jax imported from a checkout has no metadata: its own word that it works outranks the missing metadata
        jax_ran = facts.jax.get("status") == "ok" and result.metrics.get("error_kind") != "import"
        unrun = result.status in STATUS_KINDS or result.left_out == "budget"
        if unrun and missing and not (missing == ["jax"] and jax_ran):
            result = replace(result, status="skip", message=f"{missing[0]} is not installed", left_out=None)
        found.append(result)
    return found


def _subject(finding: Finding, facts: Facts) -> tuple[str, str] | None:
    """The (subject, kind) that a "subject:kind" entry names, for a finding that stands for a problem rather than a
    condition: a probe that errored, crashed or timed out, and jax-broken, whose kind is how the jax child ended."""
    if finding.subject.kind == "probe" and finding.subject.problem in STATUS_KINDS:
        return finding.subject.name, finding.subject.problem
    if finding.subject == Subject("check", JAX_BROKEN):
        return "jax", str(facts.jax.get("status", ""))
    return None


def explains_jax(cause: str) -> bool:
    """Whether a rule or check declares itself a cause of jax's failure (`jax:*`, or jax-broken): fixing it may fix
    what the audit measured of jax."""
    return any(e.names_finding(JAX_BROKEN) or e.subject == "jax" for e in registry().declared.get(cause, ()))


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


SEEN_CHARS = 300  # of an error's last line, quoted in its root's detail


def seen(found: Finding, facts: Facts, results: Sequence[ProbeResult]) -> str:
    """What this audit saw of a consequence, as it was printed: the exception jax's child or a probe ended with (the
    line a signature matched, else its last line, as Python prints it last), "" for a consequence that is no error
    seen here."""
    message = ""
    if found.subject == Subject("check", JAX_BROKEN) and facts.origin in ("live", "hook"):
        if named := messages.from_jax(facts):  # the line that names the cause, rather than the last
            return named[0].text[:SEEN_CHARS]
        message = str(facts.jax.get("message") or "")
    elif found.subject.kind == "probe" and found.subject.problem in STATUS_KINDS:
        message = next((r.message for r in results if r.run.label == found.subject.label), "")
    elif found.subject.kind == "check" and found.subject.name == calls.CHECK:  # a distribution's call: what it raised
        message = calls.error_of(facts, found.subject.problem)
    elif found.subject.kind == "check" and found.subject.problem:  # a distribution's import: what it raised
        message = imports.error_of(facts, found.subject.problem)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1][:SEEN_CHARS] if lines else ""


def link(findings: Sequence[Finding], facts: Facts, results: Sequence[ProbeResult] = ()) -> list[Finding]:
    """The findings with `caused_by` set to their root cause; roots first (worst first), each followed by its
    consequences. A finding's first cause is the worst finding that names it (ties: report order). A root's detail
    quotes what the audit saw of its consequences (`results`: the probes' own messages), which is what the user saw:
    a rule's symptom is one release's words."""
    declared = dict(registry().declared)
    for named in messages.named_by_jax(facts):  # jax's own message names its cause: a stronger link than any guess
        declared[named] = (*declared.get(named, ()), Names(subject="jax", kind="*"))
    for distribution, owners in messages.named_by_imports(facts).items():  # so does a library's import error,
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
    cause: dict[str, str] = {}
    for found in findings:
        subject = _subject(found, facts)
        for other in findings:
            explains = declared.get(other.id, ())
            if (
                other.id != found.id
                and _root(other.id, cause) != found.id
                and any(_names(e, found, subject) for e in explains)
            ):
                cause[found.id] = other.id
                break
    roots = {f.id: _root(f.id, cause) for f in findings}
    worst: dict[str, Severity] = {}
    for found in findings:
        root = roots[found.id]
        worst[root] = min(worst.get(root, found.severity), found.severity, key=SEVERITIES.index)
    # a root of a moment (`transient`: a busy machine, a chip another process holds) keeps its own severity and
    # caps its consequences' at it: what the moment made fail says nothing of the environment ("busy, not broken")
    capped = {f.id: f.severity for f in findings if roots[f.id] == f.id and _transient(f.id)}
    worst.update(capped)
    linked: list[Finding] = []
    folded: set[str] = set()  # roots whose consequences are placed (a check fires once per GPU, under one id)
    for top in sorted((f for f in findings if roots[f.id] == f.id), key=lambda f: SEVERITIES.index(worst[f.id])):
        if top.id in folded:
            linked.append(replace(top, severity=worst[top.id], caused_by=""))
            continue
        folded.add(top.id)
        consequences = [f for f in findings if f.id != top.id and roots[f.id] == top.id]
        quoted = list(dict.fromkeys(filter(None, (seen(f, facts, results) for f in consequences))))
        said = (Clause("seen", tuple(quoted[:2])),) if quoted else ()
        linked.append(replace(top, severity=worst[top.id], caused_by="").said(*said))
        # its own fix would act on a symptom: the root's fixes it (every format says so where it shows the consequence)
        linked += [
            replace(f, caused_by=top.id, remedy=Fix(), severity=_capped(f.severity, _cap(f, capped.get(top.id))))
            for f in consequences
        ]
    return linked


def _transient(finding_id: str) -> bool:
    cause = registry().by_id.get(finding_id)
    return cause is not None and cause.transient


def _cap(finding: Finding, cap: Severity | None) -> Severity | None:
    """The cap, but for a probe that ran apart from the moment (OFF_DEVICE: the imports probe's own child, on the
    CPU): what failed there failed whatever another process held or however slow jax's start was."""
    if cap is None or finding.subject.kind != "probe":
        return cap
    path = probefiles.available().get(finding.subject.name)
    return None if path is not None and probefiles.off_device(path) else cap


def _capped(severity: Severity, cap: Severity | None) -> Severity:
    return severity if cap is None else max(severity, cap, key=SEVERITIES.index)


def _root(start: str, cause: dict[str, str]) -> str:
    """Follow causes to the finding nothing explains (`link` adds no link that would close a cycle)."""
    while start in cause:
        start = cause[start]
    return start
