"""Derive what `pip install 'jax[tpu]==V'` installs beside jax V: the libtpu (or, before 0.4.35, libtpu-nightly)
requirement of the `tpu` extra in each jax release's wheel METADATA, the file pip reads; grouped into runs of
consecutive releases that pin the same, written to envaudit/rules/tables/tpu-extra.toml.

pip check does not read an extra's requirements, so a libtpu that another install moved (TensorFlow's, an older
pin kept while jax was upgraded) leaves pip satisfied: the table is what the check `libtpu-outside-jax-pin` and a
TPU host's jax fix read. jax publishes a pure wheel from 0.4.16; older releases have only an sdist and are not read
(their setup.py pins libtpu-nightly builds from Google's own index, which a plan cannot install from PyPI anyway).
Each METADATA is ranged out of the remote wheel once and cached, so a second run writes the same bytes.

usage: python -m derive.tables.tpu_extra [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

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
    """Each final jax release with a wheel, oldest first, with its tpu extra's pins (none: the extra pins no
    libtpu, or the release has no such extra)."""
    rows = [
        {"version": version, "pins": pins(fields.get("Requires-Dist", []))}
        for version, fields in release_metadata("jax", cache, offline).items()
    ]
    return sorted((r for r in rows if r["pins"]), key=lambda r: Version(r["version"]))


def render(rows: list[dict[str, Any]], read: str) -> str:
    lines = [
        "# What `pip install 'jax[tpu]==V'` installs beside jax V and jaxlib V: the tpu extra's libtpu (libtpu-nightly",
        "# before 0.4.35) requirement, read from the METADATA of each jax release's wheel: DERIVED by",
        "# derive/tables/tpu_extra.py, do not edit by hand. Rows are runs of consecutive releases pinning the same. A",
        "# release outside covers_from..covers_to is unknown (jax has wheels from 0.4.16).",
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
