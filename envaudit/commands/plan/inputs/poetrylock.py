"""poetry.lock: what `poetry install` installs for the plan's target, read as poetry 2.4 reads its lock
(python-poetry/poetry, src/poetry/packages/locker.py and src/poetry/puzzle/transaction.py).

The lock is TOML: `[[package]]` entries (`name`, `version`, `optional`, `python-versions`, `files`, `dependencies`,
`extras`, `source`; from lock-version 2.1, written by poetry 2.0 and later, also `groups` and `markers`: a string, or
a table of one marker per group) and `[metadata]` (`lock-version`, `python-versions`, `content-hash`). Poetry reads
lock versions `>=1,<3` (`_READ_VERSION_RANGE`) and refuses a lock whose content-hash is not its pyproject.toml's
("pyproject.toml changed significantly since poetry.lock was last generated"). From a 2.1 lock it installs each
package one of whose groups is selected and whose marker for those groups holds, `extra` being the selected extras
(`Transaction.calculate_operations`); from an older lock it resolves again from the project's dependencies with the
lock's packages alone, which `select` follows as a walk of each package's `dependencies` from the project's, their
markers evaluated, an optional dependency taken only for an extra that names it.

The groups selected are `main` and those `--group` names: `poetry install` adds the project's non-optional groups
too, which a plan does not assume (as for uv's `dev`). The project's requirements are in the pyproject.toml beside
the lock (`[project] dependencies` of PEP 621, or `[tool.poetry.dependencies]`), which poetry needs too.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envaudit.commands.plan.inputs import PlanError, files, markers, tomllines
from envaudit.commands.plan.inputs.values import Source
from envaudit.model.scope import canonicalize_name

MAIN = "main"
# locker.py: what the content-hash is of (`_get_content_hash`)
LEGACY_KEYS = ("dependencies", "source", "extras", "dev-dependencies")
RELEVANT_KEYS = (*LEGACY_KEYS, "group")
PROJECT_KEYS = ("requires-python", "dependencies", "optional-dependencies")


@dataclass(frozen=True)
class Lock:
    path: str
    version: tuple[int, ...]
    packages: tuple[dict[str, Any], ...]
    content_hash: str = ""
    lines: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def grouped(self) -> bool:
        return self.version >= (2, 1)


def load(path: str) -> Lock:
    document, text = files.read_toml_text(path, "a poetry.lock")
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        raise PlanError(f"{path}: no [metadata] table, so not a poetry.lock (`poetry lock` makes one)")
    written = metadata.get("lock-version")
    if not isinstance(written, str) or not re.fullmatch(r"\d+(\.\d+)*", written):
        raise PlanError(f"{path}: [metadata] has no lock-version poetry reads (`poetry lock` makes it again)")
    version = tuple(int(p) for p in written.split("."))
    if not (1,) <= version < (3,):
        raise PlanError(f"{path}: lock-version {written}; poetry and envaudit read lock versions 1.x and 2.x")
    packages = document.get("package", [])
    if not isinstance(packages, list) or not all(
        isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("version"), str) for p in packages
    ):
        raise PlanError(f"{path}: each [[package]] needs a name and a version (strings)")
    lines = {(canonicalize_name(n), v): line for (n, v), line in tomllines.entries(text, "package").items()}
    content = metadata.get("content-hash")
    return Lock(path, version, tuple(packages), content if isinstance(content, str) else "", lines)


def fresh(lock: Lock, pyproject: dict[str, Any]) -> bool:
    """Whether the lock's content-hash is its pyproject.toml's, as poetry computes it (with the dependency groups
    and, for a lock poetry before 2.3 wrote, without them)."""
    return not lock.content_hash or lock.content_hash in (_hash(pyproject, True), _hash(pyproject, False))


def _hash(pyproject: dict[str, Any], with_groups: bool) -> str:
    project = pyproject.get("project", {}) if isinstance(pyproject.get("project"), dict) else {}
    groups = pyproject.get("dependency-groups", {}) if with_groups else {}
    tool = pyproject.get("tool", {})
    poetry = tool.get("poetry", {}) if isinstance(tool, dict) else {}
    relevant_project = {k: project[k] for k in PROJECT_KEYS if project.get(k) is not None}
    relevant_poetry: dict[str, Any] = {}
    for key in RELEVANT_KEYS:
        data = poetry.get(key) if isinstance(poetry, dict) else None
        if data is None and (key not in LEGACY_KEYS or relevant_project or groups):
            continue
        relevant_poetry[key] = data
    content: dict[str, Any] = {}
    if relevant_project:
        content["project"] = relevant_project
    if groups:
        content["dependency-groups"] = groups
    if content:
        content["tool"] = {"poetry": relevant_poetry}
    else:
        content = relevant_poetry
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Root:
    """The project's requirements, as poetry reads them from the pyproject.toml: name -> (constraint, marker,
    optional), for the main group and each other group."""

    groups: dict[str, dict[str, list[tuple[str, str, bool]]]]  # group -> name -> its constraints
    extras: dict[str, list[str]]  # extra -> the names it selects


def root(pyproject: dict[str, Any]) -> Root:
    """The requirements of [project] (PEP 621) and [tool.poetry] (dependencies, group.NAME.dependencies, extras)."""
    from packaging.requirements import InvalidRequirement, Requirement

    groups: dict[str, dict[str, list[tuple[str, str, bool]]]] = {MAIN: {}}
    extras: dict[str, list[str]] = {}
    project = pyproject.get("project") if isinstance(pyproject.get("project"), dict) else {}
    assert isinstance(project, dict)
    for text in project.get("dependencies") or ():
        try:
            req = Requirement(str(text))
        except InvalidRequirement:
            raise PlanError(f"[project] dependencies: {str(text)[:40]!r} is not a requirement") from None
        groups[MAIN].setdefault(canonicalize_name(req.name), []).append(
            (str(req.specifier), str(req.marker or ""), False)
        )
    for extra, texts in (project.get("optional-dependencies") or {}).items():
        for text in texts:
            try:
                req = Requirement(str(text))
            except InvalidRequirement:
                raise PlanError(f"[project.optional-dependencies] {extra}: not a requirement") from None
            name = canonicalize_name(req.name)
            extras.setdefault(canonicalize_name(extra), []).append(name)
            groups[MAIN].setdefault(name, []).append((str(req.specifier), str(req.marker or ""), True))
    tool = pyproject.get("tool", {})
    poetry = tool.get("poetry", {}) if isinstance(tool, dict) else {}
    poetry = poetry if isinstance(poetry, dict) else {}
    _poetry_table(groups.setdefault(MAIN, {}), poetry.get("dependencies"))
    _poetry_table(groups.setdefault("dev", {}), poetry.get("dev-dependencies"))
    for group, table in (poetry.get("group") or {}).items():
        if isinstance(table, dict):
            _poetry_table(groups.setdefault(canonicalize_name(group), {}), table.get("dependencies"))
    for extra, names in (poetry.get("extras") or {}).items():
        extras.setdefault(canonicalize_name(extra), []).extend(canonicalize_name(str(n)) for n in names or ())
    return Root(groups, extras)


def _poetry_table(into: dict[str, list[tuple[str, str, bool]]], table: object) -> None:
    """[tool.poetry.dependencies]: NAME = "constraint" | {version, markers, python, optional, ...} | [ ... ]."""
    if not isinstance(table, dict):
        return
    for name, value in table.items():
        if canonicalize_name(str(name)) == "python":
            continue
        for one in value if isinstance(value, list) else [value]:
            if isinstance(one, str):
                into.setdefault(canonicalize_name(str(name)), []).append((one, "", False))
            elif isinstance(one, dict):
                marker = str(one.get("markers") or "")
                if one.get("python"):
                    python = pep440(str(one["python"]))
                    extra = " and ".join(
                        f'python_full_version {s.operator} "{s.version}"' for s in SpecifierSet(python)
                    )
                    marker = f"({marker}) and ({extra})" if marker and extra else marker or extra
                into.setdefault(canonicalize_name(str(name)), []).append(
                    (str(one.get("version") or "*"), marker, bool(one.get("optional")))
                )


def allows(constraint: str, version: str, path: str) -> bool:
    """Whether a poetry constraint (PEP 440, or poetry's `^`, `~`, `*`, `A || B`) allows a version."""
    try:
        return any(SpecifierSet(pep440(part)).contains(version, prereleases=True) for part in constraint.split("||"))
    except PlanError as exc:
        raise PlanError(f"{path}: {exc}") from None


def pep440(constraint: str) -> str:
    """A poetry constraint as a PEP 440 specifier (poetry-core's `^`, `~`, `*`, `x.*`; PEP 440 forms as they are)."""
    parts = [p.strip() for p in re.split(r",|\s+(?=[<>=!~^])", constraint.strip()) if p.strip()]
    found: list[str] = []
    for part in parts:
        if part in ("*", ""):
            continue
        if part.startswith("^"):
            numbers = [int(n) for n in re.findall(r"\d+", part)[:3]]
            upper = next((i for i, n in enumerate(numbers) if n), len(numbers) - 1)
            bumped = numbers[: upper + 1]
            bumped[-1] += 1
            found += [f">={part[1:]}", f"<{'.'.join(map(str, bumped))}"]
        elif part.startswith("~") and not part.startswith("~="):
            numbers = [int(n) for n in re.findall(r"\d+", part)[:3]]
            bumped = numbers[:2] if len(numbers) > 1 else numbers[:1]
            bumped[-1] += 1
            found += [f">={part[1:]}", f"<{'.'.join(map(str, bumped))}"]
        elif re.match(r"^\d", part):
            found.append(f"=={part}")
        else:
            found.append(part.replace(" ", ""))
    text = ",".join(found)
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        raise PlanError(f"{constraint[:40]!r} is not a version constraint poetry writes") from None
    return text


def select(
    lock: Lock, target: markers.Target, project: Root | None, *, extras: frozenset[str], groups: frozenset[str]
) -> dict[str, str]:
    """Each distribution poetry installs for the target (canonical name -> version)."""
    chosen = frozenset({MAIN, *groups})
    if lock.grouped:
        return _grouped(lock, target, extras, chosen)
    if project is None:
        raise PlanError(
            f"{lock.path}: lock-version {'.'.join(map(str, lock.version))} records no groups or markers; poetry"
            " resolves it again from the pyproject.toml beside it, which is not there"
        )
    return _walk(lock, target, project, extras, chosen)


def _holds(marker: str, target: markers.Target, where: Source, extras: frozenset[str]) -> bool:
    """A poetry marker, `extra` standing for each selected extra in turn (poetry evaluates it as their set)."""
    if not marker or marker == "*":
        return True
    return any(_evaluate(marker, target, where, extra) for extra in (sorted(extras) or [""]))


def _evaluate(marker: str, target: markers.Target, where: Source, extra: str) -> bool:
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

    try:
        return Marker(marker).evaluate({**target.environment(), "extra": extra})
    except InvalidMarker:
        raise PlanError(f"{where}: invalid marker {marker[:80]!r}") from None
    except (UndefinedComparison, UndefinedEnvironmentName) as exc:
        raise PlanError(f"{where}: cannot evaluate the marker {marker[:80]!r}: {exc}") from None


def _grouped(lock: Lock, target: markers.Target, extras: frozenset[str], groups: frozenset[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for package in lock.packages:
        name = canonicalize_name(package["name"])
        where = Source(lock.path, lock.lines.get((name, package["version"]), 0))
        mine = {canonicalize_name(str(g)) for g in package.get("groups") or ()} & groups
        if not mine:
            continue
        marker = package.get("markers", "")
        if isinstance(marker, dict):
            texts = [str(marker.get(g, "")) for g in sorted(mine) if str(marker.get(g, "")) not in ("", "*")]
            held = len(texts) < len(mine) or any(_holds(t, target, where, extras) for t in texts)
        else:
            held = _holds(str(marker), target, where, extras)
        if not held:
            continue
        if name in found and found[name] != package["version"]:
            raise PlanError(f"{where}: installs {name} twice ({found[name]} and {package['version']}) for the target")
        found[name] = package["version"]
    return found


def _walk(
    lock: Lock, target: markers.Target, project: Root, extras: frozenset[str], groups: frozenset[str]
) -> dict[str, str]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for package in lock.packages:
        by_name.setdefault(canonicalize_name(package["name"]), []).append(package)
    wanted = {n for e in extras for n in project.extras.get(e, ())}
    todo: list[tuple[str, str, frozenset[str]]] = []  # (name, PEP 440 specifier, extras of it)
    for group in sorted(groups):
        for name, constraints in project.groups.get(group, {}).items():
            for constraint, marker, optional in constraints:
                if optional and name not in wanted:
                    continue
                if _holds(marker, target, Source(lock.path, section=f"project {group}"), extras):
                    todo.append((name, constraint, frozenset()))
    found: dict[str, str] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, specifier, asked = todo.pop()
        if (name, asked) in done:
            continue
        done.add((name, asked))
        candidates = [p for p in by_name.get(name, []) if allows(specifier, p["version"], lock.path)]
        if len(candidates) != 1:
            said = "no package" if not candidates else "more than one package"
            raise PlanError(f"{lock.path}: {name} {specifier} matches {said} of the lock (`poetry lock` again)")
        package = candidates[0]
        if name in found and found[name] != package["version"]:
            raise PlanError(f"{lock.path}: installs {name} twice for the plan's target")
        found[name] = package["version"]
        where = Source(lock.path, lock.lines.get((name, package["version"]), 0))
        optional_names = {
            canonicalize_name(re.split(r"[\s\[(<>=!~;]", str(d), maxsplit=1)[0])
            for e in asked
            for d in (package.get("extras") or {}).get(e, ())
        }
        for dependency, value in (package.get("dependencies") or {}).items():
            dep = canonicalize_name(str(dependency))
            for one in value if isinstance(value, list) else [value]:
                table = one if isinstance(one, dict) else {"version": str(one)}
                if table.get("optional") and dep not in optional_names:
                    continue
                if not _holds(str(table.get("markers") or ""), target, where, frozenset()):
                    continue
                more = frozenset(canonicalize_name(str(e)) for e in table.get("extras") or ())
                todo.append((dep, str(table.get("version") or "*"), more))
    return found


def direct(project: Root | None, groups: frozenset[str]) -> frozenset[str]:
    """What the project asks for by name: its main group's requirements and those of the groups selected."""
    if project is None:
        return frozenset()
    return frozenset(n for g in {MAIN, *groups} for n in project.groups.get(g, {}))


def read_pyproject(path: str) -> dict[str, Any] | None:
    """The pyproject.toml beside a poetry.lock, as TOML (None where there is none)."""
    return files.read_toml(path, "a pyproject.toml") if os.path.isfile(path) else None
