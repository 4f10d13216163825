"""jax's own pins, read from its sources at each tag: `_minimum_jaxlib_version` (`jax-minimum-jaxlib.toml`),
applied as `import jax` applies it, and what each jax and jaxlib release declares it needs (`jax-requires.toml`,
setup.py at the tag: what pip checks once a plan is installed).
"""

from __future__ import annotations

from typing import TypedDict

from envaudit.model.facts import Facts
from envaudit.rules.releases import is_release, numbers, row_of
from envaudit.rules.table import Provenance, Table


class MinimumJaxlib(Provenance):  # jax-minimum-jaxlib.toml: _minimum_jaxlib_version at each jax tag
    older_message: str
    newer_message: str
    newer_check_since: str
    minimum_jaxlib: dict[str, str]  # jax release -> the oldest jaxlib it imports with


class Declared(TypedDict):
    released: str  # the day its first file was uploaded to PyPI (YYYY-MM-DD, UTC)
    python: str
    jax: list[str]
    jaxlib: list[str]


class JaxRequires(Provenance):  # jax-requires.toml: what each jax and jaxlib release declares it needs
    release: dict[str, Declared]


MINIMUM_JAXLIB = Table("jax-minimum-jaxlib.toml", MinimumJaxlib, jax=lambda t: t["minimum_jaxlib"])
REQUIRES = Table("jax-requires.toml", JaxRequires, jax=lambda t: t["release"])


def succeeded(jax: str) -> str:
    """The day the jax release after `jax` was uploaded (the first upload, after its own, of a higher release; a
    patch of an older line can come later: 0.8.3 after 0.9.0): until then `jax` was the newest, and the libraries
    released in that time were made and tested with it. "" where the table does not know `jax` or nothing followed
    it (past the table is unknown, never a day)."""
    from packaging.version import InvalidVersion, Version

    releases = REQUIRES.load()["release"]
    if jax not in releases:
        return ""
    own = releases[jax]["released"]
    try:
        after = [row["released"] for v, row in releases.items() if Version(v) > Version(jax) and row["released"] > own]
    except InvalidVersion:
        return ""
    return min(after, default="")


# the first jax release that requires jaxlib itself: an installer asked for an older jax alone installs no jaxlib
# (derive/tables/jax_requires.py leaves that requirement out "from 0.4.30"; measured 2026-12-07: `uv pip compile` of
# `jax==0.4.29` resolves no jaxlib, of `jax==0.4.30` jaxlib==0.4.30)
PINS_JAXLIB_SINCE = "0.4.30"
# what `import jax` raises without jaxlib (jax/_src/lib/__init__.py, a ModuleNotFoundError; the URL is google/jax's in
# older releases)
NO_JAXLIB = (
    "jax requires jaxlib to be installed. See https://github.com/jax-ml/jax#installation for installation instructions."
)


def import_coupling(facts: Facts) -> list[str]:
    """What `import jax` raises for this jax and jaxlib, from jax's own table: a jaxlib older than the release's
    minimum, or newer than jax. Needs no pip metadata, so a plan sees it too (a plan with no jaxlib:
    `declared.unpinned_jaxlib`)."""
    jax, jaxlib = facts.packages.get("jax"), facts.packages.get("jaxlib")
    if not jax or not jaxlib or not is_release(jax) or not is_release(jaxlib):
        return []
    if facts.origin == "live" and facts.jax.get("status") == "ok":
        return []  # jax imported here: what it did outranks what the table says it would
    table = MINIMUM_JAXLIB.load()
    if numbers(jaxlib) > numbers(jax) >= numbers(table["newer_check_since"]):
        return [table["newer_message"].format(jaxlib=jaxlib, jax=jax)]
    minimum = row_of(table["minimum_jaxlib"], jax)
    if minimum is not None and numbers(jaxlib) < numbers(minimum):
        return [f"jax {jax}: " + table["older_message"].format(jaxlib=jaxlib, minimum=minimum)]
    return []
