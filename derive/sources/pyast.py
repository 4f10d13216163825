"""Small readings of Python's syntax trees that the derivations share (jax's own files, the libraries' files)."""

from __future__ import annotations

import ast


def dotted(node: ast.expr) -> list[str] | None:
    """The names of a plain dotted expression, `a.b.c` -> ["a", "b", "c"]; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *parts[::-1]] if isinstance(node, ast.Name) else None


def is_type_checking(test: ast.expr) -> bool:
    """Whether an `if` tests TYPE_CHECKING (its body never runs)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The module a relative import in `module` names (`from ..x import y` at `level` 2, target "x")."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, target] if target else base)
