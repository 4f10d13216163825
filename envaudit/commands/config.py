"""A project's settings for the verbs that judge: `[tool.envaudit]` in pyproject.toml, then the command line.

```toml
[tool.envaudit]
strict = true                 # exit 1 on warn findings too (--strict / --no-strict on the command line)
format = "markdown"           # the report format when --format is not given
[tool.envaudit.ignore]        # rule or check id = why (envaudit rules lists the ids)
tf32-default-matmul-precision = "our models are trained in TF32"
```

The file is the nearest pyproject.toml with a `[tool.envaudit]` table, from the working directory up (as ruff finds
its own). `--ignore RULE[:REASON]` adds to its ignore list (the command line's reason wins). Every way the table can
be wrong, and an id no rule or check has, is one line and exit 2 (a misspelt id would otherwise ignore nothing, in
silence).
"""

from __future__ import annotations

import argparse
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, cast

from envaudit.model import typecheck
from envaudit.model.exitcodes import BadInput

MAX_BYTES = 1 << 20  # a pyproject.toml is a few kilobytes
TABLE = "[tool.envaudit"


class ConfigError(BadInput):
    """A [tool.envaudit] table or an --ignore that cannot be applied; the message is one line."""


class ToolTable(TypedDict, total=False):
    """`[tool.envaudit]` (closed: a misspelt key is an error, not a setting silently not applied)."""

    ignore: dict[str, str]
    strict: bool
    format: str


@dataclass(frozen=True)
class Settings:
    """What a judging verb applies: the rules ignored (id -> reason), strictness, the format, and where from."""

    ignore: dict[str, str] = field(default_factory=dict)
    strict: bool = False
    format: str | None = None
    source: Path | None = None  # the pyproject.toml read, if any
    untrusted: str = ""  # the one found and not read, and why


def find(start: Path) -> Path | None:
    """The nearest pyproject.toml from `start` up that has a [tool.envaudit] table (its text says so)."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        try:
            if candidate.is_file():
                with candidate.open("rb") as file:
                    if TABLE.encode() in file.read(MAX_BYTES + 1):
                        return candidate
        except OSError:  # unreadable: not the project's settings file, as for a tool that finds its own
            continue
    return None


def read(path: Path) -> tuple[bytes | None, str]:
    """The file's bytes where its settings may be applied, else None and why: a file another user owns or may
    write would choose what a root `health` counts (an ignored rule, a node kept in service). Judged on the
    descriptor it is read from (`safewrite.read_trusted`), so the file judged is the file read."""
    from envaudit.files import safewrite

    try:
        return safewrite.read_trusted(path, MAX_BYTES + 1, "a settings file"), ""
    except safewrite.OutputError as exc:
        return None, str(exc)


def load(path: Path, raw: bytes | None = None) -> Settings:
    """The [tool.envaudit] table of one pyproject.toml (`raw`: its bytes, where already read)."""
    if raw is None:
        from envaudit.files import reportfile  # loads while the child imports jax (tests/cli/test_cli.py)

        raw = reportfile.read_bounded(path, MAX_BYTES + 1, "a pyproject.toml")
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES} bytes, so not a pyproject.toml")
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    table = document.get("tool", {}).get("envaudit", {}) if isinstance(document.get("tool"), dict) else {}
    if wrong := typecheck.problem(table, ToolTable, "[tool.envaudit]", closed=True):
        raise ConfigError(f"{path}: {wrong}")
    found = cast(ToolTable, table)
    return Settings(
        ignore=dict(found.get("ignore", {})), strict=found.get("strict", False), format=found.get("format"), source=path
    )


def ignore_argument(text: str) -> tuple[str, str]:
    """`RULE[:REASON]` (argparse's type for --ignore)."""
    rule, _, reason = text.partition(":")
    if not rule.strip():
        raise argparse.ArgumentTypeError(f"expected RULE or RULE:REASON, not {text!r}")
    return rule.strip(), reason.strip()


@dataclass(frozen=True)
class Given:
    """What the command line says of the settings (None: not said there)."""

    format: str | None = None
    strict: bool | None = None
    ignore: tuple[tuple[str, str], ...] = ()


def resolve(given: Given, formats: tuple[str, ...], cwd: Path) -> Settings:
    """The settings of this run: the project's file, then the command line (its --format, --strict, --ignore)."""
    source = find(cwd)
    raw, why = read(source) if source is not None else (None, "")
    if why:  # the nearest project's table is not applied, nor a parent's: the defaults and the command line
        source = None
    settings = load(source, raw) if source is not None else Settings()
    if settings.format is not None and settings.format not in formats:
        raise ConfigError(f"{source}: [tool.envaudit].format is {settings.format!r}, not one of {', '.join(formats)}")
    ignore = settings.ignore | dict(given.ignore)
    _known(ignore, source)
    strict = settings.strict if given.strict is None else given.strict
    fmt = given.format or settings.format
    return Settings(ignore=ignore, strict=strict, format=fmt, source=source, untrusted=why)


def _known(ignore: dict[str, str], source: Path | None) -> None:
    if not ignore:
        return
    from envaudit import rules  # the catalogue loads the rules: only a run that ignores one needs it this early

    known = {entry.id for entry in rules.catalogue()}
    if unknown := sorted(set(ignore) - known):
        where = f" (in {source} or --ignore)" if source else ""
        raise ConfigError(
            f"no rule or check {', '.join(map(repr, unknown))} to ignore{where}; `envaudit rules` lists them"
        )
