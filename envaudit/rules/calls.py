"""What each imported library's smoke call showed (`facts.jax.calls`, from the imports probe), judged.

A library can import and still fail on its main path: diffrax 0.5.0's `diffeqsolve` raises with jax 0.10
(`jax.core.get_aval` is gone), jaxopt 0.8.3's `OptaxSolver.run` calls `jax.tree_map`, which jax 0.6.0 removed. The
probe makes the call the library's README shows (probes/calls/<distribution>.py); each distribution whose call
raised is one occurrence about it (`call-fails-<distribution>`), with the call, the exception and the library's line
that raised. A rule that explains it names it with "@<distribution>:call" (a derived removed-API use) and folds it
under itself (envaudit/judge/causes.py). A library whose import failed is reported once, as the import. A call that
worked is evidence too: it clears the API-removal table's claim that the main path fails (`called`).
"""

from __future__ import annotations

from envaudit.model.facts import CallOutcome, Facts
from envaudit.model.report import Subject
from envaudit.rules import imports
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import JEP_9419

CHECK = "call-fails"  # the check's id (CALL_FAILS below)
KIND = "call"  # what "@<distribution>:call" names: that distribution's smoke call raising


def outcomes(facts: Facts) -> list[CallOutcome]:
    calls = facts.jax.get("calls")
    return list(calls) if isinstance(calls, list) else []


def called(facts: Facts, distribution: str) -> bool:
    """Whether this audit made the distribution's smoke call and it worked."""
    return any(o.get("distribution") == distribution and o.get("status") == "ok" for o in outcomes(facts))


def failures(facts: Facts) -> list[Occurrence]:
    """One occurrence per distribution whose smoke call raised, but one whose import raised (said once, there)."""
    broken = {str(o.get("distribution")) for o in imports.outcomes(facts) if o.get("status") == "error"}
    found = []
    for outcome in outcomes(facts):
        name = str(outcome.get("distribution"))
        if outcome.get("status") != "error" or name in broken:
            continue
        jax = imports.jax_of(facts)
        at = f" (at {outcome['where']})" if outcome.get("where") else ""
        said = f"`{outcome.get('call')}` raises {outcome.get('error')}{at}"
        advice = imports.ADVICE.format(name=name, jax=jax)
        detail = f"{name} {outcome.get('version', '')} with jax {jax}: {said}; {advice}"
        found.append(Occurrence(detail, about=name))
    return found


def error_of(facts: Facts, distribution: str) -> str:
    """What a distribution's smoke call raised here, or ""."""
    mine = (o for o in outcomes(facts) if o.get("distribution") == distribution and o.get("status") == "error")
    return str(next((o.get("error") for o in mine), "") or "")


def finding_id(distribution: str) -> str:
    """The id of a distribution's call failure."""
    return Subject("check", CHECK, distribution).id


CALL_FAILS = Check(
    id=CHECK,
    severity="fail",
    title="an installed library that depends on jax imports, and its main call (the one its README shows) raises",
    fix="the release of it, or of jax, that the detail names",
    references=("https://github.com/jax-ml/jax/blob/main/CHANGELOG.md", JEP_9419),
    run=failures,
)
