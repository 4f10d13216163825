"""The twin of a set of facts: the stack a build installs to measure them here (their pins, the Pythons their jaxlib
has wheels for, their system, machine and variables, the modules the tables name), and whether building is off.
What `plan` proves a fix on and what `triage` reproduces a report's stack with: one place that says what is built.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from envaudit.collect import build
from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.redact import REDACTED
from envaudit.model.scope import INSTALLERS, SELF
from envaudit.rules import api_removals, imports, wheels
from envaudit.rules.releases import numbers

DISABLE = "ENVAUDIT_NO_BUILD"  # set (not empty, not 0): no plan builds its stack (the unit tests set it)


def off(no_build: bool, environ: Mapping[str, str] | None = None) -> str:
    """Why nothing is built ("" where the stack is built): asked, or turned off for this environment."""
    environ = os.environ if environ is None else environ
    if no_build:
        return "--no-build"
    if environ.get(DISABLE, "") not in ("", "0"):
        return f"{DISABLE} is set"
    return ""


def stack(
    facts: Facts, admitted: Sequence[str] = (), carried: Mapping[str, Sequence[str]] | None = None
) -> build.Stack:
    """What to build for these facts: their pins, for their Python (or the Pythons their jaxlib has wheels for,
    this one first), on their system and machine, with their variables (but those redacted, whose value is gone).
    Beside the top-level imports, the modules the tables name for these releases, and `carried`: those they named
    in the state before a fix, for each library the fix keeps, so that a release which no longer has the module
    (transformers 5 and its Flax models) fails the proof instead of passing for want of a claim."""
    env = {k: v for k, v in facts.env.items() if REDACTED not in v}
    platform = facts.platform
    # what the audit imported beside the audited distributions (a library on jax that no table knows: chromax,
    # jax-cfd, phiml), at the release it imported: the twin installs and imports it too, or a plan that leaves it
    # failing would pass for proven
    imported = {
        str(o["distribution"]): str(o["version"])
        for o in imports.outcomes(facts)
        if o.get("distribution") not in (None, "jax") and o.get("version") and o.get("status") in ("ok", "error")
    }
    packages = {**imported, **facts.packages}
    modules = {name: list(found) for name, found in api_removals.claimed_modules(facts).items()}
    for name, found in (carried or {}).items():
        if name in packages:
            modules[name] = sorted({*modules.get(name, ()), *found})
    return build.Stack(
        dict(sorted(packages.items())),
        pythons(facts, admitted),
        str(platform.get("system") or ""),
        str(platform.get("machine") or ""),
        env,
        modules,
        extras={name: list(asked) for name, asked in facts.extras.items() if name in packages and asked},
    )


def pythons(facts: Facts, admitted: Sequence[str] = ()) -> list[str]:
    """The Pythons to build for, preferred first: the plan's own; else, among those the project admits (its
    requires-python; any where it says none), this one where the planned jaxlib has a wheel for it, then the others
    that have one, newest first. For a jaxlib the wheel table does not cover: past its newest release, the Pythons of
    that release, newest first (a later jaxlib drops old Pythons, never gains them back); before its first, this
    one and the ones before it."""
    if stated := wheels.python_of(facts):
        return [stated]
    here = build.this_python()
    pins = [f"{name}=={version}" for name, version in facts.packages.items()]
    listed = wheels.pythons(pins)
    if listed is None and (newest := wheels.past_the_table(pins)) is not None:
        listed = newest
    if listed is None:
        major, minor = (int(n) for n in here.split("."))
        found = [f"{major}.{m}" for m in range(minor, max(minor - build.MAX_PYTHONS, 6), -1)]
    else:
        found = [*([here] if here in listed else []), *sorted(listed, key=numbers, reverse=True)]
    allowed = [p for p in dict.fromkeys(found) if not admitted or p in admitted]
    return allowed or sorted(admitted, key=numbers, reverse=True)


def whole(facts: Facts, installed: Mapping[str, str]) -> dict[str, str]:
    """What a live environment's twin installs before a fix's commands: the stack of its facts, and every other
    distribution it has that an index can give back (not envaudit itself, nor the installers, nor a local build's
    `+label` release), so that a command that moves what they need is seen breaking them."""
    audited = stack(facts).packages
    others = {
        name: version
        for name, version in installed.items()
        if name not in audited and name not in SELF and name not in INSTALLERS and "+" not in version
    }
    return dict(sorted({**others, **audited}.items()))


def applied(fix: Fix) -> tuple[build.Applied, ...]:
    """A fix's installer commands in the order its one command runs them (the removals, the installs with what
    they hold, the reinstalls): the twin of an installed environment is made by them over its own pins, so the
    installer moves what the new pins need as the user's will, and refuses what it will refuse."""
    held = tuple(h for h in fix.hold if h not in fix.install) if fix.install else ()
    steps = (
        build.Applied("uninstall", tuple(fix.uninstall)),
        build.Applied("install", (*fix.install, *held)),
        build.Applied("reinstall", tuple(fix.reinstall)),
    )
    return tuple(step for step in steps if step.requirements)
