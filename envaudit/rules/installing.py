"""The state a fix leaves: the facts after its variables are set and its requirements installed, as far as the
known releases say (a plan of what the installer would do, never a measurement).

`envaudit/judge/fixplan.py` computes each finding's fix on the state the fixes before it leave, so this is where a fix
is applied to facts. The installer is modelled as pip resolves a requirement set: an installed version that meets
every requirement on its name stays; otherwise the newest release that meets them all, among the releases a table
lists for that package (jax's and jaxlib's for this Python, `rules/tables/jaxlib-wheels.toml`; the library
releases `api-removals.toml` names), else the boundary the requirement itself names (`>=0.1.87`: 0.1.87). What
moved loses what was measured of it: its declared requirements are unknown until it is installed, and jax is what
a plan says (`origin: plan`: its import is not measured), with the configuration its variables give.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING

from envaudit.model import fixes
from envaudit.model.facts import CallOutcome, Duplicate, Facts, ImportOutcome, JaxFacts, Unsatisfied
from envaudit.model.fixes import Fix
from envaudit.model.scope import PLUGIN, TPU_PACKAGES, canonicalize_name, coupled
from envaudit.model.versions import version_or_none
from envaudit.rules import extras, messages
from envaudit.rules.api_removals import uses_of
from envaudit.rules.jax_env import env_flag
from envaudit.rules.releases import covers, numbers
from envaudit.rules.wheels import WHEELS, python_of

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet


UNKNOWN_RELEASE = "0+unknown"  # the release an installer picks of a package no table knows (a valid version)


def after(facts: Facts, fix: Fix, *, jax_cause: bool = False) -> Facts:
    """The facts once `fix` has run: variables first, then the installs (whose result depends on them). What the
    audit measured of jax (an import that failed) holds until the fix moves what jax imports, reinstalls it, or
    fixes a cause of jax's failure (`jax_cause`: a variable that made it fail); a variable set for another reason
    changes nothing of it. A message a bug report quotes holds until the fix moves what it is about, or sets a
    variable (`messages.holds_after`)."""
    env = {k: v for k, v in facts.env.items() if k not in fix.unset} | dict(fix.export)
    python = facts.python.copy()
    if "PYTHONPATH" in fix.unset or "PYTHONPATH" in dict(fix.export):
        entries = env.get("PYTHONPATH", "").split(os.pathsep)
        python["pythonpath"] = os.pathsep.join(os.path.abspath(e) for e in entries if e)
    if env_flag(env.get("PYTHONNOUSERSITE")):
        python["user_site"] = ""
    if fix.delete and "leftovers" in python:  # pip's stashes, deleted by path
        python["leftovers"] = [p for p in python["leftovers"] if p not in fix.delete]
    packages, duplicates = _unshadowed(facts, str(python.get("pythonpath") or ""), str(python.get("user_site") or ""))
    beside = _measured_beside(facts, packages)
    installed = {
        n: v for n, v in _installed(packages | beside, fix, python_of(facts)).items() if n not in fix.uninstall
    }
    installed = {n: v for n, v in installed.items() if n not in beside or v != beside[n]}  # moved: now in the state
    moved = {n for n in installed.keys() | facts.packages.keys() if installed.get(n) != facts.packages.get(n)}
    moved |= {name for name, _ in map(fixes.parse, fix.reinstall)}
    requires = {name: reqs for name, reqs in facts.requires.items() if name not in moved and name in installed}
    replanned = jax_cause or bool(fix.reinstall) or any(_under_jax(facts, name) for name in moved)
    return replace(
        facts,
        packages=dict(sorted(installed.items())),
        python=python,
        env=env,
        duplicates=duplicates,
        requires=requires,
        requirements=_unmet(facts.requirements, requires, installed, moved),
        jax=_kept_gone(facts, _planned_jax(facts, installed, env), installed, moved)
        if replanned
        else _unmoved_imports(facts.jax, moved),
        origin="plan" if replanned else facts.origin,
        # what a bug report quotes was printed by the environment before the fix: once it changed, not after
        messages=[] if env != facts.env else [m for m in facts.messages if messages.holds_after(m, moved)],
        install=facts.install if not moved else {},  # what installing the stack here showed, of that stack only
    )


def _measured_beside(facts: Facts, packages: dict[str, str]) -> dict[str, str]:
    """The distributions the audit imported beside the audited ones (a library the imports probe found depending
    on jax, outside the audited scope: chromax, jax-cfd), at the release it measured: a fix that moves one
    (`chromax>=0.0.3a0,!=0.0.3a0`, jax held) moves it in the model too, so its measured failure goes with it, as
    the build of that state then measures."""
    from envaudit.rules.imports import outcomes  # lazily: it imports what fixes are made of

    found: dict[str, str] = {}
    for outcome in outcomes(facts):
        name, version = str(outcome.get("distribution") or ""), str(outcome.get("version") or "")
        if name and version and name not in packages and version_or_none(version) is not None:
            found[canonicalize_name(name)] = version
    return found


def _kept_gone(facts: Facts, planned: JaxFacts, installed: dict[str, str], moved: set[str]) -> JaxFacts:
    """jax's planned facts, with the imports that failed on jax's API gone (imports.API_GONE) for a library that
    did not move, where jax moved to a newer release: a newer jax does not bring a removed name back, so moving jax
    up fixes none of them (the oneDNN rule's move to jax 0.4.29 left chromax failing on jax.random.PRNGKeyArray)."""
    from envaudit.rules.imports import API_GONE, outcomes  # lazily: it imports what fixes are made of

    before, after = version_or_none(facts.packages.get("jax", "")), version_or_none(installed.get("jax", ""))
    if before is None or after is None or after <= before:
        return planned
    gone = [
        o
        for o in outcomes(facts)
        if o.get("status") == "error"
        and o.get("distribution") not in moved
        and API_GONE.search(str(o.get("error")))
        and not _needs_newer_jax(facts, str(o.get("distribution")))
    ]
    return {**planned, "imports": [*planned.get("imports", []), *gone]} if gone else planned


def _needs_newer_jax(facts: Facts, name: str) -> bool:
    """Whether the library declares a jax the installed one does not meet: a name it misses is then one a newer jax
    added (flax 0.12.8 asks jax 0.4.30 for what jax 0.8 has), which moving jax up does bring."""
    from packaging.requirements import InvalidRequirement, Requirement

    installed = facts.packages.get("jax", "")
    for text in facts.requires.get(name, ()):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == "jax" and installed and not req.specifier.contains(installed, True):
            return True
    return False


def _unmoved_imports(jax: JaxFacts, moved: set[str]) -> JaxFacts:
    """jax's facts with the imports (and smoke calls) the audit tried that still hold: not those of a distribution
    that moved, nor a failure whose text names a module of one that moved (jax.scipy.linalg raising about scipy)."""
    if ("imports" not in jax and "calls" not in jax) or not moved:
        return jax
    modules = {name.replace("-", "_") for name in moved}

    def holds(outcome: ImportOutcome | CallOutcome) -> bool:
        said = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", f"{outcome.get('error', '')} {outcome.get('where', '')}")
        return outcome.get("distribution") not in moved and not modules & set(said)

    kept: JaxFacts = {**jax, "imports": [o for o in jax.get("imports", []) if holds(o)]}
    if "calls" in jax:  # a call is the same: what moved calls afresh
        kept["calls"] = [c for c in jax["calls"] if holds(c)]
    return kept


def _under_jax(facts: Facts, name: str) -> bool:
    """jax's own packages and what they require: moving one changes what `import jax` does, so what the audit
    measured of jax no longer holds (moving another library leaves it as measured)."""
    if coupled(name):
        return True
    return any(fixes.named(r) == name for package in ("jax", "jaxlib") for r in facts.requires.get(package, ()))


def key(facts: Facts) -> tuple[object, ...]:
    """What tells two states apart for a plan: what is installed, the variables and what pip left behind."""
    left = tuple(facts.python.get("leftovers") or ())
    return tuple(sorted(facts.packages.items())), tuple(sorted(facts.env.items())), facts.jax.get("status"), left


def _unshadowed(facts: Facts, pythonpath: str, user_site: str) -> tuple[dict[str, str], list[Duplicate]]:
    """The versions imported once a copy's directory is no longer before the environment's: the next copy's."""
    kept_entries = {os.path.normpath(e) for e in pythonpath.split(os.pathsep) if e}
    kept_entries |= {os.path.normpath(user_site)} if user_site else set()
    before = {os.path.normpath(e) for e in str(facts.python.get("pythonpath") or "").split(os.pathsep) if e}
    before |= {os.path.normpath(str(facts.python["user_site"]))} if facts.python.get("user_site") else set()
    gone = before - kept_entries
    packages, duplicates = dict(facts.packages), list[Duplicate]()
    for dup in facts.duplicates:
        copies = [
            (str(v), str(loc))
            for v, loc in zip(dup.get("versions") or [], dup.get("locations") or [], strict=False)
            if os.path.normpath(os.path.dirname(str(loc))) not in gone
        ]
        name = str(dup.get("name") or "")
        if copies and name in packages:
            packages[name] = copies[0][0]
        if len(copies) > 1:
            duplicates.append({"name": name, "versions": [v for v, _ in copies], "locations": [c for _, c in copies]})
    return packages, duplicates


def _installed(packages: dict[str, str], fix: Fix, python: str | None) -> dict[str, str]:
    """The versions after the fix's requirements (and what it holds) are installed, as pip would choose them."""
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    wanted: dict[str, SpecifierSet] = {}
    for text in (*fix.install, *fix.hold):
        req = Requirement(text)
        name = canonicalize_name(req.name)
        wanted[name] = wanted.get(name, SpecifierSet()) & req.specifier
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if not exact and req.extras and name == "jax":  # jax[cuda12]>=0.6.0: the newest jax whose extra installs
            exact = [v] if (v := _through_extra(req.specifier, set(req.extras), python)) else []
            if exact:
                wanted[name] &= SpecifierSet(f"=={exact[0]}")
        if exact:
            implied = {n: SpecifierSet(f"=={v}") for n, v in extras.implied(exact[0], set(req.extras)).items()}
        else:  # jaxlib and the plugin of that extra within the same bounds
            implied = {n: req.specifier for n in extras.implied("9999", set(req.extras))}
        for other, spec in implied.items():
            wanted[other] = wanted.get(other, SpecifierSet()) & spec
    found = dict(packages)
    for name, spec in wanted.items():
        current = packages.get(name)
        if current is not None and spec.contains(current, prereleases=True):
            continue
        chosen = _choose(name, spec, python)
        if chosen is not None:
            found[name] = chosen
        elif (current is None and not spec) or (current is not None and not coupled(name)):
            # a package no table knows, asked for by name (a dependency a library forgot to declare), or moved
            # past the release installed (`chromax>=0.0.3a0,!=0.0.3a0`): the installer takes a release whose number
            # is not known here (a build installs the range as written and says what it took)
            found[name] = _unknown_above(current, spec)
    for text in fix.reinstall:  # `--force-reinstall --no-deps jaxlib==0.4.13` installs it where it was missing too
        name, pinned = fixes.parse(text)
        if name not in found and pinned.startswith("=="):
            found[name] = pinned.removeprefix("==")
    return found


def _unknown_above(current: str | None, spec: SpecifierSet) -> str:
    """The release modelled for a package no table knows, moved by a range: where the range admits the release
    after the installed one (`pytensor>2.14.2`: a newer release, jax held), that one marked unknown (`2.14.3+unknown`:
    up, in the same major, as the range asks; the build says what the installer took), else UNKNOWN_RELEASE."""
    from envaudit.model.versions import version_or_none

    parsed = version_or_none(current or "")
    if parsed is None:
        return UNKNOWN_RELEASE
    following = ".".join(map(str, [*parsed.release[:-1], parsed.release[-1] + 1]))
    return f"{following}+unknown" if spec.contains(following, prereleases=True) else UNKNOWN_RELEASE


def _through_extra(spec: SpecifierSet, named: set[str], python: str | None) -> str | None:
    """The release an installer picks for `jax[EXTRA]` within `spec`: the newest jax release whose extra's every
    requirement has the release it asks for (pip backtracks past jax 0.12.1's cuda12 extra, whose
    jax-cuda12-plugin==0.12.1 was never released, to 0.12.0.1); None where the tables know none."""
    for version in sorted(releases("jax", python), key=numbers, reverse=True):
        if not spec.contains(version, prereleases=True):
            continue
        needed = extras.implied(version, named)
        if all(_released(name, v, python) for name, v in needed.items()):
            return version
    return None


def _released(name: str, version: str, python: str | None) -> bool:
    """Whether a release of a jax package exists to install: a GPU plugin's (or its PJRT package's) among the
    plugin's releases platform-wheels.toml read, which reads every package to the same day (a release past the
    newest jaxlib it read is unknown: True); jaxlib's, a wheel for this Python."""
    from envaudit.rules.platform_wheels import PLATFORM_WHEELS, platforms_of

    plugin = PLUGIN.match(name)
    if plugin is None:
        return not coupled(name) or not _wheels_known(name, python) or version in releases(name, python)
    newest = PLATFORM_WHEELS.load()["newest"]
    base = f"jax-{plugin['kind']}{plugin['major']}-plugin"
    if base not in newest or numbers(version) > numbers(newest.get("jaxlib", "0")):
        return True  # a plugin the table does not read, or a release past what it read: unknown
    return platforms_of(base, version) is not None


def _choose(name: str, spec: SpecifierSet, python: str | None) -> str | None:
    """The newest known release of `name` that meets `spec`, else the newest version the specifier names that meets
    it; None where nothing known meets it, and the installer would refuse: for jax's packages, whose releases per
    Python the wheel table lists, a version it does not list for this Python has no wheel to install."""
    known = [v for v in releases(name, python) if spec.contains(v, prereleases=True)]
    if known:
        return max(known, key=numbers)
    named = [v for v in fixes.candidates(str(spec)) if spec.contains(v, prereleases=True) and _made(v)]
    if _wheels_known(name, python):  # what the table covers and does not list has no wheel here
        named = [v for v in named if not covers(WHEELS.load(), v)]
    return max(named, key=numbers) if named else None


def _made(version: str) -> bool:
    """A version a project releases: not a post-release of a pre-release (0.0.3a0.post0, a stand-in the candidates
    of `>=0.0.3a0,!=0.0.3a0` name), which the state would then claim as installed."""
    parsed = version_or_none(version)
    return parsed is not None and not (parsed.pre is not None and parsed.post is not None)


def _wheels_known(name: str, python: str | None) -> bool:
    """Whether the wheel table lists this jax package's releases for this Python (so what it lacks does not
    install)."""
    return coupled(name) and python in WHEELS.load()["versions"]


@cache
def releases(name: str, python: str | None) -> tuple[str, ...]:
    """The releases a table lists for a distribution: jax's packages' for this Python (every Python's, when the
    facts do not say which), the library releases the API-removal table names."""
    if coupled(name):
        table = WHEELS.load()
        by_python = table["versions"]
        lists: Iterable[list[str]] = [by_python[python]] if python in by_python else by_python.values()
        return tuple(dict.fromkeys(v for found in lists for v in found))
    return tuple(dict.fromkeys(use["fixed"] for use in uses_of(name) if "fixed" in use))


def _unmet(
    before: list[Unsatisfied], requires: dict[str, list[str]], installed: dict[str, str], moved: set[str]
) -> list[Unsatisfied]:
    """What pip check would say after: the old answers of what did not move, each requirement on what moved asked
    again (a moved package's own requirements are unknown until it is installed)."""
    from packaging.specifiers import SpecifierSet

    kept = [r for r in before if r.get("package") not in moved and fixes.named(str(r.get("requires"))) not in moved]
    for package, reqs in sorted(requires.items()):
        for text in reqs:
            target, spec = fixes.parse(text)
            version = installed.get(target)
            if target in moved and version is not None and not SpecifierSet(spec).contains(version, prereleases=True):
                kept.append({"package": package, "requires": text, "installed": version})
    return kept


def _planned_jax(facts: Facts, installed: dict[str, str], env: dict[str, str]) -> JaxFacts:
    """jax as a plan has it: not imported, configured by the variables it will run with (and the program's own
    configuration, which the audit saw and nothing here changes), on the accelerator it will compute on."""
    jax = facts.jax
    precision = env.get("JAX_DEFAULT_MATMUL_PRECISION")
    x64 = env_flag(env.get("JAX_ENABLE_X64"))
    planned: JaxFacts = {
        "status": "unknown",
        "x64": bool(jax.get("x64")) if x64 is None else x64,
        "default_matmul_precision": precision.lower() if precision else jax.get("default_matmul_precision"),
    }
    platform = _platform(facts, installed, env)
    if platform:
        planned["platform"] = platform
    return planned


def _platform(facts: Facts, installed: dict[str, str], env: dict[str, str]) -> str:
    """The backend jax will compute on by default after the move, where the state says: a CUDA plugin at jaxlib's
    release on a machine whose GPUs NVML sees; the TPU where jax computed on it and libtpu is still installed;
    unknown ("") otherwise, or where JAX_PLATFORMS chooses (the rules read the variable)."""
    if env.get("JAX_PLATFORMS") or env.get("JAX_PLATFORM_NAME"):
        return ""
    jaxlib = installed.get("jaxlib", "")
    gpus = facts.nvidia.get("status") == "ok" and bool(facts.nvidia.get("gpus"))
    cuda = [n for n, v in installed.items() if (m := PLUGIN.match(n)) and m["kind"] == "cuda" and v == jaxlib]
    if gpus and cuda:
        return "cuda"
    before = str(facts.jax.get("platform") or "")
    if before == "tpu" and any(n in installed for n in TPU_PACKAGES):
        return "tpu"
    return ""
