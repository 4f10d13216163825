"""A rule's pins as the least change that keeps what works: jax moved through the platform's extra, a range on jax
resolved to the newest release in it that has a wheel for this Python, and the installed libraries that the move
would break following it, each to its newest release whose declared requirements the moved state meets.

A rule says what it needs of jax as a range (`jax<0.6.0`: neural-tangents 0.6.5 imports `jax.core.Jaxpr`, which
jax 0.6.0 removed). Which release that is, which libtpu comes with it and which flax accepts it are facts of the
releases, read here from the tables (`jaxlib-wheels.toml`, `tpu-extra.toml` through `extras.implied`,
`declared-requires.toml` and `jax-requires.toml` through `declared`), never written into the rule: on a TPU host
with flax 0.12.8 and NumPy 2, `jax<0.6.0` is `jax[tpu]==0.5.3 jaxlib==0.5.3 flax==0.10.6`, NumPy left as it is.
A requirement on a package the state does not hold, or a release the tables do not list, is unknown: nothing
follows for it (the state a plan reaches is judged again, by every rule, in `judge/fixplan.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from envaudit.model import fixes
from envaudit.model.facts import Facts
from envaudit.model.scope import PLUGIN, TPU_PACKAGES, canonicalize_name, coupled
from envaudit.model.versions import public, version_or_none
from envaudit.rules import declared, extras, tpu_pins
from envaudit.rules.releases import listed
from envaudit.rules.wheels import WHEELS, python_of

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

JAX_CORE = ("jax", "jaxlib")
ROUNDS = 4  # a follower's release can need another to follow (flax moves optax); more than this does not settle


def planned(facts: Facts, pins: Sequence[str]) -> list[str]:
    """The pins to install for a rule's `pins` on these facts: jax's resolved and through the platform's extra,
    then the others as written, then the installed libraries that follow the move."""
    jax = jax_pins(facts, pins)
    state = {**facts.packages, **moving(facts, jax)}
    others = [_newest_fitting(facts, p, state) for p in pins if not _is_jax(p)]
    return [*jax, *others, *followers(facts, moving(facts, [*jax, *others]))]


def _newest_fitting(facts: Facts, pin: str, state: Mapping[str, str]) -> str:
    """A library's range (`flax>=0.8.0`) bounded above where the newest release in it does not fit the state: below
    the first release after the newest that does (`flax<0.8.5,>=0.8.0` beside jax 0.4.25: flax 0.8.5 needs jax
    0.4.27, the newest flax jax 0.11.1), the least constraint that keeps the installer off what fails; the range as
    written where it is met already, exact, fits as it is, or the tables know no release that fits."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(pin)
    except InvalidRequirement:
        return pin
    name = canonicalize_name(req.name)
    installed = facts.packages.get(name)
    if any(s.operator in ("==", "===") for s in req.specifier) or req.marker is not None:
        return pin
    if installed is not None and req.specifier.contains(public(installed), prereleases=True):
        return pin
    system, machine = str(facts.platform.get("system") or ""), str(facts.platform.get("machine") or "")
    known = sorted((v for v in declared.releases(name) if req.specifier.contains(v)), key=_key)
    found = _accepting(name, state, python_of(facts), system, machine, str(req.specifier))
    if not found or not known or found == known[-1]:
        return pin  # the installer's newest in the range fits (or nothing known does): the range as written
    after = known[known.index(found) + 1]  # the first release in the range that does not fit: excluded
    return f"{name}{req.specifier},<{after}" if str(req.specifier) else f"{name}<{after}"


def jax_pins(facts: Facts, pins: Sequence[str]) -> list[str]:
    """The rule's pins on jax's packages, for this platform. Met already: none. A range with an upper bound (a
    downgrade: `jax<0.6.0`) is the newest release in it with a wheel for this Python, pinned exactly (the plan then
    knows what follows); a lower bound alone (an upgrade) stays a range, which the installer resolves to the
    newest. Either goes through the extra the installed stack came from (`jax[tpu]` keeps libtpu in step)."""
    own = [p for p in pins if _is_jax(p)]
    if not own:
        return []
    spec = _jax_spec(own)
    if spec is None:
        return list(own)
    extra = _extra(facts, own)
    installed = facts.packages.get("jax")
    if installed is not None and spec.contains(public(installed), prereleases=True):
        return []
    if any(s.operator in ("<", "<=", "==", "~=") for s in spec):
        chosen = newest(facts, spec)
        if chosen:
            return [f"jax{extra}=={chosen}", f"jaxlib=={chosen}", *_brought(facts, chosen, extra)]
        # none in the range has a wheel for this Python: no command installs it (the advice says what to do)
        return [] if python_of(facts) in WHEELS.load()["versions"] else list(own)
    return [f"jax{extra}{spec}", f"jaxlib{spec}"]


def _extra(facts: Facts, pins: Sequence[str]) -> str:
    """The extra to install jax through, as pip writes it ("[tpu]", "[cuda12]"): the one the rule names, else the
    one the installed stack came through (its accelerator packages are installed); "" for a stack without one (a
    fix does not add an accelerator the user had not)."""
    from packaging.requirements import Requirement

    named = sorted({e for p in pins if fixes.named(p) == "jax" for e in Requirement(p).extras})
    if named:
        return f"[{','.join(named)}]"
    if any(name in facts.packages for name in TPU_PACKAGES):
        return "[tpu]"
    majors = sorted({m["major"] for name in facts.packages if (m := PLUGIN.match(name)) and m["kind"] == "cuda"})
    return f"[cuda{majors[-1]}]" if majors else ""


def _brought(facts: Facts, version: str, extra: str) -> list[str]:
    """What the extra moves with jax to `version`, among what is installed, pinned as the extra pins it
    (`libtpu==0.0.11.*` for jax[tpu]==0.5.3): written out, so that a plan's lines that pin the old build change too."""
    found = []
    for name, pinned in extras.implied(version, set(extra.strip("[]").split(",")) - {""}).items():
        if name in JAX_CORE or name not in facts.packages:
            continue
        tpu = [p for p in tpu_pins.pins(version) or () if fixes.named(p) == name]
        found += tpu or [f"{name}=={pinned}"]
    return found


def _is_jax(pin: str) -> bool:
    name = fixes.named(pin)
    return name in JAX_CORE or PLUGIN.match(name) is not None


def _jax_spec(pins: Sequence[str]) -> SpecifierSet | None:
    """What the pins on jax and jaxlib ask of the release (plugins are released with jaxlib: the same)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet()
    try:
        for pin in pins:
            req = Requirement(pin)
            if canonicalize_name(req.name) in JAX_CORE:
                spec &= req.specifier
    except InvalidRequirement:
        return None
    return spec if str(spec) else None


def newest(facts: Facts, spec: SpecifierSet) -> str | None:
    """The newest jax release in `spec` that has a wheel for the facts' Python (for every Python the table lists,
    where they name none), none that was yanked."""
    return _newest(python_of(facts), str(spec))


@lru_cache(maxsize=1024)
def _newest(python: str | None, spec_text: str) -> str | None:
    from packaging.specifiers import SpecifierSet

    table = WHEELS.load()
    by_python = table["versions"]
    found = by_python.get(python, []) if python is not None else [v for vs in by_python.values() for v in vs]
    yanked = table.get("yanked", [])
    spec = SpecifierSet(spec_text)
    fits = [v for v in found if spec.contains(v, prereleases=False) and not listed(v, yanked)]
    return max(fits, key=_key) if fits else None


def _key(version: str) -> tuple[int, ...]:
    parsed = version_or_none(version)
    return parsed.release if parsed is not None else ()


def moving(facts: Facts, pins: Sequence[str]) -> dict[str, str]:
    """What exact pins move (and what jax's extras bring with them), by name: the versions the state will hold."""
    from packaging.requirements import InvalidRequirement, Requirement

    found: dict[str, str] = {}
    for pin in pins:
        try:
            req = Requirement(pin)
        except InvalidRequirement:
            continue
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if not exact or exact[0].endswith(".*"):
            continue
        found[canonicalize_name(req.name)] = exact[0]
        if req.extras:
            found |= {n: v for n, v in extras.implied(exact[0], set(req.extras)).items() if n not in found}
    return {n: v for n, v in found.items() if facts.packages.get(n) != v}


def followers(facts: Facts, moved: Mapping[str, str]) -> list[str]:
    """The installed libraries whose requirements the moved versions break, each pinned at its newest release
    that the tables say accepts the new state (`flax==0.10.6` for jax 0.5.3). None where the tables know no such
    release: the state is judged as it is, and its finding says what stays wrong."""
    if not moved:
        return []
    state = {**facts.packages, **moved}
    chosen: dict[str, str] = {}
    python = python_of(facts)
    system, machine = str(facts.platform.get("system") or ""), str(facts.platform.get("machine") or "")
    for _ in range(ROUNDS):
        changed = False
        for name in sorted(facts.packages):
            if name in moved or coupled(name):
                continue
            current = chosen.get(name, facts.packages[name])
            needs = _requirements(facts, name, current)
            touched = {*moved, *chosen}  # what broke before the move is another finding's, not the move's
            if needs is None or all(_met(r, state, name) for r in needs if fixes.named(r) in touched):
                continue
            release = _accepting(name, state, python, system, machine)
            if release is None or release == current:
                continue
            chosen[name], state[name], changed = release, release, True
        if not changed:
            break
    return [f"{name}=={version}" for name, version in sorted(chosen.items())]


def _requirements(facts: Facts, name: str, version: str) -> list[str] | None:
    """What this release of an installed library requires: its installed metadata where it is the installed
    release (`pip check`'s reading), else what the tables say it declares (None: unknown)."""
    if version == facts.packages.get(name) and name in facts.requires:
        return list(facts.requires[name])
    each = declared.applying(facts, name, version)
    return None if each is None else sorted({r for one in each for r in one})


def _met(requirement: str, state: Mapping[str, str], own: str) -> bool:
    """Whether the state meets a requirement; one on a package it does not hold is not this module's to say."""
    from packaging.requirements import InvalidRequirement
    from packaging.specifiers import SpecifierSet

    try:
        target, spec = fixes.parse(requirement)
    except InvalidRequirement:
        return True
    version = public(state.get(target, ""))
    if target == own or version_or_none(version) is None:
        return True
    return SpecifierSet(spec).contains(version, prereleases=True)


def _accepting(
    name: str, state: Mapping[str, str], python: str | None, system: str, machine: str, within: str = ""
) -> str | None:
    """The newest release of `name` the tables list (within a specifier) whose declared requirements the state
    meets."""
    from packaging.specifiers import SpecifierSet

    allowed = SpecifierSet(within)
    for version in sorted(declared.releases(name), key=_key, reverse=True):
        if not allowed.contains(version, prereleases=False):
            continue
        each = declared.applying_on(name, version, python, system, machine)
        if each is None:
            continue
        if all(_met(r, state, name) for one in each for r in one):
            return version
    return None


MAX_EXCLUDED = 8  # more releases than this in a condition: an exclusion list stops being the least constraint


def excluding(facts: Facts, condition: Mapping[str, object]) -> tuple[str, ...]:
    """What a rule's condition on releases condemns, as requirements that exclude exactly those (`jaxlib!=0.10.2`,
    and `jax!=0.10.2` beside it: they are released together): the least constraint a library's metadata or a range
    can take. Only where the installed release is among them and the tables list every one ("" otherwise)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    found: list[str] = []
    for name, spec in condition.items():
        installed = public(facts.packages.get(str(name), ""))
        if not isinstance(spec, str) or version_or_none(installed) is None:
            continue
        try:
            condemned = SpecifierSet(spec)
        except InvalidSpecifier:
            continue
        known = _known(str(name))
        bad = sorted((v for v in known if condemned.contains(v, prereleases=False)), key=_key)
        if not condemned.contains(installed, prereleases=True) or not bad or len(bad) > MAX_EXCLUDED:
            continue
        names = ["jax", "jaxlib"] if name in JAX_CORE else [str(name)]
        found += [f"{n}{','.join(f'!={v}' for v in bad)}" for n in names if n in facts.packages]
    return tuple(dict.fromkeys(found))


def _known(name: str) -> list[str]:
    """The releases of a distribution the tables list: jax's and jaxlib's with a wheel for any Python, a library's
    declared ones."""
    if name in JAX_CORE:
        return sorted({v for vs in WHEELS.load()["versions"].values() for v in vs}, key=_key)
    return list(declared.releases(name))
