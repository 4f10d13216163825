"""What each imported library's smoke call showed (`facts.jax.calls`, from the imports probe), judged.

A library can import and still fail on its main path: diffrax 0.5.0's `diffeqsolve` raises with jax 0.10
(`jax.core.get_aval` is gone), jaxopt 0.8.3's `OptaxSolver.run` calls `jax.tree_map`, which jax 0.6.0 removed. The
probe makes the call the library's README shows (probes/calls/<distribution>.py, or the README's quickstart block
the derivation kept, probes/calls/_readme.json, whose failure the probe reports only where the library's code raised
it); each distribution whose call raised is one occurrence about it (`call-fails-<distribution>`), with the call,
the exception and the library's line that raised. A rule that explains it names it with "@<distribution>:call" (a
derived removed-API use) and folds it under itself (envaudit/judge/causes.py). A library whose import failed is
reported once, as the import. A call that worked is evidence too: it clears the API-removal table's claim that the
main path fails (`called`).
"""

from __future__ import annotations

from envaudit.model.facts import CallOutcome, Facts
from envaudit.model.fixes import Fix
from envaudit.model.report import Severity, Subject
from envaudit.model.scope import canonicalize_name
from envaudit.model.versions import version_or_none
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
    """One occurrence per distribution whose smoke call raised, but one whose import raised (said once, there). A
    library a plan does not name, that the installer brought in for another, is not the user's program: its call
    that needs a module nothing installed (orbax-export without TensorFlow) was not run, and its failure otherwise
    is said, as information that names who pulls it in: the user's program does not make that call."""
    broken = {str(o.get("distribution")) for o in imports.outcomes(facts) if o.get("status") == "error"}
    found = []
    for outcome in outcomes(facts):
        name = str(outcome.get("distribution"))
        if outcome.get("status") != "error" or name in broken:
            continue
        chain = imports.transitive(facts, name, live=True)
        missing = imports.MISSING.match(str(outcome.get("error") or ""))
        if chain and missing and canonicalize_name(missing[1]) not in facts.packages:
            continue  # an optional dependency of a library the user did not ask for: the call was not run
        jax = imports.jax_of(facts)
        detail = f"{name} {outcome.get('version', '')}{imports.pulled(chain)} with jax {jax}: {said(outcome)}; "
        detail += imports.ADVICE.format(name=name, jax=jax)
        fix = Fix() if chain else _newer(facts, outcome)
        # a call read, not made, is a path of the library that breaks, not one the user is known to take
        found.append(Occurrence(detail, fix, about=name, severity="info" if chain else read(outcome)))
    return found


def read(outcome: CallOutcome) -> Severity | None:
    """The severity of a call read, not made (a warning), or None for a call made (the check's)."""
    return "warn" if outcome.get("read") else None


def said(outcome: CallOutcome) -> str:
    """A failed call as a finding says it: made and raised, or read (its code uses a name the jax lacks)."""
    at = f" (at {outcome['where']})" if outcome.get("where") else ""
    if name := outcome.get("read"):
        return (
            f"`{outcome.get('call')}` uses `{name}`{at}, and that raises {outcome.get('error')} here (read, not called)"
        )
    return f"`{outcome.get('call')}` raises {outcome.get('error')}{at}"


def _newer(facts: Facts, outcome: CallOutcome) -> Fix:
    """What to try for a call that raised: a newer release of the library whose code raised it (diffrax's implicit
    solve raising in lineax 0.0.8's LU, which lineax 0.1.0 fixed for jax 0.8.2), else of the called library, with
    jax held where it is; a proposal the plan's twin then proves or refuses, as for any fix."""
    name = imports.owner_of(facts, str(outcome.get("where") or "")) or str(outcome.get("distribution"))
    version = facts.packages.get(name) or imports.version_of(facts, name)
    if not version or version_or_none(version) is None:
        return Fix()
    return imports.newer(facts, name, version)


def unreturned(facts: Facts) -> list[Occurrence]:
    """One occurrence per distribution whose smoke call was made and did not return within its share of the
    imports probe's bound (blocked, spinning or printing without end): no pass, and no failure either (a slow machine
    or a first compile look the same from here), but the library is named and the user told to try the call."""
    found = []
    for outcome in outcomes(facts):
        if outcome.get("status") != "timeout":
            continue
        name = str(outcome.get("distribution"))
        pulled = imports.pulled(imports.transitive(facts, name, live=True))
        said = f"`{outcome.get('call')}` did not return: {outcome.get('error', '')}"
        found.append(Occurrence(f"{name} {outcome.get('version', '')}{pulled}: {said}", about=name))
    return found


def error_of(facts: Facts, distribution: str) -> str:
    """What a distribution's smoke call raised here, or ""."""
    mine = (o for o in outcomes(facts) if o.get("distribution") == distribution and o.get("status") == "error")
    return str(next((o.get("error") for o in mine), "") or "")


def finding_id(distribution: str) -> str:
    """The id of a distribution's call failure."""
    return Subject("check", CHECK, distribution).id


CALL_HANGS = Check(
    id="call-does-not-return",
    severity="warn",
    title="an installed library's main call (the one its README shows) did not return within the probe's bound",
    fix="run that call alone with a debugger or py-spy dump to see where it waits; rerun the audit with more time"
    " (--timeout) to tell a slow call from one that never returns",
    references=("https://docs.python.org/3/library/faulthandler.html",),
    run=unreturned,
)

CALL_FAILS = Check(
    id=CHECK,
    severity="fail",
    title="an installed library that depends on jax imports, and its main call (the one its README shows) raises",
    fix="the release of it, or of jax, that the detail names",
    references=("https://github.com/jax-ml/jax/blob/main/CHANGELOG.md", JEP_9419),
    run=failures,
)
