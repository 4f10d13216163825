"""Join the libraries' jax uses (library_uses.py) with jax's releases' surfaces (jax_api.py) into
envaudit/rules/tables/api-removals.toml: for each library release and each jax release it can be installed with
(its own Requires-Dist on jax allows it; jax 0.4.1 or newer), the names it uses that the jax release lacks, and
the keyword arguments it passes that the release's callable does not take (jax_signatures.py).

A name is absent from a release when no module along its path binds it and it is no child module, or the module's
deprecation table marks it removed (jax's message is kept). A guarded use counts on the releases where its
condition holds (guards.py: the else of `if hasattr(jax.x, "y")` where jax.x lacks y, the handler of `try: from
jax.a import b` where jax.a lacks b); one whose condition says nothing of jax never counts. The pairs are
compressed into the table's `[[use]]` entries, one per (library, the absent name or the refused keyword, the span
of jax releases without it): `versions` the library releases with the use, `jax` the releases without the name
(`>=X` removed, `<X` not yet added), `keyword` the argument where it is one, `fixed` the release after the last
affected one. The hand-read table that came before (tables/derived/hand-read.toml) is compared entry by
entry; what it knows that the derivation does not reach (releases before the ones read, `standard_path`, functions
reached through calls) is merged in, and the entries it has that the derivation misses are kept as they were.

usage: python -m derive.tables.api_removals [--cache DIR] [--offline] [--read DATE]
"""

from __future__ import annotations

import json
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

from derive.sources import guards, jax_api, jax_signatures, library_uses, wheels
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


@dataclass
class JaxFacts:
    """What each jax release has of what the libraries use: the names it lacks (name -> version -> (the absent
    prefix, jax's message)), and the keywords its callables refuse ((callable, keyword) -> the versions that have
    the callable and read a signature without that keyword)."""

    versions: list[str]
    absent: dict[str, dict[str, tuple[str, str]]]
    refused: dict[tuple[str, str], set[str]]
    stubbed: set[tuple[str, str]] = field(default_factory=set)  # (absent prefix, version): bound, raises if called

    def has(self, version: str, name: str) -> bool:
        return version not in self.absent.get(name, {})

    def accepts(self, version: str, api: str, keyword: str) -> bool:
        return version not in self.refused.get((api, keyword), set())


def read_jax(surfaces: Surfaces, names: set[str], keywords: set[tuple[str, str]]) -> JaxFacts:
    """One pass over jax's releases: where each name is absent, and which release refuses which keyword."""
    absent: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
    refused: dict[tuple[str, str], set[str]] = defaultdict(set)
    stubbed: set[tuple[str, str]] = set()
    for version, surface in surfaces:
        for name in sorted(names | {api for api, _ in keywords}):
            prefix, message = jax_api.lookup(surface, name)
            if prefix is not None:
                absent[name][version] = (prefix, message)
                if jax_api.stubbed(surface, prefix):
                    stubbed.add((prefix, version))
        signatures: dict[str, jax_signatures.Binding | None] = {}
        for api, keyword in sorted(keywords):
            if version in absent.get(api, {}):
                continue  # no callable to call: the name's own entry says so
            if api not in signatures:
                signatures[api] = jax_signatures.signature(surface["modules"], api)
            if not jax_signatures.accepts(signatures[api], keyword):
                refused[(api, keyword)].add(version)
    return JaxFacts(surfaces.versions, dict(absent), dict(refused), stubbed)


@dataclass(frozen=True)
class Record:
    """One use of a library release as derive() weighs it: a name (or a keyword of a call of it), the conditions
    under which it runs (none: everywhere), and where it is (library_uses' places: import, call, module, main)."""

    api: str
    keyword: str
    guard: tuple[dict[str, Any], ...]
    places: dict[str, Any]


def records(data: dict[str, Any]) -> list[Record]:
    """A release's uses (library_uses.read_release): its plain names, then its conditional uses."""
    found = [Record(name, "", (), places) for name, places in data["uses"].items()]
    for item in data.get("conditional", []):
        found.append(Record(item["api"], item.get("keyword", ""), tuple(item.get("guard", [])), item))
    return found


class Breaks:
    """Where each use breaks: the jax releases on which it runs (its conditions true there) and lacks what it
    needs (the name: its absent prefix; a keyword: the callable), of those paired with any library release. A name
    (or a keyword) that no jax release paired has is no boundary between jax releases (TFP's numpy-backend code
    read as jax.numpy.random, a typo such as jax.tree_util.treep_map): it never breaks."""

    def __init__(self, facts: JaxFacts) -> None:
        self.facts = facts
        every = set(facts.versions)
        self.absent = {n: lacking for n, lacking in facts.absent.items() if set(lacking) != every}
        self.refused = {
            (api, keyword): versions
            for (api, keyword), versions in facts.refused.items()
            if versions != every - set(facts.absent.get(api, {}))
        }
        self.runs: dict[str, set[str]] = {}

    def running(self, guard: tuple[dict[str, Any], ...]) -> set[str]:
        """The jax releases on which every condition is true."""
        key = json.dumps(guard, sort_keys=True)
        if key not in self.runs:
            self.runs[key] = {v for v in self.facts.versions if self.holds(guard, v)}
        return self.runs[key]

    def holds(self, guard: tuple[dict[str, Any], ...], version: str) -> bool:
        def has(name: str) -> bool:
            return self.facts.has(version, name)

        def accepts(api: str, keyword: str) -> bool:
            return self.facts.accepts(version, api, keyword)

        return all(guards.evaluate(c, has, accepts, version) is True for c in guard)

    def of(self, record: Record) -> dict[str, str]:
        """jax version -> what it lacks (the absent prefix, or the callable that refuses the keyword)."""
        if record.keyword:
            lacking = {v: record.api for v in self.refused.get((record.api, record.keyword), set())}
        else:
            lacking = {v: prefix for v, (prefix, _) in self.absent.get(record.api, {}).items()}
        if record.guard and lacking:
            runs = self.running(record.guard)
            lacking = {v: p for v, p in lacking.items() if v in runs}
        return lacking


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
    """The table's entries: per (project, absent name or refused keyword, run of jax releases without it)."""
    jax_versions = surfaces.versions
    every = [r for releases in libraries.values() for release in releases for r in records(release.data)]
    names = {r.api for r in every if not r.keyword}
    keywords = {(r.api, r.keyword) for r in every if r.keyword}
    for record in every:
        for condition in record.guard:
            for leaf in guards.leaves(condition):
                names.update([leaf["has"]] if "has" in leaf else [])
                keywords.update([tuple(leaf["accepts"])] if "accepts" in leaf else [])
    breaks = Breaks(read_jax(surfaces, names, keywords))
    entries = []
    for project, releases in libraries.items():
        order = [r.version for r in releases]
        # (what is lacking, keyword, jax run) -> library version -> the uses with it
        grouped: dict[tuple[str, str, int, int], dict[str, list[Record]]] = defaultdict(lambda: defaultdict(list))
        for release in releases:
            allowed = set(allowed_jax(release, jax_versions))
            for record in records(release.data):
                by_prefix: dict[str, set[str]] = defaultdict(set)
                for version, prefix in breaks.of(record).items():
                    by_prefix[prefix].add(version)
                for prefix, lacking in by_prefix.items():
                    for first, last in spans(jax_versions, lacking):
                        if allowed & set(jax_versions[first : last + 1]):
                            grouped[(prefix, record.keyword, first, last)][release.version].append(record)
        for (prefix, keyword, first, last), affected in sorted(grouped.items()):
            run = (first, last)
            entries.append(entry(project, order, prefix, keyword, jax_versions, run, affected, breaks.facts))
    return sorted(entries, key=lambda e: (e["package"], e["api"], e.get("keyword", ""), e["jax"]))


def entry(
    project: str,
    order: list[str],
    prefix: str,
    keyword: str,
    jax_versions: list[str],
    run: tuple[int, int],
    affected: dict[str, list[Record]],
    facts: JaxFacts,
) -> dict[str, Any]:
    """One [[use]] entry: its releases, its kind (import when any affected release uses it at import), the fix,
    the evidence at the last affected release and the jax release that lacks it first (with jax's message), and
    the condition it runs under where it is guarded."""
    last_affected = max(affected, key=Version)
    held = sorted(affected[last_affected], key=lambda r: (r.api, json.dumps(r.guard, sort_keys=True)))
    uses = [r.places for r in held]
    at_import = sorted(u["import"] for u in uses if u["import"])
    calls = sorted({f: w for u in uses for f, w in u["call"].items()}.items())
    first, last = run
    # a name a stub still binds imports: its use at import fails only where it is called there, on the first call
    stub = not keyword and all((prefix, v) in facts.stubbed for v in jax_versions[first : last + 1])
    any_import = not stub and any(r.places["import"] for rs in affected.values() for r in rs)
    where = calls[0][1] if calls and (stub or not at_import) else at_import[0]
    when = (
        f"in {calls[0][0]}"
        if calls and (stub or not at_import)
        else "imported, raising when called"
        if stub
        else "at import"
    )
    # the run's first release lacks it; where the run starts at the oldest release paired, the release after it has
    # it, unless the use is guarded and that release only takes the other branch: then the run's last lacks it
    after_run = jax_versions[last + 1] if last + 1 < len(jax_versions) else ""
    added = first == 0 and bool(after_run)
    for r in held if added else []:
        added = added and facts.has(after_run, r.api) and (not keyword or facts.accepts(after_run, r.api, keyword))
    lacking = after_run if added else jax_versions[first] if first > 0 else jax_versions[last]
    if keyword:
        said = (
            f"{prefix} takes {keyword}= first in jax {lacking}"
            if added
            else f"jax {lacking}'s {prefix} takes no {keyword}="
        )
    elif added:
        said = f"first in jax {lacking}"
    else:
        message = next((m for r in held for v, (p, m) in facts.absent.get(r.api, {}).items() if p == prefix and m), "")
        said = f"jax {lacking} lacks it" + (f": '{message}'" if message else "")
    guarded = next((r.guard for r in held if r.guard), ())
    if guarded:
        said += f"; it runs {guards.words(guards.every(list(guarded)))}"
    result: dict[str, Any] = {
        "package": project,
        "versions": version_specs(order, set(affected)),
        "jax": jax_spec(jax_versions, first, last),
        "api": prefix,
        **({"keyword": keyword} if keyword else {}),
        "kind": "import" if any_import else "first call",
        **({"stub": True} if stub else {}),
    }
    after = order.index(last_affected) + 1
    if after < len(order):
        result["fixed"] = order[after]
    result["evidence"] = f"{project} {last_affected} {where} ({when}); {said}"
    if not any_import and calls:
        result["functions"] = [f for f, _ in calls][:MAX_FUNCTIONS]
        main = sorted({point: place for u in uses for point, place in u.get("main", {}).items()}.items())
        if main:  # an entry point of the library's README reaches it: the main path (a failure, not a warning)
            points = ", ".join(point for point, _ in main[:2])
            result["standard_path"] = f"{points} (through {main[0][1]}, read at {project} {last_affected})"
    modules = {r.places.get("module", "") for rs in affected.values() for r in rs if r.places["import"]}
    if modules and "" not in modules and any_import:  # never at `import TOP`: only the import of that module raises
        result["module"] = min(modules, key=lambda m: (m.count("."), m))
    return result


def hand_apis(use: dict[str, Any]) -> list[str]:
    return HAND_APIS.get(use["api"], [use["api"].split()[0]])


def _same_use(derived: dict[str, Any], hand: dict[str, Any]) -> bool:
    """A derived entry of the hand-read one's library and name (the hand-read table has no keyword entries)."""
    return derived["package"] == hand["package"] and derived["api"] in hand_apis(hand) and "keyword" not in derived


def compare(hand: list[dict[str, Any]], derived: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each hand-read entry against the derived ones of the same library and name: confirmed (same jax span, and
    the hand-read last release with the use and its fixed release fall where the derived entry puts them),
    contradicted (the derived entry differs: how), or missed (no derived entry)."""
    found = []
    for use in hand:
        matches = [d for d in derived if _same_use(d, use)]
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
        matches = [d for d in merged if _same_use(d, use)]
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
    return sorted(merged, key=lambda e: (e["package"], e["api"], e.get("keyword", ""), e["jax"]))


def _older(spec: str, first: str) -> str | None:
    """The hand-read lower bound ('' for none) when it reaches below the first release read, else None."""
    lowers = [p for p in spec.split(",") if p.startswith(">=")]
    if not lowers:
        return ""
    return lowers[0] if Version(lowers[0][2:]) < Version(first) else None


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


FIELDS = (
    "package",
    "versions",
    "jax",
    "api",
    "keyword",
    "kind",
    "stub",
    "module",
    "fixed",
    "evidence",
    "functions",
    "standard_path",
)


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
        " function the module calls at import) fails at import, one inside a function on its first call. A guarded"
        " use (hasattr, getattr with a default, a version test, the handler of try/except AttributeError/ImportError/"
        "TypeError) counts only on the jax releases where its branch runs, one in the try itself never; a guard this"
        " does not evaluate (a test of the library's own values) makes none. `keyword`: a keyword argument of a call"
        " of `api` that those jax releases' callable does not take (its def read at each release, through"
        " re-exports, aliases and wrappers that pass keywords on; **kwargs takes any). `versions` the library"
        " releases with the use, `fixed` the release read after the last of them, `jax` the releases without the"
        " name (`>=X` removed, `<X` not yet added); pairs the library's own Requires-Dist on jax excludes are"
        " dropped, and jax older than 0.4.1. The entries of the hand-read table before it (tables/derived/"
        "hand-read.toml) are merged in: their standard_path, functions, older releases, and the entries not"
        " derived, kept as they were (tables/derived/hand-read-comparison.json says which). `module`: the use"
        " runs at the import of that module only, which `import PACKAGE` does not reach. A name (or keyword) no jax"
        " release paired has (dead code, a typo of the library's own) is no boundary between jax releases: not"
        " listed."
        " `standard_path`: an entry point the library's README shows (tables/derived/entry-points.toml) reaches the"
        " use through the release's calls, read statically: the main path, where the use is a failure. `stub`: the"
        " jax releases keep the name as a function that only raises (jax 0.4.35's host_callback): importing it"
        " works, calling it fails, so a use bound at import is a first call."
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
