"""The import structure of envaudit: no circle among its modules, and every import pointing down its layers.

A circle works until someone moves an import line, and then fails at import time on a user's machine; the hook's
boot and its verb imported each other once. Every import counts, deferred or not: an import inside a function
defers a cost (the collectors, the rules), and a circle it hides comes back the day the import moves.

For layers too: a layer may use its own and the layers below it, never one above
(docs/architecture.md, "Layers"). The judge does not render, the rules do not judge, a format renders a report and
nothing else, and what collects facts knows no rule.
"""

from __future__ import annotations

import ast

from tests.conftest import ROOT

PACKAGE = ROOT / "envaudit"


def _circle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of imports, or [] when there is none (depth-first search, iterative)."""
    state: dict[str, int] = {}
    for start in sorted(graph):
        if start in state:
            continue
        path, todo = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while todo:
            step = next(todo[-1], None)
            if step is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(step) == 1:
                return [*path[path.index(step) :], step]
            elif step not in state:
                state[step] = 1
                path.append(step)
                todo.append(iter(sorted(graph[step])))
    return []


def test_the_search_finds_a_circle_when_there_is_one() -> None:
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) == []


def test_envaudit_has_no_import_circle() -> None:
    """Deferred imports count: a circle that works because one side imports inside a function is still a circle
    (the rules' checks, engine and signatures had one). A circle inside one folder counts too (collect/'s
    `__init__` -> system -> toolkit -> `__init__` was one): a module that takes a name from its own package's
    `__init__` depends on it. Naming a sibling through the package (`from envaudit.collect import packages`) is an
    import of the sibling, not of the package's `__init__` (`_uses`)."""
    uses = _uses()
    graph = {name: used - {name} for name, used in uses.items()}
    assert len(graph) > 40 and graph["envaudit.cli"]  # the graph was read
    assert _circle(graph) == []


def test_the_circle_check_sees_a_circle_inside_one_folder() -> None:
    """A package that takes a name from its own `__init__`, which imports it back, is a circle; naming a sibling
    module through the package is not."""
    loop = {
        "envaudit.collect": ["from envaudit.collect import system"],
        "envaudit.collect.system": ["from envaudit.collect import toolkit"],
        "envaudit.collect.toolkit": ["from envaudit.collect import within"],
    }
    assert _circle(_read(loop)) == [
        "envaudit.collect",
        "envaudit.collect.system",
        "envaudit.collect.toolkit",
        "envaudit.collect",
    ]
    loop["envaudit.collect.toolkit"] = ["from envaudit.collect import system"]  # a sibling, named through its package
    assert _read(loop)["envaudit.collect.toolkit"] == {"envaudit.collect.system"}
    assert _circle(_read({**loop, "envaudit.collect.toolkit": []})) == []


# The folders of envaudit/ are its layers, bottom to top: a module's layer is the folder it is in
# (envaudit.rules.node -> "rules"). Folders side by side in one tuple are one layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("model",),  # the vocabulary: facts, the report, fix values, the schema, exit codes, what is audited
    ("files",),  # what envaudit reads and writes on disk: safe writers, saved reports, its cache, the probe files
    ("collect", "child"),  # what is measured: facts of the machine, jax's own word, the probes' numbers
    ("rules",),  # what is known: data rules, code checks, release tables, jax's packaging
    ("judge",),  # what the measurements mean here, which finding causes which, what is ignored, the one plan
    ("formats",),  # a report rendered
    ("commands",),  # one module or package per verb
    ("cli",),  # the command line: the verbs by name, their parsers, the exit
)
ONLY = {"formats": ("model",)}  # a format is a function of a report alone: none of the stages that made it
# The package's root holds no layer of its own: its __init__ (the version and the hook's warning class, below
# everything) and the two entry points that outside files name (`python -m envaudit`; the .pth line of an enabled
# import hook imports envaudit._hook_boot, so that name is a contract with every environment that enabled it).
ROOT_MODULES = {"envaudit": 0, "envaudit.__main__": len(LAYERS), "envaudit._hook_boot": len(LAYERS)}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and module not in ROOT_MODULES) else module


def _rank(unit: str) -> int | None:
    if unit in ROOT_MODULES:
        return ROOT_MODULES[unit]
    return next((i for i, layer in enumerate(LAYERS) for name in layer if name == unit), None)


def test_every_folder_is_a_layer_and_the_root_holds_only_entry_points() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == {name for layer in LAYERS for name in layer}
    modules = {f"envaudit.{p.stem}" if p.stem != "__init__" else "envaudit" for p in PACKAGE.glob("*.py")}
    assert modules == set(ROOT_MODULES)


def _uses() -> dict[str, set[str]]:
    """Every envaudit module each module imports, at module level or inside a function."""
    sources: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if "_probes" in path.parts:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        sources[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = [path.read_text()]
    return _read(sources)


def _read(sources: dict[str, list[str]]) -> dict[str, set[str]]:
    """The envaudit modules each module's source (its lines) imports: `from P import x` is P's submodule x where P
    has one (the sibling it names), else P itself (a name P's `__init__` defines); `import P.Q` is P.Q; and a string
    that is a module's full name is that module, imported by name (cli.COMMANDS' verbs, `importlib.import_module`)."""
    graph: dict[str, set[str]] = {}
    for name, lines in sources.items():
        found = graph.setdefault(name, set())
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in sources else node.module
                    for a in node.names
                }
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "." in node.value
                and node.value in sources
            ):
                found.add(node.value)
    return {name: {m for m in used if m in graph} for name, used in graph.items()}


def _against_layers(uses: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, used in sorted(uses.items()):
        here = _layer(module)
        for target in sorted(used):
            there = _layer(target)
            if there == here:
                continue
            low, high = _rank(there), _rank(here)
            if low is None or high is None:
                wrong.append(f"{module} or {target} is in no layer")
            elif low > high or (here in ONLY and there not in ONLY[here] and there != "envaudit"):
                wrong.append(f"{module} imports {target}")
    return wrong


def test_the_layer_check_finds_an_import_upward() -> None:
    assert _against_layers({"envaudit.judge.x": {"envaudit.formats.text"}}) == [
        "envaudit.judge.x imports envaudit.formats.text"
    ]
    assert _against_layers({"envaudit.formats.text": {"envaudit.rules.node"}}) != []
    assert _against_layers({"envaudit.rules.x": {"envaudit.model.facts"}, "envaudit.newthing": set()}) == []
    assert _against_layers({"envaudit.newthing": {"envaudit.model.facts"}}) == [
        "envaudit.newthing or envaudit.model.facts is in no layer"
    ]


def test_every_import_points_down_the_layers() -> None:
    uses = _uses()
    assert uses["envaudit.cli"] and uses["envaudit.judge"]  # the graph was read
    assert _against_layers(uses) == []


def test_the_architecture_page_lists_the_layers_in_their_order() -> None:
    """docs/architecture.md's table of folders names every layer, bottom to top, as this test reads them."""
    import re

    page = (ROOT / "docs" / "architecture.md").read_text()
    table = page[page.index("## Layers") : page.index("## Contracts")]
    listed = [name for row in re.findall(r"^\| (`[^|]+`) \|", table, re.M) for name in re.findall(r"`(\w+)/`", row)]
    assert listed == [name for layer in LAYERS for name in layer]
