"""What a printed fix asks for, read back from its text: the requirements to install or write, the distributions to
remove, the variables to unset and set. Tests read a fix with it instead of splitting it themselves.

It reads both forms a fix has. A plan's (`envaudit plan`, `fixes.Target` "lines"): `unset NAME...`, `export
NAME=VALUE` (the value quoted as shlex.quote quotes it) and `in FILE: LINE, LINE` parts, joined by "; ", each LINE a
requirement or `no NAME` (the file should not name that distribution); a specifier's own commas have no space
after them. An audit's: one shell line of commands joined by " && ", each the environment's installer (`PY -m pip
install|uninstall`, `uv pip install|uninstall --python PY`, `conda install|remove -y -p PREFIX`, `PY -m ensurepip`)
or a variable's `unset` / `export`. Anything else, in either form, is an AssertionError that quotes the text: a
fix this cannot read is a fix no test has checked."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement

from envaudit.model.scope import canonicalize_name

NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # a variable's name
QUOTED = r"""[A-Za-z0-9_@%+=:,./-]+|'[^']*'(?:"'"'[^']*')*"""  # what shlex.quote writes: safe as it is, or quoted
PART = re.compile(
    rf"unset (?P<unset>{NAME}(?: {NAME})*)"
    rf"|export (?P<name>{NAME})=(?P<value>{QUOTED})"
    r"|in (?P<file>[^:;]+): (?P<lines>(?:(?!; ).)+)"
)
OPTIONS = {"--force-reinstall", "--no-deps", "--reinstall"}  # what an install of releases as they are adds


@dataclass(frozen=True)
class Requested:
    """What a fix asks for. `requirements`: every requirement it installs or writes, in its order (what it holds at
    the installed version too); `pins`: those pinned with `==`, by canonical name; `remove`: the distributions it
    uninstalls or writes `no NAME` for; `files`: a plan's lines per input file, as written ({} for a command);
    `options` and `links`: a command's installer options and `-f` indexes."""

    requirements: tuple[str, ...] = ()
    pins: dict[str, str] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
    unset: tuple[str, ...] = ()
    export: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[str, ...]] = field(default_factory=dict)
    options: frozenset[str] = frozenset()
    links: tuple[str, ...] = ()


def requested(fix: str) -> Requested:
    """The fix's text read into what it asks for (AssertionError for a text this does not understand, or "")."""
    assert fix, "no fix to read"
    if PART.match(fix):  # a plan's parts; a command starts with a variable's part too, and goes on with " && "
        try:
            return _lines(fix)
        except AssertionError:
            if " && " not in fix:
                raise
    return _command(fix)


def _lines(fix: str) -> Requested:
    requirements: list[str] = []
    remove: list[str] = []
    unset: list[str] = []
    export: dict[str, str] = {}
    files: dict[str, tuple[str, ...]] = {}
    at = 0
    while True:
        match = PART.match(fix, at)
        assert match is not None, f"{fix[at:]!r} is not a part of a plan's fix: {fix!r}"
        if match["unset"]:
            unset += match["unset"].split()
        elif match["name"]:
            [export[match["name"]]] = shlex.split(match["value"])
        else:
            assert match["file"] not in files, f"{match['file']} twice in {fix!r}"
            lines = tuple(match["lines"].split(", "))
            files[match["file"]] = lines
            for line in lines:
                if line.startswith("no "):
                    remove.append(_name(line.removeprefix("no "), fix))
                else:
                    requirements.append(_requirement(line, fix))
        at = match.end()
        if at == len(fix):
            break
        assert fix.startswith("; ", at), f"{fix[at:]!r} after a part of {fix!r}"
        at += 2
    found = Requested(tuple(requirements), _pins(requirements), tuple(remove), tuple(unset), export, files)
    return _checked(found, fix)


def _command(fix: str) -> Requested:
    try:
        words = shlex.split(fix)
    except ValueError as exc:
        raise AssertionError(f"{fix!r} does not split as a shell line: {exc}") from None
    commands: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            commands.append([])
        else:
            commands[-1].append(word)
    requirements: list[str] = []
    remove: list[str] = []
    unset: list[str] = []
    export: dict[str, str] = {}
    options: set[str] = set()
    links: list[str] = []
    for command in commands:
        assert command, f"an empty command in {fix!r}"
        verb, rest = _installer(command, fix)
        if verb == "unset":
            assert rest and all(re.fullmatch(NAME, n) for n in rest), f"{command!r} in {fix!r}"
            unset += rest
        elif verb == "export":
            assert len(rest) == 1 and re.fullmatch(rf"{NAME}=.*", rest[0], re.DOTALL), f"{command!r} in {fix!r}"
            name, _, value = rest[0].partition("=")
            export[name] = value
        elif verb == "ensurepip":
            assert not rest, f"{command!r} in {fix!r}"
        elif verb == "uninstall":
            assert rest, f"{command!r} removes nothing in {fix!r}"
            remove += [_name(n, fix) for n in rest]
        else:
            while rest and rest[0] in OPTIONS:
                options.add(rest.pop(0))
            if len(rest) >= 2 and rest[-2] == "-f":
                links.append(rest[-1])
                rest = rest[:-2]
            assert rest, f"{command!r} installs nothing in {fix!r}"
            assert not any(w.startswith("-") for w in rest), f"{command!r}: an option this does not know in {fix!r}"
            requirements += [_requirement(w, fix) for w in rest if w not in requirements]  # a reinstall of the same
    found = Requested(
        tuple(requirements),
        _pins(requirements),
        tuple(remove),
        tuple(unset),
        export,
        options=frozenset(options),
        links=tuple(links),
    )
    return _checked(found, fix)


def _installer(command: list[str], fix: str) -> tuple[str, list[str]]:
    """(what the command does: unset, export, ensurepip, install, uninstall; its arguments past the installer)."""
    first, *rest = command
    if first in ("unset", "export"):
        return first, rest
    if (
        first == "uv"
        and rest[:1] == ["pip"]
        and rest[1:2] in (["install"], ["uninstall"])
        and rest[2:3] == ["--python"]
    ):
        assert len(rest) > 3, f"{command!r} names no interpreter in {fix!r}"
        return rest[1], rest[4:]
    if first == "conda" and rest[:1] in (["install"], ["remove"]) and rest[1:3] == ["-y", "-p"] and len(rest) > 3:
        return "install" if rest[0] == "install" else "uninstall", rest[4:]
    if rest[:2] == ["-m", "ensurepip"]:
        return "ensurepip", rest[2:]
    if rest[:3] == ["-m", "pip", "install"]:
        return "install", rest[3:]
    if rest[:4] == ["-m", "pip", "uninstall", "-y"]:
        return "uninstall", rest[4:]
    raise AssertionError(f"{command!r} is no installer's command in {fix!r}")


def _requirement(text: str, fix: str) -> str:
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise AssertionError(f"{text!r} in {fix!r} is no requirement: {exc}") from None
    assert req.marker is None and not req.url, f"{text!r} in {fix!r}: a fix's requirement has no marker and no URL"
    return text


def _name(text: str, fix: str) -> str:
    """A distribution named alone (what a removal names)."""
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", text), f"{text!r} in {fix!r} is no distribution's name"
    return canonicalize_name(text)


def _pins(requirements: list[str]) -> dict[str, str]:
    """The `==` pins by canonical name (extras aside: `jax[cuda12]==V` pins jax at V)."""
    found: dict[str, str] = {}
    for text in requirements:
        specs = list(Requirement(text).specifier)
        if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
            found[canonicalize_name(Requirement(text).name)] = specs[0].version
    return found


def _checked(found: Requested, fix: str) -> Requested:
    """Each distribution asked for once: installed (or written) once, or removed, never both."""
    names = [canonicalize_name(Requirement(r).name) for r in found.requirements]
    assert len(set(names)) == len(names), f"a distribution asked for twice in {fix!r}"
    assert not set(names) & set(found.remove), f"a distribution both asked for and removed in {fix!r}"
    assert len(set(found.remove)) == len(found.remove), f"a distribution removed twice in {fix!r}"
    assert not set(found.unset) & set(found.export), f"a variable both unset and set in {fix!r}"
    return found
