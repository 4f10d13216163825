"""Derive what `pip install 'jax[tpu]==V'` installs beside jax V: the libtpu (or, before 0.4.35, libtpu-nightly)
requirement of the `tpu` extra in each jax release's wheel METADATA, the file pip reads; grouped into runs of
consecutive releases that pin the same, written to envaudit/rules/tables/tpu-extra.toml. jax publishes a pure wheel
from 0.4.16; before it a release has only an sdist, whose PKG-INFO lists no requirements (older setuptools): its
`tpu` extra is read from its setup.py, the file pip runs to build it (`extras_require`, its f-strings filled from the
module's string constants: `_libtpu_version`).

pip check does not read an extra's requirements, so a libtpu that another install moved (TensorFlow's, an older
pin kept while jax was upgraded) leaves pip satisfied: the table is what the check `libtpu-outside-jax-pin` and a
TPU host's jax fix read. Before 0.4.16 the pins are libtpu-nightly builds from Google's own index (`-f
https://storage.googleapis.com/jax-releases/libtpu_releases.html`, jax's README of the time), which a plan cannot
install from PyPI; the table says what they were, so that a report of such a stack is read, not unknown.
Each METADATA is ranged out of the remote wheel once and cached, so a second run writes the same bytes.

usage: python -m derive.tables.tpu_extra [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from derive.sources import wheels
from derive.tables.declared import release_metadata
from envaudit.rules.tpu_pins import TPU_EXTRA

ROOT = Path(__file__).resolve().parents[2]
TABLE = TPU_EXTRA.path
EXTRA = "tpu"
TPU_PACKAGES = ("libtpu", "libtpu-nightly")


def pins(declared: list[str]) -> list[str]:
    """The extra's requirements on libtpu and libtpu-nightly, normalised (name and specifier; jaxlib is the
    coupling's, `requests` is not audited)."""
    found = []
    for text in declared:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if name in TPU_PACKAGES and req.marker is not None and req.marker.evaluate({"extra": EXTRA}):
            found.append(f"{name}{','.join(sorted(str(s) for s in req.specifier))}")
    return sorted(found)


def releases(cache: Path, offline: bool) -> list[dict[str, Any]]:
    """Each final jax release, oldest first, with its tpu extra's pins: from its wheel's METADATA, else from its
    sdist's setup.py (a release whose extra pins no libtpu, or that has no such extra, is left out)."""
    rows = [
        {"version": version, "pins": pins(fields.get("Requires-Dist", []))}
        for version, fields in release_metadata("jax", cache, offline).items()
    ]
    read = {r["version"] for r in rows}
    sdists = [a for a in wheels.artefacts(wheels.project_json("jax", cache, offline)) if a.kind == "sdist"]
    sdists = [a for a in sdists if a.version not in read]
    paths = wheels.fetch_all(sdists, cache, offline)
    rows += [{"version": a.version, "pins": sdist_pins(paths[a])} for a in sdists]
    return sorted((r for r in rows if r["pins"]), key=lambda r: Version(r["version"]))


def sdist_pins(path: Path) -> list[str]:
    """The tpu extra's libtpu pins an sdist's setup.py declares (`extras_require={'tpu': [...]}`), normalised as
    `pins` normalises a wheel's."""
    setup = next((data for name, data in wheels.python_files(path) if name == "setup.py"), None)
    if setup is None:
        return []
    return pins([f"{text}; extra == '{EXTRA}'" for text in setup_extra(setup, EXTRA)])


def setup_extra(source: bytes, extra: str) -> list[str]:
    """An extra's requirements as a setup.py writes them: a dict entry `'tpu': [...]` anywhere in the file, each
    item a string or an f-string over the module's string constants (`f'libtpu-nightly=={_libtpu_version}'`); an
    item with any other value is not read."""
    tree = wheels.parse(source)
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == extra and isinstance(value, ast.List):
                return [text for item in value.elts if (text := _string(item, constants)) is not None]
    return []


def _string(node: ast.expr, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    parts = []
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            parts.append(part.value)
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.value.id in constants:
            parts.append(constants[part.value.id])
        else:
            return None
    return "".join(parts)


def render(rows: list[dict[str, Any]], read: str) -> str:
    lines = [
        "# What `pip install 'jax[tpu]==V'` installs beside jax V and jaxlib V: the tpu extra's libtpu (libtpu-nightly",
        "# before 0.4.35) requirement, read from the METADATA of each jax release's wheel: DERIVED by",
        "# derive/tables/tpu_extra.py, do not edit by hand. Rows are runs of consecutive releases pinning the same. A",
        "# release outside covers_from..covers_to is unknown. Before 0.4.16 (no wheel) the pins are read from the",
        "# sdist's setup.py, and are libtpu-nightly builds from Google's own index, not PyPI's.",
        f'source = "{wheels.PYPI.format(name="jax")} (the METADATA of each release\'s wheel, extra == \\"tpu\\")"',
        f'read = "{read}"',
        f'covers_from = "{rows[0]["versions"][0]}"',
        f'covers_to = "{rows[-1]["versions"][-1]}"',
    ]
    for row in rows:
        lines += ["", "[[release]]", f"versions = {wheels.toml_list(row['versions'])}"]
        lines += [f"pins = {wheels.toml_list(row['pins'])}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    rows = releases(cache, options.offline)
    newest = wheels.newest_upload("jax", [r["version"] for r in rows], cache)
    read = f"{newest}, {len(rows)} jax releases"
    wheels.write_table(options, render(wheels.runs(rows, ("pins",)), read), read, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
