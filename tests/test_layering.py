"""No import circle among envaudit's modules: each module can be read (and loaded) after the ones it imports.

A circle works until someone moves an import line, and then fails at import time on a user's machine; the hook's
boot and its verb imported each other once. Only module-level imports count: an import inside a function is how a
module defers a cost (the collectors, the rules) and cannot make a circle at load time.
"""

from __future__ import annotations

import ast

from tests.conftest import ROOT

PACKAGE = ROOT / "envaudit"


def _graph() -> dict[str, set[str]]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        if "_probes" in path.parts:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names]
                graph[name] |= {t if t in modules else node.module for t in targets} & modules.keys()
            elif isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names} & modules.keys()
    return graph


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
    graph = _graph()
    assert len(graph) > 40 and graph["envaudit.cli"]  # the graph was read
    assert _circle(graph) == []
