"""Error signatures: the messages users see when a rule or check bites, as the upstream sources print them.

A maintainer reads the messages first: `jaxlib is version 0.1.69, but this version of jax requires version 0.1.74`
names its cause and two facts. Each rule (`[[signatures]]` in its TOML) and each code check (`Check.signatures`)
carries the messages of its fault, kept beside it: one place to add. A signature is the message's text as its
source prints it (a format string at a tag, `source`), its placeholders named for what they carry:

- a fact of the environment, which a match states: `{jax}`, `{jaxlib}`, `{numpy}` (versions of those packages),
  `{package}` with `{version}` (a package the message names, at that version), `{cudnn}`, `{cuda}`, `{driver}`,
  `{python}`, `{platform}`;
- a value the message carries that is no fact of the environment (quoted with the match, never used as a fact):
  `{required}`, `{built}`, `{removed}`, `{found}` (versions), `{name}` (a dotted name), `{jax_module}` (`jax` or
  one of its modules), `{jax_submodule}` (one of its modules), `{number}`, `{any}` (the rest of a line).

The pattern is compiled from the text (its literal parts escaped, a run of spaces matching any whitespace, so a
message wrapped over lines by a terminal or a paste still matches; the text after its last value not required,
since reports quote messages cut there), never written by hand. `states` adds facts a
message says without a placeholder ("Falling back to cpu": the platform is cpu). A signature that `fires` makes
its rule a finding where it is seen, at the rule's severity, even where the facts cannot decide the rule (a
message is stronger evidence than a version guess); one that does not fire only states its facts (a CPU
fallback that is right on a machine without a GPU).

Matching is bounded: every placeholder's pattern is possessive or bounded, a line is looked at only where one
signature's `needle` (its longest literal word) occurs in it (one alternation over all
needles), and a match spans at most `WINDOW` lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from envaudit.model.facts import Facts
from envaudit.model.report import Finding
from envaudit.model.scope import canonicalize_name

# a release as PEP 440 writes it: pre/dev/post parts and a local label (`0.4.23.dev20240125`, `2.0.0rc2`,
# `0.4.7+cuda11.cudnn82`), so that a sentence's next word (`0.4.30.Then`) is not part of it
VERSION = r"v?+(\d++(?:\.\d++)++(?:[.-]?+(?:a|b|rc|dev|post)\d*+)*+(?:\+[A-Za-z0-9]++(?:\.[A-Za-z0-9]++)*+)?+)"
WORD = r"(?<![A-Za-z0-9_.])({})(?![A-Za-z0-9_-])"  # a name-like value, never a part of a longer name
# placeholder -> (the fact it states, or "" for a value that is none, its pattern)
PLACEHOLDERS: Mapping[str, tuple[str, str]] = {
    "jax": ("package jax", VERSION),
    "jaxlib": ("package jaxlib", VERSION),
    "numpy": ("package numpy", VERSION),
    "package": ("package", WORD.format(r"[A-Za-z][A-Za-z0-9_.-]*+")),
    "version": ("version", VERSION),
    "cudnn": ("cudnn", VERSION),
    "cuda": ("cuda", VERSION),
    "driver": ("driver", VERSION),
    "python": ("python", VERSION),
    "platform": ("platform", WORD.format(r"[A-Za-z][A-Za-z0-9_]*+")),  # a retyped "CPU": stated in lower case
    "required": ("", VERSION),
    "built": ("", VERSION),
    "removed": ("", VERSION),
    "found": ("", VERSION),
    "jax_module": ("", WORD.format(r"jax(?:\.[A-Za-z_][A-Za-z0-9_]*+)*+")),
    "jax_submodule": ("", WORD.format(r"jax(?:\.[A-Za-z_][A-Za-z0-9_]*+)++")),
    "name": ("", WORD.format(r"[A-Za-z_][A-Za-z0-9_.]*+")),
    "number": ("", r"(\d++)"),
    # a line is at most 1,000 characters (triage/extract.MAX_LINE); a value may go on to the next line (not past a
    # blank one), as a terminal wraps a message
    "any": ("", r"((?:[^\n]|\n(?![ \t]*+\n)){0,1000}?)"),
}
SLOT = re.compile(r"\{(\w+)\}")
WINDOW = 8  # lines one match may span: the longest message (jax's "Outdated cuDNN installation found") is 5
BEFORE = 2  # lines above the one with its needle where a match may start (a message wrapped by a terminal)
QUOTED = 300  # characters of a match quoted in a finding


class SignatureError(ValueError):
    """A signature that cannot be compiled: an unknown placeholder, or no literal text to find it by."""


@dataclass(frozen=True)
class Signature:
    text: str  # the message as its source prints it, placeholders named (above)
    source: str  # where the text is: an https URL at a tag, with its line
    seen: str = ""  # an https URL of a real report that shows it, where one is known
    fires: bool = True  # whether a match makes its rule a finding (False: it states facts only)
    states: tuple[tuple[str, str], ...] = ()  # facts it says without a placeholder: ("platform", "cpu")


class Owner(Protocol):
    """A rule or a check: what carries signatures."""

    @property
    def id(self) -> str: ...

    @property
    def signatures(self) -> tuple[Signature, ...]: ...

    def seen(self, facts: Facts, matches: Sequence[Match] = ()) -> Finding | None: ...


@dataclass(frozen=True)
class Compiled:
    owner: str  # the id of the rule or check whose message it is
    signature: Signature
    pattern: re.Pattern[str]
    slots: tuple[str, ...]  # the placeholder of each group, in order
    needle: str  # a literal run of its first line: a line without it cannot start a match


@dataclass(frozen=True)
class Match:
    owner: str
    signature: Signature
    line: int  # where the match starts, 1-based (in a message: its line)
    text: str  # what matched, its whitespace collapsed (quoted cut to QUOTED characters)
    values: tuple[tuple[str, str], ...] = field(default=())  # (placeholder, value), in the message's order

    @property
    def facts(self) -> list[tuple[str, str]]:
        """The facts it states: ("package jaxlib", "0.1.69"), ("platform", "cpu")..."""
        found, package = [], ""
        for slot, value in self.values:
            fact = PLACEHOLDERS[slot][0]
            if fact == "package":
                package = canonicalize_name(value)
            elif fact == "version" and package:
                found.append((f"package {package}", value))
            elif fact and fact != "version":
                found.append((fact, value.lower() if fact == "platform" else value))
        return found + list(self.signature.states)


def compile_signature(owner: str, signature: Signature) -> Compiled:
    """The pattern of a signature's text; a SignatureError names the owner where the text cannot be one."""
    parts, slots, pos = [], [], 0
    for slot in SLOT.finditer(signature.text):
        if slot[1] not in PLACEHOLDERS:
            raise SignatureError(f"{owner}: unknown placeholder {{{slot[1]}}} in {signature.text!r}")
        parts.append(_literal(signature.text[pos : slot.start()]))
        last = slot.end() == len(signature.text)
        parts.append(r"([^\n]{0,1000}+)" if slot[1] == "any" and last else PLACEHOLDERS[slot[1]][1])  # the rest
        slots.append(slot[1])
        pos = slot.end()
    rest = _literal(signature.text[pos:])
    # a report often quotes a message cut after its last value: what follows a value is not required (after `{any}`
    # it is, since it is what ends the value), so the needle is a word of the part that is
    optional = bool(slots) and slots[-1] != "any" and bool(rest)
    parts.append(f"(?:{rest})?+" if optional else rest)
    required = signature.text[:pos] if optional else signature.text
    words = [word for run in SLOT.split(required)[::2] for word in run.split()]
    needle = max(words, key=len, default="")
    if len(needle) < 6:
        raise SignatureError(f"{owner}: {signature.text!r} has no literal word of 6 characters to be found by")
    if not signature.source.startswith("https://") or (signature.seen and not signature.seen.startswith("https://")):
        raise SignatureError(f"{owner}: a signature's source and seen must be https URLs")
    return Compiled(owner, signature, re.compile("".join(parts)), tuple(slots), needle)


def _literal(text: str) -> str:
    """Literal text, a run of whitespace in it matching any run of whitespace (a wrapped line, two spaces)."""
    return r"\s++".join(re.escape(word) for word in re.split(r"\s+", text)) if text.strip() else _space(text)


def _space(text: str) -> str:
    return r"\s++" if text else ""


class Catalogue:
    """Every signature the knowledge base carries, compiled once, with the alternation of their needles."""

    def __init__(self, owners: Iterable[Owner]) -> None:
        owners = tuple(owners)
        self.owners = {o.id: o for o in owners}
        self.compiled = tuple(compile_signature(o.id, s) for o in owners for s in o.signatures)
        needles = sorted({c.needle for c in self.compiled}, key=len, reverse=True)
        self.any_needle = re.compile("|".join(map(re.escape, needles))) if needles else re.compile(r"(?!)")
        self.by_needle: dict[str, list[tuple[int, Compiled]]] = {}
        for number, c in enumerate(self.compiled):
            self.by_needle.setdefault(c.needle, []).append((number, c))

    def scan(self, lines: Sequence[str], first: int = 1) -> list[Match]:
        """The matches in a text's lines (`first`: the number of its first line), in the order of their lines. A
        match covers a line that holds its needle; it may start up to BEFORE lines above it (a wrapped message)."""
        found: dict[tuple[int, int, int], Match] = {}
        for index, line in enumerate(lines):
            if not self.any_needle.search(line):
                continue
            low = max(0, index - BEFORE)
            window = "\n".join(lines[low : index + WINDOW])
            start = sum(len(text) + 1 for text in lines[low:index])  # where the needle's line starts in the window
            end = start + len(line) + WINDOW * QUOTED  # how far a match may run past the needle's line
            for number, compiled in self._candidates(line):
                match = compiled.pattern.search(window, 0, end)
                while match and match.end() <= start:  # a match that ends above the needle's line: look further
                    match = compiled.pattern.search(window, match.end(), end)
                if match is None or match.start() > start + len(line):
                    continue
                begins = low + window.count("\n", 0, match.start())
                key = (number, begins, match.start() - sum(len(text) + 1 for text in lines[low:begins]))
                values = tuple(zip(compiled.slots, (g or "" for g in match.groups()), strict=True))
                said = " ".join(match[0].split())  # whole (WINDOW lines at most): cut where it is quoted
                found.setdefault(key, Match(compiled.owner, compiled.signature, begins + first, said, values))
        return sorted(found.values(), key=lambda m: m.line)

    def _candidates(self, line: str) -> list[tuple[int, Compiled]]:
        return [(n, c) for needle, group in self.by_needle.items() if needle in line for n, c in group]
