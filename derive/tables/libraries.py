"""Derive the libraries around jax, whose releases library_uses.py reads for api-removals.toml and whose
declarations declared.py reads: every candidate of library_candidates.toml (a project name and where it was found:
the awesome-jax list, the repositories of the jax libraries' authors, PyPI's most downloaded projects that say JAX)
whose newest release has a jax interface or integration, found from the release itself, the first of these ways
(`way`, with its evidence):

- `requires`: its Requires-Dist names jax, jaxlib, flax, equinox, optax, chex or dm-haiku (PyPI's JSON);
- `extra`: only under an extra (tensorflow-probability's `jax; extra == "jax"`: its jax code still breaks with jax);
- `entry point`: its wheel registers an entry point in a group that names jax (`jax_plugins`, the group jax reads
  its PJRT plugins from: jax/_src/xla_bridge.py, discover_pjrt_plugins), read from the wheel's entry_points.txt;
- `imports`: a Python file of its package (not tests, docs or examples; not under `if TYPE_CHECKING:`) imports jax
  (`import jax`, `from jax... import`), read from the newest release's wheel (else its sdist), downloaded once into
  the cache and sha256-checked, its .py files read one by one until the first that does (PennyLane's jax interface,
  jaxtyping, Keras 3's jax backend, transformers: none of them declares jax).

A name PyPI does not have, or whose newest release shows none of these, is dropped (printed, not written). Written to
envaudit/rules/tables/derived/libraries.toml, one [[library]] per project with its provenance.

usage: python -m derive.tables.libraries [--cache DIR] [--offline]
"""

from __future__ import annotations

import ast
import re
import tomllib
import urllib.error
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from derive.sources import library_uses, wheels
from envaudit.model import scope
from envaudit.rules.table import TABLES

CANDIDATES = Path(__file__).with_name("library_candidates.toml")
OUTPUT = TABLES / "derived" / "libraries.toml"
REQUIRED = ("jax", "jaxlib", "flax", "equinox", "optax", "chex", "dm-haiku")  # a requirement on one: jax code
WAYS = ("requires", "extra", "entry point", "imports")  # how a library was found, in the order tried
# an entry point group that names jax: jax's own (`jax_plugins`), or one whose name has jax as a word of it
JAX_GROUP = re.compile(r"(^|[._-])jax($|[._-])", re.IGNORECASE)
SCAN_FORMAT = 1  # of the cached file scans (derived/jax-imports/FILE.json): bumped when what is read changes
SINCE = "2023-01-01"  # the releases read: uploaded since then
OLDER_SINCE = "2022-01-01"  # for OLDER: their 2022 releases have known cases (tables/derived/hand-read.toml)
OLDER = ("flax", "chex", "optax", "dm-haiku", "tensorflow-probability", "neural-tangents")


@dataclass(frozen=True)
class Library:
    package: str
    requires: str  # the Requires-Dist line that names one of REQUIRED ("" where it was found another way)
    release: str  # the newest release, whose metadata was read
    found: str  # where the name was found (a URL, and what it says)
    since: str  # the releases read: uploaded since then
    way: str = "requires"  # how its jax interface was found (WAYS)
    evidence: str = ""  # what showed it: the Requires-Dist line, the entry point, the file and line that imports jax
    entry_point: str = ""  # its entry point in a group that names jax, whatever way found it (jax-metal's plugin)
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
            found.append((under_extra(requirement), line))
    return min(found, key=lambda f: f[0])[1] if found else ""


def under_extra(requirement: Requirement) -> bool:
    return requirement.marker is not None and "extra" in str(requirement.marker)


def jax_entry_point(text: str) -> str:
    """The first entry point of an entry_points.txt (INI: `[group]`, then `name = object`) in a group that names
    jax, as `[group] name = object`; "" where none is."""
    group = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
        elif "=" in line and not line.startswith(("#", ";")) and JAX_GROUP.search(group):
            name, _, target = line.partition("=")
            return f"[{group}] {name.strip()} = {target.strip()}"
    return ""


def imports_jax(source: bytes) -> int:
    """The line of the first statement of a module that imports jax or one of its modules (`import jax.numpy as
    jnp`, `from jax import lax`), where it runs: anywhere but under `if TYPE_CHECKING:` (jaxtyping's annotations); 0
    where none does, or the file does not parse."""
    try:
        tree = wheels.parse(source)
    except (SyntaxError, ValueError):
        return 0
    lines = [n.lineno for n in _runtime_nodes(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and _names_jax(n)]
    return min(lines, default=0)


def _names_jax(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "jax" or a.name.startswith("jax.") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return node.level == 0 and (module == "jax" or module.startswith("jax."))
    return False


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:` / `if typing.TYPE_CHECKING:` (their `else:` runs)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and _type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def package_sources(path: Path) -> Iterator[tuple[str, bytes]]:
    """A wheel's (or an sdist's) package .py files, as library_uses reads package code (not tests, docs, examples,
    setup.py), in name order, each read only when the one before it was done with: a scan that stops at its first
    hit reads no more of the archive."""
    if path.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(path) as archive:
            for name in sorted(n for n in archive.namelist() if n.endswith(".py")):
                if library_uses.package_file(name, wheel=True) and ".dist-info/" not in name:
                    yield name, archive.read(name)
        return
    for name, data in wheels.python_files(path):  # an sdist: its layout cut to the installed one
        if library_uses.package_file(name):
            yield name, data


def first_jax_import(path: Path) -> str:
    """`FILE:LINE` of the first package file (in name order) that imports jax at run time; "" where none does."""
    for name, data in package_sources(path):
        line = imports_jax(data)
        if line:
            return f"{name}:{line}"
    return ""


def newest_artefact(data: dict[str, Any]) -> wheels.Artefact | None:
    """The newest release's file to read: its pure wheel, else its sdist, else a platform wheel (whose Python files
    are any platform's); None where it has none."""
    every = wheels.artefacts(data, finals_only=False, any_wheel=True)
    return next((a for a in every if a.version == newest_release(data)), None)


def scanned(artefact: wheels.Artefact, cache: Path, offline: bool) -> str:
    """first_jax_import of the artefact, kept in the cache beside the file's sha256 (a released file does not
    change: a second run downloads and reads nothing)."""
    kept = cache / "derived" / "jax-imports" / f"{artefact.filename}.json"
    if kept.exists():
        found: dict[str, Any] = wheels.load_json(kept)
        if found.get("format") == SCAN_FORMAT and found.get("sha256") == artefact.sha256:
            return str(found["imports"])
    hit = first_jax_import(wheels.fetch(artefact, cache, offline))
    wheels.dump_json(kept, {"format": SCAN_FORMAT, "sha256": artefact.sha256, "imports": hit})
    return hit


def entry_points_of(data: dict[str, Any], cache: Path, offline: bool) -> str:
    """The newest release's wheel's entry_points.txt ("" where it has none, or no wheel), ranged out of the wheel
    once and cached."""
    built = _newest_wheels(data)
    if not built:
        return ""
    url = urljoin(wheels.PYPI.format(name=data["info"]["name"]), built[0]["url"])
    text = wheels.wheel_member(
        built[0]["filename"],
        url,
        cache,
        offline,
        "entry_points.txt",
        lambda n: n.endswith(".dist-info/entry_points.txt"),
    )
    return text.decode("utf-8", "replace") if text else ""


def _newest_wheels(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The newest release's wheels, its pure one first."""
    return sorted(
        (f for f in data["releases"].get(newest_release(data), []) if f["filename"].endswith(".whl")),
        key=lambda f: (not f["filename"].endswith("-none-any.whl"), f["filename"]),
    )


def way_found(data: dict[str, Any], lines: list[str], cache: Path, offline: bool) -> tuple[str, str, str]:
    """(way, evidence, its jax entry point) of the first way (WAYS, in order) the newest release shows a jax
    interface; ("", "", "") where it shows none. The entry points are read for each (a member ranged out of the
    wheel); the file scan, which downloads the release, only where nothing before it found one."""
    entry = jax_entry_point(entry_points_of(data, cache, offline))
    requires = requirement_on(lines)
    if requires:
        return ("extra" if under_extra(Requirement(requires)) else "requires"), requires, entry
    if entry:
        return "entry point", entry, entry
    artefact = newest_artefact(data)
    if artefact is not None and (hit := scanned(artefact, cache, offline)):
        return "imports", f"{hit} ({artefact.filename})", ""
    return "", "", ""


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
    built = _newest_wheels(data)
    if not built:
        return ()
    url = urljoin(wheels.PYPI.format(name=data["info"]["name"]), built[0]["url"])
    record = wheels.wheel_member(
        built[0]["filename"], url, cache, offline, "RECORD", lambda n: n.endswith(".dist-info/RECORD")
    )
    return modules(record.decode("utf-8", "replace")) if record else ()


def judge(name: str, found: str, data: dict[str, Any] | None, way: tuple[str, str, str]) -> Library | None:
    """The candidate as a library of the list, or None: not on PyPI, or no way found its jax interface."""
    if data is None or not way[0]:
        return None
    since = OLDER_SINCE if name in OLDER else SINCE
    requires = way[1] if way[0] in ("requires", "extra") else ""
    return Library(name, requires, newest_release(data), found, since, way[0], way[1], way[2])


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
    ways = wheels.parallel(
        lambda data: way_found(data, requires_dist(data, cache, offline), cache, offline) if data else ("", "", ""),
        datas,
    )
    kept: list[tuple[Library, dict[str, Any]]] = []
    dropped: list[str] = []
    for (name, where), data, way in zip(rows, datas, ways, strict=True):
        library = judge(name, where, data, way)
        if library is None or data is None:
            shows = f"{newest_release(data)} shows no jax interface" if data else ""
            dropped.append(f"{name}: " + (shows or "not on PyPI"))
        else:
            kept.append((library, data))
    named = wheels.parallel(lambda pair: import_names(pair[1], cache, offline), kept)
    libraries = [replace(lib, imports=names) for (lib, _), names in zip(kept, named, strict=True)]
    return sorted(libraries, key=lambda lib: lib.package), dropped


def render(libraries: list[Library], read: str, candidates_read: int) -> str:
    counts = ", ".join(f"{sum(lib.way == w for lib in libraries)} by {w}" for w in WAYS)
    header = [
        "# The libraries around jax, whose releases api-removals.toml is derived from and whose declarations",
        "# declared-requires.toml reads: DERIVED by derive/tables/libraries.py from the candidates of",
        "# derive/tables/library_candidates.toml (each with where it was found) and each one's newest release on",
        "# PyPI; do not edit by hand. Kept: a project whose newest release has a jax interface, `way` saying how it",
        "# was found (the first of these) and `evidence` what showed it: `requires`, its Requires-Dist names jax,",
        "# jaxlib, flax, equinox, optax, chex or dm-haiku (`requires`: that line); `extra`, only under an extra;",
        "# `entry point`, its wheel registers one in a group that names jax (jax_plugins); `imports`, a file of its",
        "# package imports jax at run time (FILE:LINE, in the file read: its wheel, else its sdist). `entry_point`:",
        "# such an entry point, whatever way found the library. `since`: the releases library_uses.py reads, those",
        "# uploaded since then (2022 for the libraries whose 2022 releases have known cases, else 2023); a project",
        "# with no release since then has its newest read. `imports`: the modules the newest release's wheel installs",
        "# (its RECORD; a namespace package's subpackages: orbax.export), [] without a wheel.",
        f"# {len(libraries)} libraries of {candidates_read} candidates: {counts}",
    ]
    lines = [*header, 'source = "https://pypi.org/pypi/NAME/json (the newest release: its Requires-Dist, its files)"']
    lines.append(f'read = "{read}, {len(libraries)} libraries of {candidates_read} candidates"')
    for lib in libraries:
        lines += ["", "[[library]]", f"package = {wheels.toml_string(lib.package)}"]
        lines.append(f"way = {wheels.toml_string(lib.way)}")
        lines.append(f"evidence = {wheels.toml_string(lib.evidence)}")
        if lib.entry_point:
            lines.append(f"entry_point = {wheels.toml_string(lib.entry_point)}")
        lines.append(f"requires = {wheels.toml_string(lib.requires)}")
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
