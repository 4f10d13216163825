"""What building a plan here measured (collect/build.py), joined to the plan's facts; and whether its fix is proven.

The measurement joins the facts as an audit's would, so the same rules judge it: whether the installer took the
stack (`facts.install`: the check plan-does-not-install quotes its reason), what importing each library gave
(`facts.jax.imports`: the check import-fails quotes the line that raised, with the library as subject; an import
that worked clears the API-removal table's claim that it fails, which the check api-removal-contradicted names),
what each library's smoke call gave (`facts.jax.calls`: call-fails; a call that worked clears a main-path claim),
and how `import jax` ended where it failed there (jax-broken), with what the installer resolved for jax's own
requirements that the plan leaves unpinned (NumPy, SciPy, ml_dtypes, opt_einsum: what `pip install` of the pins
brings today, which rules on them judge: a NumPy 2 under a jaxlib built for NumPy 1). Everything else stays the
plan's (its Python, platform): the build is a CPU twin, which measures imports, not the accelerator, and the rest
the installer resolved is reported (`build.planned.installed`), not planned.

A fix plan is proven where the state it leads to (the stack itself, where nothing is to fix) was built here and
jax and every library imported there and every smoke call made there worked; anything else leaves it unproven,
with why.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace

from envaudit.collect.build import ACCELERATOR, Built, failures
from envaudit.model.build import Measurement, Proof
from envaudit.model.facts import Facts, InstallFacts, JaxFacts
from envaudit.model.fixes import Fix, Plan
from envaudit.model.versions import release
from envaudit.rules import declared, installing

JAX_FAILED = ("import_error", "crash", "error")  # how jax ended in the build that is a failure of the stack
MAX_SAID = 2  # failed imports named in an unproven plan's reason
# jax's and jaxlib's own requirements (their Requires-Dist, 0.4.x to 0.12): what the installer resolved for them
# where the plan pins none is what the plan installs today
RESOLVED = ("numpy", "scipy", "ml-dtypes", "opt-einsum")


NO_VERSION = re.compile(r"there is no version of ([A-Za-z0-9._-]+)==([^\s,;]+)")  # uv's resolver, a pin it lacks


def missing_here(reason: str) -> str:
    """The release uv said the index reachable here lacks ("jax 0.12.0"), where the tables say it was published:
    the plan is not measured here, which says nothing of whether it installs ("" where uv said something else, or
    named a release no table knows: then it may well not exist)."""
    found = NO_VERSION.search(reason)
    if found is None:
        return ""
    name, version = found[1].lower().replace("_", "-"), found[2]
    known = {release(v) for v in declared.releases(name)}
    return f"{name} {version}" if release(version) in known else ""


def joined(facts: Facts, built: Built) -> Facts:
    """The plan's facts with what the build measured of its stack."""
    document = built.document
    status = document["status"]
    python = str(document.get("python") or "")
    if status == "not_installable" and missing_here(str(document.get("reason") or "")):
        return facts  # not here is not "does not install": the tables alone
    if status == "not_installable":
        refused: InstallFacts = {"status": "refused", "message": str(document.get("reason") or ""), "installer": "uv"}
        return replace(facts, install=refused | ({"python": python} if python else {}))
    if status not in ("built", "timeout") or not built.jax:
        return facts  # not measured: the tables alone
    jax: JaxFacts = facts.jax.copy()
    if built.jax.get("status") in JAX_FAILED:
        jax["status"] = built.jax["status"]
        jax["message"], jax["stage"] = built.jax.get("message"), built.jax.get("stage")
    if imports := built.jax.get("imports"):
        jax["imports"] = imports
    if calls := built.jax.get("calls"):
        jax["calls"] = calls
    installed: InstallFacts = {"status": "installed", "installer": "uv", "python": python}
    resolved = document.get("installed") or {}
    added = {name: resolved[name] for name in RESOLVED if name in resolved and name not in facts.packages}
    if not added:
        return replace(facts, jax=jax, install=installed)
    packages = dict(sorted({**facts.packages, **added}.items()))
    grown = replace(facts, packages=packages, jax=jax, install=installed)
    return replace(grown, requires={**facts.requires, **declared.requires(grown, packages)})


def as_installed(state: Facts, built: Built) -> Facts:
    """The state a fix leaves, where its twin was made by the fix's own commands over the environment's pins
    (`applied`): with what the installer moved beyond the plan's model (pip and uv move the dependencies a new pin
    needs: ml_dtypes under a newer jax, NumPy with it), so that the state judged is the one the command makes. A
    jaxlib's local label and jax's accelerator packages stay the model's: the twin installs their CPU wheels."""
    document = built.document
    resolved = document.get("installed") or {}
    if not document.get("applied") or not resolved:
        return state
    moved = tuple(
        f"{name}=={resolved[name]}"
        for name, version in state.packages.items()
        if name in resolved and version.split("+")[0] != resolved[name] and not ACCELERATOR.match(name)
    )
    return installing.after(state, Fix(install=moved)) if moved else state


def as_before(
    fixed: Built,
    before: JaxFacts,
    claimed: Collection[str] = (),
    reads: Collection[str] | None = None,
    pulled: Collection[str] = (),
) -> Built:
    """A fix's measurement with what failed before it too (the same library's import or call raised in the
    environment measured before the fix) set apart (`failing_before`): the fix left it as it was, which is said,
    not held against it; only what fails that did not before is the fix's failure. But for the distributions its
    steps claim to fix (`claimed`): their import failing still is the fix failing (qax 0.3.0 was "proven" for the
    import failure of qax it was to fix, set apart as failing before)."""
    was = {
        (o.get("distribution"), o.get("module"))
        for o in before.get("imports") or []
        if o.get("status") == "error" and o.get("distribution") not in claimed
    }
    # (a call that failed before stays set apart: a root a step fixes can fold under it a call that fails for
    # another reason, jaxopt's smoke call without optax beside ott-jax's removed names)
    was |= {(o.get("distribution"), o.get("call")) for o in before.get("calls") or [] if o.get("status") == "error"}
    if not was or fixed.status != "built":
        return fixed
    imports = [o for o in fixed.jax.get("imports") or [] if o.get("status") == "error"]
    said = set(pulled) - set(claimed)  # calls of libraries nobody asked for: said, not failures (build.Stack.pulled)
    calls = [
        o for o in fixed.jax.get("calls") or [] if o.get("status") == "error" and o.get("distribution") not in said
    ]
    old_imports = [o for o in imports if (o.get("distribution"), o.get("module")) in was]
    old_calls = [o for o in calls if (o.get("distribution"), o.get("call")) in was]
    if not old_imports and not old_calls:
        return fixed
    new = failures([o for o in imports if o not in old_imports], [o for o in calls if o not in old_calls], reads)
    document = fixed.document | {"failed": new, "failing_before": failures(old_imports, old_calls)}
    return Built(document, fixed.jax)


def proof(plan: Plan, planned: Built | None, fixed: Built | None, not_built: str = "") -> tuple[Proof, str]:
    """Whether the fix plan is proven here, and why (or why not)."""
    which = "the state the fix leaves" if plan.steps else "the stack as planned"
    if planned is None:
        return "unproven", f"nothing was built: {not_built}"
    state = fixed if plan.steps else planned
    found = verdict(state.document, which) if state is not None else None
    if found is not None and found[0] == "unproven":
        return found  # what the measurement shows first: it says more than the plan's own list
    if plan.remaining and not plan.steps:
        return "unproven", f"the plan leaves {', '.join(plan.remaining)} failing"
    if found is not None and plan.remaining:  # proven for what it claims; what no step fixes stays as it was
        return found[0], f"{found[1]}; no step claims {', '.join(plan.remaining)}, which stay failing"
    return found or ("unproven", f"{which} was not built")


def verdict(document: Measurement, which: str) -> tuple[Proof, str]:
    """Proven where the state was built and jax and every library imported there, and every call worked."""
    status = document["status"]
    if status == "not_installable" and (lacking := missing_here(str(document.get("reason") or ""))):
        return "unproven", f"{which} was not measured: the package index reachable here lacks {lacking}"
    if status == "not_installable":
        return "unproven", f"{which} does not install here (uv refused it)"
    if status != "built":
        return "unproven", f"{which} was not measured ({status}): {document.get('reason', '')}"
    if document.get("jax") != "ok":
        return "unproven", f"in {which}, jax ended {document.get('jax')}: {document.get('jax_message', '')}"
    if failed := document.get("failed"):
        more = f" (and {len(failed) - MAX_SAID} more)" if len(failed) > MAX_SAID else ""
        return "unproven", f"in {which}: " + "; ".join(failed[:MAX_SAID]) + more
    tried, called = document.get("tried", 0), document.get("called", 0)
    twin = " (its CPU twin)" if document.get("left_out") else ""
    calls = f", and {called} smoke calls worked" if called else ""
    if before := document.get("failing_before"):
        more = f" (and {len(before) - MAX_SAID} more)" if len(before) > MAX_SAID else ""
        calls += "; as before it: " + "; ".join(before[:MAX_SAID]) + more
    return (
        "proven",
        f"{which}{twin} built here for Python {document.get('python')}, and jax and {tried} modules imported{calls}",
    )
