"""The Pythons each jaxlib has a Linux x86_64 wheel for, as the package index lists them (`jaxlib-wheels.toml`): a
plan that cannot install is a finding, and every fix that pins a jaxlib says what it costs in Pythons (`priced`,
in the registry) and is no command where the audited Python has no wheel of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypedDict

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.versions import public
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.releases import covers, is_release, listed, numbers
from envaudit.rules.table import Span, Table, span


class _WheelsOptional(TypedDict, total=False):
    yanked: list[str]


class JaxlibWheels(Span, _WheelsOptional):  # jaxlib-wheels.toml: the Pythons each jaxlib has a wheel for
    versions: dict[str, list[str]]  # Python -> jaxlib releases


WHEELS = Table("jaxlib-wheels.toml", JaxlibWheels, jax=span)


def python_of(facts: Facts) -> str | None:
    """The facts' Python as the table keys it ("3.12"), when they say."""
    found = re.match(r"(\d+)\.(\d+)", str(facts.python.get("version") or ""))
    return f"{found[1]}.{found[2]}" if found else None


def no_wheel(facts: Facts) -> list[Occurrence]:
    """A planned jaxlib that has no wheel for the planned Python: the plan cannot be installed. Anything else
    (a live audit, the hook, a pasted report) describes what is installed, so only a plan can have this problem."""
    python, jaxlib = python_of(facts), public(facts.packages.get("jaxlib", ""))
    table = WHEELS.load()
    wheels = table["versions"].get(python) if python is not None else None
    if facts.origin != "plan" or not is_release(jaxlib) or wheels is None or not covers(table, jaxlib):
        return []  # only a plan can be uninstallable: whatever else was stated or found is installed
    if listed(jaxlib, wheels) or listed(jaxlib, table.get("yanked", [])):
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
    fixed = _fixed_jaxlib(pins)
    if fixed is None or not covers(WHEELS.load(), fixed):
        return None
    return [py for py, found in WHEELS.load()["versions"].items() if listed(fixed, found)]


def _fixed_jaxlib(pins: Sequence[str]) -> str | None:
    """The jaxlib release these pins fix: `jax==V`, `jaxlib==V`, or a GPU plugin's `==V` (released with jaxlib)."""
    exact = [
        p.split("==", 1)[1].strip()
        for p in pins
        if re.match(r"^(jax|jaxlib|jax-(cuda|rocm)\d+-(plugin|pjrt))(\[[^\]]*\])?\s*==", p)
    ]
    return exact[0] if exact else None


def past_the_table(pins: Sequence[str]) -> list[str] | None:
    """For pins that fix a jaxlib newer than the table's newest release, the Pythons that release has wheels for
    (the likeliest for a later one); None otherwise."""
    fixed, table = _fixed_jaxlib(pins), WHEELS.load()
    if fixed is None or not is_release(fixed) or numbers(fixed) <= numbers(table["covers_to"]):
        return None
    return pythons([f"jaxlib=={table['covers_to']}"])


def installs_here(facts: Facts, pins: Sequence[str]) -> bool | None:
    """Whether the jaxlib these pins fix has a wheel for the audited Python (None: the table or the facts cannot
    say)."""
    found, here = pythons(pins), python_of(facts)
    return None if found is None or here is None or here not in WHEELS.load()["versions"] else here in found


def range_installs_here(facts: Facts, requirements: Sequence[str]) -> bool | None:
    """Whether a jaxlib release that meets every jax and jaxlib range among these requirements has a wheel for the
    audited Python (`jax<0.4.11` on Python 3.11: none, jaxlib 0.4.11's cp311 wheels being the first); None where the
    table or the facts cannot say (a range reaching past the table's releases may meet one it has not read)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    here, table = python_of(facts), WHEELS.load()
    if here is None or here not in table["versions"]:
        return None
    spec = SpecifierSet()
    for text in requirements:
        found = re.match(r"^(jax|jaxlib)(\[[^\]]*\])?\s*([<>=!~].*)$", text.strip())
        if found:
            try:
                spec &= SpecifierSet(found[3])
            except InvalidSpecifier:
                return None
    if not str(spec):
        return None
    if any(spec.contains(v, prereleases=True) for v in table["versions"][here]):
        return True
    parts = numbers(table["covers_to"])
    later = ".".join(map(str, (*parts[:-1], parts[-1] + 1))) if parts else ""
    return None if later and spec.contains(later, prereleases=True) else False


def on_this_python(facts: Facts, fix: Fix, pins: Sequence[str]) -> tuple[Fix, str]:
    """A rule's or check's fix of these pins as this Python can take it: none where the jaxlib they fix has no
    wheel for it (pip would refuse the command), and what the pins cost in Pythons, for the detail."""
    return (Fix() if installs_here(facts, pins) is False else fix), cost(facts, pins)


def cost(facts: Facts, pins: Sequence[str]) -> str:
    """What a fix of these pins costs in Pythons, as a clause for its finding ("" when nothing): a fix that cannot
    install on the audited Python must say so, not fail later in pip."""
    found = pythons(pins)
    if found is None or found == list(WHEELS.load()["versions"]):
        return ""
    span = f"Python {found[0]} to {found[-1]}" if found else "no Python"
    here = python_of(facts)
    if here is not None and here not in found:
        return f"; it cannot install on Python {here}: the jaxlib it pins has wheels for {span} only"
    return f"; it needs {span}"


NO_JAXLIB_WHEEL_FOR_PYTHON = Check(
    id="no-jaxlib-wheel-for-python",
    severity="warn",
    title="the planned jaxlib has no wheel for the planned Python: pip cannot install it",
    fix="pin a jaxlib released for that Python (or plan another Python)",
    references=("https://pypi.org/project/jaxlib/#files",),
    run=no_wheel,
    explains=("plan-does-not-install",),  # what the installer says when the plan is built here
)
