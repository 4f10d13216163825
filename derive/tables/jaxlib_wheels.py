"""Derive, per CPython minor version, the jaxlib releases that have a wheel pip installs on Linux x86_64 there: the
file names PyPI's JSON lists for every final jaxlib release (no wheel is downloaded), read as pip reads their tags,
written to envaudit/rules/tables/jaxlib-wheels.toml.

A wheel counts for Python 3.Y where one of its tags is `cp3Y-cp3Y` (the regular build's ABI: a free-threaded
`cp313t` wheel does not install on a regular 3.13, as pip answers for `--python-version 3.13`), `cp3X-abi3` with
X <= Y, or `py3-none` (any Python), on a manylinux (or plain linux) x86_64 platform; a musllinux wheel installs on
no glibc system and counts for none. A yanked release (every file yanked) is named under `yanked` and not listed
per Python, as `pip index versions` leaves it out: pip installs it only when pinned exactly (PEP 592), and the
fixes choose among the releases listed. The Pythons are those some release has such a wheel for, oldest first;
`covers_from` is the first release with any (yanked or not), `covers_to` the newest.

jaxlib is compiled: pip installs a release only where it has a wheel, so a plan for a Python none of its wheels
is for cannot install (check `no-jaxlib-wheel-for-python`), and a fix that pins a jaxlib says which Pythons it
costs. The `read` date is the newest upload among the releases read, so a second run on the same JSON writes the
same bytes.

usage: python -m derive.tables.jaxlib_wheels [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import re
from typing import Any

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from derive.sources import wheels
from envaudit.rules.wheels import WHEELS

TABLE = WHEELS.path
PROJECT = "jaxlib"
_LINUX_X86_64 = re.compile(r"^(manylinux\d+|manylinux_\d+_\d+|linux)_x86_64$")
_CPYTHON = re.compile(r"^cp3(\d+)$")
GAP = (Version("0.4.14"), Version("0.4.17"))  # no jaxlib of these is a release on PyPI (the head says so)


def minors(tag: Tag) -> tuple[int, bool] | None:
    """What one tag of a Linux x86_64 wheel installs on: (the minor version Y of CPython 3.Y, whether every later
    minor too), None where it installs on no regular CPython on Linux x86_64."""
    if not _LINUX_X86_64.match(tag.platform):
        return None
    if tag.interpreter in ("py3", "cp3") and tag.abi == "none":
        return (0, True)
    found = _CPYTHON.match(tag.interpreter)
    if found is None:
        return None
    minor = int(found[1])
    if tag.abi == "abi3":
        return (minor, True)
    return (minor, False) if tag.abi == tag.interpreter else None  # cp313t and the like: free-threaded builds


def wheel_pythons(files: list[dict[str, Any]]) -> tuple[set[int], int | None]:
    """The CPython minors a release's files have a Linux x86_64 wheel for, and the oldest minor from which every
    later one is served too (an abi3 or py3-none wheel; None where none is)."""
    exact: set[int] = set()
    onward: int | None = None
    for file in files:
        try:
            _, _, _, tags = parse_wheel_filename(file["filename"])
        except InvalidWheelFilename:
            continue  # an sdist: pip would build jaxlib, which it cannot outside jax's own build
        for tag in tags:
            served = minors(tag)
            if served is None:
                continue
            minor, later = served
            if later:
                onward = minor if onward is None else min(onward, minor)
            else:
                exact.add(minor)
    return exact, onward


def derive(data: dict[str, Any]) -> dict[str, Any]:
    """The table's content from PyPI's JSON of jaxlib: {"versions": {"3.Y": [releases]}, "yanked": [...],
    "covers_from", "covers_to", "releases": [every release read, oldest first]}."""
    read: list[tuple[str, set[int], int | None, bool]] = []
    for version, files in data["releases"].items():
        if wheels.final(version) is None or not files:
            continue
        exact, onward = wheel_pythons(files)
        if exact or onward is not None:
            read.append((version, exact, onward, all(f.get("yanked") for f in files)))
    read.sort(key=lambda r: Version(r[0]))
    if not read:
        raise SystemExit(f"{PROJECT}: PyPI lists no release with a Linux x86_64 CPython wheel")
    columns = sorted({m for _, exact, onward, _ in read for m in [*exact, *([onward] if onward else [])]})
    versions: dict[str, list[str]] = {}
    for minor in columns:
        versions[f"3.{minor}"] = [
            v
            for v, exact, onward, yanked in read
            if not yanked and (minor in exact or (onward is not None and minor >= onward))
        ]
    return {
        "versions": versions,
        "yanked": [v for v, _, _, yanked in read if yanked],
        "covers_from": read[0][0],
        "covers_to": read[-1][0],
        "releases": [v for v, _, _, _ in read],
    }


def _wrapped(items: list[str], indent: str = "  ", width: int = 118) -> list[str]:
    """A TOML array of strings, one per line group, as the hand-made table wrote it."""
    lines, line = [], indent
    for item in items:
        piece = wheels.toml_string(item) + ","
        if len(line) + len(piece) + 1 > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += piece + " "
    if line.strip():
        lines.append(line.rstrip())
    return lines


def render(derived: dict[str, Any], read: str) -> str:
    versions = derived["versions"]
    if any(GAP[0] <= Version(v) <= GAP[1] for v in derived["releases"]):
        raise SystemExit(f"{PROJECT}: PyPI now lists a release from {GAP[0]} to {GAP[1]}: the head says it has none")
    lines = [
        "# The jaxlib releases that have a CPython wheel for Linux x86_64, per Python version:",
        "# DERIVED by derive/tables/jaxlib_wheels.py from the file names PyPI's JSON lists for every final",
        "# jaxlib release, do not edit by hand. A wheel counts for Python 3.Y where a tag of it is cp3Y-cp3Y (a",
        "# free-threaded cp3Yt wheel does not install on the regular build), cp3X-abi3 with X <= Y, or py3-none,",
        "# on a manylinux x86_64 platform. A release from `covers_from` to `covers_to` not listed for a Python has",
        f"# no such wheel: pip cannot install it there. PyPI lists no jaxlib before {derived['covers_from']}, and no",
        "# 0.4.14 to 0.4.17 (none of them is a release there): the table covers them and lists them for no Python.",
        "# A yanked release is named under `yanked` only, not per Python (as `pip index versions` leaves it out):",
        "# installable when pinned with == (PEP 592), never chosen by a fix. Other machines (aarch64, macOS,",
        "# Windows) have other wheels: Linux x86_64 only (platform-wheels.toml says which).",
        f'source = "{wheels.PYPI.format(name=PROJECT)} (the file names of each final release)"',
        f"read = {wheels.toml_string(read)}",
        f"yanked = {wheels.toml_list(derived['yanked'])}",
        f"covers_from = {wheels.toml_string(derived['covers_from'])}",
        f"covers_to = {wheels.toml_string(derived['covers_to'])}",
        "",
        "[versions]",
    ]
    for python, found in versions.items():
        lines += [f"{wheels.toml_string(python)} = [", *_wrapped(found), "]"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    data = wheels.project_json(PROJECT, cache, options.offline)
    derived = derive(data)
    newest = max(wheels.first_upload(data["releases"][v]) for v in derived["releases"])[:10]
    read = f"{newest}, {len(derived['releases'])} jaxlib releases {derived['covers_from']} to {derived['covers_to']}"
    wheels.write_table(options, render(derived, read), read, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
