"""Where a TOML input writes a value: the line of each string in an array (a pyproject.toml's requirements) and of
each entry of an array of tables (a lock's `[[package]]`), which tomllib does not say.

Read from the same text tomllib parsed, after it parsed it (so the text is valid TOML): a scanner of the few forms
these files use, line by line, that knows table headers, keys (bare, quoted, dotted), basic and literal strings (a
`#` inside one is no comment) and multi-line strings (skipped: no requirement or name is written in one). A string
it cannot place has no line (0), and a plan says the file alone: a line is where an annotation lands, never what a
plan decides.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator

Path = tuple[str, ...]  # a table's or key's dotted path, each part unquoted ("project", "optional-dependencies", "gpu")

_KEY_PART = r'(?:"(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)'
_KEY = re.compile(rf"\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=")
_HEADER = re.compile(rf"\s*(\[\[?)\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*\]\]?")
_PART = re.compile(_KEY_PART)
_TOKEN = re.compile(r'"""|\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#')


def _unquoted(part: str) -> str:
    if part.startswith('"'):
        return _string(part)
    return part[1:-1] if part.startswith("'") else part


def _path(text: str) -> Path:
    return tuple(_unquoted(p) for p in _PART.findall(text))


def _string(token: str) -> str:
    """A basic or literal string's value, as TOML reads it."""
    if token.startswith("'"):
        return token[1:-1]
    try:
        value = tomllib.loads(f"v = {token}")["v"]
    except tomllib.TOMLDecodeError:
        return ""
    return value if isinstance(value, str) else ""


def _scan(text: str) -> Iterator[tuple[int, Path, bool, Path, str, bool]]:
    """Each string on a line outside a multi-line string: (line, table, is an array-of-tables header's table, key,
    value, whether the key is assigned on this line). A table header is yielded with key () and value ""."""
    table: Path = ()
    array = False
    key: Path = ()
    closing = ""  # the delimiter of the multi-line string being skipped
    for number, line in enumerate(text.splitlines(), start=1):
        rest = line
        if closing:
            end = rest.find(closing)
            if end < 0:
                continue
            rest, closing = rest[end + 3 :], ""
        elif header := _HEADER.match(rest):
            table, array, key = _path(header[2]), header[1] == "[[", ()
            yield number, table, array, (), "", False
            continue
        assigned = False
        if not closing and (found := _KEY.match(rest)):
            key, assigned, rest = _path(found[1]), True, rest[found.end() :]
        for token in _TOKEN.finditer(rest):
            word = token[0]
            if word == "#":
                break
            if word in ('"""', "'''"):
                if rest.find(word, token.end()) < 0:
                    closing = word
                break  # a multi-line string: nothing after it on this line is placed
            yield number, table, array, key, _string(word), assigned


def array_strings(text: str) -> dict[tuple[Path, str], int]:
    """The first line of each string value, by its full path (table + key) and value: `(("project",
    "dependencies"), "jax>=0.4")` -> 12."""
    found: dict[tuple[Path, str], int] = {}
    for number, table, _, key, value, _ in _scan(text):
        if key:
            found.setdefault((table + key, value), number)
    return found


def entries(text: str, table: str) -> dict[tuple[str, str], int]:
    """The entries of an array of tables (`[[package]]`): (its `name`, its `version`) -> the line of its `name`
    (where it has no version, "")."""
    found: dict[tuple[str, str], int] = {}
    current: dict[str, tuple[str, int]] = {}

    def close() -> None:
        if "name" in current:
            name, line = current["name"]
            found.setdefault((name, current.get("version", ("", 0))[0]), line)

    for number, path, array, key, value, assigned in _scan(text):
        if not key:  # a header: an entry of the array starts, or a subtable of it
            if (array and path == (table,)) or path[:1] != (table,):  # a new entry, or another table
                close()
                current = {}
            continue
        if path == (table,) and assigned and key in (("name",), ("version",)) and key[0] not in current:
            current[key[0]] = (value, number)
    close()
    return found
