"""What releases declare they need, for a plan of requirements, which has no installed metadata to read yet.

A live audit reads each installed distribution's Requires-Dist (`pip check`, collect/packages.py). A plan reads the
tables instead: jax's and jaxlib's read at the jax tags (jax-requires.toml), every other audited project's derived
from its wheels' METADATA (declared-requires.toml, derive/tables/declared.py). A requirement's marker is evaluated
for the plan's Python on its platform (Linux x86_64 unless a pip report says otherwise); a plan that names no Python
is evaluated for every Python the release admits, and a requirement is unmet only where it is unmet for each of
them; one under an extra applies where the plan asks the package with that extra (`tensorflow-probability[jax]`).
A release the tables do not list is unknown, not unmet. A requirement on a package the plan does not pin is followed
to the release a resolver would pick (`resolved`: the newest the tables list that fits the pins), and where no
release it admits fits, the plan is refused (equinox's own `jax!=0.4.27`, beside a pinned jax 0.4.27).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
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
    asked = tuple(sorted(facts.extras.get(package, ())))
    found = applying_on(package, version, python_of(facts), system, machine, asked)
    return None if found is None else [list(one) for one in found]


@functools.cache
def releases(package: str) -> tuple[str, ...]:
    """The releases of a package the tables list (what a plan may move it to), in the tables' order."""
    if package in ("jax", "jaxlib"):
        return tuple(REQUIRES.load()["release"])
    return tuple(v for run in DECLARED.load()["release"] if run["package"] == package for v in run["versions"])


@functools.lru_cache(maxsize=8192)
def applying_on(
    package: str, version: str, python: str | None, system: str, machine: str, extras: tuple[str, ...] = ()
) -> tuple[tuple[str, ...], ...] | None:
    """`applying`, of values: a plan evaluates the same releases on the same Python again at every state it tries.
    A requirement under an extra the package is asked with (`extras`) applies as one under none does."""
    declared = declaration(package, version)
    if declared is None:
        return None
    found = []
    for p in _pythons(python, declared[0]):
        base = dict(_environment(p, system, machine))
        each = [base, *({**base, "extra": canonicalize_name(extra)} for extra in extras)]
        found.append(tuple(sorted({a for t in declared[1] for e in each if (a := _applying(t, e))})))
    return tuple(found)


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


ROUNDS = 4  # requirements followed from a planned release: optimistix -> equinox -> jaxtyping is two


@dataclass(frozen=True)
class Unresolvable:
    """A planned release's requirement on a package the plan does not pin, which no release of that package the
    tables list can meet beside the plan's pins: the installer finds none to install, and refuses the plan."""

    package: str  # the planned (or resolved) release that asks
    version: str
    requirement: str  # its requirement on the unpinned package (`equinox>=0.11.7`)
    releases: tuple[str, ...]  # the releases of it the requirement admits, newest first, all of them listed
    broken: tuple[tuple[str, str], ...]  # each distinct reason those releases are refused (a requirement a pin
    # breaks, one no release installs for), with the releases it refuses ("0.11.5 to 0.11.10"), oldest first
    pins: tuple[tuple[str, str], ...]  # what each broken requirement names, as the plan pins it
    needs: tuple[str, ...] = ()  # the requirements on pins that refuse them, of the oldest release first: the fix

    @property
    def target(self) -> str:
        return named(self.requirement)


def resolved(facts: Facts) -> tuple[dict[str, str], list[Unresolvable]]:
    """What an installer adds to a plan of pins, as the tables know it: for each requirement of a planned release on
    a package the plan does not pin, the release a resolver takes (the newest the tables list that the requirements
    on it admit, whose own requirements the pins meet and whose own unpinned ones can be met in turn, to ROUNDS
    levels: one that fails is passed over, as a resolver backtracks); and each requirement for which there is none,
    though the tables list every release it admits (its lower bound at or above the first release they read): the
    installer refuses the plan. equinox 0.11.5 and later require jax!=0.4.27, so lineax 0.0.6, which requires
    equinox>=0.11.5, cannot be installed beside jax 0.4.27. Only a plan of requirements (an environment's installer
    keeps what is there); jax, jaxlib and the plugins are jax's own (unpinned_jaxlib)."""
    if facts.origin != "plan" or facts.python.get("executable"):
        return {}, []
    system, machine = str(facts.platform.get("system") or ""), str(facts.platform.get("machine") or "")
    asked = tuple(sorted((name, tuple(sorted(e))) for name, e in facts.extras.items() if e))
    chosen, stuck = _resolved(tuple(sorted(facts.packages.items())), python_of(facts), system, machine, asked)
    return dict(chosen), list(stuck)


@functools.lru_cache(maxsize=1024)
def _resolved(
    pins: tuple[tuple[str, str], ...],
    python: str | None,
    system: str,
    machine: str,
    asked: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> tuple[tuple[tuple[str, str], ...], tuple[Unresolvable, ...]]:
    """`resolved`, of values; `asked`: the extras each planned package is asked with."""
    wanted: dict[str, list[tuple[str, str, str]]] = {}  # unpinned package -> (asker, its version, requirement)
    extras = dict(asked)
    for name, version in pins:
        for text in _unpinned(name, version, pins, python, system, machine, extras.get(name, ())):
            wanted.setdefault(named(text), []).append((name, version, text))
    chosen: dict[str, str] = {}
    stuck: list[Unresolvable] = []
    for target, asks in sorted(wanted.items()):
        picked = _pick(target, tuple(t for _, _, t in asks), pins, python, system, machine, 1)
        if isinstance(picked, str):
            chosen[target] = picked
        elif picked is not None:
            name, version, text = asks[0]
            stuck.append(replace(picked, package=name, version=version, requirement=text))
    return tuple(sorted(chosen.items())), tuple(stuck)


def _unpinned(
    name: str,
    version: str,
    pins: tuple[tuple[str, str], ...],
    python: str | None,
    system: str,
    machine: str,
    extras: tuple[str, ...] = (),
) -> list[str]:
    """A release's requirements (those that apply on every Python evaluated, under the extras it is asked with) on
    a package the pins do not hold, but jax's own packages."""
    from envaudit.model.scope import coupled

    held = dict(pins)
    each = applying_on(name, version, python, system, machine, extras)
    always = sorted(set.intersection(*(set(one) for one in each))) if each else []
    return [t for t in always if named(t) not in held and not coupled(named(t)) and named(t) != name]


@functools.lru_cache(maxsize=8192)
def _pick(
    target: str,
    asks: tuple[str, ...],
    pins: tuple[tuple[str, str], ...],
    python: str | None,
    system: str,
    machine: str,
    depth: int,
) -> str | Unresolvable | None:
    """The newest release of `target` the tables list that every ask admits, whose requirements the pins meet and
    whose unpinned ones can be met in turn (below ROUNDS levels); else the Unresolvable (without its asker) where
    every release the asks admit is listed; None where the tables cannot say (they list none of it, or a release
    older than they read may be the one)."""
    known = releases(target)
    if not known:
        return None
    specs = [_specifier(text[len(target) :].split(";")[0]) for text in asks]
    admitted = sorted(
        (v for v in known if all(s.contains(v, prereleases=False) for s in specs)), key=numbers, reverse=True
    )
    state = dict(pins)
    broken: dict[str, list[str]] = {}  # what refuses each release (a requirement a pin breaks, or one none installs
    # for), and the releases it refuses, newest first
    needs: dict[str, str] = {}  # the requirements on pins behind them, with the oldest release behind each
    names: dict[str, str] = {}
    for version in admitted:
        each = applying_on(target, version, python, system, machine)
        if each is None:
            return None
        failing = [_broken(list(one), state, target) for one in each]
        if all(failing):
            for name, text in failing[0].items():
                broken.setdefault(text, []).append(version)
                needs[text] = version
                names[name] = state[name]
            continue
        below = [] if depth >= ROUNDS else _unpinned(target, version, pins, python, system, machine)
        deeper = [(t, _pick(named(t), (t,), pins, python, system, machine, depth + 1)) for t in below]
        unmet = [(t, found) for t, found in deeper if isinstance(found, Unresolvable)]
        if not unmet:
            return version
        for text, found in unmet:
            inner = f"{named(text)} {found.broken[0][1]} require {found.broken[0][0]}" if found.broken else ""
            broken.setdefault(f"{text} (no release of it installs: {inner})" if inner else text, []).append(version)
            needs.update({t: version for t in found.needs})
            names.update(found.pins)
    if not admitted or not _within(specs, min(known, key=numbers)):
        return None
    first = tuple(t for t, _ in sorted(needs.items(), key=lambda n: numbers(n[1])))
    order = sorted(broken.items(), key=lambda b: numbers(b[1][-1]))
    spans = tuple((text, _span(versions)) for text, versions in order)
    return Unresolvable("", "", "", tuple(admitted), spans, tuple(sorted(names.items())), first)


def _span(versions: list[str]) -> str:
    """Releases (newest first) as their span: "0.11.5 to 0.11.10", or the one."""
    return versions[0] if len(versions) == 1 else f"{versions[-1]} to {versions[0]}"


def _within(specs: list[SpecifierSet], oldest: str) -> bool:
    """Whether no release older than the first the tables list can meet the specifiers: one of them bounds below at
    or above it."""
    from packaging.version import InvalidVersion, Version

    try:
        first = Version(oldest)
        return any(
            s.operator in (">=", ">", "==", "===", "~=") and Version(s.version.rstrip(".*")) >= first
            for spec in specs
            for s in spec
        )
    except InvalidVersion:
        return False


def unresolvable(facts: Facts) -> list[tuple[str, str]]:
    """Each Unresolvable of the plan (`resolved`), as a sentence (what asks, what it admits, and what of the pins
    each of those releases refuses) and the pin that lets the installer take one: the requirement of the oldest of
    them that a pin breaks."""
    found = []
    for u in resolved(facts)[1]:
        span = _span(list(u.releases))
        needs = "; ".join(
            f"{u.target} {versions} {'require' if ' to ' in versions else 'requires'} {text}"
            for text, versions in u.broken
        )
        planned = ", ".join(f"{name} {version}" for name, version in u.pins)
        said = (
            f"{u.package} {u.version} requires {u.requirement}, and no release of {u.target} it admits installs"
            f" beside the plan's pins ({planned}): of {span}, the releases the tables list, {needs}"
        )
        found.append((said, u.needs[0] if u.needs else u.requirement))
    return found
