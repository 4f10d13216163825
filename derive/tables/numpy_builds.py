"""Derive which compiled releases were built against NumPy 1 although they declare nothing that keeps NumPy 2 away:
under NumPy 2 their import fails ("A module that was compiled using NumPy 1.x cannot be run in NumPy 2.x"), and pip
installs them beside it. Written to envaudit/rules/tables/numpy-builds.toml.

A wheel does not say which NumPy it was built with; its sdist's pyproject.toml says which its build installed
(`[build-system] requires`, markers evaluated per Python), and the package index says which NumPy releases existed
when the release was uploaded: the build got the newest NumPy its requirement admitted then (a pre-release only
where the requirement names one, as pip chooses). `oldest-supported-numpy` pins NumPy 1 releases only (its newest
wheel's METADATA is read to check that). Only the releases whose declared Requires-Dist admits NumPy 2
(declared-requires.toml) are read: the others pip refuses beside NumPy 2 (check planned-requirement-refused).
jaxlib and TensorFlow publish no sdist: not derivable here (jaxlib < 0.4.26 has a measured rule of its own;
TensorFlow declares numpy<2 up to 2.17).

usage: python -m derive.tables.numpy_builds [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import re
import tarfile
import time
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from derive.sources import wheels
from envaudit.model import markerenv
from envaudit.model.facts import Facts, PythonFacts
from envaudit.rules import declared
from envaudit.rules.numpy_builds import BUILDS

ROOT = Path(__file__).resolve().parents[2]
TABLE = BUILDS.path
# the audited projects with compiled wheels and sdists whose build reads its NumPy from [build-system] requires.
# Not tensorstore: its Bazel build takes NumPy elsewhere (0.1.61, predicted NumPy 1 from its pyproject.toml, imports
# under NumPy 2.0.2 when measured with confirm_numpy_builds.py)
PROJECTS = ("ml-dtypes", "scipy")
PYTHONS = ("3.9", "3.10", "3.11", "3.12", "3.13")
SINCE = "2022-01-01"
OLDEST = "oldest-supported-numpy"
TAG = re.compile(r"-cp3(\d+)-(abi3|cp3\d+)")


def wheel_pythons(files: list[dict[str, Any]]) -> list[str]:
    """The Pythons a release has a CPython wheel for (an abi3 wheel: each Python from its own)."""
    found: set[str] = set()
    for f in files:
        if (match := TAG.search(f["filename"])) is not None:
            minor = int(match[1])
            found |= {p for p in PYTHONS if match[2] != "abi3" and int(p[2:]) == minor}
            found |= {p for p in PYTHONS if match[2] == "abi3" and int(p[2:]) >= minor}
    return sorted(found, key=lambda p: int(p[2:]))


def admits_numpy2(project: str, version: str) -> bool:
    """Whether what the release declares lets pip install NumPy 2 beside it (on some Python)."""
    for python in PYTHONS:
        facts = Facts(packages={}, python=PythonFacts(version=python), origin="plan")
        for each in declared.applying(facts, project, version) or []:
            numpy = [Requirement(r).specifier for r in each if Requirement(r).name == "numpy"]
            if all(s.contains("2.0.0") for s in numpy):
                return True
    return False


def build_requires(path: Path) -> list[str]:
    """The sdist's pyproject.toml `[build-system] requires` (nothing where it has none)."""
    with tarfile.open(path) as archive:
        member = next(
            (m for m in archive.getmembers() if m.name.count("/") == 1 and m.name.endswith("/pyproject.toml")), None
        )
        handle = archive.extractfile(member) if member else None
        text = handle.read().decode() if handle else ""
    requires: list[str] = tomllib.loads(text).get("build-system", {}).get("requires", []) if text else []
    return requires


def numpy_at(releases: list[tuple[Version, str]], spec: SpecifierSet, uploaded: str) -> str:
    """The newest NumPy uploaded before `uploaded` that `spec` admits, as pip chose it for the build."""
    admitted = [v for v, at in releases if at < uploaded and spec.contains(v)]
    exact = [s.version for s in spec if s.operator == "=="]
    if not admitted and len(exact) == 1:  # a pin the index here lists no file of (numpy 2.0.0rc1): that release
        return exact[0]
    return str(max(admitted)) if admitted else ""


def build_numpy(requires: list[str], python: str, releases: list[tuple[Version, str]], uploaded: str) -> str:
    """The NumPy the build for this Python installed: '' where the build requires none (no NumPy C API)."""
    environment = markerenv.target(python).environment() | {"extra": ""}
    spec, named = SpecifierSet(), False
    for text in requires:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate(environment):
            continue
        if req.name == OLDEST:
            spec, named = spec & SpecifierSet("<2"), True
        elif req.name == "numpy":
            spec, named = spec & req.specifier, True
    return numpy_at(releases, spec, uploaded) if named else ""


def oldest_supported_is_numpy1(cache: Path, offline: bool) -> None:
    """oldest-supported-numpy pins NumPy 1 only: checked on its newest wheel's METADATA, or the script stops."""
    data = wheels.project_json(OLDEST, cache, offline)
    newest = max((v for v, f in data["releases"].items() if f and wheels.final(v)), key=Version)
    wheel = next(f for f in data["releases"][newest] if f["filename"].endswith(".whl"))
    url = urljoin(wheels.PYPI.format(name=OLDEST), wheel["url"])
    fields = wheels.fields(wheels.wheel_metadata(wheel["filename"], url, cache, offline))
    pins = [Requirement(r) for r in fields.get("Requires-Dist", []) if Requirement(r).name == "numpy"]
    if not pins or any(s.operator != "==" or Version(s.version).major >= 2 for r in pins for s in r.specifier):
        raise SystemExit(f"{OLDEST} {newest} pins more than NumPy 1 releases: {pins}")


def derive(project: str, numpy: list[tuple[Version, str]], cache: Path, offline: bool) -> list[dict[str, Any]]:
    data = wheels.project_json(project, cache, offline)
    base = wheels.PYPI.format(name=project)
    found = []
    for version, files in sorted(data["releases"].items(), key=lambda item: Version(item[0])):
        uploaded = wheels.first_upload(files) if files else ""
        sdists = [f for f in files if f["packagetype"] == "sdist"]
        if wheels.final(version) is None or uploaded < SINCE or not sdists or not admits_numpy2(project, version):
            continue
        sdist = sdists[0]
        artefact = wheels.Artefact(
            project,
            version,
            sdist["filename"],
            urljoin(base, sdist["url"]),
            sdist["digests"]["sha256"],
            uploaded,
            "sdist",
        )
        requires = build_requires(wheels.fetch(artefact, cache, offline))
        pythons = wheel_pythons(files)
        built = {p: build_numpy(requires, p, numpy, uploaded) for p in pythons}
        found.append({"version": version, "uploaded": uploaded[:10], "file": sdist["filename"], "built": built})
        print(f"{project} {version}: {built}")
    return found


def rows(project: str, releases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of consecutive releases built against NumPy 1 on the same Pythons, each with the first later release
    built against NumPy 2 on every Python it has a wheel for (`fixed`)."""
    found: list[dict[str, Any]] = []
    for release in releases:
        ones = sorted((p for p, v in release["built"].items() if v and Version(v).major < 2), key=lambda p: int(p[2:]))
        if not ones:
            continue
        wheels = sorted(release["built"], key=lambda p: int(p[2:]))
        built = sorted({release["built"][p] for p in ones}, key=Version)
        evidence = (
            f"{release['file']} [build-system] requires, uploaded {release['uploaded']}: NumPy {', '.join(built)}"
        )
        last = found[-1] if found else None
        if last and last["pythons"] == ones and last["wheels"] == wheels:
            last["versions"].append(release["version"])
            last["evidence"] = evidence
            continue
        found.append(
            {
                "package": project,
                "versions": [release["version"]],
                "pythons": ones,
                "wheels": wheels,
                "evidence": evidence,
            }
        )
    for row in found:  # the fix of a run is the first release after its last one
        last = max(row["versions"], key=Version)
        after = [r for r in releases if Version(r["version"]) > Version(last)]
        row["fixed"] = next(
            (r["version"] for r in after if all(v and Version(v).major >= 2 for v in r["built"].values())), ""
        )
    return found


def render(found: list[dict[str, Any]], read: str) -> str:
    lines = [
        "# Compiled releases built against NumPy 1 that declare nothing keeping NumPy 2 away: under NumPy 2 their",
        "# import fails. DERIVED by derive/tables/numpy_builds.py from each release's sdist ([build-system] requires,",
        "# per Python) and the NumPy releases uploaded before it; do not edit by hand. `pythons` the Pythons whose",
        "# wheels were built against NumPy 1, `wheels` those the release has a CPython wheel for, `fixed` the first",
        '# later release built against NumPy 2 for every Python ("" where none is).',
        f"source = \"{wheels.PYPI} (each release's sdist pyproject.toml, and numpy's upload times)\"",
        f'read = "{read}"',
    ]
    for row in found:
        lines += ["", "[[build]]", f'package = "{row["package"]}"', f"versions = {wheels.toml_list(row['versions'])}"]
        lines += [f"pythons = {wheels.toml_list(row['pythons'])}", f"wheels = {wheels.toml_list(row['wheels'])}"]
        lines += [f'fixed = "{row["fixed"]}"', f'evidence = "{row["evidence"]}"']
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    oldest_supported_is_numpy1(cache, options.offline)
    data = wheels.project_json("numpy", cache, options.offline)
    numpy = [(Version(v), wheels.first_upload(f)) for v, f in data["releases"].items() if f]
    found = {project: derive(project, numpy, cache, options.offline) for project in PROJECTS}
    table = [row for project in PROJECTS for row in rows(project, found[project])]
    counted = sum(len(r) for r in found.values())
    newest = max(r["uploaded"] for rs in found.values() for r in rs)
    read = f"{newest}, {counted} releases of {len(PROJECTS)} projects that admit NumPy 2, uploaded from {SINCE}"
    options.output.write_text(render(table, read))
    print(f"{read}: {len(table)} rows in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
