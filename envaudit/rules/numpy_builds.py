"""Releases built against NumPy 1 beside NumPy 2 (tables/numpy-builds.toml, derived from each release's sdist by
derive/tables/numpy_builds.py): their import fails ("A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.x"), and pip, which reads no build, installed them together. A plan that names no Python is judged where every
Python the release has a wheel for was built against NumPy 1.
"""

from __future__ import annotations

from typing import TypedDict

from envaudit.model.facts import Facts
from envaudit.model.versions import release
from envaudit.rules import fixing
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.table import Provenance, Table
from envaudit.rules.wheels import python_of


class NumpyBuild(TypedDict):
    package: str
    versions: list[str]  # consecutive releases built against NumPy 1 on the same Pythons
    pythons: list[str]  # the Pythons whose wheels were
    wheels: list[str]  # the Pythons the releases have a CPython wheel for
    fixed: str  # the first later release built against NumPy 2 for every Python ("" where none is)
    evidence: str


class NumpyBuilds(Provenance):  # numpy-builds.toml: derived from each release's sdist
    build: list[NumpyBuild]


BUILDS = Table("numpy-builds.toml", NumpyBuilds)


def numpy1_builds(facts: Facts) -> list[Occurrence]:
    numpy = release(facts.packages.get("numpy", "")) or ()
    if numpy < (2,):
        return []
    python = python_of(facts)
    found = []
    for row in BUILDS.load()["build"]:
        version = facts.packages.get(row["package"], "")
        if not version or (release(version) or ()) not in {release(v) for v in row["versions"]}:
            continue
        if python not in row["pythons"] and (python is not None or row["pythons"] != row["wheels"]):
            continue
        said = (
            f"{row['package']} {version} was built against NumPy 1 ({row['evidence']}), numpy "
            f"{facts.packages['numpy']} beside it"
        )
        pin = f"{row['package']}>={row['fixed']}" if row["fixed"] else "numpy<2"
        found.append(Occurrence(said, fixing.install(facts, [pin])))
    return found


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
NUMPY2_WITH_NUMPY1_BUILD = Check(
    id="numpy2-with-numpy1-build",
    severity="fail",
    title="a release built against NumPy 1 beside NumPy 2: its import fails, although pip accepts them together",
    fix="upgrade it to the first release built against NumPy 2 (or keep NumPy below 2)",
    references=(
        "https://github.com/numpy/numpy/blob/v2.0.0/numpy/core/_multiarray_umath.py#L22",
        "https://numpy.org/devdocs/dev/depending_on_numpy.html",
    ),
    run=numpy1_builds,
    explains=("jax:*", "*:crash", "numpy2-module-built-for-numpy1", "imports:*"),
)
