"""`python -m derive refresh`: every derivation of the registry whose inputs moved, run again in order, each table
replaced whole (never half-written) where its bytes changed; then the generated files that follow from the tables
(the tables' README, the library list the hook reads); then what changed, per table, as rows.

Inputs are fingerprinted, not guessed: the PyPI projects a derivation read at its last run (each project's release
files, from its JSON, read from the index once per refresh), the code of the derivation (its module and
derive/sources/), the tables it reads, and for a derivation that reads jax's tags, the tag list. A derivation whose
fingerprint and output file are both as the last run left them is skipped: a refresh with nothing new takes
seconds. The state is kept in the cache (`refresh-state.json`), never in the repository.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from derive import diff, registry
from derive.registry import Derivation
from derive.sources import wheels
from envaudit.rules.table import TABLES

DERIVE = Path(__file__).resolve().parent
STATE = "refresh-state.json"


@dataclass
class Options:
    cache: Path
    offline: bool = False
    only: tuple[str, ...] = ()
    force: bool = False
    jax_git: Path | None = None
    derivations: tuple[Derivation, ...] = registry.DERIVATIONS
    tables: Path = TABLES  # where the tables are (a test's copy)
    after: tuple[Callable[[], None], ...] = ()  # what is generated from the tables once they are current


@dataclass
class Outcome:
    table: str
    status: str  # "skipped" (inputs as before), "same" (re-derived, same bytes), "changed", "failed", "by hand"
    seconds: float = 0.0
    diff: diff.TableDiff = field(default_factory=diff.TableDiff)
    message: str = ""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha(path: Path) -> str:
    return _sha(path.read_bytes()) if path.is_file() else ""


def project_fingerprint(name: str, cache: Path, offline: bool) -> str:
    """A project's release files as PyPI lists them: every (version, file, sha256, yanked), hashed."""
    data = wheels.project_json(name, cache, offline)
    files = sorted(
        (version, f["filename"], f.get("digests", {}).get("sha256", ""), bool(f.get("yanked")))
        for version, listed in data.get("releases", {}).items()
        for f in listed
    )
    return _sha(json.dumps(files).encode())


def code_fingerprint(d: Derivation) -> str:
    """The derivation's code: its module's file and every module of derive/sources/."""
    module = importlib.import_module(d.module)  # (imported already: it ran)
    files = [Path(str(module.__file__)), *sorted((DERIVE / "sources").glob("*.py"))]
    return _sha(b"".join(_sha(f.read_bytes()).encode() for f in files))


def _state(path: Path) -> dict[str, Any]:
    """The last refresh's fingerprints, or none where the file is missing, unreadable or not one this writes (a
    refresh then derives everything again: the state is a cache, never a reason to stop)."""
    try:
        found = wheels.load_json(path) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def tags_fingerprint(git: Path | None) -> str:
    if git is None:
        return ""
    listed = subprocess.run(
        ["git", f"--git-dir={git}", "tag", "--list"], capture_output=True, text=True, check=False, timeout=60
    )
    return _sha(listed.stdout.encode())


class Refresh:
    def __init__(self, options: Options) -> None:
        self.o = options
        self.state_path = options.cache / STATE
        self.state: dict[str, Any] = _state(self.state_path)
        self.projects: dict[str, str] = {}  # fingerprints taken in this refresh: each project's JSON read once
        self.known = {d.table: d for d in options.derivations}

    def path(self, d: Derivation) -> Path:
        return self.o.tables / d.table

    def project(self, name: str) -> str:
        if name not in self.projects:
            try:
                self.projects[name] = project_fingerprint(name, self.o.cache, self.o.offline)
            except (OSError, ValueError, SystemExit) as error:  # gone, unreadable, or not cached offline: moved
                self.projects[name] = f"unreadable: {error}"
        return self.projects[name]

    def inputs(self, d: Derivation, read: list[str]) -> dict[str, Any]:
        names = sorted(read)
        fingerprints = wheels.parallel(self.project, names)
        return {
            "code": code_fingerprint(d),
            "tables": {a: _file_sha(self.path(self.known[a])) for a in d.after},
            "tags": tags_fingerprint(self.o.jax_git) if "{jax_git}" in d.extra_args else "",
            "projects": dict(zip(names, fingerprints, strict=True)),
        }

    def current(self, d: Derivation) -> bool:
        """Whether the table is as the last refresh left it and nothing it read has moved since."""
        kept = self.state.get(d.table)
        if self.o.force or not isinstance(kept, dict) or kept.get("output") != _file_sha(self.path(d)):
            return False
        inputs = kept.get("inputs")
        projects = inputs.get("projects") if isinstance(inputs, dict) else None
        if not isinstance(projects, dict):  # a state file this refresh did not write: derive again
            return False
        return bool(inputs == self.inputs(d, list(projects)))

    def argv(self, d: Derivation, output: Path) -> list[str]:
        extra = [a.replace("{jax_git}", str(self.o.jax_git or "")) for a in d.extra_args]
        return [
            "--cache",
            str(self.o.cache),
            "--output",
            str(output),
            *(["--offline"] if self.o.offline else []),
            *extra,
        ]

    def derive(self, d: Derivation) -> Outcome:
        if d.by_hand:
            return Outcome(d.table, "by hand", message=d.by_hand)
        if "{jax_git}" in d.extra_args and self.o.jax_git is None:
            return Outcome(d.table, "failed", message="needs a bare mirror of jax's repository: --jax-git DIR")
        if self.current(d):
            return Outcome(d.table, "skipped")
        started = time.monotonic()
        target = self.path(d)
        old = target.read_text(encoding="utf-8") if target.is_file() else ""
        with tempfile.TemporaryDirectory(prefix="envaudit-derive-") as scratch:
            output = Path(scratch) / target.name
            if target.is_file():
                shutil.copyfile(target, output)  # a derivation that keeps hand-read rows reads them from its output
            wheels.READ.clear()
            said = ""
            try:
                code = importlib.import_module(d.module).main(self.argv(d, output))
            except SystemExit as stop:  # a derivation's own refusal: one line, the table left as it was
                code, said = (stop.code, "") if isinstance(stop.code, int) else (1, str(stop.code))
            except Exception as error:  # a derivation that broke: its table kept, the others still run
                code, said = 1, f"{type(error).__name__}: {error}"
            read = sorted(wheels.READ)
            if code != 0 or not output.is_file():
                why = f"exit {code}{': ' + said if said else ''}; the table kept as it was"
                return Outcome(d.table, "failed", time.monotonic() - started, message=why)
            new = output.read_text(encoding="utf-8")
            if new != old:
                wheels.write_atomic(target, output.read_bytes())
        self.state[d.table] = {"output": _file_sha(target), "inputs": self.inputs(d, read)}
        wheels.dump_json(self.state_path, self.state)
        found = diff.between(old, new)
        status = "changed" if new != old else "same"
        return Outcome(d.table, status, time.monotonic() - started, found)

    def run(self) -> list[Outcome]:
        chosen = set(self.o.only) if self.o.only else None
        known = {d.table for d in self.o.derivations}
        if chosen is not None and chosen - known:
            raise ValueError(
                f"no derivation of {', '.join(sorted(chosen - known))}; `python -m derive list` lists them"
            )
        outcomes = []
        for d in registry.ordered(chosen, self.o.derivations):
            outcome = self.derive(d)
            said = f": {outcome.message}" if outcome.message else ""
            print(f"{outcome.status:8} {d.table} ({outcome.seconds:.1f} s){said}")
            outcomes.append(outcome)
        for generate in self.o.after:
            generate()
        return outcomes


def report(outcomes: list[Outcome], seconds: float) -> list[str]:
    """The reviewer's summary: per table that changed, its rows; then the counts and the time."""
    lines: list[str] = []
    for o in outcomes:
        if o.diff:
            lines += diff.render(o.table, o.diff)
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in ("changed", "same", "skipped", "failed", "by hand")}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n) + f" in {seconds:.1f} s")
    return lines
