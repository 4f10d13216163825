"""Installed versions of the audited stack, read from distribution metadata without importing anything.

Importing jax to ask its version costs 0.6 s and can crash (that is what we audit), while `importlib.metadata`
reads a few small files. Besides versions this answers what `pip check` would say for the audited set (a declared
requirement that the installed version does not satisfy) and whether one name is installed twice on `sys.path`
(the first one shadows the other, and metadata and import then disagree).

The pip-check answer depends only on which distributions are installed where, so it is cached under a
fingerprint of their dist-info directories: `--quick` and the import hook then never import packaging's
requirement parser (a third of their start-up time).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from envaudit.collect import _interpreter
from envaudit.files import cachedir
from envaudit.model.facts import Duplicate, Unsatisfied
from envaudit.model.redact import scrub  # a direct URL requirement may carry a token
from envaudit.model.scope import canonicalize_name, is_relevant

# get_packages(): versions, unmet requirements, duplicates, requirements on each other, installers, those installed
# by name
Installed = tuple[dict[str, str], list[Unsatisfied], list[Duplicate], dict[str, list[str]], dict[str, str], list[str]]


@dataclass(frozen=True)
class Dist:
    """What one installed distribution declares: the inputs of the pure functions below."""

    name: str
    version: str
    requires: tuple[str, ...]
    location: str
    installer: str = ""  # its INSTALLER file (pip, uv, conda), "" where it has none or it was not read
    requested: bool = False  # installed by name (its REQUESTED file), not pulled in by another


def installers(dists: Iterable[Dist]) -> dict[str, str]:
    """Who installed each relevant distribution (the copy import finds, the first on sys.path), where it says."""
    found: dict[str, str] = {}
    for dist in dists:
        name = canonicalize_name(dist.name)
        if is_relevant(name) and name not in found and dist.installer:
            found[name] = dist.installer
    return dict(sorted(found.items()))


def requested(dists: Iterable[Dist]) -> list[str]:
    """The relevant distributions the user installed by name (the copy import finds): what a fix keeps where it can."""
    found: dict[str, bool] = {}
    for dist in dists:
        name = canonicalize_name(dist.name)
        if is_relevant(name) and name not in found:
            found[name] = dist.requested
    return sorted(name for name, chosen in found.items() if chosen)


def select(dists: Iterable[Dist]) -> tuple[dict[str, str], list[Duplicate]]:
    """Versions of the relevant distributions (the first on sys.path wins, as import does) and duplicates."""
    seen: dict[str, list[Dist]] = {}
    for dist in dists:
        seen.setdefault(canonicalize_name(dist.name), []).append(dist)
    packages = {name: found[0].version for name, found in sorted(seen.items()) if is_relevant(name)}
    duplicates: list[Duplicate] = [
        {"name": name, "versions": [d.version for d in found], "locations": [d.location for d in found]}
        for name, found in sorted(seen.items())
        if len({d.location for d in found}) > 1 and is_relevant(name)
    ]
    return packages, duplicates


def unsatisfied(dists: Iterable[Dist]) -> list[Unsatisfied]:
    """Declared requirements of relevant distributions that the installed set does not satisfy (pip check)."""
    return check(dists)[0]


def check(
    dists: Iterable[Dist], markers: dict[str, Any] | None = None
) -> tuple[list[Unsatisfied], dict[str, list[str]]]:
    """What `unsatisfied` says, and each relevant distribution's requirements (markers evaluated here) on the
    other relevant ones: what a fix that moves one package must keep true (`envaudit/model/fixes.py`). `markers`: the
    audited interpreter's (another one's, with --python); this one's by default."""
    first: dict[str, Dist] = {}
    for dist in dists:
        first.setdefault(canonicalize_name(dist.name), dist)
    from packaging.requirements import InvalidRequirement, Requirement  # lazily: 20 ms of regex compilation

    problems: list[Unsatisfied] = []
    requires: dict[str, list[str]] = {}
    for name, dist in sorted(first.items()):
        if not is_relevant(name):
            continue
        for text in dist.requires:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate({**(markers or {}), "extra": ""}):
                continue
            target = first.get(canonicalize_name(req.name))
            if is_relevant(canonicalize_name(req.name)) and target is not None:
                requires.setdefault(name, []).append(f"{canonicalize_name(req.name)}{req.specifier}")
            if target is None:
                problems.append({"package": name, "requires": scrub(str(req)), "installed": None})
            elif not _satisfies(target.version, str(req.specifier)):
                problems.append({"package": name, "requires": scrub(str(req)), "installed": target.version})
    return problems, requires


def _satisfies(version: str, specifier: str) -> bool:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(specifier).contains(Version(version), prereleases=True)
    except (InvalidVersion, ValueError):
        return True  # pip skips what it cannot parse; so do we


def name_version_from_path(dirname: str) -> tuple[str, str] | None:
    """('jax', '0.4.30') from 'jax-0.4.30.dist-info' (pure); None when the directory name does not say both."""
    if not dirname.endswith(".dist-info"):
        return None
    name, sep, version = dirname[: -len(".dist-info")].partition("-")
    return (name, version) if sep and name and version else None


def installed() -> tuple[list[Dist], dict[str, metadata.Distribution]]:
    """Every distribution visible on sys.path, in sys.path order, without requirements (I/O), and the handles of
    the relevant ones by location, to read their requirements when the cache cannot answer.

    Name and version come from the .dist-info directory name where it has them (standardised, and parsing every
    METADATA file of a large environment costs tens of milliseconds); METADATA is read only where it must be.
    """
    found: list[Dist] = []
    handles: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        if _interpreter.stashed(dist):  # pip's leftover of an interrupted install: not installed
            continue
        path = getattr(dist, "_path", None)
        location = str(path or "")
        name_version = name_version_from_path(path.name) if isinstance(path, Path) else None
        if name_version is None:
            name_version = (dist.metadata["Name"], dist.version)
        if not name_version[0]:
            continue
        relevant = is_relevant(name_version[0])
        tool = _interpreter.installer(dist) if relevant else ""
        chosen = _interpreter.requested(dist) if relevant else False
        found.append(
            Dist(
                name=name_version[0],
                version=name_version[1],
                requires=(),
                location=location,
                installer=tool,
                requested=chosen,
            )
        )
        if relevant:
            handles[location] = dist
    return found, handles


def read_requires(dist: metadata.Distribution) -> tuple[str, ...]:
    return tuple(_interpreter.requires(dist))


def fingerprint(dists: Iterable[Dist]) -> str:
    """Identifies an installed set: every distribution's name, version and location (a requirement of the audited
    stack can name any of them), plus the dist-info modification time of the audited ones (a reinstall)."""
    parts = []
    for d in dists:
        mtime = 0
        if is_relevant(d.name):
            with contextlib.suppress(OSError):
                mtime = Path(d.location).stat().st_mtime_ns
        parts.append(f"{d.name}={d.version}@{d.location}:{mtime}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def get_packages() -> Installed:
    """(versions, unsatisfied requirements, duplicates, requirements among the audited packages, installers); never
    raises."""
    try:
        dists, handles = installed()
        packages, duplicates = select(dists)
        tools, chosen = installers(dists), requested(dists)
        cache_name = f"pipcheck-{fingerprint(dists)}.json"
        cached = cachedir.read_json(cache_name)
        if (
            isinstance(cached, dict)
            and isinstance(cached.get("problems"), list)
            and isinstance(cached.get("requires"), dict)
        ):
            return packages, cached["problems"], duplicates, cached["requires"], tools, chosen
        full = [replace(d, requires=read_requires(handles[d.location])) if d.location in handles else d for d in dists]
        problems, requires = check(full)
    except Exception as exc:  # a broken METADATA file must not stop the audit
        return {}, [{"package": "?", "requires": f"metadata unreadable: {exc}", "installed": None}], [], {}, {}, []
    cachedir.write_json(cache_name, {"problems": problems, "requires": requires})
    return packages, problems, duplicates, requires, tools, chosen
