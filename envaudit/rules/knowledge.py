"""How far envaudit's release knowledge reaches (`coverage.toml`, derived by derive/tables/coverage.py from the
other tables): the newest jax release that every table keyed on jax speaks of, and when it was released. A jax or
jaxlib past it is one the tables have not read: what they would say of it is unknown, so the environment is never
judged OK on their silence (`jax-newer-than-knowledge`, a warning).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

from envaudit.model.facts import Facts
from envaudit.model.report import KnowledgeDocument
from envaudit.model.versions import public, release, version_or_none
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.table import Provenance, Table


class Coverage(Provenance):  # coverage.toml: where the tables keyed on jax stop
    jax: str  # the newest jax release every table keyed on jax covers
    released: str  # its first upload to PyPI (a date)
    tables: dict[str, str]  # each table keyed on jax -> the newest jax release it covers (a closed history's last)
    uploaded: dict[str, str]  # each final jax release to `jax` -> its first upload to PyPI (a date)


COVERAGE = Table("coverage.toml", Coverage, jax=lambda t: [t["jax"]])


def declarations() -> dict[str, tuple[str, str, Table[Any]]]:
    """Every `Table(...)` a module of envaudit.rules declares (the one place a table is added), by its file's name:
    the module that declares it, the constant it is bound to there, and the table."""
    package = __name__.rpartition(".")[0]  # envaudit.rules: its folder is this file's, its __init__ is not needed
    found: dict[str, tuple[str, str, Table[Any]]] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda i: i.name):
        module = f"{package}.{info.name}"
        for constant, value in vars(importlib.import_module(module)).items():
            if isinstance(value, Table):
                found.setdefault(value.name, (module, constant, value))
    return found


def tables() -> dict[str, Table[Any]]:
    """Every declared table, by its file's name."""
    return {name: table for name, (_, _, table) in declarations().items()}


def reach() -> KnowledgeDocument:
    """How far the knowledge reaches, as a report carries it."""
    table = COVERAGE.load()
    return {"jax": table["jax"], "released": table["released"]}


def as_of() -> str:
    """The sentence the report and `rules --tables` say: "jax 0.12.1 (released 2026-11-18)"."""
    table = COVERAGE.load()
    return f"jax {table['jax']} (released {table['released']})"


def superseded(jax: str) -> str | None:
    """The day the next final jax release after `jax` was first uploaded: until then `jax` was the newest, and a
    stack installed with it resolved what it did not pin among the releases of that time. None for the newest the
    tables know, or a release they do not."""
    uploaded = COVERAGE.load()["uploaded"]
    stated = release(public(jax))
    if stated is None or public(jax) not in uploaded:
        return None
    later = sorted((release(v) or (), day) for v, day in uploaded.items() if (release(v) or ()) > stated)
    return later[0][1] if later else None


def beyond(facts: Facts) -> list[Occurrence]:
    """jax or jaxlib newer than every table has read, as PEP 440 orders them (a nightly of a later release, a
    post-release of the last, another epoch); a build of the same release (`+cuda12`) is that release."""
    newest = version_or_none(COVERAGE.load()["jax"])
    found = []
    for package in ("jax", "jaxlib"):
        version = facts.packages.get(package, "")
        parsed = version_or_none(public(version))
        if newest is not None and parsed is not None and parsed > newest:
            found.append(
                Occurrence(
                    f"{package} {version} is newer than envaudit's release knowledge, which reaches {as_of()}: the "
                    "tables have not read it, so no finding from them means unknown here, not OK",
                    about=package,
                )
            )
    return found


JAX_NEWER_THAN_KNOWLEDGE = Check(
    id="jax-newer-than-knowledge",
    severity="warn",
    title="jax is newer than envaudit's release knowledge: what its tables would say of it is unknown",
    fix="a newer envaudit (its tables are refreshed from the releases weekly), or `python -m derive refresh` in its "
    "repository; the probes still measure this environment",
    references=("https://pypi.org/project/jax/#history",),
    run=beyond,
)
