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

import ast
import re
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from derive.sources import library_uses, wheels

OUTPUT = library_uses.ENTRY_POINTS
LIBRARIES = library_uses.LIBRARIES
MAX_ENTRIES = 8  # per library, the first the README shows: each is followed through every release read
MAX_QUOTE = 100  # characters of a quoted line
FENCE = re.compile(r"^[ \t]*(```|~~~)[ \t]*\{?\.?([\w+-]*)")
PYTHON = {"python", "py", "python3", "pycon", "ipython", ""}
RST = re.compile(r"^([ \t]*)\.\. (?:code-block|code|sourcecode)::[ \t]*(python|py|python3|ipython|pycon)[ \t]*$")
PROMPT = re.compile(r"^[ \t]*(>>>|\.\.\.)( |$)")


def code_blocks(readme: str) -> Iterator[str]:
    """The README's Python code: its fenced blocks (``` or ~~~, marked python or unmarked) and reST code-blocks,
    each dedented; an interactive session's prompts (>>>, ...) kept as code, its output dropped."""
    lines = readme.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = FENCE.match(line)
        rst = RST.match(line)
        if fence and fence[2].lower() in PYTHON:
            end = next((j for j in range(index + 1, len(lines)) if lines[j].strip().startswith(fence[1])), len(lines))
            yield _code(lines[index + 1 : end])
            index = end + 1
        elif fence:  # another language's block: skipped whole
            end = next((j for j in range(index + 1, len(lines)) if lines[j].strip().startswith(fence[1])), len(lines))
            index = end + 1
        elif rst:
            depth = len(rst[1])
            body = []
            j = index + 1
            while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > depth):
                body.append(lines[j])
                j += 1
            yield _code(body)
            index = j
        else:
            index += 1


def _code(lines: list[str]) -> str:
    if any(PROMPT.match(line) for line in lines):
        lines = [PROMPT.sub("", line) for line in lines if PROMPT.match(line)]
    return textwrap.dedent("\n".join(lines))


def _under(dotted: str, modules: list[str]) -> bool:
    return any(dotted == m or dotted.startswith(f"{m}.") for m in modules)


def _bindings(tree: ast.Module, modules: list[str]) -> dict[str, str]:
    """Each name the code binds to the library or one of its names by an import: local name -> dotted target."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and _under(alias.name, modules):
                    found[alias.asname] = alias.name
                elif not alias.asname and any(m == alias.name or m.startswith(f"{alias.name}.") for m in modules):
                    found[alias.name.split(".")[0]] = alias.name.split(".")[0]  # `import orbax.checkpoint`: orbax
                elif not alias.asname and _under(alias.name, modules):
                    found[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                if alias.name != "*" and _under(target, modules):
                    found[alias.asname or alias.name] = target
    return found


def _dotted(node: ast.expr, bindings: dict[str, str], modules: list[str]) -> str | None:
    named = library_uses.chain(node)
    if named is None or named[0] not in bindings:
        return None
    dotted = ".".join([bindings[named[0]], *named[1]])
    return dotted if _under(dotted, modules) and dotted not in modules else None


def _is_class(dotted: str) -> bool:
    return dotted.rpartition(".")[2][:1].isupper()


def calls(code: str, modules: list[str]) -> list[tuple[str, list[int]]]:
    """(entry point, its lines: the call's, and for a method of a variable the assignment's that makes it an
    instance of the class) of each call the code makes of the library's names, in the order of the code."""
    try:
        tree = wheels.parse(code)
    except (SyntaxError, ValueError):
        return []
    bindings = _bindings(tree, modules)
    if not bindings:
        return []
    instances: dict[str, tuple[str, int]] = {}  # a variable assigned from a class call -> the class, the line
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1:
            target, called = node.targets[0], _dotted(node.value.func, bindings, modules)
            if isinstance(target, ast.Name) and called and _is_class(called):
                instances[target.id] = (called, node.lineno)
    found: list[tuple[str, list[int]]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = _dotted(node.func, bindings, modules)
        named = library_uses.chain(node.func)
        if called:
            found.append((f"{called}.__init__" if _is_class(called) else called, [node.lineno]))
        elif named and named[0] in instances and len(named[1]) <= 1:
            cls, assigned = instances[named[0]]
            method = named[1][0] if named[1] else "__call__"
            found.append((f"{cls}.{method}", [assigned, node.lineno]))
    return sorted(found, key=lambda f: f[1][-1])


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
