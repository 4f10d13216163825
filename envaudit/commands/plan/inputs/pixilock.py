"""pixi.lock: what `pixi install` installs for one environment on the plan's platform, read as rattler_lock reads
lock versions 5 and 6 (conda/rattler, crates/rattler_lock/src/parse/deserialize.rs and models/v5, models/v6; pixi
writes the lock through rattler_lock; file_format_version.rs: "V6: fields are derived from the location and the
`kind` is merged with the location").

The lock is YAML: `version`, `environments` (each: `channels`, pypi `indexes`, and `packages` by conda platform
`linux-64`, `osx-arm64`, ..., each a list of `- conda: URL` or `- pypi: URL` selectors) and `packages` (one entry per
package: in version 5 `kind: conda|pypi` with `name`, `version`, `build` and `url`; in version 6 `conda: URL` or
`pypi: URL`, a conda entry's name, version and build given where they differ from what its file name
`NAME-VERSION-BUILD.conda` says, a pypi entry's `name` and `version` always). An environment installs exactly its
platform's selectors (pixi resolves once per platform; no marker is evaluated at install). Conda packages come from
conda channels, not the package index (a plan of them is not built from it); pypi packages from the index, or from
a URL or path where their location is not a registry's file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envaudit.commands.plan.inputs import PlanError, conda, files, markers
from envaudit.commands.plan.inputs.values import Resolved, Source
from envaudit.model.scope import canonicalize_name

VERSIONS = (5, 6)
DEFAULT = "default"  # pixi's environment when none is named (`pixi install` installs it)
PYPI_FILES = "https://files.pythonhosted.org/"


@dataclass(frozen=True)
class Lock:
    path: str
    version: int
    environments: dict[str, Any]
    packages: tuple[dict[str, Any], ...]


def load(path: str) -> Lock:
    document = files.read_yaml(path, "a pixi.lock")
    if not isinstance(document, dict) or "version" not in document:
        raise PlanError(f"{path} must be a YAML mapping with a version (pixi's lock)")
    version = document["version"]
    if version not in VERSIONS or isinstance(version, bool):
        raise PlanError(f"{path}: lock version {str(version)[:20]!r}; envaudit reads pixi.lock versions 5 and 6")
    environments, packages = document.get("environments"), document.get("packages")
    if not isinstance(environments, dict) or not isinstance(packages, list):
        raise PlanError(f"{path}: its environments must be a mapping and its packages a list")
    if not all(isinstance(p, dict) for p in packages):
        raise PlanError(f"{path}: each of its packages must be a mapping")
    return Lock(path, version, environments, tuple(packages))


def subdir(target: markers.Target) -> str:
    """The conda platform of the plan's target (Linux x86_64 unless a report or --os/--machine says otherwise)."""
    env = target.environment()
    system, machine = env.get("sys_platform", ""), env.get("platform_machine", "").lower()
    os_ = {"linux": "linux", "darwin": "osx", "win32": "win"}.get(system, system)
    arch = {"x86_64": "64", "amd64": "64", "aarch64": "aarch64", "arm64": "arm64", "ppc64le": "ppc64le"}
    if os_ == "linux" and machine == "arm64":
        machine = "aarch64"
    if os_ == "osx" and machine == "aarch64":
        machine = "arm64"
    return f"{os_}-{arch.get(machine, machine)}"


def select(lock: Lock, target: markers.Target, environment: str = DEFAULT) -> Resolved:
    """What the environment installs on the target's platform: each package's version, each conda one's build."""
    where = Source(lock.path, section=f"environment {environment}")
    chosen = lock.environments.get(environment)
    if not isinstance(chosen, dict) or not isinstance(chosen.get("packages"), dict):
        have = ", ".join(sorted(str(e) for e in lock.environments)) or "none"
        raise PlanError(f"{lock.path}: no environment {environment!r} with packages (it has: {have})")
    platform = subdir(target)
    selectors = chosen["packages"].get(platform)
    if not isinstance(selectors, list):
        have = ", ".join(sorted(str(p) for p in chosen["packages"])) or "none"
        raise PlanError(f"{where}: not locked for {platform} (it is for {have}): say --os and --machine")
    by_location = {_location(p): p for p in lock.packages}
    versions: dict[str, str] = {}
    builds: dict[str, str] = {}
    elsewhere: dict[str, str] = {}
    for selector in selectors:
        if not isinstance(selector, dict) or not ({"conda", "pypi"} & selector.keys()):
            raise PlanError(f"{where}: a package of {platform} is neither `conda: URL` nor `pypi: URL`")
        kind = "conda" if "conda" in selector else "pypi"
        location = str(selector[kind])
        entry = by_location.get((kind, location))
        if entry is None:
            raise PlanError(f"{where}: a {kind} package of {platform} has no entry in the lock's packages")
        if kind == "conda":
            name, version, build = _conda(entry, selector, location, where)
            builds[name] = build
            elsewhere[name] = "a conda channel"
        else:
            name, version = canonicalize_name(str(entry.get("name", ""))), str(entry.get("version", ""))
            if not name or not version:
                raise PlanError(f"{where}: a pypi package of {platform} has no name or version")
            if not location.startswith(PYPI_FILES):
                elsewhere[name] = "a URL or a path"
        if name in versions and versions[name] != version:
            raise PlanError(f"{where}: installs {name} twice ({versions[name]} and {version}) on {platform}")
        versions[name] = version
    return Resolved(versions, Source(lock.path), "", elsewhere=elsewhere, builds=builds)


def _location(package: dict[str, Any]) -> tuple[str, str]:
    """A package entry's kind and location: v6 `conda: URL` / `pypi: URL`, v5 `kind` and `url` (or `path`)."""
    for kind in ("conda", "pypi"):
        if kind in package:
            return kind, str(package[kind])
    return str(package.get("kind", "")), str(package.get("url", package.get("path", "")))


def _conda(entry: dict[str, Any], selector: dict[str, Any], location: str, where: Source) -> tuple[str, str, str]:
    """A conda package's name, version and build: the entry's (or the selector's) fields, else its file name's."""
    found = conda.ARCHIVE.match(location.rsplit("/", 1)[-1])
    derived = (found["name"], found["version"], found["build"]) if found else ("", "", "")
    name, version, build = (
        str(selector.get(k) or entry.get(k) or d) for k, d in zip(("name", "version", "build"), derived, strict=True)
    )
    if not name or not version:
        raise PlanError(f"{where}: a conda package whose name and version neither it nor its file name says")
    return canonicalize_name(name), version, build


def python(resolved: Resolved) -> str:
    """The Python the environment installs, as a requires-python specifier."""
    return conda.selected_python(resolved.versions.items())
