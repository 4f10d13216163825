"""Installed versions of the audited stack, read from distribution metadata without importing anything.

Importing jax to ask its version costs 0.6 s and can crash (that is what we audit), while `importlib.metadata`
reads a few small files. Besides versions this answers what `pip check` would say for the audited set (a declared
requirement that the installed version does not satisfy) and whether one name is installed twice on `sys.path`
(the first one shadows the other, and metadata and import then disagree).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

# The audited stack: exact names, and patterns for the families whose names carry a CUDA/ROCm major.
RELEVANT_NAMES = frozenset(
    {
        "jax", "jaxlib", "libtpu", "libtpu-nightly", "flax", "neural-tangents", "numpy", "scipy", "ml-dtypes",
        "optax", "orbax-checkpoint", "tensorflow", "tensorflow-cpu", "tf2jax", "opt-einsum", "chex",
        "frozendict", "envaudit",
    }
)  # fmt: skip
RELEVANT_PATTERN = re.compile(r"^(jax-cuda\d+-(plugin|pjrt)|jax-rocm\d+-(plugin|pjrt)|jax-tpu.*|nvidia-.+)$")


@dataclass(frozen=True)
class Dist:
    """What one installed distribution declares: the inputs of the pure functions below."""

    name: str
    version: str
    requires: tuple[str, ...]
    location: str


def is_relevant(name: str) -> bool:
    norm = canonicalize_name(name)
    return norm in RELEVANT_NAMES or bool(RELEVANT_PATTERN.match(norm))


def select(dists: Iterable[Dist]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Versions of the relevant distributions (the first on sys.path wins, as import does) and duplicates."""
    seen: dict[str, list[Dist]] = {}
    for dist in dists:
        seen.setdefault(canonicalize_name(dist.name), []).append(dist)
    packages = {name: found[0].version for name, found in sorted(seen.items()) if is_relevant(name)}
    duplicates = [
        {"name": name, "versions": [d.version for d in found], "locations": [d.location for d in found]}
        for name, found in sorted(seen.items())
        if len({d.location for d in found}) > 1 and is_relevant(name)
    ]
    return packages, duplicates


def unsatisfied(dists: Iterable[Dist]) -> list[dict[str, Any]]:
    """Declared requirements of relevant distributions that the installed set does not satisfy (pip check)."""
    first: dict[str, Dist] = {}
    for dist in dists:
        first.setdefault(canonicalize_name(dist.name), dist)
    problems: list[dict[str, Any]] = []
    for name, dist in sorted(first.items()):
        if not is_relevant(name):
            continue
        for text in dist.requires:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            target = first.get(canonicalize_name(req.name))
            if target is None:
                problems.append({"package": name, "requires": str(req), "installed": None})
            elif not _satisfies(target.version, str(req.specifier)):
                problems.append({"package": name, "requires": str(req), "installed": target.version})
    return problems


def _satisfies(version: str, specifier: str) -> bool:
    try:
        return SpecifierSet(specifier).contains(Version(version), prereleases=True)
    except InvalidVersion:
        return True  # pip skips what it cannot parse; so do we


def installed() -> list[Dist]:
    """Every distribution visible on sys.path, in sys.path order (I/O)."""
    found: list[Dist] = []
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        location = str(getattr(dist, "_path", ""))
        requires = tuple(dist.requires or ()) if is_relevant(name) else ()
        if canonicalize_name(name) == "jax" and not any(r.startswith("jaxlib") for r in requires):
            requires += minimum_jaxlib(_read(dist, "jax/version.py"))
        found.append(Dist(name=name, version=dist.version, requires=requires, location=location))
    return found


def minimum_jaxlib(version_py: str) -> tuple[str, ...]:
    """Old jax releases declare no jaxlib requirement; their jax/version.py says the minimum (pure)."""
    match = re.search(r"^_minimum_jaxlib_version\s*=\s*['\"]([^'\"]+)['\"]", version_py, re.MULTILINE)
    return (f"jaxlib>={match[1]}",) if match else ()


def _read(dist: metadata.Distribution, relative: str) -> str:
    try:
        return Path(str(dist.locate_file(relative))).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def get_packages() -> tuple[dict[str, str], list[dict[str, Any]], list[dict[str, Any]]]:
    """(versions, unsatisfied requirements, duplicates); never raises."""
    try:
        dists = installed()
    except Exception as exc:  # a broken METADATA file must not stop the audit
        return {}, [{"package": "?", "requires": f"metadata unreadable: {exc}", "installed": None}], []
    packages, duplicates = select(dists)
    return packages, unsatisfied(dists), duplicates
