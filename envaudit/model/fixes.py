"""Fixes as values, rendered last into one shell command for the environment's own installer.

A printed fix is a claim, and a generic one is often false: `pip install 'numpy<2'` beside ml_dtypes 0.6 (which
requires NumPy 2) leaves ml_dtypes broken; `pip install jax[cuda12]` on a machine without a GPU installs CUDA
wheels for nothing; a `pip` on PATH may belong to another environment; a uv venv has no pip at all, and a conda
environment's NumPy is conda's. So a fix is a `Fix` value built from the facts (`rules/fixing.py` decides which
one the facts need), and what installs it is the environment's (`Target`):
- it installs into the audited interpreter's environment: `<python> -m pip install`, `uv pip install --python
  <python>` where uv made it, `conda install -p <prefix>` for what conda installed there, `<python> -m ensurepip`
  first where nothing else can install;
- a single-package CUDA jaxlib (`+cuda12`, 0.4.29 and before) comes from jax's own index, which the command names.
A fix has parts (variables to unset or set, requirements to install or hold, releases to reinstall as they are,
distributions to remove), so that several of them combine into one plan (`Fix.then`, `envaudit/judge/fixplan.py`); its
`command` is one shell line and nothing else (no `# comment`: an interactive zsh, macOS's default, takes it for
arguments), so that pasting it into a shell runs exactly the fix (tests/realenv applies the printed text to copies
of real broken environments and audits them again).
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from packaging.specifiers import Specifier, SpecifierSet

from envaudit.model.facts import Facts
from envaudit.model.scope import canonicalize_name

# what installs packages from the index into the environment; "lines" for a plan (commands/plan/), whose
# environment does not exist yet: its fix is the requirement lines to write, in the input files that hold them
Tool = Literal["pip", "uv", "lines"]

# jax's index of its single-package CUDA jaxlibs (docs/installation.md at jax-v0.4.23: pip install --upgrade
# "jax[cuda12_pip]" -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html)
CUDA_RELEASES = "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"


@functools.lru_cache(maxsize=16384)  # a plan reads the same requirements at every state it tries (and a report's
def parse(pin: str) -> tuple[str, str]:  # requires may repeat one thousands of times: 89 s to check one, uncached)
    from packaging.requirements import Requirement

    req = Requirement(pin)
    return canonicalize_name(req.name), str(req.specifier)


def ranged(requirement: str) -> tuple[str, SpecifierSet] | None:
    """A requirement's canonical name and specifier where it is a range (no exact pin, extra, marker or URL): what
    an installer chooses within, as a fix writes it; None otherwise."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    exact = any(s.operator in ("==", "===") for s in req.specifier)
    if not req.specifier or exact or req.extras or req.marker is not None or req.url is not None:
        return None
    return canonicalize_name(req.name), req.specifier


def valid(pin: str) -> bool:
    from packaging.requirements import InvalidRequirement

    try:
        parse(pin)
    except InvalidRequirement:
        return False
    return True


def candidates(spec: str) -> list[str]:
    """Versions that stand for what a specifier allows: those it names, in both directions of each bound."""
    return list(_candidates(spec))


@functools.lru_cache(maxsize=16384)
def _candidates(spec: str) -> tuple[str, ...]:
    from packaging.specifiers import SpecifierSet

    named = [s.version.removesuffix(".*") for s in SpecifierSet(spec)]
    return (*named, *(f"{v}.post0" for v in named), *(_below(v) for v in named))


@functools.lru_cache(maxsize=16384)  # a plan names the same requirements at every state it tries
def named(requirement: str) -> str:
    """The distribution a requirement names ('jaxlib<=0.4.30,>=0.4.27' -> 'jaxlib'; "" where it names none)."""
    found = re.match(r"[A-Za-z0-9._-]+", requirement)
    return canonicalize_name(found[0]) if found else ""


def _below(version: str) -> str:
    """A version just below `version` that keeps its components: 2 -> 1.999, 0.6.0 -> 0.5.999."""
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:3]]
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] > 0:
            return ".".join(map(str, [*parts[:i], parts[i] - 1, *([999] * (len(parts) - i - 1 or 1))]))
    return "0"


def placeholder(version: str) -> bool:
    """Whether a version is `_below`'s stand-in for the newest release under a bound (a component of 999), not a
    release an index has."""
    return "999" in version.split(".")


def python(facts: Facts) -> str:
    """The audited interpreter, quoted for a shell ("python" when the facts do not say)."""
    return shlex.quote(str(facts.python.get("executable") or "python"))


@dataclass(frozen=True)
class Target:
    """How packages are installed into the audited environment: by its interpreter's pip, by uv (a uv venv has no
    pip), with pip brought in first by ensurepip where nothing else can install, and by conda for the
    distributions conda installed there (their INSTALLER file says `conda`)."""

    python: str = "python"  # the audited interpreter, quoted for a shell
    tool: Tool = "pip"
    pip: bool = True  # pip is importable there (False: ensurepip first, where the tool is pip)
    prefix: str = ""  # the conda environment's prefix, quoted, where conda made it
    conda: frozenset[str] = frozenset()  # the distributions conda installed, which conda must move
    written: tuple[tuple[str, str], ...] = ()  # lines: each distribution's input file (canonical name, file)
    into: str = ""  # lines: the file of a distribution no input names
    # lines: the distributions the inputs pin exactly (`==`): a fix writes another exact pin over such a line; over
    # a range, or where no line names it, it writes the least constraint that excludes what fails (Fix.excluding)
    pinned: frozenset[str] | None = None  # None: every one (the plan's arguments are pins)
    ranges: tuple[tuple[str, str], ...] = ()  # lines: the ranges the inputs write (name, specifier), kept in a line
    # uv's global options where envaudit runs the command itself (`fix`: --no-config and the user's own file, as
    # collect/build.uv_options says); the command printed for the user has none
    uv_options: tuple[str, ...] = ()

    def file_of(self, name: str) -> str:
        """lines: the input file a distribution's requirement line is written in."""
        return dict(self.written).get(name, self.into)

    def removals(self, names: Sequence[str]) -> list[str]:
        """The commands that uninstall these distributions (conda's by conda, the rest by the tool)."""
        by_conda = [n for n in names if self.prefix and n in self.conda]
        rest = [n for n in names if n not in by_conda]
        found = [" ".join(["conda", "remove", "-y", "-p", self.prefix, *_quoted(by_conda)])] if by_conda else []
        if rest and self.tool == "uv":
            found.append(" ".join(["uv", *self._uv(), "pip", "uninstall", "--python", self.python, *_quoted(rest)]))
        elif rest:
            bootstrap = [f"{self.python} -m ensurepip"] if not self.pip else []
            found += [*bootstrap, " ".join([self.python, "-m", "pip", "uninstall", "-y", *_quoted(rest)])]
        return found

    def commands(self, requirements: Sequence[str], options: Sequence[str] = (), hold: Sequence[str] = ()) -> list[str]:
        """The commands that install these requirements: conda's packages by conda, the rest by the tool, which is
        also given what to hold (met requirements, named so that it moves nothing else; never conda's to do)."""
        by_conda = [r for r in requirements if self.prefix and parse(r)[0] in self.conda and "[" not in r]
        rest = [r for r in requirements if r not in by_conda]
        rest += [h for h in hold if h not in rest] if rest else []
        found = []
        if by_conda:
            conda_options = ["--force-reinstall"] if "--force-reinstall" in options else []
            found.append(" ".join(["conda", "install", "-y", "-p", self.prefix, *conda_options, *_quoted(by_conda)]))
        if rest:
            links = ["-f", CUDA_RELEASES] if any(re.match(r"jaxlib==[^+]+\+cuda", p) for p in rest) else []
            if self.tool == "uv":
                uv_options = ["--reinstall" if o == "--force-reinstall" else o for o in options]
                uv = ["uv", *self._uv(), "pip", "install", "--python", self.python]
                found.append(" ".join([*uv, *uv_options, *_quoted(rest), *links]))
            else:
                bootstrap = [f"{self.python} -m ensurepip"] if not self.pip else []
                found += [*bootstrap, " ".join([self.python, "-m", "pip", "install", *options, *_quoted(rest), *links])]
        return found

    def _uv(self) -> list[str]:
        return _quoted(self.uv_options)


def _quoted(words: Sequence[str]) -> list[str]:
    return [shlex.quote(w) for w in words]


def target(facts: Facts) -> Target:
    """The installer of the audited environment, from what made it (`python.environment`), whether its pip imports
    and each distribution's INSTALLER."""
    environment = facts.python.get("environment")
    pip = facts.python.get("pip")  # pixi: see pixi_managed (its conda packages are its lock file's, not conda's)
    by_uv = [name for name, tool in facts.installers.items() if tool == "uv"]
    # the environment's own uv or one on PATH, else its pip, else ensurepip: uv only where it runs (a report that
    # does not say, an older one, keeps what made the environment)
    uv = (environment == "uv" or (pip is False and bool(by_uv))) and facts.python.get("uv") is not False
    conda = environment == "conda" or (facts.python.get("conda") is True and environment != "pixi")
    prefix = str(facts.python.get("prefix") or "") if conda else ""
    return Target(
        python=python(facts),
        tool="uv" if uv else "pip",
        pip=pip is not False,
        prefix=shlex.quote(prefix) if prefix else "",
        conda=frozenset(name for name, tool in facts.installers.items() if tool == "conda") if prefix else frozenset(),
    )


@dataclass(frozen=True)
class Fix:
    """A fix as values: what it unsets and exports, installs (and holds where it is), reinstalls as it is, and
    removes. Rendered by `command`, for its `target`."""

    install: tuple[str, ...] = ()  # requirements not yet met, and those of the packages they would break
    hold: tuple[str, ...] = ()  # installed packages named at their version, so that the installer fits the rest
    reinstall: tuple[str, ...] = ()  # exact pins whose files are installed again, nothing else moved
    uninstall: tuple[str, ...] = ()  # distributions to remove
    # what an interrupted installer left that no installer removes (pip's `~` stashes, a dist-info without RECORD),
    # absolute paths in the environment, deleted before the installs
    delete: tuple[str, ...] = ()
    unset: tuple[str, ...] = ()  # environment variables to unset
    export: tuple[tuple[str, str], ...] = ()  # environment variables to set (for this shell: said in the detail)
    target: Target = field(default_factory=Target)
    saved: str = ""  # the command a saved report printed, read back as it was
    # what a line writes instead of an install of the same distribution, over a range in a file: the releases that
    # fail excluded ("jaxlib!=0.10.2"), which a library's metadata or a `~=` range can take (Target.pinned)
    excluding: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.install or self.reinstall or self.uninstall or self.delete or self.unset or self.export or self.saved
        )

    @property
    def command(self) -> str:
        """One shell line: the variables first (a PYTHONPATH copy would otherwise be what the installer sees),
        then the installs; "" when there is nothing to do."""
        if self.saved:
            return self.saved
        if self.target.tool == "lines":
            return _lines(self)
        parts = [f"unset {' '.join(self.unset)}"] if self.unset else []
        parts += [f"export {name}={shlex.quote(value)}" for name, value in self.export]
        if self.delete:
            parts.append(" ".join(["rm", "-rf", "--", *_quoted(self.delete)]))
        if self.uninstall:
            parts += self.target.removals(self.uninstall)
        if self.install:
            parts += self.target.commands(self.install, hold=[h for h in self.hold if h not in self.install])
        if self.reinstall:
            parts += self.target.commands(self.reinstall, ["--force-reinstall", "--no-deps"])
        return " && ".join(parts)

    def then(self, later: Fix, extras: ExtraModel | None = None) -> Fix:
        """This fix followed by one computed on the state it leaves: a requirement of the later one replaces this
        one's on the same distribution (its extras kept, but for one that `extras` says would install what the later
        one removes), a later variable replaces an earlier one."""
        uninstall = tuple(dict.fromkeys(n for n in (*self.uninstall, *later.uninstall)))
        delete = tuple(dict.fromkeys((*self.delete, *later.delete)))
        installed = {parse(r)[0] for r in later.install}
        install = tuple(
            _without_extras_of(r, later.uninstall, extras)  # jax[cuda12]==V would install the plugin removed after it
            for r in _merged(self.install, later.install)
            if parse(r)[0] not in later.uninstall
        )
        uninstall = tuple(n for n in uninstall if n not in installed)
        # a reinstall of what a later step installs or removes would undo the later step
        reinstall = tuple(
            r for r in _merged(self.reinstall, later.reinstall) if parse(r)[0] not in installed | set(later.uninstall)
        )
        moved = {parse(r)[0] for r in install} | set(uninstall)
        hold = tuple(h for h in _merged(self.hold, later.hold) if parse(h)[0] not in moved)
        exported = dict(self.export) | dict(later.export)
        unset = tuple(dict.fromkeys(n for n in (*self.unset, *later.unset) if n not in dict(later.export)))
        # a range an earlier step installed and a later one pins within (jax>=0.4.26, then jax!=0.10.2) still says
        # what fails: a file's line keeps both bounds
        ranged = tuple(r for r in self.install if parse(r)[0] in installed and _still_holds(r, later.install))
        return replace(
            later if later else self,  # the later one's target, unless it is empty (no target of its own)
            excluding=excluded((*self.excluding, *ranged), later.excluding),
            install=install,
            hold=hold,
            reinstall=reinstall,
            uninstall=uninstall,
            delete=delete,
            unset=unset,
            export=tuple((n, v) for n, v in exported.items() if n not in later.unset),
        )


def _lines(fix: Fix) -> str:
    """A plan's fix as what to write before installing: the variables as a shell sets them (where the program will
    run), then per input file the requirement lines it should hold (what is held named too, so that a resolution
    keeps it) and the distributions it should not name ("no NAME"). One line: "; " between its parts, ", " between
    a file's lines (str(Requirement) writes a specifier's commas without a space)."""
    parts = [f"unset {' '.join(fix.unset)}"] if fix.unset else []
    parts += [f"export {name}={shlex.quote(value)}" for name, value in fix.export]
    by_file: dict[str, list[str]] = {}
    held = [h for h in fix.hold if h not in fix.install] if fix.install else []
    pinned = fix.target.pinned
    least = {parse(r)[0]: r for r in fix.excluding}
    for requirement in dict.fromkeys((*fix.install, *held, *fix.reinstall)):
        name = parse(requirement)[0]
        if name in least and name not in fix.reinstall and pinned is not None and name not in pinned:
            requirement = _within(least[name], dict(fix.target.ranges).get(name, ""))  # exclude what fails
        elif name in least and name not in fix.reinstall and pinned is not None and not _exact(requirement):
            requirement = _within(least[name], requirement)  # a range into a pinned file: the same, extras kept
        by_file.setdefault(fix.target.file_of(name), []).append(requirement)
    for name in fix.uninstall:
        by_file.setdefault(fix.target.file_of(name), []).append(f"no {name}")
    parts += [f"in {file_named(file)}: {', '.join(lines)}" for file, lines in by_file.items()]
    return "; ".join(parts)


# the command line's name for standard input (`-r -`, as pip takes it), a plan's input file like any other; its
# readers name it so too (commands/plan/inputs/values.STDIN; tests/model/test_fix_locations.py holds them equal)
STDIN = "-"


def file_named(file: str) -> str:
    """An input file as a sentence names it: standard input in words (`in -:` told nobody where to write)."""
    return "the requirements read from standard input" if file == STDIN else file


def aimed(fix: Fix, target: Target) -> Fix:
    """The fix for another target (a plan's: the lines to write), its values unchanged; a saved command stays."""
    return replace(fix, target=target) if fix and not fix.saved else fix


# jax release, extras -> what jax[EXTRAS]==V installs beside jax (the rules' knowledge: rules/extras.implied)
ExtraModel = Callable[[str, set[str]], Mapping[str, str]]


def _without_extras_of(requirement: str, removed: Sequence[str], extras: ExtraModel | None) -> str:
    """The requirement without those of its extras that would install a distribution removed after it (what each
    extra installs at each release: `extras`, the rules' model); jaxlib, which every extra installs, does not count.
    Without a model every extra is kept."""
    from packaging.requirements import Requirement

    req = Requirement(requirement)
    gone = {name for name in removed if name != "jaxlib"}
    exact = [s.version for s in req.specifier if s.operator == "=="]
    version = exact[0] if exact else "9999"  # a range: what the extra installs at its newest release
    kept = {e for e in req.extras if extras is None or not set(extras(version, {e})) & gone}
    if kept == req.extras:
        return requirement
    req.extras = kept
    return str(req)


def _within(exclusion: str, written: str) -> str:
    """The line that keeps what the input wrote and excludes what fails: `jax~=0.10.0` -> `jax!=0.10.2,~=0.10.0`."""
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    _, spec = parse(exclusion)
    both = SpecifierSet(spec) & SpecifierSet(parse(written)[1] if _is_requirement(written) else written)
    line = Requirement(written) if _is_requirement(written) else Requirement(exclusion)
    extras = f"[{','.join(sorted(line.extras))}]" if line.extras else ""
    marker = f"; {line.marker}" if line.marker else ""
    return f"{parse(exclusion)[0]}{extras}{','.join(sorted(_least(both)))}{marker}"


def _is_requirement(text: str) -> bool:
    """A whole requirement (a name first), not a bare specifier (`~=0.10.0`)."""
    return bool(text) and (text[0].isalnum())


def _exact(requirement: str) -> bool:
    return any(op in parse(requirement)[1] for op in ("==", "==="))


def _still_holds(earlier: str, later: Sequence[str]) -> bool:
    """An earlier step's range that the later step's exact pin of the same distribution lies in (jax>=0.4.26, then
    jax==0.10.1): it still says what fails. One the later step moved out of (flax<0.8.5, then flax==0.10.6) does not."""
    from packaging.specifiers import SpecifierSet

    if _exact(earlier):
        return False
    name, spec = parse(earlier)
    pins = [p for p in later if parse(p)[0] == name]
    exact = [s.version for p in pins for s in SpecifierSet(parse(p)[1]) if s.operator == "=="]
    return bool(exact) and all(SpecifierSet(spec).contains(v, prereleases=True) for v in exact)


def excluded(earlier: Sequence[str], later: Sequence[str]) -> tuple[str, ...]:
    """Exclusions by distribution, both kept: what one step found failing still fails after the next."""
    from packaging.specifiers import SpecifierSet

    found: dict[str, SpecifierSet] = {}
    for text in (*earlier, *later):
        name, spec = parse(text)
        found[name] = found.get(name, SpecifierSet()) & SpecifierSet(spec)
    return tuple(f"{name}{','.join(sorted(_least(spec)))}" for name, spec in found.items())


def _least(spec: Iterable[Specifier]) -> list[str]:
    """A specifier set's clauses without those another implies: of several lower bounds the highest, and no
    exclusion of a release below it."""
    from packaging.version import InvalidVersion, Version

    clauses = list(spec)
    try:
        lows = [Version(s.version) for s in clauses if s.operator == ">="]
        floor = max(lows) if lows else None
        return [
            str(s)
            for s in clauses
            if floor is None
            or not (
                (s.operator == ">=" and Version(s.version) < floor)
                or (s.operator == "!=" and "*" not in s.version and Version(s.version) < floor)
            )
        ]
    except InvalidVersion:
        return [str(s) for s in clauses]


def _merged(earlier: Sequence[str], later: Sequence[str]) -> tuple[str, ...]:
    """Requirements by distribution, a later one replacing an earlier one, with the extras of both."""
    from packaging.requirements import Requirement

    found: dict[str, str] = {}
    for text in (*earlier, *later):
        name = parse(text)[0]
        if name in found:
            extras = Requirement(found[name]).extras | Requirement(text).extras
            req = Requirement(text)
            req.extras = extras
            text = str(req)
            del found[name]  # in the order of the later one
        found[name] = text
    return tuple(found.values())


def inside(prefix: str, path: str) -> bool:
    """Whether `path` (absolute, one printable line) lies inside the environment at `prefix`: what a fix may delete."""
    import os.path

    if not prefix or not os.path.isabs(path) or not path.isprintable():
        return False
    return os.path.realpath(path).startswith(os.path.realpath(prefix) + os.sep)


def stashes(prefix: str, paths: Iterable[object]) -> tuple[str, ...]:
    """Of the paths an interpreter said, pip's stashes (`~axlib-0.10.2.dist-info`) inside its environment."""
    import os.path

    return tuple(p for p in paths if isinstance(p, str) and os.path.basename(p).startswith("~") and inside(prefix, p))


def combined(fixes: Sequence[Fix], extras: ExtraModel | None = None) -> Fix:
    """Fixes computed each on the state the ones before leave, as one: pasted in order, their commands do what it
    does."""
    found = Fix()
    for fix in fixes:
        found = found.then(fix, extras)
    return found


@dataclass(frozen=True)
class Step:
    """One finding's part of a plan: its fix, computed on the state the steps before it leave."""

    finding: str  # the id of the finding it fixes
    fix: Fix
    also: tuple[str, ...] = ()  # the findings with a fix of their own that this step fixes too (theirs is not run)


@dataclass(frozen=True)
class Plan:
    """A report's fixes as one plan (`judge/fixplan.py`): its steps in order and what stays wrong after them."""

    steps: tuple[Step, ...] = ()
    remaining: tuple[str, ...] = ()  # the ids of the failures no step fixes (no command, or no release that helps)
    loop: bool = False  # the known releases hold no state without a failure: the plan is the least bad one found
    # the warnings whose own fix the plan leaves out: it would move a package down (a warning never forces a
    # downgrade) or leave a failure; each finding still says its own fix
    declined: tuple[str, ...] = ()
    # (library, jax release): jax held at that release for a library no release of which works with a newer jax;
    # the other ways (the library from its repository, or without it) are said beside the plan
    held: tuple[tuple[str, str], ...] = ()
    # the distributions the user keeps (--keep) that a way out of what the plan leaves would have moved
    kept: tuple[str, ...] = ()
    fix: Fix = field(default_factory=Fix)  # every step's fix as one (`combined`): the steps' commands pasted in order

    def aimed(self, target: Target) -> Plan:
        """The same plan, each step's fix for another target (`aimed`)."""
        steps = tuple(replace(s, fix=aimed(s.fix, target)) for s in self.steps)
        return replace(self, steps=steps, fix=aimed(self.fix, target))

    def part(self, finding: str) -> Fix:
        """The finding's own part of the plan (empty where it has none)."""
        return next((s.fix for s in self.steps if s.finding == finding), Fix())

    def fixed_by(self, finding: str) -> str:
        """The finding whose step fixes this one too, where that is how the plan fixes it ("" otherwise)."""
        mine = any(s.finding == finding for s in self.steps)
        return "" if mine else next((s.finding for s in self.steps if finding in s.also), "")
