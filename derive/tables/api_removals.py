"""Join the libraries' jax uses (library_uses.py) with jax's releases' surfaces (jax_api.py) into
envaudit/rules/tables/api-removals.toml: for each library release and each jax release it can be installed with
(its own Requires-Dist on jax allows it; jax 0.4.1 or newer), the names it uses that the jax release lacks.

A name is absent from a release when no module along its path binds it and it is no child module, or the module's
deprecation table marks it removed (jax's message is kept). The pairs are compressed into the table's `[[use]]`
entries, one per (library, the absent name, the span of jax releases without it): `versions` the library releases
with the use, `jax` the releases without the name (`>=X` removed, `<X` not yet added), `fixed` the release after
the last affected one. The hand-read table that came before (tables/derived/hand-read.toml) is compared entry by
entry; what it knows that the derivation does not reach (releases before the ones read, `standard_path`, functions
reached through calls) is merged in, and the entries it has that the derivation misses are kept as they were.

usage: python -m derive.tables.api_removals [--cache DIR] [--offline] [--read DATE]
"""

from __future__ import annotations

import textwrap
import time
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from derive.sources import jax_api, library_uses, wheels
from derive.tables import libraries
from envaudit.rules.api_removals import REMOVALS
from envaudit.rules.table import TABLES

ROOT = Path(__file__).resolve().parents[2]
TABLE = REMOVALS.path
HAND = TABLES / "derived" / "hand-read.toml"
COMPARISON = TABLES / "derived" / "hand-read-comparison.json"
OLDEST_JAX = "0.4.1"  # older jax releases are not paired
MAX_FUNCTIONS = 8
# the hand-read entries whose `api` is prose: the derived names it speaks of
HAND_APIS = {
    "jax.config.config (from jax.config import config)": ["jax.config.config"],
    "jax.core.find_top_trace / get_opaque_trace_state (and jax.core.Effect in flax.nnx)": [
        "jax.core.find_top_trace",
        "jax.core.get_opaque_trace_state",
        "jax.core.Effect",
    ],
    "jax.experimental.layout.Format (first in jax 0.6.2)": ["jax.experimental.layout.Format"],
}


@dataclass
class Release:
    """One library release as read: its uses and the jax releases pip would install it with."""

    project: str
    version: str
    data: dict[str, Any]
    allowed: list[str] = field(default_factory=list)


class Surfaces:
    """The surfaces of jax's releases from OLDEST_JAX on, oldest first, loaded one at a time (all at once they
    would take gigabytes)."""

    def __init__(self, cache: Path, offline: bool) -> None:
        self.cache, self.offline = cache, offline
        self.artefacts = [a for a in jax_api.releases(cache, offline) if Version(a.version) >= Version(OLDEST_JAX)]
        wheels.fetch_all(self.artefacts, cache, offline)
        self.versions = [a.version for a in self.artefacts]

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for artefact in self.artefacts:
            yield artefact.version, jax_api.surface_of(artefact, self.cache, self.offline)


def library_releases(cache: Path, offline: bool) -> dict[str, list[Release]]:
    """Each project's releases as read (oldest first); a project with none is listed empty."""
    found: dict[str, list[Release]] = {}
    for project in library_uses.PROJECTS:
        artefacts = library_uses.releases(project, cache, offline)
        wheels.fetch_all(artefacts, cache, offline)
        found[project] = [Release(project, a.version, library_uses.uses_of(a, cache, offline)) for a in artefacts]
    return found


def absences(surfaces: Surfaces, names: set[str]) -> dict[str, dict[str, tuple[str, str]]]:
    """name -> jax version -> (the absent prefix, jax's message), for the releases that lack it."""
    found: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
    for version, surface in surfaces:
        for name in sorted(names):
            prefix, message = jax_api.lookup(surface, name)
            if prefix is not None:
                found[name][version] = (prefix, message)
    return found


def spans(ordered: list[str], chosen: set[str]) -> list[tuple[int, int]]:
    """The runs of consecutive chosen items of an ordered list, as (first index, last index)."""
    runs: list[tuple[int, int]] = []
    for index, item in enumerate(ordered):
        if item not in chosen:
            continue
        if runs and runs[-1][1] == index - 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return runs


def version_specs(ordered: list[str], chosen: set[str]) -> list[str]:
    """Library releases as specifiers over the releases read: `>=A,<B` (B the next release read), `==A` for one,
    `>=A,<=N` for a run up to the newest N (a later release is not read: unknown, not included)."""
    specs = []
    for first, last in spans(ordered, chosen):
        if last + 1 < len(ordered):
            upper = ordered[last + 1]
            specs.append(f"=={ordered[first]}" if first == last else f">={ordered[first]},<{upper}")
        else:
            specs.append(f"=={ordered[first]}" if first == last else f">={ordered[first]},<={ordered[last]}")
    return specs


def jax_spec(ordered: list[str], first: int, last: int) -> str:
    """A run of jax releases as a specifier: `>=X` to the newest, `<Y` from the oldest paired, else both."""
    lower = "" if first == 0 else f">={ordered[first]}"
    upper = "" if last == len(ordered) - 1 else f"<{ordered[last + 1]}"
    return ",".join(p for p in (lower, upper) if p) or f">={ordered[0]}"


def allowed_jax(release: Release, jax_versions: list[str]) -> list[str]:
    requirement = release.data.get("requires_jax")
    if not requirement:
        return list(jax_versions)
    spec = SpecifierSet(requirement)
    return [v for v in jax_versions if spec.contains(v, prereleases=True)]


def derive(libraries: dict[str, list[Release]], surfaces: Surfaces) -> list[dict[str, Any]]:
    """The table's entries: per (project, absent name, run of jax releases without it)."""
    jax_versions = surfaces.versions
    names = {name for releases in libraries.values() for r in releases for name in r.data["uses"]}
    absent = absences(surfaces, names)
    # a name no jax release paired has (TFP's numpy-backend code read as jax.numpy.random, a typo such as
    # jax.tree_util.treep_map): no jax release installs with it, so it is no boundary between jax releases
    absent = {n: lacking for n, lacking in absent.items() if len(lacking) < len(jax_versions)}
    entries = []
    for project, releases in libraries.items():
        order = [r.version for r in releases]
        # (absent prefix, jax run) -> library version -> the uses (names) with it
        grouped: dict[tuple[str, int, int], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for release in releases:
            allowed = set(allowed_jax(release, jax_versions))
            for name in release.data["uses"]:
                by_prefix: dict[str, set[str]] = defaultdict(set)
                for version, (prefix, _message) in absent.get(name, {}).items():
                    by_prefix[prefix].add(version)
                for prefix, lacking in by_prefix.items():
                    for first, last in spans(jax_versions, lacking):
                        if allowed & set(jax_versions[first : last + 1]):
                            grouped[(prefix, first, last)][release.version].append(name)
        for (prefix, first, last), affected in sorted(grouped.items()):
            entries.append(entry(project, releases, order, prefix, jax_versions, (first, last), affected, absent))
    return sorted(entries, key=lambda e: (e["package"], e["api"], e["jax"]))


def entry(
    project: str,
    releases: list[Release],
    order: list[str],
    prefix: str,
    jax_versions: list[str],
    run: tuple[int, int],
    affected: dict[str, list[str]],
    absent: dict[str, dict[str, tuple[str, str]]],
) -> dict[str, Any]:
    """One [[use]] entry: its releases, its kind (import when any affected release uses it at import), the fix,
    the evidence at the last affected release and the jax release that lacks it first (with jax's message)."""
    by_version = {r.version: r for r in releases}
    last_affected = max(affected, key=Version)
    uses = [by_version[last_affected].data["uses"][n] for n in sorted(affected[last_affected])]
    at_import = sorted(u["import"] for u in uses if u["import"])
    calls = sorted({f: w for u in uses for f, w in u["call"].items()}.items())
    any_import = any(by_version[v].data["uses"][n]["import"] for v, ns in affected.items() for n in ns)
    first, last = run
    lacking = jax_versions[first] if first > 0 else jax_versions[last + 1]  # no run spans every release (derive)
    where = at_import[0] if at_import else calls[0][1]
    when = "at import" if at_import else f"in {calls[0][0]}"
    if first > 0:
        message = next((m for n in affected[last_affected] for v, (p, m) in absent[n].items() if p == prefix and m), "")
        said = f"jax {lacking} lacks it" + (f": '{message}'" if message else "")
    else:
        said = f"first in jax {lacking}"
    result: dict[str, Any] = {
        "package": project,
        "versions": version_specs(order, set(affected)),
        "jax": jax_spec(jax_versions, first, last),
        "api": prefix,
        "kind": "import" if any_import else "first call",
    }
    after = order.index(last_affected) + 1
    if after < len(order):
        result["fixed"] = order[after]
    result["evidence"] = f"{project} {last_affected} {where} ({when}); {said}"
    if not any_import:
        result["functions"] = [f for f, _ in calls][:MAX_FUNCTIONS]
        main = sorted({point: held for u in uses for point, held in u.get("main", {}).items()}.items())
        if main:  # an entry point of the library's README reaches it: the main path (a failure, not a warning)
            points = ", ".join(point for point, _ in main[:2])
            result["standard_path"] = f"{points} (through {main[0][1]}, read at {project} {last_affected})"
    at_import = [by_version[v].data["uses"][n] for v, ns in affected.items() for n in ns]
    modules = {u.get("module", "") for u in at_import if u["import"]}
    if modules and "" not in modules:  # never at `import TOP`: only the import of that module raises
        result["module"] = min(modules, key=lambda m: (m.count("."), m))
    return result


def hand_apis(use: dict[str, Any]) -> list[str]:
    return HAND_APIS.get(use["api"], [use["api"].split()[0]])


def compare(hand: list[dict[str, Any]], derived: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each hand-read entry against the derived ones of the same library and name: confirmed (same jax span, and
    the hand-read last release with the use and its fixed release fall where the derived entry puts them),
    contradicted (the derived entry differs: how), or missed (no derived entry)."""
    found = []
    for use in hand:
        matches = [d for d in derived if d["package"] == use["package"] and d["api"] in hand_apis(use)]
        if not matches:
            found.append({"package": use["package"], "api": use["api"], "verdict": "missed"})
            continue
        differences = []
        for match in matches:
            if match["jax"] != use["jax"]:
                differences.append(f"{match['api']}: jax {match['jax']} (hand-read {use['jax']})")
            if match.get("fixed") != use.get("fixed"):
                differences.append(f"{match['api']}: fixed {match.get('fixed')} (hand-read {use.get('fixed')})")
            if match["kind"] != use["kind"]:
                differences.append(f"{match['api']}: kind {match['kind']} (hand-read {use['kind']})")
            if match["versions"] != use["versions"]:
                differences.append(f"{match['api']}: versions {match['versions']} (hand-read {use['versions']})")
        verdict = "confirmed" if not differences else "differs"
        found.append({"package": use["package"], "api": use["api"], "verdict": verdict, "differences": differences})
    return found


def merge(hand: list[dict[str, Any]], derived: list[dict[str, Any]], firsts: dict[str, str]) -> list[dict[str, Any]]:
    """The derived entries with what the hand-read ones add: `standard_path` and the functions reached through
    calls (by library and name), releases older than the first one read (the first range then starts where the
    hand-read one does); a hand-read entry with no derived counterpart is kept as it was."""
    merged = [dict(d) for d in derived]
    for use in hand:
        matches = [d for d in merged if d["package"] == use["package"] and d["api"] in hand_apis(use)]
        if not matches:
            merged.append(dict(use))
            continue
        for match in matches:
            if "standard_path" in use:
                match["standard_path"] = use["standard_path"]
            if "functions" in use and match["kind"] == "first call":
                match["functions"] = list(dict.fromkeys([*use["functions"], *match.get("functions", [])]))
            older = _older(use["versions"][0], firsts[use["package"]])
            if older is not None and match["versions"][0].startswith(f">={firsts[use['package']]}"):
                rest = match["versions"][0].split(",", 1)[1:]
                bound = [older] if older else []
                match["versions"][0] = ",".join([*bound, *rest]) or match["versions"][0]
                match["evidence"] += f"; releases before {firsts[use['package']]}: hand-read"
    return sorted(merged, key=lambda e: (e["package"], e["api"], e["jax"]))


def _older(spec: str, first: str) -> str | None:
    """The hand-read lower bound ('' for none) when it reaches below the first release read, else None."""
    lowers = [p for p in spec.split(",") if p.startswith(">=")]
    if not lowers:
        return ""
    return lowers[0] if Version(lowers[0][2:]) < Version(first) else None


def toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


FIELDS = ("package", "versions", "jax", "api", "kind", "module", "fixed", "evidence", "functions", "standard_path")


def render(entries: list[dict[str, Any]], read: str, counts: str, jax: tuple[str, str]) -> str:
    """The table's TOML: a header that says how it was made, then the entries in a fixed order of fields."""
    prose = (
        "Library releases that use a jax name which a jax release they install with lacks: DERIVED by"
        " derive/tables/api_removals.py (with jax_api.py and library_uses.py) from the released wheels (else"
        " sdists) on PyPI, read with ast; do not edit by hand, re-run the scripts. The libraries are those of"
        " tables/derived/libraries.toml (derived by libraries.py: every candidate found in public lists and"
        " metadata whose newest release requires jax, jaxlib, flax, equinox, optax, chex or dm-haiku, and keras"
        f" and transformers), each with its provenance; the releases read are those uploaded since {libraries.SINCE}"
        f" (since {libraries.OLDER_SINCE} for {', '.join(libraries.OLDER)}, whose releases of that year have known"
        " cases), and a library's newest where it has none since (jraph). A use at module level (or in a"
        " function the module calls at import) fails at import, one inside a function on its first call; a guarded"
        " use (try/except AttributeError/ImportError, hasattr, a version test) is none. `versions` the library"
        " releases with the use, `fixed` the release read after the last of them, `jax` the releases without the"
        " name (`>=X` removed, `<X` not yet added); pairs the library's own Requires-Dist on jax excludes are"
        " dropped, and jax older than 0.4.1. The entries of the hand-read table before it (tables/derived/"
        "hand-read.toml) are merged in: their standard_path, functions, older releases, and the entries not"
        " derived, kept as they were (tables/derived/hand-read-comparison.json says which). `module`: the use"
        " runs at the import of that module only, which `import PACKAGE` does not reach. A name no jax release"
        " paired has (dead code, a typo of the library's own) is no boundary between jax releases: not listed."
        " `standard_path`: an entry point the library's README shows (tables/derived/entry-points.toml) reaches the"
        " use through the release's calls, read statically: the main path, where the use is a failure."
    )
    header = [
        *textwrap.wrap(prose, width=114, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False),
        f"# {counts}",
    ]
    lines = [*header, 'source = "https://pypi.org/pypi/NAME/json (the release files; sha256 checked)"']
    lines.append(f'read = "{read}"')
    lines += [f'covers_from = "{jax[0]}"', f'covers_to = "{jax[1]}"']
    for item in entries:
        lines += ["", "[[use]]"]
        lines += [f"{key} = {toml_value(item[key])}" for key in FIELDS if key in item]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = wheels.arguments(__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--read", default=None, help="the read date (default: the newest upload time read)")
    parser.add_argument("--output", type=Path, default=TABLE)
    options = parser.parse_args(argv)
    cache = wheels.cache_of(options.cache)
    started = time.monotonic()
    surfaces = Surfaces(cache, options.offline)
    libraries = library_releases(cache, options.offline)
    derived = derive(libraries, surfaces)
    with HAND.open("rb") as handle:
        hand = tomllib.load(handle)["use"]
    comparison = compare(hand, derived)
    firsts = {p: rs[0].version for p, rs in libraries.items() if rs}
    entries = merge(hand, derived, firsts)
    newest = max(r.data["upload_time"] for rs in libraries.values() for r in rs)[:10]
    read = options.read or newest
    counted = sum(len(rs) for rs in libraries.values())
    counts = (
        f"{counted} releases of {sum(1 for rs in libraries.values() if rs)} libraries, jax {surfaces.versions[0]} to "
        f"{surfaces.versions[-1]} ({len(surfaces.versions)} releases); {len(derived)} entries derived, "
        f"{sum(1 for c in comparison if c['verdict'] == 'missed')} hand-read kept; newest upload read {newest}"
    )
    options.output.write_text(
        render(entries, f"{read}, {counts.split(';')[0]}", counts, (surfaces.versions[0], surfaces.versions[-1]))
    )
    wheels.dump_json(COMPARISON, comparison)
    for item in comparison:
        print(f"{item['verdict']:9} {item['package']} {item['api']}", *item.get("differences", []), sep="\n    ")
    print(f"{len(entries)} entries ({len(derived)} derived) in {time.monotonic() - started:.1f}s: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
