"""Which probes exist and where: the standalone programs of `probes/`, shipped in the wheel as `envaudit/_probes`.

A probe is found by its file alone (any `probes/NAME.py` not starting with `_`), so adding one is adding its file.
Its summary is the first line of its docstring, read without importing it (importing a probe imports jax).
"""

from __future__ import annotations

import ast
from pathlib import Path


def probes_dir() -> Path:
    """Probes ship inside the wheel as envaudit/_probes; in a checkout that is a link to the top-level probes/."""
    shipped = Path(__file__).with_name("_probes")
    return shipped if shipped.is_dir() else Path(__file__).resolve().parent.parent / "probes"


def available() -> dict[str, Path]:
    return {p.stem: p for p in sorted(probes_dir().glob("*.py")) if not p.name.startswith("_")}


def summary(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return docstring.splitlines()[0] if docstring else ""
