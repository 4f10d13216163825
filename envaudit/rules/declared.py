"""What releases declare they need, for a plan of requirements, which has no installed metadata to read yet.

A live audit reads each installed distribution's Requires-Dist (`pip check`, collect/packages.py). A plan reads the
tables instead: jax's and jaxlib's read at the jax tags (jax-requires.toml), every other audited project's derived
from its wheels' METADATA (declared-requires.toml, derive/tables/declared.py). A requirement's marker is evaluated
for the plan's Python on its platform (Linux x86_64 unless a pip report says otherwise); a plan that names no Python
is evaluated for every Python the release admits, and a requirement is unmet only where it is unmet for each of
them. A release the tables do not list, or a requirement on a package the plan does not pin, is unknown, not unmet.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from envaudit.model import markerenv
from envaudit.model.facts import Facts, Unsatisfied
from envaudit.model.fixes import named
from envaudit.model.scope import canonicalize_name
from envaudit.model.versions import public, release, version_or_none
from envaudit.rules import jax_pins, wheels
from envaudit.rules.jax_pins import REQUIRES
from envaudit.rules.releases import is_release, numbers
from envaudit.rules.table import Provenance, Table
from envaudit.rules.wheels import python_of

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet


class DeclaredRun(TypedDict):
    package: str
    versions: list[str]  # consecutive releases that declare the same
    python: str  # their Requires-Python ("" where none)
    requires: list[str]  # their Requires-Dist on audited packages, markers kept, extras' left out


class DeclaredRequires(Provenance):  # declared-requires.toml: derived from each release's wheel METADATA
    release: list[DeclaredRun]


DECLARED = Table("declared-requires.toml", DeclaredRequires)


@functools.cache
def _index() -> dict[tuple[str, tuple[int, ...]], tuple[str, tuple[str, ...]]]:
    """(package, release numbers) -> (Requires-Python, requirements), from both tables."""
    found: dict[tuple[str, tuple[int, ...]], tuple[str, tuple[str, ...]]] = {}
    for version, declared in REQUIRES.load()["release"].items():
        found[("jax", release(version) or ())] = (declared["python"], tuple(declared["jax"]))
        found[("jaxlib", release(version) or ())] = (declared["python"], tuple(declared["jaxlib"]))
    for run in DECLARED.load()["release"]:
        for version in run["versions"]:
            found[(run["package"], release(version) or ())] = (run["python"], tuple(run["requires"]))
    return found


def declaration(package: str, version: str) -> tuple[str, tuple[str, ...]] | None:
    """What this release declares (its Requires-Python and its requirements on audited packages), or None where
    the tables do not list it (a pre-release, a nightly, one older or newer than they read)."""
    parsed = version_or_none(public(version))
    if parsed is None or parsed.is_prerelease or parsed.is_devrelease:
        return None
    return _index().get((package, release(version) or ()))


@functools.lru_cache(maxsize=4096)
def _requirement(text: str) -> Requirement:
    from packaging.requirements import Requirement  # lazily: only a plan or a planned state needs it

    return Requirement(text)


def _pythons(python: str | None, spec: str) -> list[str]:
    """The Pythons a requirement's markers are evaluated for: the plan's, else each one the release admits."""
    if python is not None:
        return [python]
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        admitted = SpecifierSet(spec)
    except InvalidSpecifier:
        return []
    return [p for p in markerenv.PYTHONS if admitted.contains(f"{p}.0", prereleases=True)]


def _applying(text: str, environment: dict[str, str]) -> str | None:
    """The requirement as `name<spec>` where its marker holds in this marker environment, else None."""
    req = _requirement(text)
    if req.marker is not None and not req.marker.evaluate(environment):
        return None
    return f"{canonicalize_name(req.name)}{req.specifier}"


@functools.lru_cache(maxsize=4096)
def _environment(python: str, system: str, machine: str) -> tuple[tuple[str, str], ...]:
    """The marker environment of this Python on a platform (Linux x86_64 where the facts record none)."""
    platform = {k: v for k, v in (("platform_system", system), ("platform_machine", machine)) if v}
    return tuple(sorted((markerenv.target(python, platform).environment() | {"extra": ""}).items()))


def applying(facts: Facts, package: str, version: str) -> list[list[str]] | None:
    """This release's requirements that hold on the facts' Python and platform, one list per Python evaluated (the
    facts' own, else each one the release admits), or None where the tables do not list it."""
    system, machine = str(facts.platform.get("system") or ""), str(facts.platform.get("machine") or "")
    found = applying_on(package, version, python_of(facts), system, machine)
    return None if found is None else [list(one) for one in found]


@functools.cache
def releases(package: str) -> tuple[str, ...]:
    """The releases of a package the tables list (what a plan may move it to), in the tables' order."""
    if package in ("jax", "jaxlib"):
        return tuple(REQUIRES.load()["release"])
    return tuple(v for run in DECLARED.load()["release"] if run["package"] == package for v in run["versions"])


@functools.lru_cache(maxsize=8192)
def applying_on(
    package: str, version: str, python: str | None, system: str, machine: str
) -> tuple[tuple[str, ...], ...] | None:
    """`applying`, of values: a plan evaluates the same releases on the same Python again at every state it tries."""
    declared = declaration(package, version)
    if declared is None:
        return None
    environments = [dict(_environment(p, system, machine)) for p in _pythons(python, declared[0])]
    return tuple(tuple(sorted({a for t in declared[1] if (a := _applying(t, e))})) for e in environments)


def requires(facts: Facts, packages: Mapping[str, str]) -> dict[str, list[str]]:
    """Each listed release's requirements on the other packages of `packages`, on any Python evaluated: what a fix
    that moves one must keep true (fixing.dependents), as collect/packages.check says it of an installed set."""
    found: dict[str, list[str]] = {}
    for name, version in sorted(packages.items()):
        each = applying(facts, name, version) or []
        kept = sorted({r for one in each for r in one if named(r) in packages and named(r) != name})
        if kept:
            found[name] = kept
    return found


def unmet(facts: Facts) -> list[Unsatisfied]:
    """What the planned releases declare and the plan does not meet, as `pip check` would say it once installed
    (pip refuses such a plan when it installs it in one command): on the plan's Python, or on every Python a release
    admits where the plan names none. Only for a plan of requirements: in an environment pip installs what it is
    asked beside what is there (and warns), and its metadata answers."""
    if facts.origin != "plan" or facts.python.get("executable"):
        return []  # an environment's, or the state a fix leaves in one: pip installs beside what is there, and warns
    found: list[Unsatisfied] = []
    for package, version in sorted(facts.packages.items()):
        each = [_broken(one, facts.packages, package) for one in applying(facts, package, version) or []]
        if not each:
            continue
        for name in sorted(set.intersection(*(set(one) for one in each))):
            found.append({"package": package, "requires": each[0][name], "installed": facts.packages[name]})
    return found


@functools.lru_cache(maxsize=4096)
def _specifier(text: str) -> SpecifierSet:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(text)


def _broken(required: list[str], packages: Mapping[str, str], package: str) -> dict[str, str]:
    """The requirements of `required` that the pinned versions do not meet, by the package each names."""
    found = {}
    for text in required:
        name = named(text)
        pinned = public(packages.get(name, ""))
        if name == package or version_or_none(pinned) is None:
            continue
        if not _specifier(text[len(name) :]).contains(pinned, prereleases=True):
            found[name] = text
    return found


def admits(facts: Facts, package: str, version: str, pins: Mapping[str, str]) -> bool:
    """Whether this release's declared requirements admit these pins on one of the Pythons it is evaluated for (flax
    0.10.5 requires jax>=0.5.1: no installer puts it beside a held jax 0.4.35); a release the tables do not list is
    not ruled out."""
    found = applying(facts, package, version)
    return not found or any(not _broken(one, pins, package) for one in found)


def unpinned_jaxlib(facts: Facts) -> list[str]:
    """A plan of requirements (not an environment's) with a jax older than jax_pins.PINS_JAXLIB_SINCE and no jaxlib:
    no jaxlib at all where nothing planned requires one (`import jax` raises jax_pins.NO_JAXLIB), else the newest
    jaxlib with a wheel for the plan's Python that the planned requirements admit, which `import jax` then judges
    as jax does (jax_pins.import_coupling: octo-models/octo#125, jax==0.4.20 pinned, chex's `jaxlib>=0.1.37` took
    the newest jaxlib)."""
    jax = facts.packages.get("jax", "")
    if "jaxlib" in facts.packages or not is_release(jax):
        return []
    if facts.origin != "plan" or facts.python.get("executable") or numbers(jax) >= numbers(jax_pins.PINS_JAXLIB_SINCE):
        return []
    asking = {
        package: text
        for package, version in sorted(facts.packages.items())
        for text in (applying(facts, package, version) or [[]])[0]
        if named(text) == "jaxlib"
    }
    if not asking:
        return [
            f"jax {jax} installs without jaxlib (it requires none before {jax_pins.PINS_JAXLIB_SINCE}, and nothing"
            f" planned does): `import jax` raises ModuleNotFoundError: {jax_pins.NO_JAXLIB}"
        ]
    python, table = python_of(facts), wheels.WHEELS.load()
    released = (
        table["versions"].get(python or "", [])
        if python
        else sorted({v for vs in table["versions"].values() for v in vs}, key=numbers)
    )
    taken = [v for v in released if not _broken(list(asking.values()), {"jaxlib": v}, "")]
    if not taken:
        return []
    newest = max(taken, key=numbers)
    by = ", ".join(f"{name}'s `{text}`" for name, text in asking.items())
    said = jax_pins.import_coupling(replace(facts, packages={**facts.packages, "jaxlib": newest}))
    return [
        f"jax {jax} with no jaxlib pinned: {by} takes jaxlib {newest}, and `import jax` raises RuntimeError: {s}"
        for s in said
    ]
