"""Derive the oldest jaxlib each jax release imports with, and the messages `import jax` raises for a jaxlib out of
its range, from the files released on PyPI, written to envaudit/rules/tables/jax-minimum-jaxlib.toml.

`_minimum_jaxlib_version` is read with `ast` from jax/version.py inside each release's pure wheel (from 0.4.16),
else its sdist. The two messages and `newer_check_since` are kept as the table has them (envaudit formats the
messages with {jaxlib}, {minimum} and {jax}), but checked, never assumed: the f-strings of check_jaxlib_version in
jax/_src/lib/__init__.py of every release read must give the table's templates, its versions must be compared by
their leading dotted numbers (the regex the table's head names), and the refusal of a newer jaxlib must appear at
`newer_check_since` and be absent from the final release before it. Where a release's check says anything else the
run fails and names it: the templates (and envaudit/rules/jax_pins.py, which applies them) are then updated by hand.
Releases are those of derive/tables/jax_requires.py (final, from 0.4.1; a yanked one where the table listed it).

usage: python -m derive.tables.jax_minimum_jaxlib [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from packaging.version import Version

from derive.sources import wheels
from derive.tables.jax_requires import final_releases, sdist_member, wrapped
from envaudit.rules.jax_pins import MINIMUM_JAXLIB

TABLE = MINIMUM_JAXLIB.path
VERSION_PY = "jax/version.py"
LIB_INIT = "jax/_src/lib/__init__.py"
CHECK = "check_jaxlib_version"  # the function (`_check_jaxlib_version` before jax 0.3.0) that raises
LEADING_NUMBERS = r"[0-9]+(?:\.[0-9]+)*"  # how the check reads a version: its leading dotted numbers only
PLACEHOLDERS = {"jaxlib_version": "jaxlib", "minimum_jaxlib_version": "minimum", "jax_version": "jax"}


def minimum(source: bytes) -> str:
    """`_minimum_jaxlib_version` of a jax/version.py: the string its one module-level assignment binds."""
    found = []
    for node in wheels.parse(source).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "_minimum_jaxlib_version" for t in targets):
            value = getattr(node, "value", None)
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                raise ValueError(f"version.py line {node.lineno}: _minimum_jaxlib_version is not a literal string")
            found.append(value.value)
    if len(found) != 1:
        raise ValueError(f"version.py: {len(found)} assignments of _minimum_jaxlib_version, not one")
    return found[0]


def template(node: ast.JoinedStr) -> str:
    """An f-string as the table's template: its text, each of the check's three variables as its placeholder."""
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif (
            isinstance(value, ast.FormattedValue)
            and isinstance(value.value, ast.Name)
            and value.value.id in PLACEHOLDERS
            and value.conversion == -1
            and value.format_spec is None
        ):
            parts.append("{" + PLACEHOLDERS[value.value.id] + "}")
        else:
            raise ValueError(f"line {node.lineno}: {ast.unparse(value)} in a message is none of {sorted(PLACEHOLDERS)}")
    return "".join(parts)


def checks(source: bytes) -> dict[str, Any]:
    """What the jaxlib check of a jax/_src/lib/__init__.py raises: {"older": f-string, "newer": f-string} for each
    `if a < b` / `if a > b` of the check's function whose body raises (its one f-string the message), "numbers":
    whether the function reads versions by their leading dotted numbers, and "dates": whether it also compares the
    dates of nightlies (`..._date`, jax 0.4.15). Empty where no function is the check."""
    functions = [n for n in ast.walk(wheels.parse(source)) if isinstance(n, ast.FunctionDef) and n.name.endswith(CHECK)]
    found: dict[str, Any] = {}
    for function in functions:
        found["numbers"] = any(isinstance(n, ast.Constant) and n.value == LEADING_NUMBERS for n in ast.walk(function))
        found["dates"] = any(isinstance(n, ast.Name) and n.id.endswith("_date") for n in ast.walk(function))
        for node in ast.walk(function):
            if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1):
                continue
            kind = {ast.Lt: "older", ast.Gt: "newer"}.get(type(node.test.ops[0]))
            if kind is None or not any(isinstance(n, ast.Raise) for s in node.body for n in ast.walk(s)):
                continue
            strings = [n for s in node.body for n in ast.walk(s) if isinstance(n, ast.JoinedStr)]
            strings = strings or _raised_names(function, node)
            if len(strings) != 1:
                raise ValueError(f"line {node.lineno}: the {kind} check raises {len(strings)} f-strings, not one")
            found[kind] = strings[0]
    return found


def _raised_names(function: ast.FunctionDef, node: ast.If) -> list[ast.JoinedStr]:
    """The f-string a check raises by name (`msg = f"..."` before `if ...: raise RuntimeError(msg)`, as jax 0.4.15
    writes it): the last one bound to that name above the `if`."""
    names = {
        a.id
        for s in node.body
        for r in ast.walk(s)
        if isinstance(r, ast.Raise) and isinstance(r.exc, ast.Call)
        for a in r.exc.args
        if isinstance(a, ast.Name)
    }
    bound = [
        n.value
        for n in ast.walk(function)
        if isinstance(n, ast.Assign)
        and n.lineno < node.lineno
        and isinstance(n.value, ast.JoinedStr)
        and any(isinstance(t, ast.Name) and t.id in names for t in n.targets)
    ]
    return sorted(bound, key=lambda v: v.lineno)[-1:]


def member(artefact: wheels.Artefact, name: str, cache: Path, offline: bool) -> bytes:
    """One file of a release (its path as installed): ranged out of its wheel, or read from its sdist."""
    if artefact.kind == "wheel":
        key = name.replace("/", "_")
        data = wheels.wheel_member(artefact.filename, artefact.url, cache, offline, key, lambda n: n == name)
    else:
        data = sdist_member(wheels.fetch(artefact, cache, offline), name)
    if data is None:
        raise SystemExit(f"{artefact.filename}: no {name}")
    return data


def messages(artefact: wheels.Artefact, cache: Path, offline: bool) -> tuple[str, str, bool, bool]:
    """The older and newer messages of a release's check, as templates, whether it compares leading numbers, and
    whether it compares nightlies' dates too."""
    try:
        found = checks(member(artefact, LIB_INIT, cache, offline))
        if "older" not in found or "newer" not in found:
            raise ValueError(f"{CHECK} raises {sorted(k for k in found if k in ('older', 'newer')) or 'nothing'} only")
        return template(found["older"]), template(found["newer"]), bool(found["numbers"]), bool(found["dates"])
    except (ValueError, SyntaxError) as error:
        raise SystemExit(f"jax {artefact.version} ({LIB_INIT}): {error}") from error


def check_messages(
    kept: dict[str, Any], read: list[wheels.Artefact], found: list[tuple[str, str, bool, bool]]
) -> list[str]:
    """Every release's check raises the kept templates and compares leading numbers; else the run fails, naming
    the releases and what they raise (the newest's first: what a table refreshed by hand would say). Returns the
    releases whose check also compares nightlies' dates (the head names them)."""
    wrong = [
        f"jax {a.version}: older {older!r}, newer {newer!r}, leading numbers {numbers}"
        for a, (older, newer, numbers, _) in reversed(list(zip(read, found, strict=True)))
        if (older, newer, numbers) != (kept["older_message"], kept["newer_message"], True)
    ]
    if wrong:
        raise SystemExit(
            f"{CHECK} no longer raises what {TABLE.name} holds (older {kept['older_message']!r}, newer "
            f"{kept['newer_message']!r}, versions by {LEADING_NUMBERS}):\n  " + "\n  ".join(wrong)
        )
    return [a.version for a, (*_, dates) in zip(read, found, strict=True) if dates]


def check_newer_since(since: str, data: dict[str, Any], cache: Path, offline: bool) -> str:
    """`newer_check_since` checked: that release's check refuses a jaxlib newer than jax, and the final release
    before it does not. Returns that release (the head names it)."""
    released = {a.version: a for a in wheels.artefacts(data)}
    before = max((v for v in released if Version(v) < Version(since)), key=Version, default=None)
    if since not in released or before is None:
        raise SystemExit(f"newer_check_since {since}: PyPI holds no such jax release, or none before it")
    for version, expected in ((since, True), (before, False)):
        try:
            found = checks(member(released[version], LIB_INIT, cache, offline))
        except (ValueError, SyntaxError) as error:
            raise SystemExit(f"jax {version} ({LIB_INIT}): {error}") from error
        if ("newer" in found) != expected:
            said = "does not refuse" if expected else "already refuses"
            raise SystemExit(f"newer_check_since {since}: jax {version}'s {CHECK} {said} a jaxlib newer than jax")
    return before


def render(kept: dict[str, Any], rows: dict[str, str], before: str, dated: list[str], read: str) -> str:
    since = kept["newer_check_since"]
    nightlies = (
        f"; jax {', '.join(dated)} also refuses a nightly jaxlib dated after a nightly jax (never a final release)"
        if dated
        else ""
    )
    text = (
        "jax's minimum jaxlib per jax release, and its refusal of a jaxlib newer than jax: both raise RuntimeError at "
        "`import jax` (jax/_src/lib/__init__.py, check_jaxlib_version). DERIVED by "
        "derive/tables/jax_minimum_jaxlib.py from the files released on PyPI, do not edit by hand: "
        "`_minimum_jaxlib_version` read with ast from jax/version.py in each final release's wheel (from 0.4.16), "
        "else its sdist. The two messages are the check's f-strings as templates, checked against "
        "jax/_src/lib/__init__.py of every release read (a release whose check says otherwise fails the "
        "derivation); newer_check_since is the first release whose check refuses a newer jaxlib (checked: "
        f"{since}'s does, {before}'s does not). Both compare the leading dotted numbers of each version only (.devN, "
        f"rcN and +local are cut){nightlies}. A jax release not listed here (older than 0.4.1, newer than the newest "
        "read) has no known minimum."
    )
    source = f"{wheels.PYPI.format(name='jax')} ({VERSION_PY} and {LIB_INIT} of each release's wheel, else its sdist)"
    lines = [
        *wrapped(text),
        f"source = {wheels.toml_string(source)}",
        f"read = {wheels.toml_string(read)}",
        f"older_message = {wheels.toml_string(kept['older_message'])}",
        f"newer_message = {wheels.toml_string(kept['newer_message'])}",
        f"newer_check_since = {wheels.toml_string(since)}",
        "",
        "[minimum_jaxlib]",
    ]
    lines += [f"{wheels.toml_string(version)} = {wheels.toml_string(value)}" for version, value in rows.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    kept: dict[str, Any] = dict(MINIMUM_JAXLIB.read(TABLE))
    data = wheels.project_json("jax", cache, options.offline)
    read = final_releases(data, kept["minimum_jaxlib"])
    sources = wheels.parallel(lambda a: member(a, VERSION_PY, cache, options.offline), read)
    rows = {}
    for artefact, source in zip(read, sources, strict=True):
        try:
            rows[artefact.version] = minimum(source)
        except (ValueError, SyntaxError) as error:
            raise SystemExit(f"jax {artefact.version} ({VERSION_PY}): {error}") from error
    dated = check_messages(kept, read, wheels.parallel(lambda a: messages(a, cache, options.offline), read))
    before = check_newer_since(kept["newer_check_since"], data, cache, options.offline)
    newest = wheels.newest_upload("jax", list(rows), cache)
    said = f"{newest}, {len(rows)} jax releases, {read[0].version} to {read[-1].version}"
    wheels.write_table(options, render(kept, rows, before, dated, said), said, started)
    MINIMUM_JAXLIB.read(options.output)  # the table written has its shape
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
