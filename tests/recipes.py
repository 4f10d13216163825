"""The install and uninstall lines the documentation prints for envaudit itself, read from the files a user copies
them from (README.md, docs/, scripts/): a shell line in a code block, an inline `code` span, a Dockerfile's RUN, a
workflow's `run:`, a comment in a manifest. Each is an installer's command (`pip`, `python -m pip`, `uv pip`,
`uv tool`, `pipx`) whose requirement arguments include this project: a path to the checkout (`.`, `".[jax]"`, `-e .`)
or a name that contains "envaudit" (which a reader takes for this project, whatever the index holds under it).

tests/test_recipes.py checks what each names against what pyproject.toml builds; tests/realenv/test_recipes.py runs
each as printed.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
NAME: str = PROJECT["name"]
EXTRAS = frozenset(canonicalize_name(e) for e in PROJECT.get("optional-dependencies", {}))

# an installer's command: an interpreter running pip (`python -m pip`, `/opt/env/bin/python -m pip`), pip, uv's
# pip interface or tool verb, or pipx; then its verb
COMMAND = re.compile(
    r"(?:(?:[\w./$\"{}-]*python[\d.]*\"?) -m )?(?:uv pip|uv tool|pipx|pip3?)\s+(?:install|uninstall)\b[^`\n]*"
)
ENDS = ("&&", ";", "|", " #", "\\")  # what ends the command on its line: the next command, a comment, a continuation
# the options of pip, uv and pipx that take a value (the value is no requirement)
VALUED = frozenset(
    (
        *("-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f"),
        *("--find-links", "--report", "--python", "-p", "-t", "--target", "--prefix", "--root", "--with"),
        *("--from", "--python-version", "--platform", "--cache-dir", "--src", "--group"),
    )
)
EDITABLE = frozenset(("-e", "--editable"))


@dataclass(frozen=True)
class Recipe:
    file: str  # relative to the checkout
    line: int
    command: str  # as printed
    names: tuple[str, ...]  # each requirement of this project it names, as written

    @property
    def uninstalls(self) -> bool:
        return shlex.split(self.command)[self._verb()] == "uninstall"

    def _verb(self) -> int:
        words = shlex.split(self.command)
        return next(i for i, w in enumerate(words) if w in ("install", "uninstall"))

    def __str__(self) -> str:
        return f"{self.file} line {self.line}: {self.command}"


def documents() -> list[Path]:
    """The files a user copies commands from."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found += [p for p in sorted((ROOT / "scripts").rglob("*")) if p.is_file() and p.suffix != ".py"]
    return [p for p in found if "__pycache__" not in p.parts]


def commands(text: str) -> list[tuple[int, str]]:
    """Each installer's command on a line of `text`, with the line's number, cut where its line goes on to another
    command or a comment."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in COMMAND.finditer(line):
            command = match[0]
            for end in ENDS:
                command = command.split(end)[0]
            found.append((number, command.strip()))
    return found


def arguments(command: str) -> list[str]:
    """The requirement arguments of an installer's command: its words after the verb that are no option, nor an
    option's value (an editable's path is a requirement)."""
    try:
        words = shlex.split(command)
    except ValueError:  # an unbalanced quote: a line of prose that happens to start like a command
        return []
    verb = next(i for i, w in enumerate(words) if w in ("install", "uninstall"))
    found, skip = [], False
    for word in words[verb + 1 :]:
        if skip:
            skip = False
        elif word in EDITABLE:
            continue
        elif word in VALUED:
            skip = True
        elif not word.startswith("-"):
            found.append(word)
    return found


def is_checkout(argument: str) -> bool:
    """A path to the checkout's root, as a recipe run from it writes one: `.`, `./`, `.[jax]`."""
    return re.fullmatch(r"\./?(\[[^\]]*\])?", argument) is not None


def of_project(argument: str) -> bool:
    if is_checkout(argument):
        return True
    try:
        return "envaudit" in canonicalize_name(Requirement(argument).name)
    except InvalidRequirement:
        return False


def recipes() -> list[Recipe]:
    found = []
    for path in documents():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, command in commands(text):
            names = tuple(a for a in arguments(command) if of_project(a))
            if names:
                found.append(Recipe(str(path.relative_to(ROOT)), number, command, names))
    return found


def problems(recipe: Recipe) -> list[str]:
    """What a recipe names that the project does not build: another distribution's name, an extra it does not have."""
    said = []
    for argument in recipe.names:
        if is_checkout(argument):
            extras = re.findall(r"[^\[\],\s]+", argument.partition("[")[2])
        else:
            req = Requirement(argument)
            extras = list(req.extras)
            if canonicalize_name(req.name) != canonicalize_name(NAME):
                said.append(f"{recipe}: {req.name!r} is not the distribution pyproject.toml builds ({NAME!r})")
        for extra in extras:
            if canonicalize_name(extra) not in EXTRAS:
                said.append(f"{recipe}: the project has no extra {extra!r} (it has {', '.join(sorted(EXTRAS))})")
    return said
