"""Whether a JSON value has the type a Python annotation names: the check of every loaded facts document.

facts.py declares each group of facts as a `TypedDict`; a document from a file (a node's report, a pasted one) is
checked against those same annotations, so that a wrong type deep inside (`"gpus": true`) is one line of bad input
and never a crash in a rule. This is that check, for the annotations facts.py uses: TypedDicts, dicts, lists,
Literals, X | None and JSON scalars. A missing or null field is a problem only where the TypedDict requires it
(total=True); an undeclared one is not looked at, unless the document is closed (a rule file, where a misspelt key
would otherwise be silently ignored): envaudit's own rule files are read with the same check (rules/engine.py).
"""

from __future__ import annotations

import functools
import types
from typing import Any, Literal, Union, cast, get_args, get_origin, get_type_hints, is_typeddict


def _each(items: Any, hint: Any, where: str, closed: bool, opening: str, closing: str) -> str | None:
    """The first problem among a list's items or an object's values; null only where the type allows None. Each
    item's place is `where`, then its key between `opening` and `closing` (never a format string: a key, or a
    place before it, may hold braces)."""
    for key, item in items:
        here = f"{where}{opening}{key}{closing}"
        if item is None and hint is not Any and type(None) not in get_args(hint):  # Any: whatever, null too
            return f"{here} must not be null"
        if found := problem(item, hint, here, closed=closed):
            return found
    return None


@functools.cache
def hints(typed: Any) -> dict[str, Any]:
    """A TypedDict's resolved annotations (get_type_hints costs ~0.1 ms a call; a report has dozens of objects)."""
    return get_type_hints(typed)


JSON_NAMES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}
# items of one array or object: an environment has a few thousand distributions, the child keeps 1,000 imports, a
# release table 1,300 rows; a report of 200,000 packages took 18 s to check (a 57 MiB one 156 s and 1 GB)
MAX_ITEMS = 50_000
MAX_CHARS = 1 << 20  # of one string: jax's environment report is kept to 64 KiB, a child's last words to 20 KB


def problem(value: object, hint: Any, where: str, *, closed: bool = False) -> str | None:
    """The first part of `value` that does not have the type `hint` (a TypedDict, Literal, list, dict, scalar,
    or X | None), as a sentence; None if all of it does. `closed`: a key no TypedDict declares is a problem."""
    kind, args = get_origin(hint), get_args(hint)
    if value is None or hint is Any:
        return None
    if kind in (Union, types.UnionType):
        answers = [problem(value, arg, where, closed=closed) for arg in args if arg is not type(None)]
        return None if None in answers else answers[0]
    if kind is Literal:
        return None if value in args else f"{where} is {value!r}, not one of {', '.join(map(str, args))}"
    if is_typeddict(hint) or kind is dict:
        if not isinstance(value, dict):
            return f"{where} must be a JSON object"
        if not is_typeddict(hint):
            return _too_many(value, where) or _each(value.items(), args[1], where, closed, ".", "")
        declared = hints(hint)
        if closed and (unknown := sorted(str(k) for k in value if k not in declared)):
            return f"{where} has the unknown key(s) {unknown}"
        if missing := next((k for k in declared if k in hint.__required_keys__ and value.get(k) is None), None):
            return f"{where}.{missing} must not be null" if missing in value else f"{where} is missing {missing!r}"
        fields = (problem(value.get(key), sub, f"{where}.{key}", closed=closed) for key, sub in declared.items())
        return next((found for found in fields if found), None)  # an optional field may be missing or null
    if kind is list:
        if not isinstance(value, list):
            return f"{where} must be a JSON array"
        return _too_many(value, where) or _each(enumerate(value), args[0], where, closed, "[", "]")
    allowed = (int, float) if hint is float else cast(type, hint)
    if not isinstance(value, allowed) or (hint is not bool and isinstance(value, bool)):
        return f"{where} must be of JSON type {JSON_NAMES.get(hint, getattr(hint, '__name__', str(hint)))}"
    if isinstance(value, str) and len(value) > MAX_CHARS:  # a 30 MB message took 10 s and 500 MB to judge
        return f"{where} is a string of {len(value)} characters, longer than any envaudit writes ({MAX_CHARS})"
    return None


def _too_many(items: list[Any] | dict[Any, Any], where: str) -> str | None:
    return (
        f"{where} holds {len(items)} items, more than any document envaudit reads ({MAX_ITEMS})"
        if len(items) > MAX_ITEMS
        else None
    )
