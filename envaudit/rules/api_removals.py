"""The library releases that use a jax name a jax release they install with lacks (removed, or not yet added), or
pass a keyword argument its callable does not take there (`keyword`: blackjax 1.2.1's `jnp.clip(..., max=1)`, a
TypeError with jax 0.4.26, whose clip takes a_min/a_max): `api-removals.toml`, DERIVED by derive/ from the released
wheels (`python -m derive.tables.api_removals`); a guarded use (`if hasattr(jax, ...)`, `try: ... except
ImportError:`) counts on the jax releases where its branch runs.
Each library gets its own check, so a rule on one library folds only its own; a use at import, or on the main path
(`standard_path`: a call the library's README shows reaches it, tables/derived/entry-points.toml), is a failure, one
only a few functions off that path reach a warning. Either way the fix is the first release of the library that no
entry condemns with the installed jax (`first_unaffected`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TypedDict

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.scope import canonicalize_name
from envaudit.model.versions import version_or_none
from envaudit.rules import fixing, follow, wheels
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import JEP_9419
from envaudit.rules.releases import is_release, numbers
from envaudit.rules.table import TABLES, Span, Table, span


class _UseOptional(TypedDict, total=False):
    keyword: str  # a keyword argument of a call of `api` that the entry's jax releases do not take
    fixed: str  # the first release of the library without the use
    functions: list[str]  # a call-time use: the public functions that reach it (read at the library's tag)
    standard_path: str  # the main-path call that reaches it too (flax.linen.Module.init), where one does
    module: str  # an import-time use that only the import of this module runs (`import PACKAGE` does not reach it)
    stub: bool  # the jax releases keep the name, a function that raises when called: importing it works


class Use(_UseOptional):
    package: str
    versions: list[str]  # specifiers of the library releases with the use
    jax: str  # specifier of the jax releases without the API
    api: str
    kind: str  # "import" or "first call"
    evidence: str  # file:line at the library's tag


class ApiRemovals(Span):  # api-removals.toml: covers_from/covers_to, the jax releases whose names were read
    use: list[Use]


REMOVALS = Table("api-removals.toml", ApiRemovals, jax=span)


def _removed_uses(facts: Facts, package: str, any_jax: bool = False) -> list[Use]:
    """The table's uses, by the installed release of `package`, of a jax API that the installed jax no longer has
    (any_jax: that any jax release lacks); but those an import or a call measured here contradicts (`contradicted`)."""
    from envaudit.rules import calls, imports

    uses = _table_uses(facts, package, any_jax)
    if not uses:  # most libraries the table speaks of are not installed: no measurement to read
        return []
    cleared = imports.imported(facts, package)  # it imported here: no use that `import PACKAGE` runs breaks it
    # (one at the import of a module that `import PACKAGE` does not reach, `module`, was not tried); its smoke call
    # worked here: no use on its main path (`standard_path`) breaks it
    ran = calls.called(facts, package)
    return [
        use
        for use in uses
        if not (cleared and _at_import(use))
        and not (ran and "standard_path" in use)
        and not ("module" in use and _module_imported(facts, package, use["module"]))
    ]


# libraries of several frameworks that compute with jax only where the user chose it: the variable that chooses
BACKENDS = {"keras": "KERAS_BACKEND"}


def _on_jax(facts: Facts, package: str) -> bool:
    """Whether the library computes with jax here: always, but for a library of several frameworks (Keras 3), where
    its variable names jax or the imports probe imported it (it does only on the jax backend, keras.json's too).
    TensorFlow's Keras beside a jax 0.4.25 never calls jax: the neural-tangents stack failed for it."""
    from envaudit.rules import imports

    variable = BACKENDS.get(package)
    if variable is None:
        return True
    tried = any(o.get("distribution") == package for o in imports.outcomes(facts))
    return facts.env.get(variable) == "jax" or tried


def _table_uses(facts: Facts, package: str, any_jax: bool = False) -> list[Use]:
    """The table's uses that speak of the installed releases of `package` and jax, whatever was measured."""
    from packaging.specifiers import SpecifierSet

    jax, version = facts.packages.get("jax", ""), facts.packages.get(package, "")
    if not version or not is_release(jax) or not _read(package, version) or not _on_jax(facts, package):
        return []
    return [
        use
        for use in uses_of(package)
        if (any_jax or SpecifierSet(use["jax"]).contains(jax, prereleases=True))
        and any(SpecifierSet(spec).contains(version, prereleases=True) for spec in use["versions"])
    ]


def claimed_modules(facts: Facts) -> dict[str, list[str]]:
    """The modules the table says break at their own import with these releases (a library's Flax models, its
    jax substrate), by distribution: what a measurement imports beside the library's top level, so that a working
    `import PACKAGE` is not taken for them."""
    found: dict[str, list[str]] = {}
    for package in removal_packages():
        modules = [use["module"] for use in _table_uses(facts, package) if use["kind"] == "import" and "module" in use]
        if modules:
            found[package] = sorted(set(modules))
    return found


def _module_imported(facts: Facts, package: str, module: str) -> bool:
    """Whether that module of the library was imported here and worked."""
    from envaudit.rules import imports

    return any(
        o.get("distribution") == package and o.get("module") == module and o.get("status") == "ok"
        for o in imports.outcomes(facts)
    )


def _at_import(use: Use) -> bool:
    """A use that `import PACKAGE` runs (not one at the import of a module it does not reach)."""
    return use["kind"] == "import" and "module" not in use


def contradicted(facts: Facts) -> list[Occurrence]:
    """The table's entries that say importing a library fails with this jax, where its import was measured working,
    or that its main path (`standard_path`) fails, where its smoke call was (the audit's imports probe, or a plan
    built here): evidence beats a table, so the entry is not counted, and this says which it is, so that it gets
    corrected."""
    from envaudit.rules import calls, imports

    found = []
    for package in removal_packages():
        uses = _table_uses(facts, package)
        if not uses:
            continue
        wrong = [u for u in uses if _at_import(u)] if imports.imported(facts, package) else []
        wrong += [u for u in uses if "module" in u and _module_imported(facts, package, u["module"])]
        main = [u for u in uses if "standard_path" in u and u not in wrong] if calls.called(facts, package) else []
        said, worked = [], []
        if wrong:
            modules = {str(o.get("module")) for o in imports.outcomes(facts) if o.get("distribution") == package}
            said.append(f"importing it fails: it uses {_entries(wrong)}")
            worked += [f"`import {m}`" for m in sorted(modules)]
        if main:
            said.append(f"its main path fails: it uses {_entries(main)}")
            ran = {str(o.get("call")) for o in calls.outcomes(facts) if o.get("distribution") == package}
            worked += [f"`{c}`" for c in sorted(ran)]
        if not said:
            continue
        detail = (
            f"{REMOVALS.name} says of {package} {facts.packages[package]} with jax {facts.packages.get('jax')} that "
            f"{'; and '.join(said)}; measured, {', '.join(worked)} worked: the entry is wrong for this pair and is "
            "not counted"
        )
        found.append(Occurrence(detail, about=package))
    return found


def _entries(uses: list[Use]) -> str:
    return "; ".join(f"{named(u)} (its entry: jax {u['jax']} {_lacks(u)}; {u['evidence']})" for u in uses)


def named(use: Use) -> str:
    """What the entry says the library uses: the name, or the call with the keyword it passes."""
    return f"{use['api']}({use['keyword']}=...)" if "keyword" in use else use["api"]


def _lacks(use: Use) -> str:
    return "does not take it" if "keyword" in use else "lacks it"


def removal_start(use: Use) -> str:
    """X of an entry's `jax` span `>=X` or `>=X,<Y`: the first jax release without the name; "" for a name the
    library uses before jax added it (`<X`)."""
    return next((p.removeprefix(">=") for p in str(use["jax"]).split(",") if p.startswith(">=")), "")


def _back_by(use: Use, floor: str) -> bool:
    """Whether jax brought the name back (`>=X,<Y`) by `floor` (Y at or below it)."""
    back = next((p.removeprefix("<") for p in str(use["jax"]).split(",") if p.startswith("<")), "")
    return bool(floor and back and numbers(back) <= numbers(floor))


def removal_packages() -> list[str]:
    """The libraries the table speaks of, in its order: each gets its own check, so a rule on one library folds only
    its own. Read from the file's `package = "..."` lines, which the derivation writes one per entry, not from the
    loaded table: the checks are made at import, and loading the table there (its 1,700 entries checked against
    their shape) cost every command 30 ms before any rule ran (tests/rules pins the two readings equal)."""
    text = REMOVALS.path.read_text(encoding="utf-8")
    return list(dict.fromkeys(PACKAGE_LINE.findall(text)))


PACKAGE_LINE = re.compile(r'^package = "([^"]+)"$', re.MULTILINE)


def uses_of(package: str) -> list[Use]:
    """The table's entries for one library, in the table's order."""
    return _by_package().get(package, [])


_GROUPED: list[tuple[list[Use], dict[str, list[Use]]]] = []  # the table's uses and them by library, made once


def _by_package() -> dict[str, list[Use]]:
    """The table's uses by library, in the table's order (each check reads its own library's, in every evaluation
    of every stack a plan weighs: scanning the 1,288 entries each time was a third of a plan's rule time)."""
    uses = REMOVALS.load()["use"]
    if not _GROUPED or _GROUPED[0][0] is not uses:
        grouped: dict[str, list[Use]] = {}
        for use in uses:
            grouped.setdefault(use["package"], []).append(use)
        _GROUPED[:] = [(uses, grouped)]
    return _GROUPED[0][1]


def removed_api_uses(package: str) -> Callable[[Facts], list[Occurrence]]:
    """The check of one library: each removed API it uses, how it fails, and where the use is (one finding)."""

    def run(facts: Facts) -> list[Occurrence]:
        from envaudit.rules import imports  # which imports this module's tables

        uses = _removed_uses(facts, package)
        if not uses:
            return []
        said = "; ".join(f"uses {named(u)} ({_breaks(package, u)}: {u['evidence']})" for u in uses)
        detail = f"{package} {facts.packages[package]} with jax {facts.packages.get('jax')}: {said}"
        # at import, or on the everyday path (Module.init): a failure; only where a few functions call it, a warning
        # (a probe or an import that shows the user's path broken makes it a failure: envaudit/judge/causes.py)
        everyday = any(_everyday(u) for u in uses)
        if not everyday and (chain := imports.transitive(facts, package, live=True)):
            # off the everyday path of a library nobody asked for by name: said, with who pulls it in, as its call
            # is (rules/calls.py); no plan moves the user's stack for a function their program is not known to call
            return [Occurrence(detail + imports.pulled(chain), Fix(), "info")]
        fix = _removed_api_fix(facts, package)
        return [Occurrence(detail, fix, None if everyday else "warn")]

    return run


def _breaks(package: str, use: Use) -> str:
    """How a use breaks, as the user meets it: the import, the everyday call, or the functions that reach it."""
    if use["kind"] == "import":
        return f"import {use.get('module') or import_name(package)} fails"
    if "standard_path" in use:
        return f"fails on first call, {use['standard_path']} included"
    functions = use.get("functions") or []
    return f"fails on first call of {', '.join(functions)}" if functions else "fails on first call"


@functools.cache
def _import_names() -> dict[str, list[str]]:
    """Each library's modules, as its newest wheel installs them (tables/derived/libraries.toml, derived by
    derive/tables/libraries.py from the wheel's RECORD); read only when a finding names one."""
    import tomllib

    with (TABLES / "derived" / "libraries.toml").open("rb") as handle:
        return {lib["package"]: lib["imports"] for lib in tomllib.load(handle)["library"]}


def import_name(package: str) -> str:
    """The module a user imports for a distribution: the one of its modules whose name is the distribution's
    (orbax-checkpoint: orbax.checkpoint) or a part of it (dm-haiku: haiku, ott-jax: ott), else its first; a library
    the list lacks, the distribution's name as a module's (kfac-jax: kfac_jax)."""
    modules = _import_names().get(package, [])
    parts = package.split("-")
    for module in modules:
        if canonicalize_name(module) == package:
            return module
    for module in modules:
        if canonicalize_name(module) in parts:
            return module
    return modules[0] if modules else package.replace("-", "_")


def _removed_api_fix(facts: Facts, name: str) -> Fix:
    """The library at the first release that no entry of the table condemns with the installed jax, the installed
    jax held (a newer library may require a newer jax, which pip would install unasked); with no such release, the
    jax releases that have every name the release uses. A warning (a corner of the library) gets the same fix: the
    finding says it is one, and the plan declines a warning's fix that would move anything down."""
    upgrade = first_unaffected(facts, name)
    if upgrade:  # (where every release read after it is condemned too, no upgrade fixes it with this jax)
        return fixing.install(facts, [f"{name}>={upgrade}"], hold=fixing.installed_jax(facts))
    if below := last_unaffected_below(facts, name):  # no newer release stands beside this jax: an older one does
        return fixing.install(facts, [f"{name}<{below[1]}"], hold=fixing.installed_jax(facts))
    return _jax_for(facts, name)


def _jax_the_other_way(name: str) -> Callable[[Facts], Fix]:
    """The other direction where the fix moves the library: the library held, jax moved to the releases that have
    every name it uses (`_jax_for`), made the newest release with a wheel through jax's extra (rules/follow, as a
    data rule's other way); nothing where the fix already moves jax."""

    def other(facts: Facts) -> Fix:
        if not first_unaffected(facts, name) and not last_unaffected_below(facts, name):
            return Fix()
        ranged = _jax_for(facts, name).install
        pins = follow.planned(facts, list(ranged)) if ranged else []
        return fixing.install(facts, pins, installed_only=True) if pins else Fix()

    return other


def _jax_for(facts: Facts, name: str) -> Fix:
    """The jax releases that have every name the installed release of the library uses."""
    # no release without the use: the jax releases that have every name this release uses, from the first with
    # the newest it needs (`<X`: jax added it in X) to below the first removal (`>=X`, or `>=X,<Y` for a name jax
    # brought back), either bound alone where the release has no use of the other kind (keras 3.12 needs
    # jax.export, first in jax 0.4.30, and uses no name jax removed: jax>=0.4.30); none (it needs a name jax removed
    # before adding another): no fix to print
    every = _removed_uses(facts, name, any_jax=True)
    # what a user meets (at import, on the everyday path) bounds the jax it moves to; a use a few functions off that
    # path make does so only where there is no other (jax-md 0.2.8: jax.random.KeyArray at import, gone in 0.4.24,
    # and jax.experimental.maps.Mesh in one function, gone in 0.4.11: jax<0.4.24, not jax<0.4.11, which has no
    # wheel for Python 3.11)
    every = [u for u in every if _everyday(u)] or every
    needs = [u["jax"].removeprefix("<") for u in every if u["jax"].startswith("<")]
    newest = max(needs, key=numbers, default="")
    # a name jax lacked for a while only (`>=X,<Y`, Y at or below the floor: keras 3.12's splash_attention, absent
    # from 0.4.15 to 0.4.24) bounds nothing above the floor
    lowers = [start for u in every if (start := removal_start(u)) and not _back_by(u, newest)]
    earliest = min(lowers, key=numbers, default="")
    if not (earliest or newest) or (newest and earliest and numbers(newest) >= numbers(earliest)):
        return Fix()
    floor = [f"jax>={newest}", f"jaxlib>={newest}"] if newest else []
    ceiling = [f"jax<{earliest}", f"jaxlib<{earliest}"] if earliest else []
    if wheels.range_installs_here(facts, [*floor, *ceiling]) is False:
        return Fix()  # no jaxlib in that range has a wheel for this Python: the installer would refuse it
    return fixing.install(facts, [*floor, *ceiling])


def _everyday(use: Use) -> bool:
    """A use the user meets: at import, or on the main path. One on a first call that no function is known to make
    (a name a raising stub keeps, bound at the library's import: host_callback.call in brainpy 2.6) is not known to
    be on the user's path: a warning, as one confined to a few functions is."""
    return use["kind"] == "import" or "standard_path" in use


def _read(package: str, version: str) -> bool:
    """A release of `package` the table speaks of: a final one, or a pre-release its entries name (a library whose
    releases are all pre-releases has them read: jraph's are .dev0)."""
    return is_release(version) or (
        version_or_none(version) is not None and version in _releases_named(package, finals=False)
    )


def _releases_named(package: str, finals: bool = True) -> list[str]:
    """The releases of `package` the table names (its `fixed` releases and the bounds of its `versions`): each was
    read by the derivation, and the first release after a run of condemned ones is always among them (finals=False:
    its pre-releases too)."""
    found = set()
    for use in uses_of(package):
        found.update([use["fixed"]] if "fixed" in use else [])
        for spec in use["versions"]:
            found.update(part.lstrip("<>=!~") for part in spec.split(","))
    return sorted((v for v in found if is_release(v) or (not finals and version_or_none(v))), key=numbers)


def first_unaffected(facts: Facts, package: str) -> str:
    """The first release of `package` after the installed one that no entry of the table condemns with the
    installed jax ("" where every release the table names after it is condemned, or none follows). Not the first
    release that fixes one entry: numpyro 0.20.0 drops jax.interpreters.pxla.xla_pmap_p, but uses
    jax.extend.core.primitives.xla_pmap_p, which jax 0.10.0 lacks too (fixed in 0.21.0). A release whose declared
    requirements do not admit that jax (`_standing`) is none either."""
    jax, installed = facts.packages.get("jax", ""), facts.packages.get(package, "")
    if not is_release(jax) or not is_release(installed):
        return ""
    stands = _standing(facts, package, jax)
    return next((v for v in _releases_named(package) if numbers(v) > numbers(installed) and stands(v)), "")


def last_unaffected_below(facts: Facts, package: str) -> tuple[str, str] | None:
    """Where no newer release stands beside the installed jax (`first_unaffected` finds none): the newest release
    below the installed one that no entry condemns with that jax and whose requirements admit it, and the release
    the table names after it (its bound: `flax<0.10.0` takes 0.9.x beside jax 0.4.30, where flax 0.10.0-0.10.4
    call jax.core.get_opaque_trace_state, first in jax 0.4.34, and 0.10.5 requires jax>=0.5.1); None where none."""
    jax, installed = facts.packages.get("jax", ""), facts.packages.get(package, "")
    if not is_release(jax) or not is_release(installed):
        return None
    stands = _standing(facts, package, jax)
    named = sorted(_releases_named(package), key=numbers)
    pairs = zip(reversed(named[:-1]), reversed(named[1:]), strict=True)
    return next(((b, a) for b, a in pairs if numbers(a) <= numbers(installed) and stands(b)), None)


def _standing(facts: Facts, package: str, jax: str) -> Callable[[str], bool]:
    """Whether a release of the library stands beside the installed jax, which its fix holds: no entry of the table
    condemns it with that jax, and its declared requirements admit that jax (flax 0.10.5 requires jax>=0.5.1: no
    installer puts it beside a held jax 0.4.35, so it is no way out there)."""
    from packaging.specifiers import SpecifierSet

    from envaudit.rules import declared  # lazily: the tables load on a plan's first use

    condemning = [
        SpecifierSet(spec)
        for use in uses_of(package)
        if SpecifierSet(use["jax"]).contains(jax, prereleases=True)
        for spec in use["versions"]
    ]

    def stands(version: str) -> bool:
        if any(spec.contains(version, prereleases=True) for spec in condemning):
            return False
        return declared.admits(facts, package, version, {"jax": jax})

    return stands


CONTRADICTED = Check(
    id="api-removal-contradicted",
    severity="info",
    title="an import or a call measured working contradicts the API-removal table: the table's entry is not counted",
    fix="correct that entry, its guard or its span of releases (derive/tables/api_removals.py derives the table)",
    references=("https://github.com/jax-ml/jax/blob/main/CHANGELOG.md",),
    run=contradicted,
)

FAMILY = "removed-jax-api-in-"  # one check per library the table speaks of: listed as one family in the README

REMOVED_API: tuple[Check, ...] = tuple(
    Check(
        id=f"{FAMILY}{name}",
        severity="fail",
        title=f"{name} uses a jax API that the installed jax does not have (a warning where only functions "
        "off the everyday path call it)",
        fix="upgrade it to a release that no longer uses it, or keep jax below the removal",
        references=("https://github.com/jax-ml/jax/blob/main/CHANGELOG.md", JEP_9419),
        run=removed_api_uses(name),
        explains=(f"@{name}:error", f"@{name}:call", "jax-api-missing"),  # its import, its call, a probe that needs it
        other=_jax_the_other_way(name),
    )
    for name in removal_packages()
)
