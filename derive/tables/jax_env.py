"""Derive how each jax release reads the JAX_* variables envaudit interprets: `jax/_src/config.py` of every final
jax release from 0.4.1 on PyPI (its pure wheel from 0.4.16, the file ranged out of it; its sdist before, whole and
sha256-checked), read with `ast`, written to envaudit/rules/tables/jax-env.toml.

From each release's config.py:
- `bool_env()`: the words of its `if val in (...): return True` / `elif val in (...): return False` branches, that it
  lower-cases the value first, and the message of the ValueError it raises for anything else;
- each flag of BOOL (JAX_ENABLE_X64): the call that defines it (`define_bool_state(name='jax_enable_x64', ...)`,
  `bool_state(...)` from 0.4.2x), and that the function it calls reads the variable through
  `bool_env(name.upper(), ...)`: what the words say of it holds only then;
- each flag of ENUMS (JAX_DEFAULT_MATMUL_PRECISION): the literal `enum_values` of the call that defines it, and,
  in the function it calls (`define_enum_state`, `optional_enum_state`...), that it reads
  `os.getenv(name.upper(), ...)` at definition (so at `import jax`) and the message of the ValueError it raises
  there, outside the nested parser.

Across releases: the words and messages must be the same at every release read (the table has one of each), and
no enum value may disappear (the table says from which release a value is accepted, not until which); a release
that breaks either, or reads a variable another way, stops the derivation with what changed. `legacy` is what the
first release read accepts, `since` what each later release adds. A message is the source's f-string with the
variable's name (`{name}`, `{flag}`) and its value (`{value}`) as the table's users format them.

Each release's reading is kept in the cache (derived/jax-env/), so a second run parses nothing and writes the same
bytes; `read` is the newest upload among the releases read, not the day of the run.

usage: python -m derive.tables.jax_env [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import ast
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from packaging.version import Version

from derive.sources import wheels
from envaudit.rules.jax_env import JAX_ENV

TABLE = JAX_ENV.path
FIRST = Version("0.4.1")  # the first release the other jax tables read (0.4.0 is yanked)
CONFIG = "jax/_src/config.py"
BOOL = {"JAX_ENABLE_X64": "jax_enable_x64"}  # the variables envaudit reads by bool_env's words -> jax's flag
ENUMS = {"JAX_DEFAULT_MATMUL_PRECISION": "jax_default_matmul_precision"}
READER = "jax-env-1"  # the cache folder of the readings: a new name when what a reading holds changes
_CONVERSIONS = {-1: "", 114: "!r", 115: "!s", 97: "!a"}


class Unread(ValueError):
    """A config.py the derivation cannot read as the table's shape needs: what, and where."""


def _own(function: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's own body, not those of the functions and classes it defines."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _called(node: ast.AST) -> str:
    """The name a call calls (`config.define_enum_state(...)`: define_enum_state), "" for no call of a name."""
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _strings(node: ast.expr | None) -> list[str] | None:
    """A literal list or tuple of strings, None for anything else."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    found = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return found if len(found) == len(node.elts) else None


def template(node: ast.expr, names: dict[str, str]) -> str:
    """A message built in the source as the table writes it: an f-string's named parts as `{field}` (the source's
    variable renamed by `names`, any other one `{value}`), with their conversion; its text as it is."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("{", "{{").replace("}", "}}")
    if not isinstance(node, ast.JoinedStr):
        raise Unread(f"line {node.lineno}: a message that is not a string or an f-string")
    parts = []
    for part in node.values:
        if isinstance(part, ast.FormattedValue):
            if not isinstance(part.value, ast.Name) or part.format_spec is not None:
                raise Unread(f"line {node.lineno}: an f-string part that is not a plain name")
            parts.append("{" + names.get(part.value.id, "value") + _CONVERSIONS[part.conversion] + "}")
        else:
            parts.append(template(part, names))
    return "".join(parts)


def _raised(function: ast.FunctionDef, names: dict[str, str]) -> str:
    """The message of the one ValueError a function raises itself (not in a function it defines)."""
    raised = [
        n.exc
        for n in _own(function)
        if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call) and _called(n.exc) == "ValueError" and n.exc.args
    ]
    if len(raised) != 1:
        raise Unread(f"{function.name}: raises {len(raised)} ValueErrors itself, not one")
    assert isinstance(raised[0], ast.Call)
    return f"ValueError: {template(raised[0].args[0], names)}"


def _getenv_name(function: ast.FunctionDef) -> tuple[str, bool] | None:
    """The variable whose value names what the function reads with `os.getenv(X, ...)` (or `os.getenv(X.upper(),
    ...)`: then True), None where it reads none."""
    for node in _own(function):
        if _called(node) == "getenv" and isinstance(node, ast.Call) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Name):
                return first.id, False
            if _called(first) == "upper" and isinstance(first, ast.Call):
                inner = first.func.value if isinstance(first.func, ast.Attribute) else None
                if isinstance(inner, ast.Name):
                    return inner.id, True
    return None


def truth_words(function: ast.FunctionDef) -> tuple[list[str], list[str]]:
    """bool_env's words: those of the `in (...)` test of the branch that returns True, and of the one that returns
    False."""
    found: dict[bool, list[str]] = {}
    for node in _own(function):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
            continue
        test = node.test
        words = _strings(test.comparators[0]) if [type(o) for o in test.ops] == [ast.In] else None
        returned = [s.value.value for s in node.body if isinstance(s, ast.Return) and isinstance(s.value, ast.Constant)]
        if words is not None and len(returned) == 1 and isinstance(returned[0], bool):
            found[returned[0]] = words
    if set(found) != {True, False}:
        missing = " and ".join(str(b) for b in (True, False) if b not in found)
        raise Unread(f"{function.name}: no `in (...)` branch returning {missing}")
    return found[True], found[False]


def _definitions(tree: ast.Module, flag: str) -> list[ast.Call]:
    """The calls that define a flag: those of a `..._state` function (define_bool_state, optional_enum_state...)
    naming it, by the keyword name= or first."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not _called(node).endswith("_state"):
            continue
        named = [k.value for k in node.keywords if k.arg == "name"]
        first = named[0] if named else node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and first.value == flag:
            found.append(node)
    return found


def reading(source: bytes) -> dict[str, Any]:
    """What one release's config.py says of the variables: {"true", "false", "message" (bool_env's), "bool": {VAR:
    the function defining it}, "enum": {VAR: {"values", "message", "definer"}}}. Raises Unread where it does not
    say it in the ways the table records."""
    tree = wheels.parse(source)
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    bool_env = functions.get("bool_env")
    if bool_env is None:
        raise Unread("no bool_env()")
    read = _getenv_name(bool_env)
    lowered = any(_called(n) == "lower" for n in _own(bool_env))
    if read is None or not lowered:
        raise Unread("bool_env() does not read os.getenv(varname) and lower-case it")
    true, false = truth_words(bool_env)
    result: dict[str, Any] = {
        "true": true,
        "false": false,
        "message": _raised(bool_env, {read[0]: "name"}),
        "bool": {},
        "enum": {},
    }
    for variable, flag in BOOL.items():
        definer = _definer(tree, functions, flag, variable)
        through = [
            n
            for n in _own(definer)
            if _called(n) == "bool_env" and isinstance(n, ast.Call) and n.args and _called(n.args[0]) == "upper"
        ]
        if not through:
            raise Unread(f"{variable}: {definer.name}() does not read it through bool_env(name.upper(), ...)")
        result["bool"][variable] = definer.name
    for variable, flag in ENUMS.items():
        definer = _definer(tree, functions, flag, variable)
        listed = [
            _strings(next((k.value for k in c.keywords if k.arg == "enum_values"), None))
            for c in _definitions(tree, flag)
        ]
        values = listed[0]
        read = _getenv_name(definer)
        if values is None or any(other != values for other in listed):
            raise Unread(f"{variable}: enum_values is not one literal list of strings")
        if read is None or not read[1]:
            raise Unread(f"{variable}: {definer.name}() does not read os.getenv(name.upper(), ...)")
        message = _raised(definer, {read[0]: "flag"})
        result["enum"][variable] = {"values": values, "message": message, "definer": definer.name}
    return result


def _definer(tree: ast.Module, functions: dict[str, ast.FunctionDef], flag: str, variable: str) -> ast.FunctionDef:
    calls = _definitions(tree, flag)
    if not calls or len({_called(c) for c in calls}) != 1:
        raise Unread(f"{variable}: {flag} is defined by {sorted({_called(c) for c in calls})}, not by one function")
    definer = functions.get(_called(calls[0]))
    if definer is None:
        raise Unread(f"{variable}: {flag} is defined by {_called(calls[0]) or 'an expression'}(), not defined here")
    return definer


def config_source(artefact: wheels.Artefact, cache: Path, offline: bool) -> bytes:
    """A release's jax/_src/config.py: ranged out of its wheel, else read from its sdist (fetched whole)."""
    if artefact.kind == "wheel":
        found = wheels.wheel_member(
            artefact.filename, artefact.url, cache, offline, "jax-_src-config.py", lambda n: n == CONFIG
        )
    else:
        with tarfile.open(wheels.fetch(artefact, cache, offline)) as archive:
            member = next((m for m in archive.getmembers() if m.name.split("/", 1)[-1] == CONFIG), None)
            handle = archive.extractfile(member) if member is not None else None
            found = handle.read() if handle is not None else None
    if found is None:
        raise SystemExit(f"{artefact.filename}: no {CONFIG}")
    return found


def read_release(artefact: wheels.Artefact, cache: Path, offline: bool) -> dict[str, Any]:
    """A release's reading, made once and kept in the cache."""
    path = cache / "derived" / READER / f"{artefact.filename}.json"
    if path.exists():
        kept: dict[str, Any] = wheels.load_json(path)
        return kept
    try:
        result = reading(config_source(artefact, cache, offline))
    except Unread as unread:
        raise SystemExit(f"jax {artefact.version} ({artefact.filename}): {CONFIG}: {unread}") from None
    wheels.dump_json(path, result)
    return result


def combine(readings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The table's content from the releases' readings (oldest first): one set of words and messages, each enum's
    values at the first release and those each later one adds."""
    versions = list(readings)
    first = readings[versions[0]]
    for key in ("true", "false", "message"):
        differ = [v for v in versions if readings[v][key] != first[key]]
        if differ:
            raise SystemExit(f"bool_env's {key} at {differ[0]} is {readings[differ[0]][key]!r}, not {first[key]!r}")
    enums = {}
    for variable, flag in ENUMS.items():
        message = first["enum"][variable]["message"]
        seen = list(first["enum"][variable]["values"])
        since: dict[str, list[str]] = {}
        for version in versions[1:]:
            enum = readings[version]["enum"][variable]
            if enum["message"] != message:
                raise SystemExit(f"{variable}: the message at {version} is {enum['message']!r}, not {message!r}")
            gone = [v for v in seen if v not in enum["values"]]
            if gone:
                raise SystemExit(f"{variable}: {version} no longer accepts {gone}: the table cannot say so")
            added = [v for v in enum["values"] if v not in seen]
            if added:
                since[version] = added
                seen += added
        enums[variable] = {
            "flag": flag,
            "message": message,
            "legacy": list(first["enum"][variable]["values"]),
            "since": since,
        }
    return {
        "bool": {"variables": list(BOOL), "true": first["true"], "false": first["false"], "message": first["message"]},
        "enum": enums,
        "covers_from": versions[0],
        "covers_to": versions[-1],
        "bool_definers": sorted({d for r in readings.values() for d in r["bool"].values()}),
        "enum_definers": sorted({e["definer"] for r in readings.values() for e in r["enum"].values()}),
    }


def _wrapped(prefix: str, items: list[str], width: int = 118) -> list[str]:
    """`prefix = [...]`, continued under its bracket where it is longer than a line."""
    lines, line = [], f"{prefix} = ["
    indent = " " * len(line)
    for i, item in enumerate(items):
        piece = wheels.toml_string(item) + ("," if i < len(items) - 1 else "]")
        if len(line) + len(piece) + 1 > width and line.strip() != f"{prefix} = [".strip():
            lines.append(line.rstrip())
            line = indent
        line += piece + ("" if piece.endswith("]") else " ")
    if not items:
        line += "]"
    lines.append(line)
    return lines


def render(table: dict[str, Any], read: str) -> str:
    words = table["bool"]
    lines = [
        "# How jax reads the environment variables envaudit interprets, as each release's jax/_src/config.py",
        "# reads them at `import jax`: a value outside these raises ValueError there.",
        "# DERIVED by derive/tables/jax_env.py from jax/_src/config.py of every final jax release on PyPI from",
        "# covers_from (its wheel from 0.4.16, its sdist before), read with ast; do not edit by hand, re-run the",
        "# script. tests/rules/test_jax_env.py holds the table against a real `import jax` of the jax installed there.",
        f'source = "{wheels.PYPI.format(name="jax")} (jax/_src/config.py of each final release\'s wheel, else sdist)"',
        f"read = {wheels.toml_string(read)}",
        f"covers_from = {wheels.toml_string(table['covers_from'])}",
        f"covers_to = {wheels.toml_string(table['covers_to'])}",
        "",
        "# bool_env(): val = os.getenv(varname, str(default)).lower(), then these words; anything else (the empty",
        '# string, " true", "2") raises. The same words and message at every release read. `variables`: the flags',
        "# that every release read defines by a function that reads bool_env(name.upper(), default) (there:",
        f"# {', '.join(table['bool_definers'])}); accessors.env_flag reads every variable of this kind by these words.",
        "[bool]",
        f"variables = {wheels.toml_list(words['variables'])}",
        f"true = {wheels.toml_list(words['true'])}",
        f"false = {wheels.toml_list(words['false'])}",
        f"message = {wheels.toml_string(words['message'])}",
    ]
    for variable, enum in table["enum"].items():
        lines += [
            "",
            f"# {' / '.join(table['enum_definers'])}():",
            "# default = os.getenv(name.upper(), default); a value not in the literal enum_values raises.",
            "# `legacy`: the values the first release read accepts; `since`: those each later release added (none",
            "# was removed). Case matters: the legacy names are lower-case, the dot-algorithm presets upper-case.",
            f"[enum.{variable}]",
            f"flag = {wheels.toml_string(enum['flag'])}",
            f"message = {wheels.toml_string(enum['message'])}",
            f"legacy = {wheels.toml_list(enum['legacy'])}",
        ]
        for version, values in enum["since"].items():
            lines += _wrapped(f"since.{wheels.toml_string(version)}", values)
    return "\n".join(lines) + "\n"


def releases(cache: Path, offline: bool) -> list[wheels.Artefact]:
    """Each final jax release from FIRST with a wheel or an sdist, oldest first (a yanked one too: pip installs it
    when pinned)."""
    data = wheels.project_json("jax", cache, offline)
    return [a for a in wheels.artefacts(data) if Version(a.version) >= FIRST]


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    artefacts = releases(cache, options.offline)
    found = wheels.parallel(lambda a: read_release(a, cache, options.offline), artefacts)
    table = combine({a.version: r for a, r in zip(artefacts, found, strict=True)})
    newest = wheels.newest_upload("jax", [a.version for a in artefacts], cache)
    kinds = sum(a.kind == "wheel" for a in artefacts)
    read = (
        f"{newest}, {len(artefacts)} jax releases {table['covers_from']} to {table['covers_to']} "
        f"({kinds} wheels, {len(artefacts) - kinds} sdists)"
    )
    wheels.write_table(options, render(table, read), read, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
