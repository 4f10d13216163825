"""libtpu beside the jax it serves: what `jax[tpu]==V` pins (tables/tpu-extra.toml, derived from each jax wheel's
METADATA), and whether the installed libtpu meets it.

jax and jaxlib are released together with one libtpu build, which the `tpu` extra pins exactly (jax 0.10.1:
`libtpu==0.0.41.*`, 0.10.2: `libtpu==0.0.42.*`). pip check does not read an extra's requirements, so a libtpu that
another install moved, or one left behind when jax was pinned without its extra, leaves pip satisfied while jax
loads a TPU runtime it was not released with (jax#20148: "Mismatched PJRT plugin PJRT API version"; jax#29989:
another framework's libtpu, "module 'libtpu' has no attribute 'get_library_path'").
"""

from __future__ import annotations

import functools
from typing import TypedDict

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envaudit.model.facts import Facts
from envaudit.model.versions import version_or_none
from envaudit.rules import fixing
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.table import Span, Table, span


class PinRun(TypedDict):
    versions: list[str]  # consecutive jax releases whose extra pins the same
    pins: list[str]  # its requirements on the named wheels


class TpuExtra(Span):  # tpu-extra.toml: what jax[tpu]==V pins, derived from each jax wheel's METADATA
    release: list[PinRun]


TPU_EXTRA = Table("tpu-extra.toml", TpuExtra, jax=span)


@functools.cache
def _pins() -> dict[str, tuple[Requirement, ...]]:
    """Each covered jax release's tpu-extra requirements, parsed once."""
    return {
        version: tuple(Requirement(pin) for pin in row["pins"])
        for row in TPU_EXTRA.load()["release"]
        for version in row["versions"]
    }


def pins(jax: str) -> tuple[str, ...] | None:
    """What `jax[tpu]==jax` requires of libtpu, as written; None for a release the table does not cover."""
    parsed = version_or_none(jax)
    found = _pins().get(parsed.public) if parsed is not None else None
    return tuple(str(r) for r in found) if found is not None else None


def releases() -> list[str]:
    """The jax releases the table says `jax[tpu]` installs at, oldest first: what a suggestion may pick."""
    return [version for row in TPU_EXTRA.load()["release"] for version in row["versions"]]


def outside(facts: Facts) -> list[Occurrence]:
    """Each installed libtpu wheel outside the pin of the installed jax's tpu extra, fixed by moving it to the pin
    with jax and jaxlib held where they are."""
    jax = facts.packages.get("jax", "")
    parsed = version_or_none(jax)
    if parsed is None or parsed.is_prerelease or parsed.is_devrelease:
        return []  # a nightly jax pins a nightly libtpu the table does not hold
    found = []
    for req in _pins().get(parsed.public, ()):
        name = canonicalize_name(req.name)
        installed = facts.packages.get(name, "")
        if version_or_none(installed) is not None and not req.specifier.contains(installed, prereleases=True):
            found.append(
                Occurrence(
                    f"{name} {installed} is outside {req}, which jax[tpu]=={jax} pins (pip check does not read an "
                    "extra's pins)",
                    fixing.install(facts, [str(req)], hold=fixing.installed_jax(facts)),
                )
            )
    return found


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
LIBTPU_OUTSIDE_JAX_PIN = Check(
    id="libtpu-outside-jax-pin",
    severity="warn",
    title="libtpu is not the build jax's tpu extra pins for the installed jax",
    fix="install the libtpu the installed jax's tpu extra pins, jax and jaxlib held where they are",
    references=(
        "https://github.com/jax-ml/jax/blob/jax-v0.10.2/setup.py#L26",
        "https://github.com/jax-ml/jax/issues/20148",
        "https://github.com/jax-ml/jax/issues/24987",
    ),
    run=outside,
)
