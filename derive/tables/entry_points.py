"""Derive each library's main path from its own README (the long description of its newest release, PyPI's
`info.description`): the calls its fenced Python code blocks make to the library's names, read with ast. A call
of a name reached from an import of the library (`import kfac_jax`, `import dm_pix as pix`, `from diffrax import
diffeqsolve`) is an entry point: a function by its dotted name, a class called by its `__init__`; a method called
on a variable assigned from such a class call is one too (`opt = kfac_jax.Optimizer(...)`, `opt.step(...)`:
kfac_jax.Optimizer.step), and calling that variable is its class's `__call__`. The hand-read entries
(tables/derived/entry-points.toml, those without `derived`) are checked sources and kept as they are; the
libraries they do not cover get the derived ones, with the README lines quoted. library_uses.py follows each
release's calls from them.

usage: python -m derive.tables.entry_points [--cache DIR] [--offline]
"""

from __future__ import annotations

import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from derive.sources import library_uses, readme_code, wheels

OUTPUT = library_uses.ENTRY_POINTS
LIBRARIES = library_uses.LIBRARIES
MAX_ENTRIES = 8  # per library, the first the README shows: each is followed through every release read
MAX_QUOTE = 100  # characters of a quoted line


def code_blocks(readme: str) -> Iterator[str]:
    """The README's Python code (readme_code.blocks), each block's code alone."""
    return (block.code for block in readme_code.blocks(readme))


def calls(code: str, modules: list[str]) -> list[tuple[str, list[int]]]:
    """Each call the code makes of the library's names (readme_code.calls)."""
    return readme_code.calls(code, modules)


def derive(readme: str, modules: list[str]) -> list[tuple[str, list[str]]]:
    """(entry point, the README lines that show it) of each public call, in README order, each once, at most
    MAX_ENTRIES; one whose name (its class's, for a dunder) the lines do not show (an import's alias) is left out."""
    found: dict[str, list[str]] = {}
    for block in code_blocks(readme):
        lines = block.splitlines()
        for entry, numbers in calls(block, modules):
            parts = entry.split(".")
            name = parts[-2] if parts[-1].startswith("__") else parts[-1]
            quoted = [lines[n - 1].strip()[:MAX_QUOTE] for n in numbers]
            if entry in found or not library_uses.public(".".join(parts[:-1] if name == parts[-2] else parts)):
                continue
            if any(name in line for line in quoted):
                found[entry] = quoted
    return list(found.items())[:MAX_ENTRIES]


def hand_read(path: Path = OUTPUT) -> list[dict[str, Any]]:
    """The entries read by hand (no `derived`): kept as they are."""
    with path.open("rb") as handle:
        return [lib for lib in tomllib.load(handle)["library"] if not lib.get("derived")]


def render(entries: list[dict[str, Any]]) -> str:
    prose = (
        "Each library's main path: the calls its own README (the long description of the release named, as PyPI and"
        " the wheel's METADATA carry it) or its quick-start documentation shows its users making. Those without"
        " `derived` were read by hand, with the line quoted; those with it are DERIVED by"
        " derive/tables/entry_points.py from the fenced Python code of the newest release's README (a call of a"
        " name imported from the library, a method of a variable assigned from one of its classes), for the"
        " libraries no hand-read entry covers, the lines quoted. derive/sources/library_uses.py follows each"
        " release's calls from these (CallGraph) and a removed jax name that one of them reaches is on the main path:"
        " api-removals.toml's `standard_path`, a failure; a name reached only from other functions (a corner of the"
        " library) stays a warning. A library not listed has no main path read: its call-time uses are warnings."
    )
    header = textwrap.wrap(prose, width=116, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)
    lines = header
    for lib in entries:
        lines += ["", "[[library]]", f"package = {wheels.toml_string(lib['package'])}"]
        lines.append(f"entry_points = {wheels.toml_list(lib['entry_points'])}")
        lines.append(f"source = {wheels.toml_string(lib['source'])}")
        if lib.get("derived"):
            lines.append("derived = true")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = wheels.arguments(__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    options = parser.parse_args(argv)
    cache = wheels.cache_of(options.cache)
    kept = hand_read(options.output)
    covered = {lib["package"] for lib in kept}
    with LIBRARIES.open("rb") as handle:
        libraries = tomllib.load(handle)["library"]
    derived = []
    for lib in libraries:
        if lib["package"] in covered or not lib["imports"]:
            continue
        data = wheels.project_json(lib["package"], cache, options.offline)
        found = derive(str(data["info"].get("description") or ""), list(lib["imports"]))
        if not found:
            continue
        version = data["info"]["version"]
        quoted = ", ".join(f"`{line}`" for line in dict.fromkeys(line for _, lines in found for line in lines))
        source = f"https://pypi.org/project/{lib['package']}/{version}/ (README: {quoted})"
        derived.append({"package": lib["package"], "entry_points": [e for e, _ in found], "source": source})
        derived[-1]["derived"] = True
        print(f"{lib['package']}: {', '.join(e for e, _ in found)}")
    options.output.write_text(render([*kept, *derived]))
    print(f"{len(kept)} hand-read kept, {len(derived)} derived of {len(libraries) - len(covered)} libraries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
