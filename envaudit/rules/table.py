"""The kit for a table over releases: `Table(name, Shape)`, declared in the module that applies it.

A table is a TOML file of `tables/`, read from upstream sources (most derived by a script of `derive/`).
Its shape is a TypedDict declared beside the `Table`; it is read once, checked against the shape, closed (`typecheck`,
as a facts document, a rule file and a report are), so a misspelt or missing key in a table read from upstream is an
error when it loads, not a rule that silently says nothing, and `load()` returns it typed.

Every table says where it was read from (`source`) and when and how (`read`), in its data, and tells its story in
the comment at its head: that is its one place of provenance, and `tables/README.md` is generated from the heads
(`python -m derive.readme`). A new table is its derive script, its TOML, the module that declares and applies
it, and its test.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Generic, TypedDict, TypeVar, cast

from packaging.version import Version

from envaudit.files import cachedir
from envaudit.model import typecheck
from envaudit.model.versions import version_or_none

TABLES = Path(__file__).with_name("tables")
Shape = TypeVar("Shape")


class TableError(ValueError):
    """A table file that does not have its declared shape; names the file and the first wrong part."""


class Provenance(TypedDict):
    source: str  # where the table was read from (the upstream files, at which tags)
    read: str  # when, and how


class Span(Provenance):
    covers_from: str  # the first release it speaks of
    covers_to: str  # the last


class Table(Generic[Shape]):
    """One table of `tables/`: its file's name and the shape it must have; for a table keyed on jax releases, the
    releases it speaks of (`jax`, read from its data: its coverage), and where such a table stops before the newest
    release on purpose, why (`closed`: a history that ended, such as a check jax replaced)."""

    def __init__(
        self,
        name: str,
        shape: type[Shape],
        *,
        jax: Callable[[Shape], Iterable[str]] | None = None,
        closed: str = "",
    ) -> None:
        self.name, self.shape, self.jax, self.closed = name, shape, jax, closed
        self._loaded: Shape | None = None

    def __repr__(self) -> str:
        return f"Table({self.name!r}, {self.shape.__name__})"

    @property
    def path(self) -> Path:
        return TABLES / self.name

    def load(self) -> Shape:
        """The table, read once and checked against its shape; its parsed and checked form is kept in envaudit's
        cache as JSON, keyed by the file's path, size and modification time (api-removals.toml's thousand entries
        take tomllib 0.2 s, JSON a tenth of that), as the rule files are (rules/engine.py), and by the code that
        declares its shape and checks it: what the cache holds was checked by that code, and is not checked again
        (25 ms of every command that reads api-removals.toml's 1,700 entries)."""
        if self._loaded is None:
            path = self.path
            stat = path.stat()
            stamp = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{_code_of(self.shape)}"
            name = f"table-{hashlib.sha256(stamp.encode()).hexdigest()[:20]}.json"
            cached = cachedir.read_json(name)
            if isinstance(cached, dict) and set(cached) >= set(getattr(self.shape, "__required_keys__", ())):
                self._loaded = cast(Shape, cached)
            else:
                self._loaded = self.read(path)
                cachedir.write_json(name, self._loaded)
        return self._loaded

    def newest_jax(self, data: Shape | None = None) -> str | None:
        """The newest jax release the table speaks of (of `data`, else of the table's file); None for a table not
        keyed on jax."""
        if self.jax is None:
            return None
        releases = [v for v in self.jax(self.load() if data is None else data) if version_or_none(v) is not None]
        return max(releases, key=lambda v: version_or_none(v) or Version("0")) if releases else None

    def read(self, path: Path) -> Shape:
        """A file of this table's shape, checked (not cached: a test's altered copy, a derive script's output)."""
        with path.open("rb") as handle:
            data: dict[str, Any] = tomllib.load(handle)
        if wrong := typecheck.problem(data, self.shape, path.name, closed=True):
            raise TableError(wrong)
        return cast(Shape, data)


def _code_of(shape: type) -> str:
    """A digest of the files that declare a table's shape and check it: a change to either is another cache key."""
    import sys

    digest = hashlib.sha256()
    for module in (sys.modules.get(shape.__module__), typecheck):
        source = getattr(module, "__file__", None) or ""
        try:
            digest.update(Path(source).read_bytes())
        except OSError:
            digest.update(source.encode())
    return digest.hexdigest()[:16]


def span(table: Span) -> tuple[str, str]:
    """The releases a table read over a span speaks of, as `Table(jax=...)` takes them: its first and last."""
    return table["covers_from"], table["covers_to"]


def head(path: Path) -> str:
    """The story a table tells at its head: its leading comment lines, without the `# `."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.removeprefix("#").removeprefix(" "))
    return " ".join(lines)
