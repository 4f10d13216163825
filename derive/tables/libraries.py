"""Derive the libraries whose releases library_uses.py reads for api-removals.toml: every candidate of
library_candidates.toml (a project name and where it was found: the awesome-jax list, the repositories of the
jax libraries' authors, PyPI's most downloaded projects that say JAX) whose newest release declares a requirement
on jax, jaxlib, flax, equinox, optax, chex or dm-haiku (its Requires-Dist, an extra's included: a library whose
jax code is behind an extra still breaks with jax), read from PyPI's JSON; and two that declare none but run jax
code, kept explicitly: Keras 3 (its jax backend, KERAS_BACKEND=jax) and transformers (its Flax models). A name PyPI
does not have, or whose newest release requires none of those, is dropped (printed, not written). Written to
envaudit/rules/tables/derived/libraries.toml, one [[library]] per project with its provenance.

usage: python -m derive.tables.libraries [--cache DIR] [--offline]
"""

from __future__ import annotations

import tomllib
import urllib.error
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from derive.sources import wheels
from envaudit.model import scope
from envaudit.rules.table import TABLES

CANDIDATES = Path(__file__).with_name("library_candidates.toml")
OUTPUT = TABLES / "derived" / "libraries.toml"
REQUIRED = ("jax", "jaxlib", "flax", "equinox", "optax", "chex", "dm-haiku")  # a requirement on one: jax code
# declare no requirement on jax, run jax code all the same: kept with the reason
EXPLICIT = {
    "keras": "Keras 3 declares no framework; with KERAS_BACKEND=jax (or keras.json's backend) it imports jax",
    "transformers": "its Flax models (transformers/models/*/modeling_flax_*.py) import jax and flax, which only "
    "its flax extra asks for (and not in every release)",
}
SINCE = "2023-01-01"  # the releases read: uploaded since then
OLDER_SINCE = "2022-01-01"  # for OLDER: their 2022 releases have known cases (tables/derived/hand-read.toml)
OLDER = ("flax", "chex", "optax", "dm-haiku", "tensorflow-probability", "neural-tangents")


@dataclass(frozen=True)
class Library:
    package: str
    requires: str  # the Requires-Dist line that names one of REQUIRED ("" for an EXPLICIT one that has none)
    release: str  # the newest release, whose metadata was read
    found: str  # where the name was found (a URL, and what it says)
    since: str  # the releases read: uploaded since then
    explicit: str = ""  # why an EXPLICIT one is kept
    imports: tuple[str, ...] = ()  # the modules `import` names (its newest wheel's RECORD): kfac-jax's kfac_jax


def candidates(path: Path = CANDIDATES) -> list[tuple[str, str]]:
    """(name, where it was found) of the seed file, in its order, each name once."""
    with path.open("rb") as handle:
        rows = tomllib.load(handle)["candidate"]
    seen: dict[str, str] = {}
    for row in rows:
        seen.setdefault(canonicalize_name(row["name"]), row["found"])
    return list(seen.items())


def requirement_on(lines: list[str]) -> str:
    """The first Requires-Dist line that names one of REQUIRED, one that applies without an extra before one under
    an extra; "" when none does (an unparsable line is passed over)."""
    found: list[tuple[bool, str]] = []
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) in REQUIRED:
            optional = requirement.marker is not None and "extra" in str(requirement.marker)
            found.append((optional, line))
    return min(found, key=lambda f: f[0])[1] if found else ""


def newest_release(data: dict[str, Any]) -> str:
    """The release PyPI's JSON describes in `info`: the newest (what `pip install NAME` installs)."""
    return str(data["info"]["version"])


def requires_dist(data: dict[str, Any], cache: Path, offline: bool) -> list[str]:
    """The newest release's Requires-Dist: PyPI's `info.requires_dist`, else (an upload whose metadata PyPI did not
    index) its wheel's METADATA."""
    listed = data["info"].get("requires_dist")
    if listed:
        return [str(line) for line in listed]
    built = [f for f in data["releases"].get(newest_release(data), []) if f["filename"].endswith(".whl")]
    if not built:
        return []
    url = urljoin(wheels.PYPI.format(name=data["info"]["name"]), built[0]["url"])  # a mirror's may be relative
    text = wheels.wheel_metadata(built[0]["filename"], url, cache, offline)
    return wheels.fields(text).get("Requires-Dist", [])


NOT_MODULES = {"tests", "test", "testing", "docs", "examples", "benchmarks", "scripts"}  # (probes/imports.py's)


def modules(record: str) -> tuple[str, ...]:
    """The top-level modules a wheel installs, from its RECORD, as the imports probe finds them: each top-level
    package or module (not tests, docs or a private one); a namespace package (no __init__.py: orbax) through its
    packages that have one (orbax.export)."""
    paths = [line.split(",")[0] for line in record.splitlines() if line.split(",")[0].endswith(".py")]
    parts = [p.split("/") for p in paths if ".dist-info/" not in p and ".data/" not in p]
    tops = sorted({p[0] if len(p) > 1 else p[0][:-3] for p in parts})
    tops = [t for t in tops if t.isidentifier() and not t.startswith("_") and t not in NOT_MODULES]
    inits = {tuple(p[:-1]) for p in parts if p[-1] == "__init__.py"}
    found: list[str] = []
    for top in tops:
        below = sorted(".".join(i) for i in inits if len(i) == 2 and i[0] == top)
        found += [top] if (top,) in inits or f"{top}.py" in paths or not below else below
    return tuple(found)


def import_names(data: dict[str, Any], cache: Path, offline: bool) -> tuple[str, ...]:
    """The modules the newest release installs, from its wheel's RECORD (ranged out of the wheel, then cached);
    () where it has no wheel."""
    built = sorted(
        (f for f in data["releases"].get(newest_release(data), []) if f["filename"].endswith(".whl")),
        key=lambda f: (not f["filename"].endswith("-none-any.whl"), f["filename"]),
    )
    if not built:
        return ()
    url = urljoin(wheels.PYPI.format(name=data["info"]["name"]), built[0]["url"])
    record = wheels.wheel_member(
        built[0]["filename"], url, cache, offline, "RECORD", lambda n: n.endswith(".dist-info/RECORD")
    )
    return modules(record.decode("utf-8", "replace")) if record else ()


def judge(name: str, found: str, data: dict[str, Any] | None, lines: list[str]) -> Library | None:
    """The candidate as a library of the list, or None: not on PyPI, or it requires none of REQUIRED and is not
    one of EXPLICIT."""
    if data is None:
        return None
    requires = requirement_on(lines)
    if not requires and name not in EXPLICIT:
        return None
    since = OLDER_SINCE if name in OLDER else SINCE
    return Library(name, requires, newest_release(data), found, since, EXPLICIT.get(name, ""))


def pypi(name: str, cache: Path, offline: bool) -> dict[str, Any] | None:
    """PyPI's JSON of a project, None where PyPI has no such project."""
    try:
        return wheels.project_json(name, cache, offline)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def derive(cache: Path, offline: bool, path: Path = CANDIDATES) -> tuple[list[Library], list[str]]:
    """The libraries kept, and a line for each candidate dropped."""
    rows = candidates(path)
    datas = wheels.parallel(lambda row: pypi(row[0], cache, offline), rows)
    kept: list[tuple[Library, dict[str, Any]]] = []
    dropped: list[str] = []
    for (name, where), data in zip(rows, datas, strict=True):
        library = judge(name, where, data, requires_dist(data, cache, offline) if data else [])
        if library is None or data is None:
            dropped.append(f"{name}: " + ("not on PyPI" if data is None else f"{newest_release(data)} requires none"))
        else:
            kept.append((library, data))
    named = wheels.parallel(lambda pair: import_names(pair[1], cache, offline), kept)
    libraries = [replace(lib, imports=names) for (lib, _), names in zip(kept, named, strict=True)]
    return sorted(libraries, key=lambda lib: lib.package), dropped


def render(libraries: list[Library], read: str, candidates_read: int) -> str:
    header = [
        "# The libraries whose releases api-removals.toml is derived from: DERIVED by derive/tables/libraries.py",
        "# from the candidates of derive/tables/library_candidates.toml (each with where it was found) and PyPI's",
        "# JSON of each (https://pypi.org/pypi/NAME/json, info.requires_dist of the newest release); do not edit by",
        "# hand. Kept: a project whose newest release requires jax, jaxlib, flax, equinox, optax, chex or dm-haiku",
        "# (`requires`: that Requires-Dist line, an extra's included), and keras and transformers (`explicit`: why;",
        "# they declare no jax). `since`: the releases library_uses.py reads, those uploaded since then (2022 for the",
        "# libraries whose 2022 releases have known cases, else 2023); a project with no release since then has its",
        "# newest read (jraph's only releases are from 2022, its newest 0.0.6.dev0). `imports`: the modules the newest",
        "# release's wheel installs (its RECORD; a namespace package's subpackages: orbax.export), [] without a wheel.",
        f"# {len(libraries)} libraries of {candidates_read} candidates",
    ]
    lines = [*header, 'source = "https://pypi.org/pypi/NAME/json (info.requires_dist of the newest release)"']
    lines.append(f'read = "{read}, {len(libraries)} libraries of {candidates_read} candidates"')
    for lib in libraries:
        lines += ["", "[[library]]", f"package = {wheels.toml_string(lib.package)}"]
        lines.append(f"requires = {wheels.toml_string(lib.requires)}")
        if lib.explicit:
            lines.append(f"explicit = {wheels.toml_string(lib.explicit)}")
        lines.append(f"release = {wheels.toml_string(lib.release)}")
        lines.append(f"since = {wheels.toml_string(lib.since)}")
        lines.append(f"imports = {wheels.toml_list(list(lib.imports))}")
        lines.append(f"found = {wheels.toml_string(lib.found)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = wheels.arguments(__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--read", default=None, help="the read date (default: the newest upload read)")
    options = parser.parse_args(argv)
    cache = wheels.cache_of(options.cache)
    import time

    started = time.monotonic()
    libraries, dropped = derive(cache, options.offline)
    for line in dropped:
        print(f"dropped {line}")
    # the newest upload among the releases read, not today: the same releases give the same bytes
    read = options.read or max(wheels.newest_upload(lib.package, [lib.release], cache) for lib in libraries)
    options.output.write_text(render(libraries, read, len(libraries) + len(dropped)))
    names = {lib.package for lib in libraries}
    if names != scope.LIBRARIES:  # the hook's literal list follows at the refresh's end (derive/generated.py)
        print("envaudit/model/libraries.py differs: `python -m derive refresh` writes it anew")
    print(f"{len(libraries)} libraries kept, {len(dropped)} dropped: {options.output.name} in "
          f"{time.monotonic() - started:.1f}s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
