"""What importing the installed libraries showed (`facts.jax.imports`, from the imports probe), judged.

A library that does not import with the installed jax is a failure, whatever its metadata says: `pip check` is
clean beside dm-haiku 0.0.12 and jax 0.10.1, and `import haiku` raises. Each distribution that failed is one
occurrence, about that distribution (its finding is `import-fails-<distribution>`), with the exception as the user
sees it and the library's line that raised it; a rule that explains it (a derived removed-API use, the NumPy ABI)
names it with "@<distribution>:error" and folds it under itself (envaudit/judge/causes.py). A library that imported is
evidence too: it clears a static suspicion that its import breaks (`imported`).

Which release of a library works with which jax is the derived tables' and the rules' to say. Where none says,
and the exception is jax's API gone (a name or module jax no longer has: `API_GONE`), the command offered is a
maintainer's answer: a newer release of the library, jax held where it is (`LIB>VERSION`), a proposal that a plan's
build and `fix`'s twin install and import before it is printed as proven. For a dependency the library imports and
declares nowhere (objax 1.8.0's six) installing it is the fix, and what the import then shows, the next audit's.
Anything else gets no command: the detail says what to do.
"""

from __future__ import annotations

import re

from envaudit.model.facts import Facts, ImportOutcome
from envaudit.model.fixes import Fix, named
from envaudit.model.report import Severity, Subject
from envaudit.model.scope import canonicalize_name
from envaudit.rules import fixing
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import JEP_9419
from envaudit.rules.releases import newer_than

CHECK = "import-fails"  # the check's id (IMPORT_FAILS below)
ADVICE = (
    "upgrade {name} to a release made for jax {jax} (holding jax), or install the jax release it was made for; "
    "if its newest release fails too, report this message upstream"
)

# jax's API gone, as Python and jax's deprecation table say it (rules/data/jax-api-missing.toml's signatures)
API_GONE = re.compile(
    r"was removed in JAX v|module 'jax[.\w]*' has no attribute"
    r"|cannot import name '[\w.]+' from 'jax[.\w]*'|No module named 'jax\.",
    re.IGNORECASE,
)

ADVICE_FORGOT = "install it (what the import then shows is judged by the next audit)"

ADVICE_JAX = (
    "a module of jax fails with a package installed beside it (the one its message names): install the release "
    "of that package this jax was made for, or a jax release made for it"
)


MISSING = re.compile(r"^(?:ModuleNotFoundError|ImportError): No module named '([A-Za-z0-9_]+)")


def transitive(facts: Facts, name: str, *, live: bool = False) -> list[str]:
    """For a plan or a report's stack built here, the named distributions that pull in a library they do not name
    (flax pulls in orbax-checkpoint): [] for one they name. In a live environment [], but with `live` where its
    installer marked what the user asked for by name (pip's and uv's REQUESTED: `Facts.requested`): then the
    installed distributions that require a library nobody asked for (a project's requirements name flax, and flax
    pulls in orbax-checkpoint, whose calls the user's program is not known to make); `asked_for` says which."""
    if facts.origin in ("plan", "triage"):
        if name in facts.packages:
            return []
        return sorted(p for p, reqs in facts.requires.items() if any(named(r) == name for r in reqs)) or [
            "the installer"
        ]
    asked = asked_for(facts)
    if not live or not asked or name in asked or name in ("jax", "jaxlib"):
        return []
    return sorted(p for p, reqs in facts.requires.items() if p != name and any(named(r) == name for r in reqs))


def unasked(facts: Facts) -> set[str]:
    """A live environment's distributions nobody asked for by name (`transitive`: those another pulls in)."""
    return {name for name in facts.packages if transitive(facts, name, live=True)}


def asked_for(facts: Facts) -> frozenset[str]:
    """The distributions the user asked for by name: those their installer marked REQUESTED. uv marks every
    distribution it installs, asked for or pulled in (seen here: fix-pass-7's quadax environment, whose equinox,
    jaxtyping and ml-dtypes came with quadax), so in an environment uv made every library stays the user's: reading
    uv's marks by what requires what made optax, which flax requires, a library nobody asked for, and a user's
    failing `optax.update` information (tests/probes/test_calls.py), a miss traded for fewer false alarms. A library
    a fix brings without naming it is told apart by the twin instead (collect/build.arrived)."""
    return frozenset(facts.requested)


def parts(facts: Facts) -> dict[str, int]:
    """Each imported distribution's JAX part as the imports probe counted it (files naming jax or flax), where it
    has one."""
    return {
        str(o["distribution"]): int(o.get("jax_files") or 0)
        for o in outcomes(facts)
        if o.get("distribution") and int(o.get("jax_files") or 0) > 0
    }


def pulled(chain: list[str]) -> str:
    """Who pulls a library in that the plan does not name (`transitive`), as its finding says it ("" for none)."""
    return f" (not asked for by name: pulled in by {', '.join(chain)})" if chain else ""


def outcomes(facts: Facts) -> list[ImportOutcome]:
    imports = facts.jax.get("imports")
    return list(imports) if isinstance(imports, list) else []


def imported(facts: Facts, distribution: str) -> bool:
    """Whether this audit imported the distribution's modules and every one of them worked."""
    mine = [o for o in outcomes(facts) if o.get("distribution") == distribution]
    return bool(mine) and all(o.get("status") in ("ok", "needs") for o in mine)


def failures(facts: Facts) -> list[Occurrence]:
    """One occurrence per distribution with a module that raised on import: each module's exception, as said."""
    by_distribution: dict[str, list[ImportOutcome]] = {}
    for outcome in outcomes(facts):
        if outcome.get("status") == "error":
            by_distribution.setdefault(str(outcome.get("distribution")), []).append(outcome)
    found = []
    causes = blamed(facts)  # a library that raised in another's code -> that one
    for name, failed in sorted(by_distribution.items()):
        said = "; ".join(_said(o) for o in failed)
        version = failed[0].get("version", "")
        jax = jax_of(facts)
        forgot = sorted({str(o["undeclared"]) for o in failed if o.get("undeclared")})
        # a library the user did not name, pulled in for one they did: what imports it (and fails with it) is
        # theirs, said there; a module it needs that nothing installs is an optional dependency of it
        # ...unless what the user named raised in its code (dynamax importing tensorflow-probability): then theirs
        named_fail = any(other == name and not transitive(facts, mine) for mine, other in causes.items())
        chain = transitive(facts, name) if name != "jax" and not named_fail else []
        by = pulled(chain)
        missing = [m for o in failed if (m := MISSING.match(str(o.get("error") or "")))]
        optional = bool(missing) and all(canonicalize_name(m[1]) not in facts.packages for m in missing)
        if name == "jax":  # one of jax's own modules, against what is installed beside it
            detail = f"jax {version}: {said}; {ADVICE_JAX}"
        elif forgot:  # a dependency it forgot to declare: installing it is the fix, whatever else then shows
            detail = (
                f"{name} {version}{by} imports {', '.join(forgot)} and declares it nowhere: {said}; {ADVICE_FORGOT}"
            )
        else:
            detail = f"{name} {version}{by} with jax {jax}: {said}; {ADVICE.format(name=name, jax=jax)}"
        fix = fixing.install(facts, forgot)
        if not forgot and name != "jax" and version and any(API_GONE.search(str(o.get("error"))) for o in failed):
            fix = newer(facts, name, version)
        severity: Severity | None = ("info" if optional else "warn") if chain else None
        if severity is None and all(o.get("read") for o in failed):
            severity = "warn"  # a module no import of the library reaches, read: a part of it breaks, not its import
        found.append(Occurrence(detail, fix, about=name, severity=severity))
    return found


def jax_of(facts: Facts) -> str:
    """The jax release a library's failure is told against: installed, else what the child reported, else "?"."""
    return facts.packages.get("jax") or facts.jax.get("jax_version") or "?"


def _said(outcome: ImportOutcome) -> str:
    at = f" (at {outcome['where']})" if outcome.get("where") else ""
    said = f"`import {outcome.get('module')}` raises {outcome.get('error')}{at}"
    if name := outcome.get("read"):  # a module no import of its library reached, tried for what its code uses
        said += f" (a module `import {str(outcome.get('module')).split('.')[0]}` does not reach, tried for its {name})"
    return said


def error_of(facts: Facts, distribution: str) -> str:
    """The first exception a distribution's import raised here, or ""."""
    said = (o.get("error") for o in outcomes(facts) if o.get("distribution") == distribution and o.get("error"))
    return str(next(said, ""))


def blamed(facts: Facts) -> dict[str, str]:
    """Each distribution whose import raised in another installed distribution's code -> that one, when its own
    import raised too (distrax 0.1.9 raises in tensorflow-probability's backend: one cause, TFP's), or raised what
    importing one of jax's own modules raised (optax beside jax 0.4.20 and SciPy 1.17: jax's, then its cause's)."""
    owner = owners(facts)
    failed = {str(o.get("distribution")) for o in outcomes(facts) if o.get("status") == "error"}
    # what importing jax's own modules raised: a library whose import raises the very same exception raised it in
    # jax's code (optax imports jax.scipy, whose jax 0.4.20 wraps scipy.linalg.tril, which SciPy 1.13 removed; the
    # probe's `where` skips jax's frames for a library, since jax's deprecation table raises what a library asked)
    jax_raised = {str(o.get("error")) for o in outcomes(facts) if o.get("distribution") == "jax" and _raised(o)}
    found = {}
    for outcome in outcomes(facts):
        name, at = str(outcome.get("distribution")), str(outcome.get("where") or "")
        other = owner.get(at.split("/")[0].split(".")[0]) if at else None
        if outcome.get("status") == "error" and other and other != name and other in failed:
            found[name] = other
        elif name != "jax" and _raised(outcome) and str(outcome.get("error")) in jax_raised:
            found[name] = "jax"
    return found


def owners(facts: Facts) -> dict[str, str]:
    """Each top-level module the imports probe imported -> its distribution (`lineax` -> lineax): whose code a
    line (`where`: lineax/_solver/lu.py:61) is."""
    return {str(o.get("module", "")).split(".")[0]: str(o.get("distribution")) for o in outcomes(facts)}


def newer(facts: Facts, name: str, version: str) -> Fix:
    """A newer release of the library than the installed one, jax held where it is (a newer library may require a
    newer jax, which pip would install unasked)."""
    return fixing.install(facts, [f"{name}{newer_than(version)}"], hold=fixing.installed_jax(facts))


def version_of(facts: Facts, distribution: str) -> str:
    """The release of a distribution the imports probe imported here ("" where it did not)."""
    return next(
        (str(o["version"]) for o in outcomes(facts) if o.get("distribution") == distribution and o.get("version")), ""
    )


def owner_of(facts: Facts, where: str) -> str:
    """The distribution whose code `where` (a probe's `package/file.py:line`) is, "" where none imported here."""
    return owners(facts).get(where.split("/")[0].split(".")[0], "") if where else ""


def _raised(outcome: ImportOutcome) -> bool:
    return outcome.get("status") == "error" and bool(outcome.get("error"))


def finding_id(distribution: str) -> str:
    """The id of a distribution's import failure."""
    return Subject("check", CHECK, distribution).id


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
IMPORT_FAILS = Check(
    id=CHECK,
    severity="fail",
    title="an installed library that depends on jax raises when it is imported",
    fix="the release of it, or of jax, that the detail names",
    references=("https://docs.python.org/3/reference/import.html", JEP_9419),
    run=failures,
)
