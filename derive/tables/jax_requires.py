"""Derive what each jax release and the jaxlib of the same number declare they need (Requires-Dist and
Requires-Python) from the files released on PyPI, what pip reads, written to envaudit/rules/tables/jax-requires.toml.

jax: the METADATA of the release's pure wheel (jax has one from 0.4.16); an older release has only an sdist, whose
PKG-INFO carries Requires-Python but no Requires-Dist (setuptools wrote none there before metadata 2.2), so its
requirements are read with `ast` from the sdist's setup.py (install_requires, a list of literal strings: what pip's
build of that sdist declares), checked against the sdist's own egg-info/requires.txt. jaxlib: the METADATA of its
CPython 3.11 (else 3.12, else any) manylinux x86_64 wheel; jaxlib publishes platform wheels only. Requirements under
an extra (`extra == "..."`) are left out, and so is jax's own requirement on jaxlib (from 0.4.30; the coupling is
jax-minimum-jaxlib.toml's); each is normalised (`str(Requirement)`: the name as released, the specifier sorted, the
marker as packaging writes it) and the list sorted. Every final release from 0.4.1 on is read; a yanked one only
where the table listed it already (pip still installs it when pinned). Each file is fetched or ranged once into the
cache (a released file does not change), so a second run reads only the two projects' JSON and writes the same bytes.

usage: python -m derive.tables.jax_requires [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import ast
import re
import tarfile
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from derive.sources import wheels
from envaudit.rules.jax_pins import REQUIRES

TABLE = REQUIRES.path
FIRST = Version("0.4.1")  # the first release the table (and jax-minimum-jaxlib.toml) speaks of
JAXLIB_WHEEL = "its CPython 3.11 (else 3.12, else any) manylinux x86_64 wheel"
_EXTRA = re.compile(r"\bextra\s*[=!]=")


def requirements(declared: Iterable[str], leave_out: str = "") -> list[str]:
    """Requires-Dist as the table holds it: extras' requirements and those on `leave_out` dropped, each normalised
    (`str(Requirement(...))`), sorted and without repeats. A requirement packaging cannot parse is an error: a table
    of jax's own drops nothing silently."""
    found = set()
    for text in declared:
        req = Requirement(text)
        if req.marker is not None and _EXTRA.search(str(req.marker)):
            continue
        if leave_out and canonicalize_name(req.name) == leave_out:
            continue
        found.add(str(req))
    return sorted(found)


def setup_py(source: bytes) -> tuple[list[str], str]:
    """install_requires and python_requires of the `setup(...)` call of a setup.py, read with ast: each a literal
    (a list of strings; a string, "" where absent). Anything computed is an error, never a guess."""
    calls = [
        node
        for node in ast.walk(wheels.parse(source))
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) == "setup" or getattr(node.func, "attr", None) == "setup")
    ]
    if len(calls) != 1:
        raise ValueError(f"setup.py: {len(calls)} setup(...) calls, not one")
    keywords = {k.arg: k.value for k in calls[0].keywords if k.arg}
    requires: list[str] = []
    listed = keywords.get("install_requires")
    if listed is not None:
        if not isinstance(listed, ast.List | ast.Tuple):
            raise ValueError(f"setup.py: install_requires is not a literal list (line {listed.lineno})")
        for item in listed.elts:
            if not isinstance(item, ast.Constant) or not isinstance(item.value, str):
                raise ValueError(f"setup.py: install_requires holds a computed item (line {item.lineno})")
            requires.append(item.value)
    python = keywords.get("python_requires")
    if python is None:
        return requires, ""
    if not (isinstance(python, ast.Constant) and isinstance(python.value, str)):
        raise ValueError(f"setup.py: python_requires is not a literal string (line {python.lineno})")
    return requires, python.value


def egg_requires(text: str) -> list[str]:
    """The requirements setuptools recorded in an sdist's egg-info/requires.txt, extras' sections left out: lines
    before any section, and those of a `[:marker]` section with their marker."""
    found, marker, extra = [], "", False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
            extra, marker = not section.startswith(":"), section[1:]
        elif line and not extra:
            found.append(f"{line}; {marker}" if marker else line)
    return found


def sdist_member(path: Path, name: str) -> bytes | None:
    """A file of an sdist by its path below the sdist's top folder (`setup.py`, `jax/version.py`), None if absent;
    an egg-info's file is named `*.egg-info/FILE`."""
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            inner = member.name.partition("/")[2]
            if member.isfile() and (inner == name or (name.startswith("*") and inner.endswith(name[1:]))):
                handle = archive.extractfile(member)
                return handle.read() if handle is not None else None
    return None


def sdist_declared(path: Path) -> tuple[str, list[str]]:
    """Requires-Python and Requires-Dist of an sdist: its PKG-INFO's, else (no Requires-Dist there) its setup.py's,
    which must agree with the egg-info/requires.txt setuptools wrote beside it."""
    read = wheels.metadata(path)
    python = (read.get("Requires-Python") or [""])[0]
    if "Requires-Dist" in read:
        return python, read["Requires-Dist"]
    source = sdist_member(path, "setup.py")
    if source is None:
        raise SystemExit(f"{path.name}: no Requires-Dist in PKG-INFO and no setup.py")
    try:
        declared, setup_python = setup_py(source)
    except (ValueError, SyntaxError) as error:
        raise SystemExit(f"{path.name}: {error}") from error
    recorded = sdist_member(path, "*.egg-info/requires.txt")
    if recorded is not None and requirements(egg_requires(recorded.decode())) != requirements(declared):
        raise SystemExit(f"{path.name}: setup.py's install_requires and egg-info/requires.txt disagree")
    return python or setup_python, declared


def final_releases(data: dict[str, Any], listed: Iterable[str]) -> list[wheels.Artefact]:
    """Each final release from FIRST on, oldest first, with the file read (its pure wheel, else its sdist); a release
    whose every file is yanked only where `listed` (the releases the committed table holds)."""
    kept = set(listed)
    found = []
    for artefact in wheels.artefacts(data):
        files = data["releases"][artefact.version]
        if Version(artefact.version) < FIRST or (all(f.get("yanked") for f in files) and artefact.version not in kept):
            continue
        found.append(artefact)
    return found


def jax_declared(artefact: wheels.Artefact, cache: Path, offline: bool) -> tuple[str, list[str]]:
    """Requires-Python and Requires-Dist of a jax release, from its wheel's METADATA, else from its sdist."""
    if artefact.kind == "wheel":
        read = wheels.fields(wheels.wheel_metadata(artefact.filename, artefact.url, cache, offline))
        return (read.get("Requires-Python") or [""])[0], read.get("Requires-Dist", [])
    return sdist_declared(wheels.fetch(artefact, cache, offline))


def jaxlib_wheel(files: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The jaxlib wheel whose METADATA is read: CPython 3.11's manylinux x86_64, else 3.12's, else any manylinux
    x86_64 one (by name), else none."""
    linux = sorted(
        (
            f
            for f in files
            if f["filename"].endswith(".whl") and "manylinux" in f["filename"] and "x86_64" in f["filename"]
        ),
        key=lambda f: f["filename"],
    )
    for tag in ("-cp311-cp311-", "-cp312-cp312-", ""):
        for f in linux:
            if tag in f["filename"]:
                return f
    return None


def jaxlib_declared(version: str, data: dict[str, Any], cache: Path, offline: bool) -> list[str] | None:
    """Requires-Dist of the jaxlib release of this number, None where PyPI holds no wheel of it."""
    picked = jaxlib_wheel(data["releases"].get(version) or [])
    if picked is None:
        return None
    url = urljoin(wheels.PYPI.format(name="jaxlib"), picked["url"])
    return wheels.fields(wheels.wheel_metadata(picked["filename"], url, cache, offline)).get("Requires-Dist", [])


def listed_before(path: Path) -> list[str]:
    """The releases the committed table lists (a yanked one among them stays), none where it is absent; read as
    plain TOML, so a table an older derivation wrote (without a field added since) still says them."""
    return list(tomllib.loads(path.read_text(encoding="utf-8")).get("release", {})) if path.exists() else []


def rows(cache: Path, offline: bool) -> list[dict[str, Any]]:
    """Each jax release read, oldest first: version, released (the day its first file was uploaded), python, jax and
    jaxlib (None: no jaxlib of that number)."""
    jax = wheels.project_json("jax", cache, offline)
    jaxlib = wheels.project_json("jaxlib", cache, offline)
    read = final_releases(jax, listed_before(TABLE))
    declared = wheels.parallel(lambda a: jax_declared(a, cache, offline), read)
    libs = wheels.parallel(lambda a: jaxlib_declared(a.version, jaxlib, cache, offline), read)
    return [
        {
            "version": artefact.version,
            "released": artefact.upload_time[:10],
            "python": python,
            "jax": requirements(requires, leave_out="jaxlib"),
            "jaxlib": None if lib is None else requirements(lib),
        }
        for artefact, (python, requires), lib in zip(read, declared, libs, strict=True)
    ]


def wrapped(text: str, width: int = 116) -> list[str]:
    """Text as the comment lines of a table's head, each at most `width` characters."""
    lines, line = [], "#"
    for word in text.split():
        if len(line) + 1 + len(word) > width:
            lines.append(line)
            line = "#"
        line += " " + word
    return [*lines, line]


def render(found: list[dict[str, Any]], read: str) -> str:
    missing = [r["version"] for r in found if r["jaxlib"] is None]
    lines = wrapped(
        "What each jax release and the jaxlib of the same number declare they need (Requires-Dist and "
        "Requires-Python), read from the files released on PyPI, what pip reads: DERIVED by "
        "derive/tables/jax_requires.py, do not edit by hand. jax: the METADATA of each release's wheel (from "
        "0.4.16), else its sdist's PKG-INFO (Requires-Python) and setup.py (install_requires, read with ast and "
        "checked against the sdist's egg-info/requires.txt). jaxlib: the METADATA of "
        f"{JAXLIB_WHEEL}; `python` is jax's Requires-Python. Requirements under an extra are left out, and so is "
        "jax's own pin on jaxlib (from 0.4.30; jax-minimum-jaxlib.toml is the coupling). A live audit reads the "
        "installed metadata instead (pip check); a plan, which has none, reads this. `released`: the day the "
        "release's first file was uploaded (UTC), which says which releases of a library were of its time. "
        "jaxlib = [] where PyPI holds "
        f"no jaxlib of the release's number (never released, or deleted since): {', '.join(missing) or 'none'}."
    )
    jax, jaxlib = wheels.PYPI.format(name="jax"), wheels.PYPI.format(name="jaxlib")
    source = (
        f"{jax} (each release's wheel METADATA, else its sdist's PKG-INFO and setup.py) and {jaxlib} (the METADATA "
        f"of {JAXLIB_WHEEL})"
    )
    lines += [f"source = {wheels.toml_string(source)}", f"read = {wheels.toml_string(read)}"]
    for row in found:
        lines += [
            "",
            f'[release."{row["version"]}"]',
            f"released = {wheels.toml_string(row['released'])}",
            f"python = {wheels.toml_string(row['python'])}",
            f"jax = {wheels.toml_list(row['jax'])}",
            f"jaxlib = {wheels.toml_list(row['jaxlib'] or [])}",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    found = rows(cache, options.offline)
    newest = wheels.newest_upload("jax", [r["version"] for r in found], cache)
    read = f"{newest}, {len(found)} jax releases, {found[0]['version']} to {found[-1]['version']}"
    text = render(found, read)
    wheels.write_table(options, text, read, started)
    REQUIRES.read(options.output)  # the table written has its shape
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
