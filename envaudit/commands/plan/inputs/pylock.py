"""pylock.toml (PEP 751): what an installer installs from it for the plan's target, as the specification's
installation steps say (https://packaging.python.org/en/latest/specifications/pylock-toml/#installation).

`lock-version` must be 1.x (an unsupported major version MUST be an error); `environments`, if given, must hold for
the target (else an error); each `[[packages]]` entry whose `marker` holds is installed, the marker evaluated with
`extras` (the selected extras, empty by default) and `dependency_groups` (the selected groups, `default-groups` by
default) as sets; a selected package whose `requires-python` the target's Python does not meet is an error, and so
are two selected entries of one name ("an error about the ambiguity MUST be raised"). A package's `version` may be
absent (a source tree's): a plan of an audited one cannot be exact. `packages.dependencies` is informational only.
The file name is `pylock.toml` or `pylock.NAME.toml` (planinputs.PYLOCK).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Required, TypedDict, cast

from envaudit.commands.plan.inputs import PlanError, files, markers, tomllines
from envaudit.commands.plan.inputs.values import Source
from envaudit.model.scope import canonicalize_name
from envaudit.model.typecheck import problem

PylockPackage = TypedDict(
    "PylockPackage",
    {"name": Required[str], "version": str, "marker": str, "requires-python": str},
    total=False,
)
PylockDocument = TypedDict(
    "PylockDocument",
    {
        "lock-version": Required[str],
        "environments": list[str],
        "requires-python": str,
        "extras": list[str],
        "dependency-groups": list[str],
        "default-groups": list[str],
        "created-by": str,
        "packages": Required[list[PylockPackage]],
    },
    total=False,
)


@dataclass(frozen=True)
class Lock:
    path: str
    document: PylockDocument
    lines: dict[tuple[str, str], int] = field(default_factory=dict)  # (canonical name, version) -> its entry's line

    def line(self, name: str, version: str) -> int:
        """The line of the `[[packages]]` entry of this release (its `name = ...`; 0 where it is not found)."""
        return self.lines.get((name, version), 0)

    @property
    def requires_python(self) -> str:
        return self.document.get("requires-python") or ""

    @property
    def extras(self) -> set[str]:
        return {canonicalize_name(e) for e in self.document.get("extras") or ()}

    @property
    def groups(self) -> set[str]:
        return {canonicalize_name(g) for g in [*self.document.get("dependency-groups", []), *self.default_groups]}

    @property
    def default_groups(self) -> list[str]:
        return list(self.document.get("default-groups") or ())


def load(path: str) -> Lock:
    document, text = files.read_toml_text(path, "a pylock.toml")
    if found := problem(document, PylockDocument, path):
        raise PlanError(found)
    version = document["lock-version"]
    if version.split(".")[0] != "1":
        raise PlanError(f"{path}: lock-version {version!r}; envaudit reads pylock.toml lock-version 1")
    lines = {(canonicalize_name(n), v): line for (n, v), line in tomllines.entries(text, "packages").items()}
    return Lock(path, cast(PylockDocument, document), lines)


def select(lock: Lock, target: markers.Target, *, extras: frozenset[str], groups: frozenset[str]) -> dict[str, str]:
    """Each distribution installed for the target (canonical name -> version, "" where the lock gives none)."""
    where = Source(lock.path)
    environments = lock.document.get("environments") or []
    if environments and not any(markers.holds(m, target, where) for m in environments):
        raise PlanError(f"{lock.path}: its environments ({' or '.join(environments)}) exclude the plan's target")
    if missing := sorted(extras - lock.extras) or sorted(groups - lock.groups):
        raise PlanError(f"{lock.path}: it locks no extra or dependency group {missing[0]!r}")
    chosen = frozenset(groups) if groups else frozenset(canonicalize_name(g) for g in lock.default_groups)
    found: dict[str, str] = {}
    for i, package in enumerate(lock.document["packages"]):
        here = Source(lock.path, section=f"package {package['name']} (entry {i + 1})")
        if "marker" in package and not markers.holds(package["marker"], target, here, extras=extras, groups=chosen):
            continue
        spec = package.get("requires-python")
        if spec and not markers.allows(spec, target.python, here):
            raise PlanError(f"{here}: requires Python {spec}, not {target.python}")
        name = canonicalize_name(package["name"])
        if name in found:
            raise PlanError(f"{here}: a second entry of {name} for the plan's target (the lock is ambiguous)")
        found[name] = package.get("version", "")
    return found
