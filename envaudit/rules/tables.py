"""Constraints that are tables over releases, read from the releases' own sources and kept as data with provenance.

Hand-written version ranges drift and get invented; these tables were read (`tables/*.toml` says from where and
when): jax's `_minimum_jaxlib_version` at each jax tag, applied as `import jax` applies it; what each jax and
jaxlib release declares it needs; the Pythons each jaxlib has a Linux x86_64 wheel for, as the package index lists
them; the library releases that use a jax API a later jax removed; the values jax accepts for the variables
envaudit reads. A release a table does not cover is unknown, never a finding: a table that stops is not a claim that
nothing came after.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from envaudit.model import fixes
from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.redact import REDACTED
from envaudit.rules.accessors import env_flag, release, version_or_none
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import JAX_CONFIG, JEP_9419
from envaudit.rules.tablefiles import TABLES as TABLES  # the tables, loaded and checked by tablefiles
from envaudit.rules.tablefiles import load as load

TABLE = TABLES / "jax-minimum-jaxlib.toml"
REQUIRES = TABLES / "jax-requires.toml"
WHEELS = TABLES / "jaxlib-wheels.toml"
REMOVALS = TABLES / "api-removals.toml"
JAX_ENV = TABLES / "jax-env.toml"


def numbers(version: str) -> tuple[int, ...]:
    """A version as jax's check_jaxlib_version compares it: its release numbers (.devN, rcN, +local cut), trailing
    zeros cut as PEP 440 compares them (`jaxlib==0.4.30.0` installs 0.4.30, which reports "0.4.30"); () for what is
    no version."""
    return release(version) or ()


def _listed(version: str, listed: Sequence[str]) -> bool:
    """Whether a release is in a table's list of releases, as pip matches a pin to it (0.4.30.0 is 0.4.30)."""
    return numbers(version) in {numbers(item) for item in listed}


def _release(version: str) -> bool:
    """A version a release table can speak of: a valid one, not a pre-release or a nightly (their pins differ)."""
    parsed = version_or_none(version)
    return parsed is not None and not parsed.is_prerelease


def _row(rows: dict[str, Any], version: str) -> Any:
    """The row of a table keyed by release ("0.6.0") for a version that may be written otherwise (0.6, 0.6.0.0,
    0.6.0+cuda12): matched by release numbers, as jax compares them; None when the table has no such row."""
    wanted = numbers(version)
    return next((row for key, row in rows.items() if numbers(key) == wanted), None)


def import_coupling(facts: Facts) -> list[str]:
    """What `import jax` raises for this jax and jaxlib, from jax's own table: a jaxlib older than the release's
    minimum, or newer than jax. Needs no pip metadata, so a plan sees it too."""
    jax, jaxlib = facts.packages.get("jax"), facts.packages.get("jaxlib")
    if not jax or not jaxlib or not _release(jax) or not _release(jaxlib):
        return []
    if facts.origin == "live" and facts.jax.get("status") == "ok":
        return []  # jax imported here: what it did outranks what the table says it would
    table = load(TABLE)
    if numbers(jaxlib) > numbers(jax) >= numbers(table["newer_check_since"]):
        return [table["newer_message"].format(jaxlib=jaxlib, jax=jax)]
    minimum = _row(table["minimum_jaxlib"], jax)
    if minimum is not None and numbers(jaxlib) < numbers(minimum):
        return [f"jax {jax}: " + table["older_message"].format(jaxlib=jaxlib, minimum=minimum)]
    return []


def covers(table: dict[str, Any], version: str) -> bool:
    """Whether a table read over a span of releases (its covers_from and covers_to) speaks of this version."""
    return numbers(table["covers_from"]) <= numbers(version) <= numbers(table["covers_to"])


def python_of(facts: Facts) -> str | None:
    """The facts' Python as the table keys it ("3.12"), when they say."""
    found = re.match(r"(\d+)\.(\d+)", str(facts.python.get("version") or ""))
    return f"{found[1]}.{found[2]}" if found else None


def no_wheel(facts: Facts) -> list[Occurrence]:
    """A planned jaxlib that has no wheel for the planned Python: the plan cannot be installed. Anything else
    (a live audit, the hook, a pasted report) describes what is installed, so only a plan can have this problem."""
    python, jaxlib = python_of(facts), facts.packages.get("jaxlib", "").split("+")[0]
    table = load(WHEELS)
    wheels = table["versions"].get(python)
    if facts.origin != "plan" or not _release(jaxlib) or wheels is None or not covers(table, jaxlib):
        return []  # only a plan can be uninstallable: whatever else was stated or found is installed
    if _listed(jaxlib, wheels) or _listed(jaxlib, table["yanked"]):
        return []  # a yanked release still installs when pinned exactly (PEP 592)
    return [
        Occurrence(
            f"jaxlib {jaxlib} has no wheel for Python {python} on Linux x86_64 (the index has jaxlib "
            f"{wheels[0]} to {wheels[-1]} for it)"
        )
    ]


def pythons(pins: Sequence[str]) -> list[str] | None:
    """The Pythons that have a wheel of the jaxlib release these pins fix (`jax==V`, `jaxlib==V`, or a GPU plugin's
    `==V`: released with jaxlib, for its Pythons), or None when they fix none the table covers."""
    exact = [
        p.split("==", 1)[1].strip()
        for p in pins
        if re.match(r"^(jax|jaxlib|jax-(cuda|rocm)\d+-(plugin|pjrt))(\[[^\]]*\])?\s*==", p)
    ]
    if not exact or not covers(load(WHEELS), exact[0]):
        return None
    return [py for py, found in load(WHEELS)["versions"].items() if _listed(exact[0], found)]


def installs_here(facts: Facts, pins: Sequence[str]) -> bool | None:
    """Whether the jaxlib these pins fix has a wheel for the audited Python (None: the table or the facts cannot
    say)."""
    found, here = pythons(pins), python_of(facts)
    return None if found is None or here is None or here not in load(WHEELS)["versions"] else here in found


def on_this_python(facts: Facts, fix: Fix, pins: Sequence[str]) -> tuple[Fix, str]:
    """A rule's or check's fix of these pins as this Python can take it: none where the jaxlib they fix has no
    wheel for it (pip would refuse the command), and what the pins cost in Pythons, for the detail."""
    return (Fix() if installs_here(facts, pins) is False else fix), cost(facts, pins)


def cost(facts: Facts, pins: Sequence[str]) -> str:
    """What a fix of these pins costs in Pythons, as a clause for its finding ("" when nothing): a fix that cannot
    install on the audited Python must say so, not fail later in pip."""
    found = pythons(pins)
    if found is None or found == list(load(WHEELS)["versions"]):
        return ""
    span = f"Python {found[0]} to {found[-1]}" if found else "no Python"
    here = python_of(facts)
    if here is not None and here not in found:
        return f"; it cannot install on Python {here}: the jaxlib it pins has wheels for {span} only"
    return f"; it needs {span}"


def _removed_uses(facts: Facts, package: str, any_jax: bool = False) -> list[dict[str, Any]]:
    """The table's uses, by the installed release of `package`, of a jax API that the installed jax no longer has
    (any_jax: that any jax release lacks)."""
    from packaging.specifiers import SpecifierSet

    from envaudit.rules import imports

    jax, version = facts.packages.get("jax", ""), facts.packages.get(package, "")
    if not _release(jax) or not _release(version):
        return []
    cleared = imports.imported(facts, package)  # it imported here: no use that `import PACKAGE` runs breaks it
    # (one at the import of a module that `import PACKAGE` does not reach, `module`, was not tried)
    return [
        use
        for use in load(REMOVALS)["use"]
        if use["package"] == package
        and not (cleared and use["kind"] == "import" and "module" not in use)
        and (any_jax or SpecifierSet(use["jax"]).contains(jax, prereleases=True))
        and any(SpecifierSet(spec).contains(version, prereleases=True) for spec in use["versions"])
    ]


def removal_start(use: dict[str, Any]) -> str:
    """X of an entry's `jax` span `>=X` or `>=X,<Y`: the first jax release without the name; "" for a name the
    library uses before jax added it (`<X`)."""
    return next((p.removeprefix(">=") for p in str(use["jax"]).split(",") if p.startswith(">=")), "")


def removal_packages() -> list[str]:
    """The libraries the table speaks of: each gets its own check, so a rule on one library folds only its own."""
    return list(dict.fromkeys(use["package"] for use in load(REMOVALS)["use"]))


def removed_api_uses(package: str) -> Callable[[Facts], list[Occurrence]]:
    """The check of one library: each removed API it uses, how it fails, and where the use is (one finding)."""

    def run(facts: Facts) -> list[Occurrence]:
        uses = _removed_uses(facts, package)
        if not uses:
            return []
        said = "; ".join(f"uses {u['api']} ({_breaks(package, u)}: {u['evidence']})" for u in uses)
        detail = f"{package} {facts.packages[package]} with jax {facts.packages.get('jax')}: {said}"
        # at import, or on the everyday path (Module.init): a failure; only where a few functions call it, a warning
        # (a probe or an import that shows the user's path broken makes it a failure: envaudit/judge/causes.py)
        everyday = any(u["kind"] == "import" or "standard_path" in u or not u.get("functions") for u in uses)
        fix = _removed_api_fix(facts, package, uses, everyday)
        return [Occurrence(detail, fix, None if everyday else "warn")]

    return run


def _breaks(package: str, use: dict[str, Any]) -> str:
    """How a use breaks, as the user meets it: the import, the everyday call, or the functions that reach it."""
    if use["kind"] == "import":
        return f"import {use.get('module', package)} fails"
    if "standard_path" in use:
        return f"fails on first call, {use['standard_path']} included"
    functions = use.get("functions") or []
    return f"fails on first call of {', '.join(functions)}" if functions else "fails on first call"


def _removed_api_fix(facts: Facts, name: str, uses: list[dict[str, Any]], everyday: bool) -> Fix:
    """The library at the first release without any of those uses, the installed jax held (a newer library may
    require a newer jax, which pip would install unasked); with no fixed release, the jax releases that have every
    name the release uses; none for a warning."""
    if not everyday:  # a few functions off the everyday path: a pin to dodge them would cost more than it saves
        return Fix()  # (and could undo a plan that chose this release for its jax); the detail names them
    if all("fixed" in u for u in uses):
        upgrade = f"{name}>={max((u['fixed'] for u in uses), key=numbers)}"
        return fixes.install(facts, [upgrade], hold=fixes.installed_jax(facts))
    # no release without the use: the jax releases that have every name this release uses, from the first with
    # the newest it needs (`<X`: jax added it in X) to below the first removal (`>=X`, or `>=X,<Y` for a name jax
    # brought back); none (it needs a name jax removed before adding another): no fix to print
    every = _removed_uses(facts, name, any_jax=True)
    lowers = [start for u in every if (start := removal_start(u))]
    needs = [u["jax"].removeprefix("<") for u in every if u["jax"].startswith("<")]
    earliest, newest = min(lowers, key=numbers, default=""), max(needs, key=numbers, default="")
    if not earliest or (newest and numbers(newest) >= numbers(earliest)):
        return Fix()
    floor = [f"jax>={newest}", f"jaxlib>={newest}"] if newest else []
    return fixes.install(facts, [*floor, f"jax<{earliest}", f"jaxlib<{earliest}"])


def _accepted(enum: dict[str, Any], jax: str) -> set[str]:
    """The values a jax release accepts for an enum variable."""
    added = [v for since, values in enum["since"].items() if numbers(jax) >= numbers(since) for v in values]
    return {*enum["legacy"], *added}


def invalid_env(facts: Facts) -> list[Occurrence]:
    """The variables whose value makes `import jax` raise, read as jax reads them (case and blanks count), for a
    jax release the table covers; where jax imported, it accepted them, whatever the table says."""
    table, jax = load(JAX_ENV), facts.packages.get("jax", "")
    if not _release(jax) or not covers(table, jax):
        return []  # no jax, a nightly, or a release the table does not cover: unknown
    if facts.jax.get("status") == "ok":
        return []
    found = []
    for name, value in sorted(facts.env.items()):
        if value == REDACTED:
            continue
        if name in table["bool"]["variables"] and env_flag(value) is None:
            said = table["bool"]["message"].format(value=value.lower(), name=name)
            found.append(Occurrence(f"{name}={value!r}: {said}", fixes.unset(facts, name)))  # jax's default then
        enum = table["enum"].get(name)
        if enum and value not in _accepted(enum, jax):
            said = enum["message"].format(value=value, flag=enum["flag"])
            meant = value.strip().lower()  # jax reads the value as it is: FLOAT32 is refused, float32 accepted
            fix = fixes.export(facts, name, meant) if meant in _accepted(enum, jax) else fixes.unset(facts, name)
            found.append(Occurrence(f"{name}={value!r}: {said}", fix))
    return found


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
JAX_ENV_INVALID = Check(
    id="jax-env-invalid",
    severity="fail",
    title="a JAX_* variable has a value jax refuses: `import jax` raises ValueError",
    fix="the value jax accepts (JAX_DEFAULT_MATMUL_PRECISION=float32, in lower case), or the variable unset "
    "(JAX_ENABLE_X64 takes 1 or 0)",
    references=(JAX_CONFIG,),
    run=invalid_env,
    explains=("jax-broken", "jax:*"),
)
NO_JAXLIB_WHEEL_FOR_PYTHON = Check(
    id="no-jaxlib-wheel-for-python",
    severity="warn",
    title="the planned jaxlib has no wheel for the planned Python: pip cannot install it",
    fix="pin a jaxlib released for that Python (or plan another Python)",
    references=("https://pypi.org/project/jaxlib/#files",),
    run=no_wheel,
)
REMOVED_API: tuple[Check, ...] = tuple(
    Check(
        id=f"removed-jax-api-in-{name}",
        severity="fail",
        title=f"{name} uses a jax API that the installed jax does not have (a warning where only functions "
        "off the everyday path call it)",
        fix="upgrade it to a release that no longer uses it, or keep jax below the removal",
        references=("https://github.com/jax-ml/jax/blob/main/CHANGELOG.md", JEP_9419),
        run=removed_api_uses(name),
        explains=(f"@{name}:error", "jax-api-missing"),  # a probe that imports it ends in its error
    )
    for name in removal_packages()
)
