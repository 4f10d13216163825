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
A finding present in the report is one whose condition held, so naming is enough: no cause is guessed. What names
what, the messages' links included, is the rules' evaluation's to say (rules/evaluation.py: the messages are read
there, once); this module links, folds and quotes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from envaudit.files import probefiles
from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.report import SEVERITIES, Clause, Finding, ProbeResult, Severity
from envaudit.rules import evaluation
from envaudit.rules.evaluation import Evaluation
from envaudit.rules.registry import registry

STATUS_KINDS = evaluation.STATUS_KINDS  # probe statuses that are a finding of their own (Subject.problem)


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


def explains_jax(cause: str) -> bool:
    """Whether a rule or check declares itself a cause of jax's failure (`jax:*`, or jax-broken): fixing it may fix
    what the audit measured of jax."""
    return cause in registry().of_jax


SEEN_CHARS = 300  # of an error's last line, quoted in its root's detail


def seen(found: Finding, evaluated: Evaluation, results: Sequence[ProbeResult]) -> str:
    """What this audit saw of a consequence, as it was printed: the exception jax's child (the line a signature
    matched, `Evaluation.said`), a library's import or call or a probe ended with (its last line, as Python prints
    it last), "" for a consequence that is no error seen here."""
    if found.subject.kind == "probe" and found.subject.problem in STATUS_KINDS:
        message = next((r.message for r in results if r.run.label == found.subject.label), "")
    else:
        message = evaluated.said(found)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1][:SEEN_CHARS] if lines else ""


def link(findings: Sequence[Finding], evaluated: Evaluation, results: Sequence[ProbeResult] = ()) -> list[Finding]:
    """The findings (the evaluation's, with what the probes found) with `caused_by` set to their root cause; roots
    first (worst first), each followed by its consequences. A finding's first cause is the worst finding that names
    it (ties: report order; `Evaluation.naming`). A root's detail quotes what the audit saw of its consequences
    (`results`: the probes' own messages), which is what the user saw: a rule's symptom is one release's words."""
    naming = evaluated.naming(findings)
    cause: dict[str, str] = {}
    for found in findings:
        cause_id = next((other for other in naming[found.id] if _root(other, cause) != found.id), None)
        if cause_id is not None:
            cause[found.id] = cause_id
    roots = {f.id: _root(f.id, cause) for f in findings}
    worst: dict[str, Severity] = {}
    for found in findings:
        root = roots[found.id]
        worst[root] = min(worst.get(root, found.severity), found.severity, key=SEVERITIES.index)
    # a root of a moment (`transient`: a busy machine, a chip another process holds) keeps its own severity and
    # caps its consequences' at it: what the moment made fail says nothing of the environment ("busy, not broken")
    capped = {f.id: f.severity for f in findings if roots[f.id] == f.id and f.id in registry().transient}
    worst.update(capped)
    linked: list[Finding] = []
    folded: set[str] = set()  # roots whose consequences are placed (a check fires once per GPU, under one id)
    for top in sorted((f for f in findings if roots[f.id] == f.id), key=lambda f: SEVERITIES.index(worst[f.id])):
        if top.id in folded:
            linked.append(replace(top, severity=worst[top.id], caused_by=""))
            continue
        folded.add(top.id)
        consequences = [f for f in findings if f.id != top.id and roots[f.id] == top.id]
        quoted = list(dict.fromkeys(filter(None, (seen(f, evaluated, results) for f in consequences))))
        said = (Clause("seen", tuple(quoted[:2])),) if quoted else ()
        # a root that says what to do in words but has no command of its own (jax's API gone, read from the message
        # the import raised) takes the one its consequence offers (that library's next release, jax held): the
        # library the traceback names is the one to move, and a plan's build proves it or refuses it
        remedy = top.remedy or next((f.remedy for f in consequences if f.remedy and f.subject.kind == "check"), Fix())
        linked.append(replace(top, severity=worst[top.id], caused_by="", remedy=remedy).said(*said))
        # its own fix would act on a symptom: the root's fixes it (every format says so where it shows the consequence)
        linked += [
            replace(f, caused_by=top.id, remedy=Fix(), severity=_capped(f.severity, _cap(f, capped.get(top.id))))
            for f in consequences
        ]
    return linked


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
