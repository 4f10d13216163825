"""The values a plan's inputs are read into: where a line stands, a requirement as written, a resolution as read."""

from __future__ import annotations

from dataclasses import dataclass, field

STDIN = "-"  # `-r -`: a requirements file read from standard input (`pip freeze | envaudit plan -r -`)


@dataclass(frozen=True)
class Source:
    """Where something a plan read stands: its input as the user named it, and its line or table."""

    file: str  # "requirements.txt", "sub/base.txt" (an include, joined to the file that includes it), "-" for stdin
    line: int = 0  # the line it starts on, where the input has lines (a requirements file)
    section: str = ""  # the table it is in, where the input has tables ("[project] dependencies")

    def __str__(self) -> str:
        if self.line:
            return f"{self.file} line {self.line}"
        return f"{self.file} {self.section}" if self.section else self.file


@dataclass(frozen=True)
class Declared:
    """A requirement as an input writes it, for the plan's target (its marker, if any, holds there)."""

    name: str  # canonical; "" for a direct reference that names no distribution (`-e .`, a local directory)
    text: str  # as written, without its options (--hash) and marker
    source: Source
    specifier: str = ""  # its version specifier ("==0.4.20", ">=0.4,<0.5"); "" for none
    extras: frozenset[str] = frozenset()
    constraint: bool = False  # a -c line: it constrains what is installed and installs nothing
    direct: bool = False  # a direct reference (NAME @ URL, a path or URL, -e): no index chooses its version
    version: str = ""  # a direct reference's version where its wheel's file name states one
    build: str = ""  # a conda spec's build string, where it names one (`jaxlib=0.4.23=cuda120py311h5a49573_202`)


@dataclass(frozen=True)
class Resolved:
    """What a lock or a pip report says is installed for the plan's target: each distribution and its version."""

    versions: dict[str, str]  # canonical name -> version, every distribution it installs (audited or not)
    source: Source
    into: str  # where the requirement lines that change it are written ("pyproject.toml"; "": it does not say)
    python: str = ""  # the Python it was resolved for, where it says (a pip report's environment)
    platform: dict[str, str] = field(default_factory=dict)  # its environment's system and machine, where it says
    requires: dict[str, list[str]] = field(default_factory=dict)  # facts.requires, where it records requirements
    lines: dict[str, int] = field(default_factory=dict)  # canonical name -> the line of its entry, where it has lines
    # canonical name -> where it takes that distribution from, where not the package index (a lock's own index,
    # a URL, a repository, a path)
    elsewhere: dict[str, str] = field(default_factory=dict)
    direct: frozenset[str] = frozenset()  # what the user asked for by name: a lock's project requirements, a pip
    # report's `requested` (the others came in as dependencies)
    builds: dict[str, str] = field(default_factory=dict)  # canonical name -> a conda package's build string

    def at(self, name: str) -> Source:
        """Where a distribution's version is written in it: its entry's line, where the input has lines."""
        return Source(self.source.file, self.lines.get(name, 0), self.source.section)
