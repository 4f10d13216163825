"""`envaudit plan`: evaluate pinned requirements before anything is installed, without network.

The plan is turned into an ordinary facts snapshot (`origin: plan`), so the same rules evaluate a plan and a
live machine. What pins imply is derived, not guessed: `jax[cuda12]==V` means jaxlib V on CUDA 12; a jaxlib local
label (`+cuda102`) says its CUDA. What the plan does not say is jax's default, as a fresh process has it: x64 off,
the default matmul precision, no environment variable set but those given with `--env` (which set x64 and the
precision as jax reads them). Anything that cannot be evaluated exactly is a PlanError: exit 2, one line.

The pins are `==` arguments and what the input files say (`inputs/`): requirements files (`-r`, or a `*.txt`
argument), a pyproject.toml (with the uv.lock beside it, where there is one), a uv.lock, a pylock.toml and
pip's installation report (`--pip-report`), which resolve what is not pinned. A plan's fix is written as the
requirement lines to change (`fixes.Target` "lines"), in the input files that decide each version or in the
plan's arguments, not as an install into an environment that does not exist yet. `--each` plans each file alone
(what pre-commit passes), and says of a stack without jax that it has none rather than a verdict. Inputs that hold
no resolution of an audited stack (`Unresolved`: nothing audited, or unpinned requirements with no lock) are exit 2
with the command that makes one, or with `--skip-unresolved` (the hook's) one line and no failure.

Where uv is here and the build is not turned off, the planned stack is also built in a throwaway environment and
its imports measured, then the state its fix leaves (`building.py`): the report says what it measured beside what
the tables know, and whether the fix plan is proven.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from envaudit.commands import options
from envaudit.commands.options import Command, Judging, Output
from envaudit.commands.plan.inputs import Kind, PlanError, Unresolved, kind
from envaudit.model import fixes
from envaudit.model.exitcodes import Exit
from envaudit.model.facts import GPU, Facts, JaxFacts, NvidiaFacts, PlatformFacts, PythonFacts
from envaudit.model.redact import select_env
from envaudit.model.report import Finding, Location, Report
from envaudit.model.scope import canonicalize_name, is_relevant
from envaudit.rules.jax_env import env_flag

if TYPE_CHECKING:
    from envaudit.commands.plan.inputs.gather import Gathered

PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
ARGUMENTS = "the plan's arguments"  # where the fix of a distribution pinned by an argument is written

__all__ = ["COMMAND", "PlanError", "PlanOptions", "Planned", "add_arguments", "pin", "planned", "separately"]


@dataclass(frozen=True)
class PlanOptions:
    """What a plan states: requirements and input files, the machine it will run on, how its report is written."""

    requirements: tuple[str, ...] = ()  # pinned requirements and input files, as given
    requirement_files: tuple[str, ...] = ()  # -r
    pip_report: str | None = None
    extra: tuple[str, ...] = ()
    all_extras: bool = False
    group: tuple[str, ...] = ()
    driver: str | None = None
    cuda: str | None = None
    cudnn: str | None = None
    compute_capability: str | None = None
    gpus: str | None = None
    platform: str | None = None
    x64: bool = False
    os: str | None = None
    machine: str | None = None
    python: str | None = None
    env: tuple[str, ...] = ()
    each: bool = False
    skip_unresolved: bool = False  # a file with no resolution of an audited stack: a note, and no failure
    no_build: bool = False  # answer from the tables alone: build nothing here
    build_timeout: float = 240.0  # seconds for the builds of one plan together (collect/build.TIMEOUT_S)
    output: Output = field(default_factory=Output)
    judging: Judging = field(default_factory=Judging)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "requirements",
        nargs="*",
        metavar="REQUIREMENT|FILE",
        help="pinned requirements (jax==0.4.25), or files: requirements *.txt; pyproject.toml ([project] dependencies,"
        " and the uv.lock beside it where there is one, which resolves what they leave unpinned); uv.lock;"
        " pylock.toml or pylock.NAME.toml. A plan of files is fixed by the requirement lines to write in them",
    )
    p.add_argument(
        "-r",
        "--requirement",
        dest="requirement_files",
        action="append",
        type=options.path_text,
        default=[],
        metavar="FILE",
        help="a requirements file, as pip reads it (its -r/-c includes, markers, --hash; repeatable; - reads stdin)",
    )
    p.add_argument(
        "--pip-report",
        metavar="FILE",
        type=options.path_text,
        help="pip's installation report (pip install --dry-run --ignore-installed --report FILE ...): what it"
        " resolves, for its environment's Python and platform",
    )
    p.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="NAME",
        help="an extra of a pyproject.toml, uv.lock or pylock.toml to install too (repeatable; default: none)",
    )
    p.add_argument("--all-extras", action="store_true", help="every extra of those files")
    p.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="NAME",
        help="a dependency group (PEP 735) to install too (repeatable; default: none, and a pylock.toml's"
        " default-groups; uv sync adds dev unless told not to: name it here)",
    )
    p.add_argument("--driver", help="NVIDIA driver version, e.g. 535.104.05")
    p.add_argument("--cuda", help="CUDA toolkit version the jax build uses, e.g. 12.4")
    p.add_argument("--cudnn", help="cuDNN version, e.g. 9.1.0")
    p.add_argument("--compute-capability", dest="compute_capability", help="GPU compute capability X.Y")
    p.add_argument("--gpus", help="number of GPUs")
    p.add_argument("--platform", choices=PLATFORMS, help="platform jax will run on")
    p.add_argument("--x64", action="store_true", help="jax_enable_x64 will be on")
    p.add_argument(
        "--os",
        metavar="SYSTEM",
        help="the system it will run on, as Python's platform.system() names it (Linux, Darwin, Windows; default: a"
        " pip report's, else this machine's)",
    )
    p.add_argument(
        "--machine",
        metavar="ARCH",
        help="the machine it will run on, as platform.machine() names it (x86_64, aarch64, arm64, AMD64; default: a"
        " pip report's, else this machine's)",
    )
    p.add_argument(
        "--python",
        metavar="X.Y",
        help="the Python version it will run on, e.g. 3.12 (default: a pip report's; markers are evaluated for it on"
        " Linux x86_64)",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable it will run with (repeatable); none is set otherwise",
    )
    p.add_argument(
        "--each",
        action="store_true",
        help="plan each input file as an environment of its own, one report after another under its name (pre-commit"
        " passes every changed file at once); a pyproject.toml and the uv.lock beside it are one plan. The exit code"
        " is the worst plan's",
    )
    p.add_argument(
        "--skip-unresolved",
        action="store_true",
        help="a file that holds no resolution of an audited stack (nothing envaudit audits in it, or requirements"
        " unpinned with no lock beside them) is not planned: one line says so, and it does not fail (the pre-commit"
        " hook's: a commit hook cannot make a resolution). Without it, such a file is exit 2 with the command that"
        " makes one. A file that cannot be read is exit 2 either way",
    )
    options.add_build(
        p,
        "answer from the tables alone: do not build the stack here (by default, where uv is here, the stack is"
        " built in a throwaway environment, its CPU twin for an accelerator stack, and its imports measured; then"
        " the state the fix leaves, to prove it; ENVAUDIT_NO_BUILD=1 does the same)",
        "seconds for building and measuring the plan's stack and its fixed state, together (default: 240; a"
        " warm uv cache builds one in seconds)",
    )
    options.add_output(p)


def parse(parsed: argparse.Namespace) -> PlanOptions:
    return PlanOptions(
        requirements=tuple(parsed.requirements),
        requirement_files=tuple(parsed.requirement_files),
        pip_report=parsed.pip_report,
        extra=tuple(parsed.extra),
        all_extras=parsed.all_extras,
        group=tuple(parsed.group),
        driver=parsed.driver,
        cuda=parsed.cuda,
        cudnn=parsed.cudnn,
        compute_capability=parsed.compute_capability,
        gpus=parsed.gpus,
        platform=parsed.platform,
        x64=parsed.x64,
        os=parsed.os,
        machine=parsed.machine,
        python=parsed.python,
        env=tuple(parsed.env),
        each=parsed.each,
        skip_unresolved=parsed.skip_unresolved,
        no_build=parsed.no_build,
        build_timeout=parsed.build_timeout,
        output=options.output(parsed),
        judging=options.judging(parsed),
    )


def run(o: PlanOptions) -> int:
    from envaudit.commands._shared import emit

    if o.each:
        return _each(o)
    try:
        made = planned(o)
    except Unresolved as exc:
        if not o.skip_unresolved:
            raise
        return _unresolved(exc)
    return emit(report(o, made), o.output, o.judging)


def _said(exc: Exception) -> str:
    """An error as one line, as the command line's own errors (a file name may hold a newline)."""
    from envaudit.formats.summary import clean
    from envaudit.model.redact import scrub_error

    return clean(scrub_error(str(exc)))


def _unresolved(exc: Unresolved) -> int:
    """--skip-unresolved: what was not planned, and why, as one line on standard output; no failure."""
    sys.stdout.write(f"not planned: {_said(exc)}\n")
    sys.stdout.flush()
    return Exit.OK


def _jaxless(made: Planned) -> bool:
    """A stack without jax (a docs or tooling requirements file): its tables' answer is about NumPy and the like,
    never a verdict on jax, so --each says so instead of an OK."""
    return "jax" not in made.facts.packages


def report(o: PlanOptions, made: Planned) -> Report:
    """The plan's report: the tables' answer, with what building its stack here measured where it is built."""
    from envaudit.commands.plan import building

    made_report = building.report(
        made.facts,
        target=made.target,
        ignore=o.judging.ignored,
        keep=o.judging.keep,
        no_build=o.no_build,
        timeout=o.build_timeout,
        quiet=o.output.quiet,
        admitted=made.pythons,
        sources=made.sources,
    )
    where = dict(made.where)
    return replace(made_report, findings=tuple(located(f, where) for f in made_report.findings))


def located(finding: Finding, where: Mapping[str, Location]) -> Finding:
    """The finding with where its cause is written: the line of the first distribution it is about that its fix
    moves, else of the first it is about, else of the first its fix moves, that an input file writes (none where the
    plan's arguments name them all)."""
    fix = finding.remedy
    moved = [fixes.named(r) for r in (*fix.install, *fix.reinstall)] + list(fix.uninstall)
    order = [n for n in finding.about if n in moved] + list(finding.about) + moved
    found = next((where[n] for n in order if n in where), None)
    return replace(finding, location=found) if found is not None else finding


def _each(o: PlanOptions) -> int:
    """--each: each file's report under a line naming it; a file that cannot be planned is its one line on stderr
    (exit 2), and the files after it are still planned. The exit code is the worst plan's."""
    from envaudit.commands._shared import emit
    from envaudit.commands.plan.inputs.gather import DiffersByPython  # lazily: it loads packaging
    from envaudit.formats.summary import clean

    code: int = Exit.OK
    todo = [(name, one, "") for name, one in separately(o)]
    number = 0
    while todo:
        name, one, on = todo.pop(0)
        gap = "\n" if number else ""
        number += 1
        sys.stdout.write(f"{gap}plan of {clean(name)}{on}:\n\n")  # a file name can hold a terminal's escapes
        sys.stdout.flush()  # before an error line on stderr, which pre-commit shows in the same stream
        try:
            made = planned(one)
        except DiffersByPython as exc:  # a lock that forks by Python: each of its stacks is a plan of its own
            if one.python is None:
                sys.stdout.write(f"its stack differs by Python: planned for Python {', '.join(exc.pythons)}\n")
                todo[:0] = [(name, replace(one, python=p), f" (Python {p})") for p in exc.pythons]
                continue
            print(f"envaudit: error: {_said(exc)}", file=sys.stderr, flush=True)
            code = max(code, Exit.USAGE)
            continue
        except Unresolved as exc:
            if one.skip_unresolved:
                code = max(code, _unresolved(exc))
                continue
            print(f"envaudit: error: {_said(exc)}", file=sys.stderr, flush=True)
            code = max(code, Exit.USAGE)
            continue
        except PlanError as exc:
            print(f"envaudit: error: {_said(exc)}", file=sys.stderr, flush=True)
            code = max(code, Exit.USAGE)
            continue
        made_report = report(one, made)
        if _jaxless(made) and not made_report.findings:
            stack = ", ".join(f"{n} {v}" for n, v in made.facts.packages.items())
            sys.stdout.write(f"no jax in it ({stack} only): nothing of jax's to audit, so no verdict\n")
            sys.stdout.flush()
            continue
        code = max(code, emit(made_report, one.output, one.judging))
        sys.stdout.flush()
    return code


def _version(flag: str, text: str | None) -> str | None:
    if text is None:
        return None
    try:
        if not text.isascii():  # Python's int() reads Arabic-Indic digits, which no real version has
            raise InvalidVersion(text)
        Version(text)
    except (InvalidVersion, ValueError):
        raise PlanError(f"{flag} {text!r} is not a version number") from None
    return text


def pin(text: str) -> tuple[str, str, set[str]] | None:
    """(normalized name, exact version, extras) of a requirement pinned with ==; None for a direct reference
    (`NAME @ URL`, what `pip freeze` says of a local install) to a distribution the plan does not evaluate."""
    from packaging.requirements import InvalidRequirement, Requirement  # lazily: costly, and only plan needs it

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise PlanError(f"cannot parse requirement {text!r}: {str(exc).splitlines()[0]}") from None
    if req.url:
        from envaudit.commands.plan.inputs.gather import evaluated
        from envaudit.commands.plan.inputs.requirements import wheel_version

        if not evaluated(req.name):
            return None
        if not (version := wheel_version(req.url)):
            raise PlanError(f"{text!r} is a direct reference that states no version: write {req.name}==X.Y.Z")
        return canonicalize_name(req.name), version, {e.lower() for e in req.extras}
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
        raise PlanError(f"{text!r} is not pinned: plan evaluates exact versions (write {req.name}==X.Y.Z)")
    try:
        if not specs[0].version.isascii():
            raise InvalidVersion(specs[0].version)
        Version(specs[0].version)
    except (InvalidVersion, ValueError):
        raise PlanError(f"{text!r}: {specs[0].version!r} is not a version number") from None
    return canonicalize_name(req.name), specs[0].version, {e.lower() for e in req.extras}


@dataclass(frozen=True)
class Planned:
    """A plan's facts, and the target its fix is written for: the requirement lines to write, in the input files
    (or the arguments) that decide each version."""

    facts: Facts
    target: fixes.Target | None = None
    where: tuple[tuple[str, Location], ...] = ()  # each distribution an input file writes: where its version is
    pythons: tuple[str, ...] = ()  # the Pythons the project admits (its requires-python), where it says
    sources: tuple[str, ...] = ()  # where the inputs take an audited distribution from elsewhere than the index


def planned(o: PlanOptions) -> Planned:
    """The facts the arguments and input files state, and where their fix is written."""
    texts, inputs = _classified(o)
    if not texts and not inputs:
        raise PlanError("nothing to plan: give pinned requirements, input files, -r FILE or --pip-report FILE")
    python = _python(o.python) if o.python else ""
    gathered = _gathered(o, inputs, python) if inputs else None
    packages: dict[str, str] = {}
    env = _env(o.env)
    precision = env.get("JAX_DEFAULT_MATMUL_PRECISION")
    jax: JaxFacts = {
        "status": "unknown",
        "x64": bool(o.x64 or env_flag(env.get("JAX_ENABLE_X64"))),
        "default_matmul_precision": precision.lower() if precision else None,
    }
    implied: dict[str, str] = {}
    asked: dict[str, list[str]] = {}  # the extras a distribution but jax is asked with
    for text in texts:
        if (pinned := pin(text)) is None:
            continue
        name, version, extras = pinned
        if name in packages and packages[name] != version:
            raise PlanError(f"{name} is pinned twice, to {packages[name]} and {version}")
        packages[name] = version
        if name == "jax":
            _jax_extras(version, extras, implied, jax)
        elif extras:
            asked[name] = sorted({*asked.get(name, []), *extras})
    from_arguments = set(packages)
    for name, found in (gathered.pins if gathered else {}).items():
        if name in packages and not _same(packages[name], found.version):
            raise PlanError(
                f"{name} is pinned twice, to {packages[name]} ({ARGUMENTS}) and {found.version} ({found.source})"
            )
        packages.setdefault(name, found.version)
        if name == "jax" and found.extras:
            _jax_extras(found.version, set(found.extras), implied, jax)
        elif found.extras:
            asked[name] = sorted({*asked.get(name, []), *(canonicalize_name(e) for e in found.extras)})
    for name, version in implied.items():  # after every explicit pin, so that argument order does not matter
        held = packages.setdefault(name, version)
        if held != version and not held.startswith(f"{version}."):  # libtpu==0.0.42.* holds 0.0.42.1
            raise PlanError(f"{name} is pinned to {held}, but the jax extra implies {version}")
    if not any(is_relevant(name) for name in packages):
        paths = [path for _, path in inputs]
        named = f"{', '.join(paths)} {'names' if len(paths) == 1 else 'name'}" if paths else "the arguments name"
        raise Unresolved(
            f"nothing to plan: {named} no release of jax, jaxlib, a jax plugin or a library envaudit audits"
            " (a plan needs them pinned, or resolved by a lock or a pip report)"
        )
    accelerator, cuda_built = gathered.accelerator if gathered else ("", "")
    if accelerator and "platform" not in jax:  # a conda jaxlib's build string: conda-forge's CUDA or CPU build
        jax["platform"] = accelerator
        if cuda_built:
            jax.setdefault("cuda_version", cuda_built)
    if o.platform:
        jax["platform"] = o.platform
    elif "platform" not in jax:  # plugin lines say what jax[cuda12] says: one stack, one platform
        from envaudit.rules.extras import of_stack

        stated = of_stack(packages)
        if stated.platform is not None:
            jax["platform"] = stated.platform
        if stated.cuda_version is not None:
            jax.setdefault("cuda_version", stated.cuda_version)
    if cuda := _version("--cuda", o.cuda):
        jax["cuda_version"] = cuda
    if cudnn := _version("--cudnn", o.cudnn):
        jax["cudnn_version"] = cudnn
    version = python or (gathered.python if gathered else "")
    facts = Facts(
        packages=dict(sorted(packages.items())),
        python=PythonFacts(version=version) if version else PythonFacts(),
        platform=_platform(o, gathered.platform if gathered else {}),
        jax=jax,
        nvidia=_nvidia(o),
        env=env,
        requires=gathered.requires if gathered else {},
        origin="plan",
        extras=asked,
        # what the user asks for by name, which a plan keeps where it can: the arguments, the inputs' direct ones
        requested=sorted(n for n in from_arguments | (gathered.direct if gathered else set()) if n in packages),
    )
    if gathered is None or not gathered.requires:  # what the releases declare, where no resolution says it
        from envaudit.rules import declared  # lazily: it loads the tables

        facts = replace(facts, requires=declared.requires(facts, facts.packages))
    if gathered is None:  # arguments only: the fix is what to pin instead, as for files (no environment exists)
        return Planned(facts, fixes.Target(tool="lines", into=ARGUMENTS))
    where = {n: Location(p.source.file, p.source.line) for n, p in gathered.pins.items() if n not in from_arguments}
    if "jax" in where:  # what a file's jax[EXTRA] implies is written on jax's line
        where |= {n: where["jax"] for n in implied if n not in where and n not in from_arguments}
    written = dict(gathered.into)
    for name in packages.keys() - written.keys():  # an argument's, or what a file's jax[EXTRA] implies
        written[name] = ARGUMENTS if name in from_arguments else written.get("jax", gathered.default)
    exact = gathered.pinned | from_arguments
    ranges = tuple(sorted((n, spec) for n, spec in gathered.ranges.items() if n not in exact))
    target = fixes.Target(
        tool="lines", written=tuple(sorted(written.items())), into=gathered.default, pinned=exact, ranges=ranges
    )
    return Planned(facts, target, tuple(sorted(where.items())), gathered.admitted, gathered.sources)


EACH_FORMATS = ("text", "markdown", "github")  # one report after another stays readable, as one JSON document would not


def separately(o: PlanOptions) -> list[tuple[str, PlanOptions]]:
    """--each: the arguments of one plan per input file, with its name, in the order given. Each file is the
    environment it installs (requirements-cpu.txt and requirements-cuda.txt pin jax differently, and are both
    right); a file named twice is planned once, and a uv.lock whose pyproject.toml is named too is part of that
    file's plan, which reads it."""
    texts, inputs = _classified(o)
    if texts:
        raise PlanError(f"--each plans files one by one: {texts[0]!r} is not a file a plan reads")
    if o.pip_report:
        raise PlanError("--each plans files one by one: a --pip-report is one environment's, so plan it without --each")
    if o.judging.format not in EACH_FORMATS:
        raise PlanError(
            f"--each writes one report per file: --format {o.judging.format} is one document (text, markdown, github)"
        )
    if o.output.output is not None:
        raise PlanError("--each writes one report per file to standard output: --output takes one report")
    if not inputs:
        raise PlanError("nothing to plan: --each plans the input files named")
    projects = {os.path.dirname(os.path.realpath(path)) for named, path in inputs if named == "pyproject"}
    seen: set[str] = set()
    plans: list[tuple[str, PlanOptions]] = []
    for named, path in inputs:
        real = os.path.realpath(path) if path != "-" else path
        if real in seen or (named == "uv.lock" and os.path.dirname(real) in projects):
            continue
        seen.add(real)
        alone = [path] if named == "requirements" else []  # -r FILE: a requirements file of any name
        one = replace(o, requirement_files=tuple(alone), requirements=() if alone else (path,), each=False)
        plans.append((path, one))
    return plans


def _same(a: str, b: str) -> bool:
    from envaudit.commands.plan.inputs.gather import same_release  # lazily: it loads packaging

    return same_release(a, b)


def _platform(o: PlanOptions, recorded: dict[str, str]) -> PlatformFacts:
    """The system and machine the plan will run on: --os and --machine, else those a pip report records (its
    environment's platform_system and platform_machine), else this machine's, as a plan assumes jax's defaults (a
    CPU miscompile measured on x86-64 applies to a plan made on x86-64)."""
    import platform

    system = o.os or recorded.get("system") or platform.system()
    machine = o.machine or recorded.get("machine") or platform.machine()
    return PlatformFacts(system=system, machine=machine)


def _classified(o: PlanOptions) -> tuple[list[str], list[tuple[Kind, str]]]:
    """The positional arguments told apart: requirements (a `NAME @ URL` that `$(pip freeze)` split in three words
    joined again) and input files, recognised by their names. The inputs in order: -r's files, the positional
    files, --pip-report's (the first requirements file or pyproject.toml is where an unnamed requirement goes)."""
    words = list(o.requirements)
    texts: list[str] = []
    inputs: list[tuple[Kind, str]] = [("requirements", f) for f in o.requirement_files]
    while words:
        word = words.pop(0)
        if len(words) >= 2 and words[0] == "@":
            texts.append(f"{word} @ {words[1]}")
            del words[:2]
        elif named := kind(word):
            inputs.append((named, word))
        elif os.path.isfile(word) and re.fullmatch(r"[A-Za-z0-9._-]+", os.path.basename(word)):
            from envaudit.commands.plan.inputs import unread

            raise PlanError(unread(word))
        else:
            texts.append(word)
    if o.pip_report:
        inputs.append(("pip-report", o.pip_report))
    return texts, inputs


def _gathered(o: PlanOptions, inputs: list[tuple[Kind, str]], python: str) -> Gathered:
    from envaudit.commands.plan.inputs.gather import Request, gather  # lazily: it loads packaging

    request = Request(tuple(inputs), tuple(o.extra), o.all_extras, tuple(o.group), python)
    return gather(request)


def _python(text: str) -> str:
    if not re.fullmatch(r"[0-9]{1,2}\.[0-9]{1,3}(\.[0-9]{1,3})?", text):
        raise PlanError(f"--python {text!r} is not a Python version X.Y (e.g. 3.12)")
    return text


def _env(assignments: tuple[str, ...]) -> dict[str, str]:
    """--env NAME=VALUE, each as the audit would record it: only the variables of the audited scope, with a value
    that may be a secret redacted (select_env, the audit's own selection)."""
    found: dict[str, str] = {}
    for text in assignments:
        name, sep, value = text.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", name):
            raise PlanError(f"--env {text!r} is not of the form NAME=VALUE")
        found[name] = value
    return select_env(found)


def _jax_extras(version: str, extras: set[str], implied: dict[str, str], jax: JaxFacts) -> None:
    """jax[cpu|cuda*|rocm*|tpu]==V pins what its METADATA says it installs, and an accelerator extra fixes the
    platform and the CUDA major (`rules/extras.inferred`, triage's reading of a pasted `jax[cuda12]` too)."""
    from envaudit.rules.extras import inferred

    found = inferred(version, extras)
    implied |= found.installs
    if found.undefined:
        jax["undefined_extras"] = sorted({*jax.get("undefined_extras", []), *found.undefined})
    if found.platform == "cpu":
        jax.setdefault("platform", "cpu")
    elif found.platform is not None:
        jax["platform"] = found.platform
    if found.cuda_version is not None:
        jax.setdefault("cuda_version", found.cuda_version)


def _nvidia(o: PlanOptions) -> NvidiaFacts:
    driver = _version("--driver", o.driver)
    cc = o.compute_capability
    if cc is not None and not re.fullmatch(r"[0-9]{1,2}\.[0-9]{1,2}", cc):  # ASCII digits only
        raise PlanError(f"--compute-capability {cc!r} is not of the form X.Y (e.g. 8.0)")
    count: int | None = None
    if o.gpus is not None:
        if not re.fullmatch(r"[0-9]{1,4}", o.gpus):
            raise PlanError(f"--gpus {o.gpus!r} is not a number of GPUs")
        count = int(o.gpus)
    if driver is None and cc is None and count is None:
        return {"status": "unknown", "message": "the plan declares no NVIDIA facts"}
    gpus: list[GPU] = [{"index": i, "compute_capability": cc} for i in range(count if count is not None else 1)]
    return {"status": "ok", "driver_version": driver, "gpus": gpus, "gpus_exact": count is not None}


COMMAND = Command(
    "plan",
    "what-if before installing: pinned requirements, requirements files, pyproject.toml, uv.lock, pylock.toml or"
    " a pip report",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit plan jax==0.4.30 jaxlib==0.4.30 numpy==2.1.0", "pinned versions judged before installing them"),
        ("envaudit plan -r requirements.txt --platform cuda --driver 535.104.05", "a file, for a GPU node"),
        ("pip freeze | envaudit plan -r -", "what an environment holds, read from standard input"),
    ),
)
