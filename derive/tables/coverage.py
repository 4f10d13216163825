"""Derive how far the release knowledge reaches, written to envaudit/rules/tables/coverage.toml: for each table keyed
on jax (`Table(..., jax=...)`), the newest jax release it speaks of; the newest release that every table covers
(a closed history, `Table(closed=...)`, aside); and that release's first upload to PyPI. Read from the tables
themselves and jax's PyPI JSON, so the same tables give the same bytes.

usage: python -m derive.tables.coverage [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

from typing import Any

from derive.sources import wheels
from envaudit.model.versions import release
from envaudit.rules.knowledge import COVERAGE
from envaudit.rules.table import Table

TABLE = COVERAGE.path


def reaches(tables: dict[str, Table[Any]]) -> dict[str, str]:
    """Each table keyed on jax (this one left out) -> the newest jax release it speaks of."""
    found = {}
    for name, table in sorted(tables.items()):
        if name == COVERAGE.name:
            continue
        newest = table.newest_jax()
        if newest is not None:
            found[name] = newest
    return found


def common(tables: dict[str, Table[Any]], reached: dict[str, str]) -> str:
    """The newest release every open table covers: the oldest of their newest."""
    open_ = [v for name, v in reached.items() if not tables[name].closed]
    return min(open_, key=lambda v: release(v) or ())


def render(reached: dict[str, str], jax: str, uploaded: str, closed: dict[str, str], dates: dict[str, str]) -> str:
    lines = [
        "# How far the release knowledge reaches: DERIVED by derive/tables/coverage.py from the tables keyed on",
        "# jax (each `Table(..., jax=...)` of envaudit/rules), do not edit by hand. `jax` is the newest release every",
        "# table covers, `released` its first upload to PyPI; a jax or jaxlib past it is unknown to the tables, never",
        "# OK (rules/knowledge.py). `tables`: the newest jax release each one speaks of; a closed history stops early",
        "# on purpose:",
        *(f"# {name}: {why}" for name, why in sorted(closed.items())),
        "# `uploaded`: each final jax release's first upload to PyPI, to its newest: when each was the newest jax (a",
        "# report's stack built as of then, envaudit/commands/triage/reproduce.py).",
        'source = "envaudit/rules/tables/*.toml, and https://pypi.org/pypi/jax/json (the upload date)"',
        f'read = "{uploaded}, {len(reached)} tables keyed on jax"',
        f'jax = "{jax}"',
        f'released = "{uploaded}"',
        "",
        "[tables]",
        *(f'"{name}" = "{version}"' for name, version in sorted(reached.items())),
        "",
        "[uploaded]",
        *(f'"{version}" = "{date}"' for version, date in dates.items()),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from derive.registry import declared_tables

    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    tables = declared_tables()
    reached = reaches(tables)
    jax = common(tables, reached)
    releases = wheels.project_json("jax", cache, options.offline)["releases"]
    files = releases.get(jax, [])
    if not files:
        raise SystemExit(f"jax {jax}: PyPI lists no files of it")
    uploaded = wheels.first_upload(files)[:10]
    newest = release(jax) or ()
    finals = sorted(
        (v for v, f in releases.items() if f and wheels.final(v) is not None and (release(v) or ()) <= newest),
        key=lambda v: release(v) or (),
    )
    dates = {v: wheels.first_upload(releases[v])[:10] for v in finals}
    closed = {name: t.closed for name, t in tables.items() if t.closed and name in reached}
    said = f"jax {jax}, {len(reached)} tables"
    wheels.write_table(options, render(reached, jax, uploaded, closed, dates), said, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
