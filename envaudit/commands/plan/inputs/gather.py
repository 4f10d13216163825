"""A plan's inputs put together: what is installed for the target, where each requirement line stands, or one error.

Each input is read once; what it selects is then evaluated for the plan's target (`markers.Target`): for the Python
`--python` or a pip report gives, or, where none does, for every Python of `markers.PYTHONS` that the inputs'
requires-python admit, which must then agree on every audited distribution (else the plan asks for one).

A version is read, never guessed. A lock or a report resolves (uv.lock, pylock.toml, a pip report); a requirement
(a requirements file's line, a pyproject.toml's) states: pinned (`==`, or an exact `-c` constraint), it is the
version, and a resolution in the same plan must have that version (else it is older than its inputs); unpinned,
the version is the resolution's, which must meet it; unpinned with no resolution, the error says which command
makes one. What the plan evaluates is the audited stack (`evaluated`); a direct reference (`NAME @ URL`, a path,
`-e`) to an audited distribution must state its version in its wheel's file name; one to anything else is left out,
as is a direct reference that names no distribution (`-e .`: the project itself).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envaudit.commands.plan.inputs import (
    Kind,
    PlanError,
    Unresolved,
    conda,
    files,
    markers,
    pipreport,
    pixilock,
    poetrylock,
    pylock,
    pyproject,
    requirements,
    uvlock,
)
from envaudit.commands.plan.inputs.values import Declared, Resolved, Source
from envaudit.model.scope import SELF, canonicalize_name, is_relevant
from envaudit.model.versions import version_or_none

REPORT = "pip install --dry-run --ignore-installed --report report.json"  # a resolution, nothing installed


def evaluated(name: str) -> bool:
    """A distribution the plan evaluates: the audited stack (scope.py) but envaudit, which scope names so that a
    report records which envaudit wrote it, and whose version no rule reads (`pip freeze` says `envaudit @ file:...`
    of a local install of it)."""
    return is_relevant(name) and canonicalize_name(name) not in SELF


@dataclass(frozen=True)
class Request:
    inputs: tuple[tuple[Kind, str], ...]  # in the order the plan names them
    extras: tuple[str, ...] = ()
    all_extras: bool = False
    groups: tuple[str, ...] = ()
    python: str = ""  # --python: the Python the plan is of ("" where it names none)


@dataclass(frozen=True)
class Pin:
    version: str
    source: Source  # where the version was read
    extras: frozenset[str] = frozenset()  # a requirement's extras (jax[cuda12]: what they imply is plan.py's)


@dataclass(frozen=True)
class Gathered:
    pins: dict[str, Pin] = field(default_factory=dict)  # each audited distribution installed, by canonical name
    python: str = ""  # the Python the plan is of, where --python or a pip report says
    platform: dict[str, str] = field(default_factory=dict)  # a pip report's system and machine
    into: dict[str, str] = field(default_factory=dict)  # canonical name -> the input file its requirement is in
    default: str = ""  # where a requirement no input names goes: the first input's file
    requires: dict[str, list[str]] = field(default_factory=dict)  # facts.requires, where a pip report records them
    pinned: frozenset[str] = frozenset()  # the distributions a requirement or constraint line pins exactly (==)
    ranges: dict[str, str] = field(default_factory=dict)  # the others' specifiers as their lines write them
    admitted: tuple[str, ...] = ()  # the Pythons the inputs' requires-python admit, where one says (none: any)
    # where the inputs take an audited distribution from elsewhere than the package index (an index of their own,
    # links, a URL or a path): a build from the index would measure other files than theirs
    sources: tuple[str, ...] = ()
    direct: frozenset[str] = frozenset()  # what the inputs ask for by name (a requirement line, a lock's project
    # requirements, a pip report's requested), not what came in as a dependency: what a plan keeps where it can
    accelerator: tuple[str, str] = ("", "")  # what a conda jaxlib's build says: ("cuda", "12.0"), ("cpu", "")


Selector = Callable[[markers.Target], tuple[list[Declared], list[Resolved]]]


@dataclass(frozen=True)
class _Input:
    kind: Kind
    path: str
    into: str  # where its requirement lines are written
    select: Selector
    requires_python: tuple[tuple[str, Source], ...] = ()
    takes_choice: bool = False  # it has extras and dependency groups
    report: pipreport.Report | None = None  # a pip report: the plan is of its environment
    sources: tuple[str, ...] = ()  # where it takes every distribution from elsewhere than the package index
    extras: tuple[str, ...] = ()  # the extras selected of it, which a resolution of it must hold (`.[gpu]`)
    groups: tuple[str, ...] = ()  # the dependency groups selected of it, likewise


def gather(request: Request) -> Gathered:
    extras = frozenset(canonicalize_name(e) for e in request.extras)
    groups = frozenset(canonicalize_name(g) for g in request.groups)
    inputs = _loaded(request, extras, groups)
    if (extras or groups or request.all_extras) and not any(i.takes_choice for i in inputs):
        raise PlanError(
            "--extra, --all-extras and --group select from a pyproject.toml, uv.lock, pylock.toml or poetry.lock"
        )
    reports = [i.report for i in inputs if i.report is not None]
    if len(reports) > 1:
        raise PlanError("one --pip-report at a time: a report is of one environment")
    recorded = reports[0].environment if reports else {}
    python = request.python or recorded.get("python_full_version", "")
    requires = [r for i in inputs for r in i.requires_python]
    for spec, source in requires if python else ():
        if not markers.allows(spec, python, source):
            raise PlanError(f"{source}: requires-python {spec}, which Python {python} does not meet")
    pythons = (
        [python]
        if python
        else [p for p in markers.PYTHONS if all(markers.allows(spec, p, src) for spec, src in requires)]
    )
    if not pythons:
        raise PlanError(f"no Python {markers.PYTHONS[0]} to {markers.PYTHONS[-1]} meets requires-python: give --python")
    # a requirement no input names goes where the requirements are: the first requirements file or pyproject.toml
    default = next(
        (i.path for i in inputs if i.kind in ("requirements", "pyproject")), inputs[0].into if inputs else ""
    )
    outcomes: list[tuple[str, Gathered]] = []
    errors: list[PlanError] = []
    for candidate in pythons:
        try:
            outcomes.append((candidate, _evaluated(inputs, markers.target(candidate, recorded), default)))
        except PlanError as exc:  # without --python, a Python the inputs cannot install for is not the plan's
            errors.append(exc)
    if not outcomes or (python and errors):
        raise errors[0]
    # a Python whose stack has no jax where another's has it is outside what the inputs' markers install jax for
    # (`jax==0.4.30; python_version >= "3.10"`): not one of the plan's Pythons, nor one a message names
    with_jax = [(p, g) for p, g in outcomes if "jax" in g.pins]
    narrowed = bool(with_jax) and len(with_jax) < len(outcomes)
    outcomes = with_jax if narrowed else outcomes
    _agree(outcomes)
    chosen = outcomes[0][1]
    platform = pipreport.resolved(reports[0]).platform if reports else {}
    admitted = tuple(pythons) if requires and not python else ()
    if narrowed:  # the build takes a Python the inputs install jax for
        admitted = tuple(p for p, _ in outcomes)
    return Gathered(
        chosen.pins,
        python,
        platform,
        chosen.into,
        default,
        chosen.requires,
        chosen.pinned,
        chosen.ranges,
        admitted,
        sources=(*(s for i in inputs for s in i.sources), *chosen.sources),
        direct=chosen.direct,
        accelerator=chosen.accelerator,
    )


class DiffersByPython(PlanError):
    """Without --python, the inputs install another audited stack on another Python (a lock that forks by Python):
    `pythons` holds the first Python of each stack, for a caller that plans them one by one (`plan --each`)."""

    def __init__(self, message: str, pythons: tuple[str, ...]) -> None:
        super().__init__(message)
        self.pythons = pythons


def _agree(outcomes: Sequence[tuple[str, Gathered]]) -> None:
    """Without --python, every Python the inputs admit must give the same audited stack."""
    (first, base), *others = outcomes
    stacks: dict[tuple[tuple[str, str], ...], str] = {}
    for python, gathered in outcomes:
        stacks.setdefault(tuple(sorted((n, p.version) for n, p in gathered.pins.items())), python)
    for python, other in others:
        for name in sorted(base.pins.keys() | other.pins.keys()):
            a, b = base.pins.get(name), other.pins.get(name)
            if a is None or b is None or not same_release(a.version, b.version):
                source = (a or b or Pin("", Source(""))).source
                said = (
                    f"{a.version if a else 'not installed'} on Python {first} and {b.version if b else 'not installed'}"
                )
                which = " or ".join(f"--python {p}" for p in stacks.values())
                message = f"{source}: {name} is {said} on Python {python}: say which with {which}"
                raise DiffersByPython(message, tuple(stacks.values()))


def _loaded(request: Request, extras: frozenset[str], groups: frozenset[str]) -> list[_Input]:
    """Each input read once, as what it selects for a target (a uv.lock beside a pyproject.toml named too, once)."""
    found: list[_Input] = []
    locks: set[str] = set()
    for kind, path in request.inputs:
        if kind == "requirements":
            found.append(_requirements(path))
        elif kind == "poetry.lock":
            found.append(_poetry(path, request, extras, groups))
        elif kind == "pixi.lock":
            found.append(_pixi(path))
        elif kind == "conda":
            found.append(_conda_environment(path))
        elif kind == "json":
            found.append(_json(path, request))
        elif kind == "pyproject":
            item, lock = _pyproject(path, request, extras, groups)
            locks |= {os.path.realpath(lock)} if lock else set()
            found.append(item)
        elif kind == "uv.lock" and os.path.realpath(path) not in locks:
            locks.add(os.path.realpath(path))
            found.append(_uvlock(path, request, extras, groups))
        elif kind == "pylock":
            found.append(_pylock(path, request, extras, groups))
        elif kind == "pip-report":
            found.append(_report(path, request))
    return found


def _choice(have: Iterable[str], extras: frozenset[str], every: bool) -> frozenset[str]:
    """The extras selected: those named, or with --all-extras every one the input has."""
    return frozenset(canonicalize_name(e) for e in have) if every else extras


def _requirements(path: str) -> _Input:
    text = files.read_text(path, "a requirements file") if path != "-" else ""
    if text and conda.is_export(text):  # `conda list --export` or `--explicit`, named *.txt as conda's docs do
        resolved = conda.load_export(path, text)
        specs = ((spec, Source(path)),) if (spec := conda.selected_python(resolved.versions.items())) else ()
        return _Input("conda", path, "", lambda target: ([], [resolved]), specs, sources=_conda_sources(resolved))
    sources: list[str] = []
    lines = requirements.load(path, sources)

    def select(target: markers.Target) -> tuple[list[Declared], list[Resolved]]:
        return requirements.select(lines, target), []

    return _Input("requirements", path, path, select, sources=tuple(sources))


def _conda_sources(resolved: Resolved) -> tuple[str, ...]:
    return tuple(
        f"{resolved.at(n)}: {n} from {w}"
        for n, w in sorted(resolved.elsewhere.items())
        if evaluated(n) and n in resolved.versions
    )


def _json(path: str, request: Request) -> _Input:
    """A *.json input: `conda list --json` (an array), else pip's installation report."""
    document = files.read_json(path, "a pip report or `conda list --json`")
    if isinstance(document, list):
        resolved = conda.load_json(path, document)
        specs = ((spec, Source(path)),) if (spec := conda.selected_python(resolved.versions.items())) else ()
        return _Input("conda", path, "", lambda target: ([], [resolved]), specs)
    return _report(path, request)


def _conda_environment(path: str) -> _Input:
    """conda's environment.yml: its conda specs, then its pip: lines, as requirements (no resolution in it)."""
    environment = conda.load_environment(path)
    specs = declared_conda = conda.declared(environment)
    sources = (
        tuple(f"{d.source}: {d.name} from a conda channel" for d in declared_conda if d.name and evaluated(d.name))
        + environment.options
    )
    pip_lines = [requirements.Line(text, where, editable=text.startswith("-e")) for text, where in environment.pip]
    for i, line in enumerate(pip_lines):
        if line.editable:
            pip_lines[i] = requirements.Line(line.text.split(None, 1)[-1], line.source, editable=True)

    def select(target: markers.Target) -> tuple[list[Declared], list[Resolved]]:
        return [*specs, *requirements.select(pip_lines, target)], []

    python = conda.python(environment)
    requires = ((python, Source(path, section="dependencies python")),) if python else ()
    return _Input("conda", path, path, select, requires, sources=sources)


def _pixi(path: str) -> _Input:
    """pixi.lock: its default environment on the target's platform; its requirements are in pixi.toml (or the
    pyproject.toml's [tool.pixi]) beside it."""
    lock = pixilock.load(path)
    directory = os.path.dirname(path)
    into = next(
        (
            os.path.join(directory, n)
            for n in ("pixi.toml", "pyproject.toml")
            if os.path.isfile(os.path.join(directory, n))
        ),
        "",
    )

    def select(target: markers.Target) -> tuple[list[Declared], list[Resolved]]:
        resolved = pixilock.select(lock, target)
        return [], [
            Resolved(resolved.versions, resolved.source, into, elsewhere=resolved.elsewhere, builds=resolved.builds)
        ]

    return _Input("pixi.lock", path, into or f"the pixi manifest {path} was locked from", select)


def _poetry(path: str, request: Request, extras: frozenset[str], groups: frozenset[str]) -> _Input:
    """poetry.lock, with the pyproject.toml beside it: its requirements (where the lock's lines go, what the project
    asks for by name) and the content-hash poetry checks the lock against."""
    lock = poetrylock.load(path)
    beside = os.path.join(os.path.dirname(path), "pyproject.toml")
    document = poetrylock.read_pyproject(beside)
    if document is not None and not poetrylock.fresh(lock, document):
        raise PlanError(
            f"{path}: its content-hash is not {beside}'s: pyproject.toml changed since poetry.lock was made, and"
            " poetry refuses to install it; run `poetry lock`"
        )
    project = poetrylock.root(document) if document is not None else None
    chosen = frozenset(project.extras) if project is not None and request.all_extras else extras
    if project is not None and (missing := sorted(chosen - project.extras.keys())):
        raise PlanError(f"{beside}: no extra {missing[0]!r} (poetry: Extra [{missing[0]}] is not specified)")
    asked = poetrylock.direct(project, groups)
    requires: tuple[tuple[str, Source], ...] = ()
    python = (document or {}).get("project", {}).get("requires-python") if document else None
    if isinstance(python, str) and python:
        requires = ((python, Source(beside, section="[project] requires-python")),)

    def select(target: markers.Target) -> tuple[list[Declared], list[Resolved]]:
        versions = poetrylock.select(lock, target, project, extras=chosen, groups=groups)
        lines = {n: lock.lines.get((n, v), 0) for n, v in versions.items()}
        return [], [Resolved(versions, Source(path), beside if document is not None else "", lines=lines, direct=asked)]

    return _Input("poetry.lock", path, beside, select, requires, takes_choice=True)


def _report(path: str, request: Request) -> _Input:
    """A pip report: pip evaluated its markers, so it selects the same whatever the target."""
    report = pipreport.load(path)
    resolved = pipreport.resolved(report, request.python)

    def select(target: markers.Target) -> tuple[list[Declared], list[Resolved]]:
        return [], [resolved]

    return _Input("pip-report", path, f"the requirements {path} was resolved from", select, report=report)


def _pyproject(path: str, request: Request, extras: frozenset[str], groups: frozenset[str]) -> tuple[_Input, str]:
    """A pyproject.toml's requirements, resolved by the uv.lock beside it where there is one (and that lock's path)."""
    project = pyproject.load(path)
    beside = os.path.join(os.path.dirname(path), "uv.lock")
    lock = uvlock.load(beside) if os.path.isfile(beside) else None
    if project.dynamic_extras and lock is None and (extras or request.all_extras):
        raise PlanError(
            f"{path}: its optional-dependencies are dynamic (its build backend computes them) and no uv.lock is beside"
            " it: plan the requirements file an extra is made from, or a lock or a pip report of it"
        )
    chosen = _choice(project.optional, extras, request.all_extras)
    pyproject.check_choice(project, chosen, groups)
    specs = [(project.requires_python, Source(path, section="[project] requires-python"))]
    specs += [(lock.requires_python, Source(lock.path))] if lock else []

    def select(target: markers.Target) -> tuple[list[Declared], list[Resolved]]:
        declared = pyproject.select(project, target, extras=chosen, groups=groups)
        if lock is None:
            if project.dynamic:
                raise PlanError(
                    f"{project.path}: its dependencies are dynamic (its build backend computes them) and no uv.lock"
                    " is beside it: plan a lock or a pip report of it"
                )
            return declared, []
        versions = uvlock.select(lock, target, name=project.name, extras=chosen, groups=groups)
        lines = {n: lock.line(n, v) for n, v in versions.items()}
        return declared, [Resolved(versions, Source(lock.path), project.path, lines=lines)]

    specs = [s for s in specs if s[0]]
    item = _Input(
        "pyproject", path, path, select, tuple(specs), True, extras=tuple(sorted(chosen)), groups=tuple(sorted(groups))
    )
    return item, beside if lock else ""


def _uvlock(path: str, request: Request, extras: frozenset[str], groups: frozenset[str]) -> _Input:
    """A uv.lock named alone: its project's requirements are in the pyproject.toml beside it (uv makes it so)."""
    lock = uvlock.load(path)
    chosen = _choice(uvlock.choices(uvlock.project(lock))[0], extras, request.all_extras)
    into = os.path.join(os.path.dirname(path), "pyproject.toml")

    def select(target: markers.Target) -> tuple[list[Declared], list[Resolved]]:
        versions = uvlock.select(lock, target, extras=chosen, groups=groups)
        lines = {n: lock.line(n, v) for n, v in versions.items()}
        asked = uvlock.direct(lock, extras=chosen, groups=groups)
        elsewhere = uvlock.elsewhere(lock, versions)
        return [], [Resolved(versions, Source(path), into, lines=lines, direct=asked, elsewhere=elsewhere)]

    specs = ((lock.requires_python, Source(path)),) if lock.requires_python else ()
    return _Input("uv.lock", path, into, select, specs, takes_choice=True)


def _pylock(path: str, request: Request, extras: frozenset[str], groups: frozenset[str]) -> _Input:
    """A pylock.toml: what made it (a pyproject.toml, requirements) is not named in it, so its lines go there."""
    lock = pylock.load(path)
    chosen = _choice(lock.extras, extras, request.all_extras)
    into = f"the requirements {path} was made from"

    def select(target: markers.Target) -> tuple[list[Declared], list[Resolved]]:
        versions = pylock.select(lock, target, extras=chosen, groups=groups)
        lines = {n: lock.line(n, v) for n, v in versions.items()}
        return [], [Resolved(versions, Source(path), "", lines=lines)]

    specs = ((lock.requires_python, Source(path)),) if lock.requires_python else ()
    return _Input("pylock", path, into, select, specs, takes_choice=True)


def _evaluated(inputs: list[_Input], target: markers.Target, default: str) -> Gathered:
    """The inputs' selections for one target, merged: each audited distribution's version and where it was read,
    and the file its requirement line is in (`default` where only a resolution that names no file has it)."""
    declared: list[tuple[Declared, _Input]] = []
    resolved: dict[str, tuple[str, Resolved]] = {}
    requires: dict[str, list[str]] = {}
    direct: set[str] = set()
    builds: dict[str, str] = {}
    for item in inputs:
        lines, resolutions = item.select(target)
        declared += [(d, item) for d in lines]
        builds |= {d.name: d.build for d in lines if d.build}
        for resolution in resolutions:
            requires |= resolution.requires
            direct |= resolution.direct
            builds |= resolution.builds
            for name, version in resolution.versions.items():
                if name in resolved and not same_release(resolved[name][0], version):
                    first, where = resolved[name]
                    raise PlanError(f"{name} is {first} in {where.source} and {version} in {resolution.source}")
                resolved.setdefault(name, (version, resolution))
    pins: dict[str, Pin] = {}
    into: dict[str, str] = {}
    for name, (version, resolution) in sorted(resolved.items()):
        if evaluated(name) and not version:
            raise PlanError(f"{resolution.source}: {name} has no version (a source tree): a plan needs its release")
        if evaluated(name):
            _a_version(name, version, resolution.at(name))
            pins[name], into[name] = Pin(version, resolution.at(name)), resolution.into or default
    constraints = [d for d, _ in declared if d.constraint]
    stated: dict[str, Pin] = {}  # what the requirements pin, each distribution once
    for line, origin in declared:
        if line.constraint or not line.name or not evaluated(line.name):
            continue
        pin = _version(line, origin, constraints, resolved)
        _a_version(line.name, pin.version, pin.source)
        if line.name in stated and not same_release(stated[line.name].version, pin.version):
            earlier = stated[line.name]
            raise PlanError(
                f"{line.name} is pinned twice, to {earlier.version} ({earlier.source}) and {pin.version} ({pin.source})"
            )
        before = pins.get(line.name)
        pins[line.name] = stated[line.name] = Pin(
            pin.version, pin.source, line.extras | (before.extras if before else frozenset())
        )
        # the line goes where its version is decided: an exact constraint's file, else the requirement's own
        resolved_here = line.name in resolved and pin.source == resolved[line.name][1].at(line.name)
        into[line.name] = line.source.file if resolved_here else pin.source.file
    for constraint in constraints:
        found = pins.get(constraint.name)
        if found and constraint.specifier and not _meets(found.version, constraint.specifier, constraint.source):
            raise PlanError(
                f"{found.source}: {constraint.name} {found.version} does not meet the constraint {constraint.text}"
                f" ({constraint.source})"
            )
    pinned = frozenset(d.name for d, _ in declared if d.name and (d.direct or _exact(d.specifier)))
    ranges = {d.name: d.specifier for d, _ in declared if d.name and d.name not in pinned and not d.constraint}
    direct |= {d.name for d, _ in declared if d.name and not d.constraint}
    elsewhere = tuple(
        f"{d.source}: {d.name} from a URL or a path" for d, _ in declared if d.direct and evaluated(d.name)
    )
    elsewhere += tuple(
        f"{by.at(name)}: {name} from {by.elsewhere[name]}"
        for name, (_, by) in sorted(resolved.items())
        if evaluated(name) and name in by.elsewhere
    )
    return Gathered(
        pins,
        into=into,
        requires=requires,
        pinned=pinned,
        ranges=ranges,
        direct=frozenset(direct),
        sources=elsewhere,
        accelerator=conda.accelerator(builds.get("jaxlib", "")) or ("", ""),
    )


def _version(
    line: Declared, origin: _Input, constraints: list[Declared], resolved: dict[str, tuple[str, Resolved]]
) -> Pin:
    """The version a requirement gets: its own pin, an exact constraint's, or the resolution's (which must meet it)."""
    if line.direct and not line.version:
        raise Unresolved(
            f"{line.source}: {line.text} is a direct reference that states no version: pin {line.name}==X.Y.Z,"
            " or plan a lock or a pip report of it"
        )
    exact = line.version if line.direct else _exact(line.specifier)
    source = line.source
    if not exact:
        for constraint in constraints:
            if constraint.name == line.name and _exact(constraint.specifier):
                exact, source = _exact(constraint.specifier), constraint.source
    if line.name in resolved:
        version, resolution = resolved[line.name]
        wrong = not same_release(exact, version) if exact else not _meets(version, line.specifier, line.source)
        if wrong:
            again = " (`uv lock`)" if resolution.source.file.endswith("uv.lock") else ""
            raise PlanError(
                f"{line.source}: {line.text}, but {resolution.source} has {line.name} {version}: it is older than"
                f" what it resolves; make it again{again}"
            )
        return Pin(version, source if exact else resolution.at(line.name))
    if exact:
        return Pin(exact, source)
    raise Unresolved(
        f"{line.source}: {line.text} is not pinned; a plan reads a resolution, never guesses one: {_how(origin)}"
    )


def _how(origin: _Input) -> str:
    """The commands that make a resolution of this input that a plan reads: of what the plan selects of it (its
    extras and groups), else the resolution lacks what the plan asks for and the plan comes back here."""
    path = shlex.quote(origin.path)
    if origin.kind == "requirements":
        return f"`{REPORT} -r {path}`, then `envaudit plan -r {path} --pip-report report.json`"
    if origin.kind == "conda":
        return (
            "create the environment, then `conda list --export > conda-list.txt` (NAME=VERSION=BUILD lines) and"
            " `envaudit plan conda-list.txt`"
        )
    directory = os.path.dirname(origin.path) or "."
    if not directory.startswith((".", "/")):  # pip reads a bare word as a project's name on the index
        directory = f"./{directory}"
    project = directory + (f"[{','.join(origin.extras)}]" if origin.extras else "")
    # pip >= 25.1 installs a dependency group with --group PATH:GROUP (pip#12963; `pip install --help`)
    groups = "".join(f" --group {shlex.quote(f'{origin.path}:{g}')}" for g in origin.groups)
    chosen = "".join(f" --extra {e}" for e in origin.extras) + "".join(f" --group {g}" for g in origin.groups)
    return (
        f"`uv lock` beside it (`envaudit plan {path}{chosen}` then reads uv.lock), or"
        f" `{REPORT}{groups} {shlex.quote(project)}`, then `envaudit plan {path}{chosen} --pip-report report.json`"
    )


def _exact(specifier: str) -> str:
    """The version a specifier pins exactly (`==V` or `===V`, no wildcard), "" otherwise."""
    try:
        specs = list(SpecifierSet(specifier))
    except InvalidSpecifier:
        return ""
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return ""


def _a_version(name: str, version: str, where: Source) -> None:
    """A pinned version PEP 440 reads (an installer's resolver reads it, or refuses the file), else one line."""
    if version and version_or_none(version) is None:
        shown = version if len(version) <= 40 else f"{version[:20]}...({len(version)} characters)"
        raise PlanError(f"{where}: {name} {shown} is not a version an installer reads (PEP 440)")


def same_release(a: str, b: str) -> bool:
    """The same release as PEP 440 compares them (0.4.30.0 is 0.4.30)."""
    try:
        return Version(a) == Version(b)
    except (InvalidVersion, ValueError):  # ValueError: more digits than Python reads as an integer
        return a == b


def _meets(version: str, specifier: str, where: Source) -> bool:
    """Whether a version meets a specifier ("" meets any)."""
    try:
        return SpecifierSet(specifier).contains(version, prereleases=True)
    except InvalidSpecifier:
        raise PlanError(f"{where}: {specifier[:60]!r} is not a version specifier") from None
    except InvalidVersion:
        return False
    except ValueError:  # a version of more digits than Python reads as an integer (4,300)
        raise PlanError(f"{where}: a version in {specifier[:40]!r}... has thousands of digits") from None
