"""A library's README read as code: its Python code blocks, where they stand in the README, and what each imports
and calls of the library's names. The README is the long description of a release, as PyPI's JSON carries it
(`info.description`); entry_points.py derives the library's main path from these calls, readme_calls.py a smoke
call from the first block that runs on its own."""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass

from derive.sources import library_uses, wheels

FENCE = re.compile(r"^[ \t]*(```|~~~)[ \t]*\{?\.?([\w+-]*)")
PYTHON = {"python", "py", "python3", "pycon", "ipython", ""}
RST = re.compile(r"^([ \t]*)\.\. (?:code-block|code|sourcecode)::[ \t]*(python|py|python3|ipython|pycon)[ \t]*$")
PROMPT = re.compile(r"^[ \t]*(>>>|\.\.\.)( |$)")


@dataclass(frozen=True)
class Block:
    """One code block: its code (dedented; an interactive session's prompts kept as code, its output dropped) and
    the README lines it spans (1-based, the code's own lines, without the fence or directive)."""

    code: str
    first: int
    last: int


def blocks(readme: str) -> Iterator[Block]:
    """The README's Python code: its fenced blocks (``` or ~~~, marked python or unmarked) and reST code-blocks, but
    those that hold nothing."""
    lines = readme.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = FENCE.match(line)
        rst = RST.match(line)
        if fence:
            end = next((j for j in range(index + 1, len(lines)) if lines[j].strip().startswith(fence[1])), len(lines))
            code = _code(lines[index + 1 : end])
            if fence[2].lower() in PYTHON and code.strip():  # another language's block: skipped whole
                yield Block(code, index + 2, end)
            index = end + 1
        elif rst:
            depth = len(rst[1])
            j = index + 1
            while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > depth):
                j += 1
            last = max((k for k in range(index + 1, j) if lines[k].strip()), default=index)
            if last > index:  # an empty directive: no block
                yield Block(_code(lines[index + 1 : j]), index + 2, last + 1)
            index = j
        else:
            index += 1


def _code(lines: list[str]) -> str:
    if any(PROMPT.match(line) for line in lines):
        lines = [PROMPT.sub("", line) for line in lines if PROMPT.match(line)]
    return textwrap.dedent("\n".join(lines))


def under(dotted: str, modules: list[str]) -> bool:
    return any(dotted == m or dotted.startswith(f"{m}.") for m in modules)


def bindings(tree: ast.Module, modules: list[str]) -> dict[str, str]:
    """Each name the code binds to the library or one of its names by an import: local name -> dotted target."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and under(alias.name, modules):
                    found[alias.asname] = alias.name
                elif not alias.asname and any(m == alias.name or m.startswith(f"{alias.name}.") for m in modules):
                    found[alias.name.split(".")[0]] = alias.name.split(".")[0]  # `import orbax.checkpoint`: orbax
                elif not alias.asname and under(alias.name, modules):
                    found[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                if alias.name != "*" and under(target, modules):
                    found[alias.asname or alias.name] = target
    return found


def _dotted(node: ast.expr, bound: dict[str, str], modules: list[str]) -> str | None:
    named = library_uses.chain(node)
    if named is None or named[0] not in bound:
        return None
    dotted = ".".join([bound[named[0]], *named[1]])
    return dotted if under(dotted, modules) and dotted not in modules else None


def is_class(dotted: str) -> bool:
    return dotted.rpartition(".")[2][:1].isupper()


def calls(code: str, modules: list[str]) -> list[tuple[str, list[int]]]:
    """(entry point, its lines: the call's, and for a method of a variable the assignment's that makes it an
    instance of the class) of each call the code makes of the library's names, in the order of the code: a
    function by its dotted name, a class called by its `__init__`, a method called on a variable assigned from such
    a class call (`opt = kfac_jax.Optimizer(...)`, `opt.step(...)`: kfac_jax.Optimizer.step), and calling that
    variable its class's `__call__`."""
    try:
        tree = wheels.parse(code)
    except (SyntaxError, ValueError):
        return []
    bound = bindings(tree, modules)
    if not bound:
        return []
    instances: dict[str, tuple[str, int]] = {}  # a variable assigned from a class call -> the class, the line
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1:
            target, called = node.targets[0], _dotted(node.value.func, bound, modules)
            if isinstance(target, ast.Name) and called and is_class(called):
                instances[target.id] = (called, node.lineno)
    found: list[tuple[str, list[int]]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = _dotted(node.func, bound, modules)
        named = library_uses.chain(node.func)
        if called:
            found.append((f"{called}.__init__" if is_class(called) else called, [node.lineno]))
        elif named and named[0] in instances and len(named[1]) <= 1:
            cls, assigned = instances[named[0]]
            method = named[1][0] if named[1] else "__call__"
            found.append((f"{cls}.{method}", [assigned, node.lineno]))
    return sorted(found, key=lambda f: f[1][-1])
