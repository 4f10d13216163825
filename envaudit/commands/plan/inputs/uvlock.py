"""uv.lock: what `uv sync` installs for the plan's target, read from the lock as uv 0.13 writes it (version 1).

uv's lock is its own format (https://docs.astral.sh/uv/concepts/projects/layout/#the-lockfile: "uv.lock is a
universal or cross-platform lockfile"; not a standard, so read here from the files uv writes, tests/fixtures/
plan-inputs). It is universal: every package of every environment, a package that forks (numpy 2.4.6 below Python
3.12, 2.5.5 from it) listed once per version with its `resolution-markers`, and each `[[package]]`'s `dependencies`
naming the others (with `version` and `source` where the name alone is ambiguous, `marker` where the edge holds in
some environments only, `extra` for the dependency's extras). The project is the package whose source is the lock's
directory (`{ virtual = "." }` or `{ editable = "." }`); its `[package.optional-dependencies]` are its extras and
its `[package.dev-dependencies]` its dependency groups. What is installed is what the edges reach from the project
for the selected extras and groups, each edge's marker evaluated for the target, as `uv sync` and `uv export`
select it. `supported-markers` (uv's `environments`) says which environments the lock resolved at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from envaudit.commands.plan.inputs import PlanError, files, markers, tomllines
from envaudit.commands.plan.inputs.values import Source
from envaudit.model.scope import canonicalize_name
from envaudit.model.typecheck import problem

# uv writes an extra or a group its `[tool.uv] conflicts` name into markers as a conflict item, `extra ==
# 'extra-11-levanter-gpu'` (`extra-{len(project)}-{project}-{extra}`, `group-...` for a group): the item holds where
# that extra or group is selected (measured: uv 0.9's lock of two conflicting extras, tests/fixtures/plan-inputs/
# conflicting-extras, against `uv export --extra`)
CONFLICT = re.compile(r"""\bextra\s*(==|!=)\s*(['"])([^'"]*)\2""")
VERSIONS = (1,)  # the lock versions read here (uv 0.13.9 writes `version = 1`, `revision = 5`)


class _DependencyOptional(TypedDict, total=False):
    version: str
    source: dict[str, str]
    marker: str
    extra: list[str]


class UvDependency(_DependencyOptional):
    name: str


_PackageOptional = TypedDict(
    "_PackageOptional",
    {
        "version": str,
        "source": dict[str, str],
        "dependencies": list[UvDependency],
        "optional-dependencies": dict[str, list[UvDependency]],
        "dev-dependencies": dict[str, list[UvDependency]],
        "resolution-markers": list[str],
        "metadata": dict[str, object],
    },
    total=False,
)


class UvPackage(_PackageOptional):
    name: str


_LockOptional = TypedDict(
    "_LockOptional",
    {"requires-python": str, "supported-markers": list[str], "package": list[UvPackage]},
    total=False,
)


class UvLockDocument(_LockOptional):
    version: int


@dataclass(frozen=True)
class Lock:
    path: str
    requires_python: str = ""
    supported: tuple[str, ...] = ()  # supported-markers: the environments it resolved
    packages: tuple[UvPackage, ...] = ()
    by_name: dict[str, tuple[int, ...]] = field(default_factory=dict)  # canonical name -> indexes in packages
    lines: dict[tuple[str, str], int] = field(default_factory=dict)  # (canonical name, version) -> its entry's line

    def line(self, name: str, version: str) -> int:
        """The line of the `[[package]]` entry of this release (its `name = ...`; 0 where it is not found)."""
        return self.lines.get((name, version), 0)


def load(path: str) -> Lock:
    document, text = files.read_toml_text(path, "a uv.lock")
    if found := problem(document, UvLockDocument, path):
        raise PlanError(found)
    if document["version"] not in VERSIONS:
        raise PlanError(f"{path}: lock version {document['version']}; envaudit reads uv.lock version 1")
    packages = tuple(document.get("package") or ())
    by_name: dict[str, tuple[int, ...]] = {}
    for i, package in enumerate(packages):
        name = canonicalize_name(package["name"])
        by_name[name] = (*by_name.get(name, ()), i)
    lines = {(canonicalize_name(n), v): line for (n, v), line in tomllines.entries(text, "package").items()}
    return Lock(
        path,
        document.get("requires-python") or "",
        tuple(document.get("supported-markers") or ()),
        packages,
        by_name,
        lines,
    )


def project(lock: Lock, name: str = "") -> UvPackage:
    """The project the lock is of: the package at the lock's directory (named `name`, where a pyproject says)."""
    found = [
        p
        for p in lock.packages
        if (p.get("source") or {}).get("virtual", (p.get("source") or {}).get("editable")) == "."
        and (not name or canonicalize_name(p["name"]) == name)
    ]
    if len(found) != 1:
        said = f" named {name}" if name else ""
        raise PlanError(
            f"{lock.path}: no single project{said} at its directory (a package with source virtual or editable '.')"
        )
    return found[0]


def choices(package: UvPackage) -> tuple[set[str], set[str]]:
    """The extras and dependency groups the project has (those without a dependency are in its metadata only)."""
    metadata = package.get("metadata") or {}
    provided = metadata.get("provides-extras")
    extras = set(package.get("optional-dependencies") or {}) | set(provided if isinstance(provided, list) else ())
    dev = metadata.get("requires-dev")
    groups = set(package.get("dev-dependencies") or {}) | set(dev if isinstance(dev, dict) else ())
    return {canonicalize_name(str(e)) for e in extras}, {canonicalize_name(str(g)) for g in groups}


def select(
    lock: Lock, target: markers.Target, *, name: str = "", extras: frozenset[str], groups: frozenset[str]
) -> dict[str, str]:
    """Each distribution `uv sync` installs for the target (canonical name -> version; "" where the lock records
    none, a source tree's), the project itself left out."""
    root = project(lock, name)
    active = _active(root, extras, groups)
    if lock.supported and not any(_holds(m, target, Source(lock.path), active) for m in lock.supported):
        raise PlanError(f"{lock.path}: resolved only for {' or '.join(lock.supported)}, not for the plan's target")
    have_extras, have_groups = choices(root)
    if missing := sorted(extras - have_extras) or sorted(groups - have_groups):
        raise PlanError(f"{lock.path}: the project has no extra or dependency group {missing[0]!r}")
    root_index = lock.packages.index(root)
    dev = _by_name(root.get("dev-dependencies"))
    edges = [
        *root.get("dependencies", []),
        *(d for e in sorted(extras) for d in _by_name(root.get("optional-dependencies")).get(e, [])),
    ]
    edges += [d for g in sorted(groups) for d in dev.get(g, [])]
    reached: dict[int, set[str]] = {root_index: set(extras)}
    todo = [(root_index, edge) for edge in edges]
    while todo:
        parent, edge = todo.pop()
        where = Source(lock.path, section=f"package {lock.packages[parent]['name']}")
        if "marker" in edge and not _holds(edge["marker"], target, where, active):
            continue
        index = _match(lock, edge, target, where, active)
        wanted = {canonicalize_name(e) for e in edge.get("extra", [])}
        have = reached.get(index)
        if have is not None and wanted <= have:
            continue
        new = wanted - (have or set())
        reached[index] = (have or set()) | wanted
        package = lock.packages[index]
        more = list(package.get("dependencies", [])) if have is None else []
        optional = _by_name(package.get("optional-dependencies"))
        more += [d for e in sorted(new) for d in optional.get(e, [])]
        todo += [(index, d) for d in more]
    found: dict[str, str] = {}
    for index in reached.keys() - {root_index}:
        package = lock.packages[index]
        dist = canonicalize_name(package["name"])
        if dist in found and found[dist] != package.get("version", ""):
            raise PlanError(f"{lock.path}: installs {dist} twice for the plan's target")
        found[dist] = package.get("version", "")
    return found


PYPI = ("https://pypi.org/simple", "https://pypi.org/simple/")


def elsewhere(lock: Lock, versions: Mapping[str, str]) -> dict[str, str]:
    """The selected packages the lock takes from elsewhere than PyPI (canonical name -> what its source is: "its
    own index", "a URL", "a git repository", "a path"), the project itself left out."""
    found: dict[str, str] = {}
    for package in lock.packages:
        name = canonicalize_name(package["name"])
        source = package.get("source") or {}
        if versions.get(name) != package.get("version", "") or not source:
            continue
        if "registry" in source and source["registry"] not in PYPI:
            found[name] = "its own index"
        elif (kind := next((k for k in ("url", "git", "path", "directory") if k in source), "")) and name in versions:
            found[name] = {"url": "a URL", "git": "a git repository"}.get(kind, "a path")
    return found


def direct(lock: Lock, *, name: str = "", extras: frozenset[str], groups: frozenset[str]) -> frozenset[str]:
    """What the project asks for by name (canonical): its dependencies, those of the extras and groups chosen."""
    root = project(lock, name)
    named = [
        *root.get("dependencies", []),
        *(d for e in sorted(extras) for d in _by_name(root.get("optional-dependencies")).get(e, [])),
        *(d for g in sorted(groups) for d in _by_name(root.get("dev-dependencies")).get(g, [])),
    ]
    return frozenset(canonicalize_name(d["name"]) for d in named)


def _by_name(table: dict[str, list[UvDependency]] | None) -> dict[str, list[UvDependency]]:
    """An extra's or a group's edges, by its normalized name."""
    return {canonicalize_name(k): v for k, v in (table or {}).items()}


def _active(root: UvPackage, extras: frozenset[str], groups: frozenset[str]) -> frozenset[str]:
    """The conflict items the selection makes hold (uv's names for the project's selected extras and groups)."""
    name = canonicalize_name(root["name"])
    return frozenset(
        [f"extra-{len(name)}-{name}-{e}" for e in extras] + [f"group-{len(name)}-{name}-{g}" for g in groups]
    )


def _holds(text: str, target: markers.Target, where: Source, active: frozenset[str]) -> bool:
    """A uv.lock marker for the target, its conflict items (`extra == '...'`) true where selected."""
    rewritten = CONFLICT.sub(lambda m: f"'{m[3]}' {'in' if m[1] == '==' else 'not in'} extras", text)
    if rewritten == text:
        return markers.holds(text, target, where)
    return markers.holds(rewritten, target, where, extras=active, groups=frozenset())


def _match(lock: Lock, edge: UvDependency, target: markers.Target, where: Source, active: frozenset[str]) -> int:
    """The package an edge names: by name, then version and source where the edge gives them, then the fork whose
    resolution-markers hold for the target."""
    name = canonicalize_name(edge["name"])
    found = [
        i
        for i in lock.by_name.get(name, ())
        if ("version" not in edge or lock.packages[i].get("version") == edge["version"])
        and ("source" not in edge or lock.packages[i].get("source") == edge["source"])
    ]
    if len(found) > 1:
        found = [i for i in found if _fork_holds(lock.packages[i], target, where, active)]
    if len(found) != 1:
        problem_ = "no package" if not found else "more than one package"
        raise PlanError(f"{where}: its dependency {edge['name']} matches {problem_} of the lock for the plan's target")
    return found[0]


def _fork_holds(package: UvPackage, target: markers.Target, where: Source, active: frozenset[str]) -> bool:
    """Whether the target is in the fork a package was resolved for (no resolution-markers: every environment)."""
    forks = package.get("resolution-markers")
    return not forks or any(_holds(m, target, where, active) for m in forks)
