"""The probes repeat a few small helpers on purpose: each probe is one file that runs alone and can be attached to
an upstream bug report (docs/architecture.md), so it cannot import a shared module. This test is what keeps the
repetition safe: every copy of a shared helper must be identical, so a fix lands in all of them or the suite fails."""

from __future__ import annotations

import ast
from collections import defaultdict

from tests.conftest import ROOT

SHARED = (
    "_x64",
    "_resolve",
    "_rel",
    "_judge",
    "_finite",
    "_frob",
    "_compile_all",
    "_bits",
    "_highest",
    "main",
    "EXIT_CODES",
)


def shared_definitions() -> dict[str, dict[str, list[str]]]:
    """helper name -> source text -> the probes that define it so."""
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted((ROOT / "probes").glob("[a-z]*.py")):
        source = path.read_text()
        for node in ast.parse(source).body:
            name = getattr(node, "name", None)
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
            if name in SHARED:
                found[name][str(ast.get_source_segment(source, node))].append(path.stem)
    return found


def test_every_copy_of_a_shared_helper_is_identical() -> None:
    found = shared_definitions()
    probes = {p.stem for p in (ROOT / "probes").glob("[a-z]*.py")}
    assert len(probes) == 7
    for name, variants in found.items():
        assert len(variants) == 1, f"{name} differs between probes: {list(variants.values())}"
    for name in ("_x64", "_resolve", "_rel", "_judge", "_finite", "main", "EXIT_CODES"):
        assert set(next(iter(found[name].values()))) == probes, name


def test_probes_import_nothing_of_envaudit() -> None:
    for path in (ROOT / "probes").glob("*.py"):
        tree = ast.parse(path.read_text())
        modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        modules |= {
            str(n.module).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0
        }
        allowed = {"__future__", "numpy", "jax", "flax", "neural_tangents", "argparse", "importlib", "json", "math",
                   "sys", "traceback", "contextlib", "typing", "collections", "concurrent", "functools", "time",
                   "os"}  # fmt: skip
        assert modules <= allowed, (path.name, modules - allowed)
