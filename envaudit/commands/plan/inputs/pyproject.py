"""A pyproject.toml's requirements: `[project] dependencies`, `[project.optional-dependencies]` (PEP 621:
https://packaging.python.org/en/latest/specifications/pyproject-toml/) and `[dependency-groups]` (PEP 735:
https://packaging.python.org/en/latest/specifications/dependency-groups/).

An extra is installed when selected (`--extra NAME`, `--all-extras`), a dependency group likewise (`--group NAME`:
pip's `--group`; uv sync adds the `dev` group by default, which a plan does not assume). Extra and group names are
normalized as PEP 685 and PEP 735 say; a group includes another with `{include-group = "NAME"}`, never in a circle;
an extra may name the project itself with other extras (`demo[cuda]` in `demo`'s `all`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict, cast

from envaudit.commands.plan.inputs import PlanError, files, markers, tomllines
from envaudit.commands.plan.inputs.requirements import declare
from envaudit.commands.plan.inputs.values import Declared, Source
from envaudit.model.scope import canonicalize_name
from envaudit.model.typecheck import problem

GroupInclude = TypedDict("GroupInclude", {"include-group": str})
ProjectTable = TypedDict(
    "ProjectTable",
    {
        "name": str,
        "requires-python": str,
        "dependencies": list[str],
        "optional-dependencies": dict[str, list[str]],
        "dynamic": list[str],
    },
    total=False,
)
PyprojectDocument = TypedDict(
    "PyprojectDocument",
    {"project": ProjectTable, "dependency-groups": dict[str, list[str | GroupInclude]]},
    total=False,
)


@dataclass(frozen=True)
class Project:
    path: str
    name: str = ""  # canonical; "" where there is no [project] table
    requires_python: str = ""
    dependencies: tuple[str, ...] = ()
    optional: dict[str, tuple[str, ...]] = field(default_factory=dict)  # normalized extra -> its requirements
    groups: dict[str, tuple[str | GroupInclude, ...]] = field(default_factory=dict)  # normalized group -> entries
    dynamic: bool = False  # [project] dependencies are the build backend's to compute ("dynamic")
    dynamic_extras: bool = False  # so are its optional-dependencies (maxtext's, from requirements files by hatch)
    lines: dict[tuple[str, str], int] = field(default_factory=dict)  # (section, requirement) -> its line

    def source(self, section: str, text: str) -> Source:
        """Where a requirement of a section ("[project] dependencies") is written: its line, where it is found."""
        return Source(self.path, self.lines.get((section, text), 0), section)


def load(path: str) -> Project:
    document, text = files.read_toml_text(path, "a pyproject.toml")
    if found := problem(document, PyprojectDocument, path):
        raise PlanError(found)
    checked = cast(PyprojectDocument, document)
    project: ProjectTable = checked.get("project") or {}
    groups = checked.get("dependency-groups") or {}
    return Project(
        path,
        canonicalize_name(project.get("name") or ""),
        project.get("requires-python") or "",
        tuple(project.get("dependencies") or ()),
        {canonicalize_name(k): tuple(v) for k, v in (project.get("optional-dependencies") or {}).items()},
        {canonicalize_name(k): tuple(v) for k, v in groups.items()},
        "dependencies" in (project.get("dynamic") or ()),
        "optional-dependencies" in (project.get("dynamic") or ()),
        _lines(text),
    )


def _lines(text: str) -> dict[tuple[str, str], int]:
    """Each requirement's line, by the section `select` names it in (an extra's and a group's name normalized)."""
    found: dict[tuple[str, str], int] = {}
    for (path, value), line in tomllines.array_strings(text).items():
        if path == ("project", "dependencies"):
            section = "[project] dependencies"
        elif len(path) == 3 and path[:2] == ("project", "optional-dependencies"):
            section = f"[project.optional-dependencies] {canonicalize_name(path[2])}"
        elif len(path) == 2 and path[0] == "dependency-groups":
            section = f"[dependency-groups] {canonicalize_name(path[1])}"
        else:
            continue
        found.setdefault((section, value), line)
    return found


def select(
    project: Project, target: markers.Target, *, extras: frozenset[str], groups: frozenset[str]
) -> list[Declared]:
    """What the project declares for the target with these extras and groups (`extras`, `groups` normalized;
    unknown ones are refused by `check_choice`)."""
    found: list[Declared] = []
    todo = [("", t) for t in project.dependencies]
    todo += [(e, t) for e in sorted(extras) for t in project.optional.get(e, ())]  # a dynamic extra: the lock's
    done = set(extras)
    while todo:
        extra, text = todo.pop(0)
        section = f"[project.optional-dependencies] {extra}" if extra else "[project] dependencies"
        declared = declare(text, project.source(section, text), target)
        if declared is None:
            continue
        if project.name and declared.name == project.name:  # the project itself, with more of its extras
            more = sorted(declared.extras - done)
            done |= set(more)
            todo += [(e, t) for e in more if e in project.optional for t in project.optional[e]]
            continue
        found.append(declared)
    for group in sorted(groups):
        for written_in, text in _group(project, group, ()):
            declared = declare(text, project.source(f"[dependency-groups] {written_in}", text), target)
            if declared is not None:
                found.append(declared)
    return found


def _group(project: Project, group: str, chain: tuple[str, ...]) -> list[tuple[str, str]]:
    """A dependency group's requirements, its includes expanded (PEP 735: an include cycle is an error)."""
    if group in chain:
        raise PlanError(f"{project.path}: dependency group {group!r} includes itself ({' -> '.join((*chain, group))})")
    if group not in project.groups:
        raise PlanError(f"{project.path}: no dependency group {group!r} (it has: {_listed(project.groups)})")
    found: list[tuple[str, str]] = []  # (the group it is written in, the requirement)
    for entry in project.groups[group]:
        if isinstance(entry, str):
            found.append((group, entry))
        else:
            found += _group(project, canonicalize_name(entry["include-group"]), (*chain, group))
    return found


def check_choice(project: Project, extras: frozenset[str], groups: frozenset[str]) -> None:
    """Every extra and group asked for is one the project has (where its extras are dynamic, the lock beside it
    says which it has)."""
    if (missing := sorted(extras - project.optional.keys())) and not project.dynamic_extras:
        raise PlanError(f"{project.path}: no extra {missing[0]!r} (its extras: {_listed(project.optional)})")
    if missing := sorted(groups - project.groups.keys()):
        raise PlanError(f"{project.path}: no dependency group {missing[0]!r} (it has: {_listed(project.groups)})")


def _listed(names: Iterable[str]) -> str:
    found = sorted(names)
    return ", ".join(found) if found else "none"
