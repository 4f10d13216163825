"""Derive what the ecosystem's releases declare they need: each release's Requires-Dist and its Requires-Python,
read from the METADATA of one of its wheels, for every audited project and every library around jax
(tables/derived/libraries.toml); grouped into runs of consecutive releases that declare the same, written to
envaudit/rules/tables/declared-requires.toml.

A plan has no installed metadata to read: this table is what pip would read once it installs the plan, so a plan
says what pip would refuse (tensorflow 2.16.1 requires numpy<2.0.0, planned 2.0.0; equinox 0.11.5 requires
jax!=0.4.27; optimistix 0.0.10 requires jaxtyping>=0.2.23) and what a fix must keep true. jax and jaxlib have their
own table (jax-requires.toml, read at the tags). Kept of each release: every requirement on an audited package or a
library of the list, its markers kept, an extra's too (tensorflow-probability's `jax; extra == "jax"`, kept per
release; rules/declared.py evaluates markers with no extra, as a plan of pins installs none, so none applies yet);
and a requirement on any other package that bounds it above, pins it or excludes releases of it
(jaxtyping 0.2.26's `typeguard==2.13.3`: a plan that pins typeguard 4 is refused), not under an extra. Each METADATA
is ranged out of the remote wheel once and cached (a released file does not change), so a second run reads only the
projects' JSON and writes the same bytes.

usage: python -m derive.tables.declared [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from derive.sources import wheels
from envaudit.model.scope import RELEVANT_NAMES, SELF, in_stack
from envaudit.rules.declared import DECLARED

ROOT = Path(__file__).resolve().parents[2]
TABLE = DECLARED.path
SINCE = "2022-01-01"  # by upload time: the releases a plan of today names, and the upstream record's cases
OWN_TABLE = {"jax", "jaxlib"}  # jax-requires.toml, read at the tags
NOT_RELEASED_HERE = SELF | {"libtpu", "libtpu-nightly"}  # envaudit itself (not on PyPI: a refresh met its 404);
# libtpu declares nothing audited
WHEEL_READ = "the METADATA of each release's wheel for CPython 3.11 on Linux x86_64, else of a pure one, else of any"
STACK = frozenset(RELEVANT_NAMES - OWN_TABLE - NOT_RELEASED_HERE)
LIBRARIES = TABLE.parent / "derived" / "libraries.toml"  # derived first (derive/tables/libraries.py)
SAME = ("python", "requires")  # what a row's releases all declare
BOUNDING = ("<", "<=", "==", "===", "!=", "~=")  # what a newer release, or one excluded, of a package breaks


def libraries(path: Path = LIBRARIES) -> frozenset[str]:
    """The libraries around jax, as tables/derived/libraries.toml lists them (read when the derivation runs: the
    refresh derives that list before this table)."""
    with path.open("rb") as handle:
        return frozenset(str(lib["package"]) for lib in tomllib.load(handle)["library"])


def projects(listed: frozenset[str]) -> tuple[str, ...]:
    """The projects whose releases are read: the audited stack's and the libraries', jax's own and envaudit's not."""
    return tuple(sorted((STACK | listed) - OWN_TABLE - NOT_RELEASED_HERE))


def requirements(declared: list[str], listed: frozenset[str] = frozenset()) -> list[str]:
    """The release's requirements that a plan can break, normalised (name, specifier, marker): on an audited package
    or a library of `listed`, whatever its marker (an extra's too); on any other package, where it bounds it above,
    pins it or excludes a release, and applies without an extra."""
    found = []
    for text in declared:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue  # pip ignores what it cannot parse too (with a warning)
        name = canonicalize_name(req.name)
        optional = req.marker is not None and "extra" in str(req.marker)
        bounding = any(s.operator in BOUNDING for s in req.specifier)
        if not (in_stack(name) or name in listed or (bounding and not optional)):
            continue
        specifier = ",".join(sorted(str(s) for s in req.specifier))
        found.append(f"{name}{specifier}" + (f"; {req.marker}" if req.marker else ""))
    return sorted(set(found))


def metadata_file(files: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The file of a release whose metadata is read: the wheel pip installs on Linux x86_64 under CPython 3.11
    (what a plan assumes unless told), else a pure-Python wheel, else any Linux x86_64 wheel, else any wheel."""
    wheels = sorted((f for f in files if f["filename"].endswith(".whl")), key=lambda f: f["filename"])
    preferences = (
        lambda n: "-cp311-" in n and "x86_64" in n and "linux" in n,
        lambda n: n.endswith("-none-any.whl"),
        lambda n: "x86_64" in n and "linux" in n,
        lambda n: True,
    )
    return next((f for wanted in preferences for f in wheels if wanted(f["filename"])), None)


def release_metadata(project: str, cache: Path, offline: bool, since: str = "") -> dict[str, dict[str, list[str]]]:
    """Each final release (first uploaded on or after `since`) that has a wheel: its METADATA's fields, read from
    the wheel metadata_file picks."""
    data = wheels.project_json(project, cache, offline)
    base = wheels.PYPI.format(name=project)
    found = [
        (version, picked)
        for version, files in data["releases"].items()
        if wheels.final(version) is not None and files and wheels.first_upload(files) >= since
        if (picked := metadata_file(files)) is not None
    ]
    texts = wheels.parallel(
        lambda item: wheels.wheel_metadata(item[1]["filename"], urljoin(base, item[1]["url"]), cache, offline), found
    )
    return {version: wheels.fields(text) for (version, _), text in zip(found, texts, strict=True)}


def declared(project: str, cache: Path, offline: bool, listed: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Each final release since SINCE that has a wheel, oldest first: its version, Requires-Python and
    requirements, from that wheel's METADATA."""
    rows = []
    for version, read in release_metadata(project, cache, offline, SINCE).items():
        python = (read.get("Requires-Python") or [""])[0]
        needs = requirements(read.get("Requires-Dist", []), listed)
        rows.append({"version": version, "python": python, "requires": needs})
    return sorted(rows, key=lambda r: Version(r["version"]))


def render(tables: dict[str, list[dict[str, Any]]], read: str) -> str:
    lines = [
        "# What the ecosystem's releases declare they need (Requires-Dist on the packages envaudit audits, and",
        "# Requires-Python), read from the METADATA of each release's wheel: DERIVED by",
        "# derive/tables/declared.py, do not edit by hand. Rows are runs of consecutive releases declaring the same.",
        "# Projects: the audited stack and the libraries around jax (tables/derived/libraries.toml). Kept: each",
        "# requirement on one of them, an extra's with its marker (kept per release; a plan installs no extra, so the",
        "# rules apply none yet), and each on another package that bounds it above, pins it or excludes a release of",
        "# it (not under an extra).",
        "# jax and jaxlib are in jax-requires.toml. A release not listed is unknown (older than the first read, newer",
        "# than the last, or not a final release).",
        f'source = "{wheels.PYPI} ({WHEEL_READ})"',
        f'read = "{read}"',
    ]
    for project, rows in sorted(tables.items()):
        for row in rows:
            lines += ["", "[[release]]", f'package = "{project}"', f"versions = {wheels.toml_list(row['versions'])}"]
            lines += [
                f"python = {wheels.toml_string(row['python'])}",
                f"requires = {wheels.toml_list(row['requires'])}",
            ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    listed = libraries()
    read_projects = projects(listed)
    tables = {project: declared(project, cache, options.offline, listed) for project in read_projects}
    newest = max(
        wheels.first_upload(files)
        for project in read_projects
        for files in wheels.project_json(project, cache, True)["releases"].values()
        if files
    )[:10]
    counted = sum(len(rows) for rows in tables.values())
    read = f"{newest}, {counted} releases of {sum(1 for r in tables.values() if r)} projects uploaded from {SINCE}"
    wheels.write_table(
        options, render({p: wheels.runs(rows, SAME) for p, rows in tables.items() if rows}, read), read, started
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
