"""pip's installation report, version 1 (`pip install --dry-run --ignore-installed --report FILE ...`; the format:
https://pip.pypa.io/en/stable/reference/installation-report/, stable since pip 23.0).

The report is a JSON object: `version` "1" ("Tools must check this field to ensure they support the corresponding
version"), `pip_version`, `install` (each distribution pip would install: `metadata` with its `name` and `version`,
`requested` for what the user asked for, `requested_extras`, `is_direct`, `download_info`) and `environment`, the
PEP 508 marker values of the environment it was resolved for (string values). pip evaluates the resolution's
markers for the interpreter that runs it, also under `--python-version` (pip#11198: the report records that
interpreter's environment), so a plan takes the report's Python unless `--python` says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName

from envaudit.commands.plan.inputs import PlanError, files, markers
from envaudit.commands.plan.inputs.values import Resolved, Source
from envaudit.model.scope import canonicalize_name
from envaudit.model.typecheck import problem


class _MetadataOptional(TypedDict, total=False):
    requires_dist: list[str]


class ReportMetadata(_MetadataOptional):
    name: str
    version: str


class _ItemOptional(TypedDict, total=False):
    requested: bool
    requested_extras: list[str]
    is_direct: bool


class ReportItem(_ItemOptional):
    metadata: ReportMetadata


class _ReportOptional(TypedDict, total=False):
    pip_version: str
    environment: dict[str, str]


class PipReportDocument(_ReportOptional):
    version: str
    install: list[ReportItem]


@dataclass(frozen=True)
class Report:
    path: str
    versions: dict[str, str] = field(default_factory=dict)  # canonical name -> version
    environment: dict[str, str] = field(default_factory=dict)
    requires_dist: dict[str, tuple[str, ...]] = field(default_factory=dict)  # canonical name -> its Requires-Dist
    requested: frozenset[str] = frozenset()  # what pip was asked to install by name (its `requested`)


def load(path: str) -> Report:
    document = files.read_json(path, "a pip installation report")
    if not isinstance(document, dict):  # `null` too: a document itself is never null (a field of one may be)
        raise PlanError(f"{path} must be a JSON object (pip's installation report)")
    if found := problem(document, PipReportDocument, path):
        raise PlanError(found)
    if document["version"] != "1":
        raise PlanError(f"{path}: report version {document['version']!r}; envaudit reads version 1 (pip >= 23.0)")
    versions: dict[str, str] = {}
    requires_dist: dict[str, tuple[str, ...]] = {}
    requested: set[str] = set()
    for item in document["install"]:
        metadata = item["metadata"]
        name = canonicalize_name(metadata["name"])
        if name in versions:
            raise PlanError(f"{path}: installs {name} twice")
        versions[name] = metadata["version"]
        requires_dist[name] = tuple(metadata.get("requires_dist") or ())
        if item.get("requested"):
            requested.add(name)
    environment = document.get("environment") or {}
    if not environment.get("python_full_version"):
        raise PlanError(f"{path}: its environment records no python_full_version")
    return Report(path, versions, environment, requires_dist, frozenset(requested))


def resolved(report: Report, python: str = "") -> Resolved:
    """The report as a resolution: its Python (`python`, --python, where given), its platform as it records it, and
    what each audited distribution requires of the others (its Requires-Dist, markers evaluated for that
    environment, by the collector's own `check`), which a fix must keep true (fixing.dependents)."""
    environment = report.environment
    python = python or environment["python_full_version"]
    platform = {"system": environment.get("platform_system", ""), "machine": environment.get("platform_machine", "")}
    from envaudit.collect.packages import Dist, check  # lazily: it loads importlib.metadata

    evaluated = markers.target(python, environment).environment()
    try:
        dists = [Dist(n, v, report.requires_dist.get(n, ()), report.path) for n, v in report.versions.items()]
        requires = check(dists, dict(evaluated))[1]
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName) as exc:
        raise PlanError(f"{report.path}: a requirement's marker cannot be evaluated: {exc}") from None
    return Resolved(
        report.versions,
        Source(report.path),
        into="",  # what it was resolved from is not in it
        python=python,
        platform={k: v for k, v in platform.items() if v},
        requires=requires,
        direct=report.requested,
    )
