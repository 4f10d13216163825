"""A throwaway environment built from a stack's pins, and what importing its libraries there shows.

`plan` answers from the tables; where the planned stack installs here, this module builds it: `uv venv` and `uv pip
install` (uv's own cache, shared with every other use of uv on the machine, where it is this user's) in a temporary
directory, then the
imports probe runs there, by that environment's interpreter, as the audit runs probes (`child/runner.py`, under
every bound), and the directory is removed afterwards, whatever happened. An accelerator stack is built as its CPU
twin: the same jax, jaxlib and libraries from their CPU wheels, without jax's GPU and TPU plugins, libtpu, jax-metal
or the CUDA wheels (`left_out` says what), and the child runs with JAX_PLATFORMS=cpu. A stack for another system or
machine, or with a package that only a GPU runs, is not built (`skipped`, with why).

The stack is built for the first of the given Pythons that is here (uv's own list, then pyenv's versions); where
none is, uv is asked to fetch the first (a managed Python), and where it cannot, the result says so (`no_python`).
Where uv refuses the install for one Python (no wheel for it), the next one here is tried. Every step is bounded
(`child/bounded.py`: a uv that hangs or floods is cut off, with its process group) and the whole build by one
deadline. Nothing here judges: the judge reads the measurement (`judge/measured.py`), and `triage` may build a
reported stack the same way.

What uv is told by anyone but the user (`uv_options`, `uv_environ`; `envaudit fix` runs its uv the same way). uv
reads `uv.toml` and a `pyproject.toml`'s `[tool.uv]` from its working directory and every directory above it: in a
build's $TMPDIR/envaudit-build-*, a /tmp/uv.toml that any user may write would name root's index (and so the code
root runs). So every uv envaudit runs is given `--no-config`, in a private working directory (`safedir.scratch`),
and the one configuration file the user chose is passed back by name (`--config-file`): UV_CONFIG_FILE, else their
own uv.toml (XDG_CONFIG_HOME/uv, ~/.config/uv), else the system's (/etc/uv/uv.toml), the first that is a regular
file only root or this user can change; the user's index is theirs to choose, another user's file is not (uv merges
the user's and the system's files; here one is read: the user's where they have one). Where uv's cache (UV_CACHE_DIR,
XDG_CACHE_HOME/uv, ~/.cache/uv) is not this user's alone (`safedir.owned`: root under `sudo -E` keeps a user's
XDG_CACHE_HOME), a wheel another user put there would be installed and imported: uv is given envaudit's own cache
(`cachedir.private("uv")`), else one inside the build's directory. pip, which envaudit runs only in `fix` (the plan's
own command), reads no configuration from its working directory: its files are the user's (~), the system's (/etc)
and the environment's (its prefix), and PIP_CONFIG_FILE is the caller's own variable: the user's choice of index for
the user's environment, kept as the printed command would be run; pip refuses a cache it does not own by itself.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, cast

from envaudit.child import bounded, runner, state
from envaudit.files import buildmemory, cachedir, safedir
from envaudit.model import typecheck
from envaudit.model.build import BuildStatus, Measurement
from envaudit.model.facts import CallOutcome, ImportOutcome, JaxFacts
from envaudit.model.fixes import named
from envaudit.model.scope import LIBRARIES, canonicalize_name, selected

# jax's own accelerator packages and what only they bring: the CPU twin leaves them out (jaxlib stays, as its CPU
# wheel, where a GPU build was pinned)
ACCELERATOR = re.compile(
    r"^(jax-(cuda|rocm)\d*-(plugin|pjrt)|jax-cuda\d*-.+|jax-tpu-embedding|jax-metal|libtpu(-nightly)?|nvidia-.+)$"
)
GPU_ONLY = re.compile(r"^(cupy-(cuda|rocm).*|tensorflow-gpu|tensorflow-rocm|jaxlib-rocm.*)$")  # no CPU build of them
# what in the user's environment would reach into the built one: their packages, their startup files
LEAKS = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "__PYVENV_LAUNCHER__",
)
FIND_S = 10.0  # `uv python find`, `uv pip list`: each answers in a fraction of a second
OUTPUT_LIMIT = 1024 * 1024  # bytes kept of what uv prints on each stream (its resolver's message is a few lines)
MAX_REASON = 600  # characters of uv's reason kept
MAX_PYTHONS = 3  # Pythons tried for one stack where uv finds no wheel for the first
TIMEOUT_S = 240.0  # plan's default bound on its builds (--build-timeout)
# uv's words when the package index cannot be reached (reqwest's and the resolver's)
OFFLINE = re.compile(
    r"dns error|error sending request|failed to lookup address|Network is unreachable|Connection refused|"
    r"client error \(Connect\)|operation timed out|Could not connect",
    re.IGNORECASE,
)
# uv's words when a Python cannot have the stack (no wheel of it for that Python or its ABI)
WRONG_PYTHON = re.compile(
    r"Python|no version of|no wheels with a matching|not compatible with the current platform", re.IGNORECASE
)

Say = Callable[[str], None]


@dataclass(frozen=True)
class Twin:
    """What to install for a stack here: its pins with the accelerator left out, what was, and why nothing can be
    built ("" where it can)."""

    requirements: tuple[str, ...]
    left_out: tuple[str, ...] = ()
    refused: str = ""


MODELLED = "unknown"  # the local label of a release the rules modelled for a package no table knows (`0+unknown`)


def twin(
    packages: Mapping[str, str],
    ranges: Mapping[str, str] | None = None,
    extras: Mapping[str, Sequence[str]] | None = None,
) -> Twin:
    """The stack's CPU twin: every pin but jax's accelerator packages (a jaxlib built for a GPU, `+cuda12.cudnn89`,
    as its CPU wheel of the same release); a package that only a GPU runs, or another's build for one (a local
    label), has no twin. `ranges`: the requirement a fix writes for a package (`scipy<1.13`), installed as written
    instead of the release a model of the installer chose for it, so that the installer chooses as it will."""
    found, left = [], []
    ranges = ranges or {}
    for name, version in sorted(packages.items()):
        if name in ranges and not ACCELERATOR.match(name) and not GPU_ONLY.match(name):
            found.append(ranges[name])
            continue
        public, _, label = version.partition("+")
        if ACCELERATOR.match(name):
            left.append(f"{name} {version}")
            continue
        if GPU_ONLY.match(name):
            return Twin((), refused=f"{name} {version} runs on GPUs only: no CPU build of it to install here")
        if label == MODELLED:  # the release a model of the installer guessed: the installer picks it as asked
            found.append(ranges.get(name) or name)
            continue
        if label and name == "jaxlib":
            left.append(f"jaxlib {version} (its CPU wheel {public} instead)")
        elif label:
            return Twin((), refused=f"{name} {version} is a build for an accelerator (+{label}): no CPU wheel of it")
        asked = ",".join(sorted((extras or {}).get(name, ())))
        found.append(f"{name}[{asked}]=={public}" if asked else f"{name}=={public}")
    return Twin(tuple(found), tuple(left))


def on_cpu(requirement: str) -> str | None:
    """A requirement of a fix's command as the CPU twin installs it: None for jax's accelerator packages, jax
    without an accelerator's extra, a pin without its local label (`jaxlib==0.4.26+cuda12.cudnn89` is its CPU wheel
    `jaxlib==0.4.26`); anything else as written."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        parsed = Requirement(requirement)
    except InvalidRequirement:
        return requirement  # the installer says what is wrong with it
    name = canonicalize_name(parsed.name)
    if ACCELERATOR.match(name):
        return None
    extras = {e for e in parsed.extras if name != "jax" or not re.match(r"^(cuda|rocm|tpu|metal)", e)}
    if extras == parsed.extras and "+" not in str(parsed.specifier):
        return requirement  # as written: the installer reads it as the user's would
    parsed.extras = extras
    parsed.specifier = type(parsed.specifier)(",".join(str(s).split("+")[0] for s in parsed.specifier))
    return str(parsed)


def uv_command() -> tuple[str, ...] | None:
    """How uv is started here: on PATH, else the uv package of this interpreter (`python -m uv`); None: no uv."""
    if found := shutil.which("uv"):
        return (found,)
    import importlib.util

    return (sys.executable, "-m", "uv") if importlib.util.find_spec("uv") is not None else None


@dataclass(frozen=True)
class Applied:
    """One installer command of a fix, as it is run over the installed stack: an install of these requirements
    (the installer free to move what they need, as the user's is), their files installed again without their
    dependencies, or their removal."""

    action: Literal["install", "reinstall", "uninstall"]
    requirements: tuple[str, ...]

    def args(self, python: str) -> list[str]:
        """uv's arguments for it (the requirements already the CPU twin's)."""
        if self.action == "uninstall":
            return ["pip", "uninstall", "--python", python, *self.requirements]
        again = ["--reinstall", "--no-deps"] if self.action == "reinstall" else []
        return ["pip", "install", "-q", "--python", python, *again, *self.requirements]

    def pip_args(self) -> list[str]:
        """pip's arguments for it, run by the twin's interpreter (`python -m pip ...`)."""
        if self.action == "uninstall":
            return ["uninstall", "-y", "-q", *self.requirements]
        again = ["--force-reinstall", "--no-deps"] if self.action == "reinstall" else []
        return ["install", "-q", "--disable-pip-version-check", *again, *self.requirements]


@dataclass(frozen=True)
class Stack:
    """A stack to build: its pins (canonical name -> version), the Pythons it may be built for (X.Y, preferred
    first), where it is meant to run, and the variables it runs with."""

    packages: Mapping[str, str]
    pythons: Sequence[str]
    system: str = ""
    machine: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    # modules to import beside each library's top level (distribution -> modules): those a table says break at
    # their own import (transformers' Flax models), which `import transformers` does not reach
    modules: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # the requirement a fix writes for a package, where it is a range (name -> `scipy<1.13`): built as written
    ranges: Mapping[str, str] = field(default_factory=dict)
    # releases the installer takes where it installs the package at all (name -> version), never a reason to
    # install it: the rest of a pasted `pip list`, so that a library's dependency is the release the report has
    constraints: Mapping[str, str] = field(default_factory=dict)
    # a day (YYYY-MM-DD): what the stack does not pin resolved among the releases uploaded before it (a report's
    # stack as it installed then, not with today's NumPy); its own pins at any date
    as_of: str = ""
    # the extras a package is asked with (name -> extras): installed as `name[extra]==version`
    extras: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # a fix's state built as its command is run: `before` (an environment's pins) installed first, then `applied`,
    # each command in turn, the installer moving what the new pins need as the user's installer will; where uv
    # refuses `before` itself (an environment pip left inconsistent), `packages` (the modelled state) is built instead
    before: Mapping[str, str] = field(default_factory=dict)
    applied: Sequence[Applied] = ()
    # who runs `applied`: the environment's own installer, whose resolver decides what a command moves (pip takes
    # the newest release a new requirement allows and moves what it needs; uv keeps what is installed where it can)
    installer: Literal["uv", "pip"] = "uv"
    # the distributions whose failure the fix's steps claim to fix: theirs is never set apart as failing before
    claimed: Sequence[str] = ()
    # those whose call the steps claim to fix: a path read in their code (a call not made) counts against the state;
    # read in another library, or in one whose import the fix claims, it is a warning, said, not a failure
    reads: Sequence[str] = ()
    # the environment's libraries nobody asked for by name (`rules.imports.transitive`): their smoke calls that raise
    # are said, not failures of the state, but for those the fix claims (one truth with the audit's `call-fails`)
    pulled: Sequence[str] = ()
    # the environment's libraries with a JAX part (how many files name jax or flax, the imports probe's
    # `jax_files`): a release the fix installs with none drops what the user used (`dropped`)
    parts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Built:
    """What a build measured: the report's words (`document`) and jax's facts there (how `import jax` ended, and
    the imports probe's outcomes); `jax` is empty where nothing was measured."""

    document: Measurement
    jax: JaxFacts = field(default_factory=lambda: JaxFacts())

    @property
    def status(self) -> BuildStatus:
        return self.document["status"]


def here() -> tuple[str, str]:
    """This machine's system and machine, named as a plan names them."""
    return platform.system(), _machine(platform.machine())


def _machine(name: str) -> str:
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name.lower(), name.lower())


def measure(stack: Stack, *, timeout: float, uv: Sequence[str], say: Say | None = None) -> Built:
    """The stack built in a temporary directory and measured there, the directory removed afterwards; never raises
    for what the stack or uv does (an interrupt propagates, after the directory is removed)."""
    deadline = time.monotonic() + timeout
    tell = say or (lambda _: None)
    made = twin(stack.packages, stack.ranges, stack.extras)
    system, machine = here()
    if stack.system and stack.machine and (stack.system, _machine(stack.machine)) != (system, machine):
        why = f"the stack is for {stack.system} {stack.machine}; this machine is {system} {machine}"
        return _not("skipped", why, made)
    if stack.system and stack.system != system:
        return _not("skipped", f"the stack is for {stack.system}; this machine runs {system}", made)
    if made.refused:
        return _not("skipped", made.refused, made)
    if not made.requirements:
        return _not("skipped", "the stack pins nothing to install", made)
    options = (*uv, *uv_options())
    asked = _asked(stack, made, options)
    if (again := _again(stack, asked, options)) is not None:
        tell(f"measured before: {measurement_seen(again.document)}")
        return again
    with safedir.scratch("envaudit-build-") as home:
        found = _built(stack, made, home, deadline, options, tell, timeout)
    _keep(stack, asked, found, options)
    return found


# What a build measured is remembered (files/buildmemory.py) and reused where nothing it depends on changed: the same
# request to the same installer and index (for a day: the index moves), then the same installed set, Python, platform,
# variables and probe code. ENVAUDIT_REBUILD (set, not 0) builds anew, and keeps what it measured.
REBUILD = "ENVAUDIT_REBUILD"
# what builds and measures a stack (this module, the child's runner and bounds) and what the imports child runs there
# (the smoke calls, the README blocks of calls/_readme.json among them): a change to any of them is another measurement
_CHILD_FILES = ("collect/build.py", "child", "_probes/imports.py", "_probes/_kit.py", "_probes/calls")


def _asked(stack: Stack, made: Twin, uv: Sequence[str]) -> str:
    """The key of what this request installs here: the pins asked for, the Pythons, the installer and the index
    its configuration and variables name, and the code that asks (how it asks is what the installer refuses: a base
    installed with an option uv does not take was refused, and remembered so, whatever the stack)."""
    constrained = sorted(f"{name}=={version}" for name, version in stack.constraints.items())
    dated = [f"as of {stack.as_of}"] if stack.as_of else []
    applied = (
        [["before", stack.installer, *twin(stack.before, extras=stack.extras).requirements]] if stack.applied else []
    )
    applied += [[step.action, *step.requirements] for step in stack.applied]
    asked = (made.requirements, list(stack.pythons), here(), _installer(uv), *constrained, *dated, _child_code())
    return buildmemory.key(*asked, *applied)


def _installer(uv: Sequence[str]) -> list[object]:
    """The installer and the index it reads: its command, the configuration file the user chose (and when it last
    changed) and the variables that name an index."""
    config = user_uv_config()
    index = {k: v for k, v in os.environ.items() if k.startswith(("UV_", "PIP_")) and k not in _NOT_INDEX}
    return [list(uv), config, _stamp(Path(config)) if config else "", index]


_NOT_INDEX = frozenset({"UV_CACHE_DIR", "UV_NO_PROGRESS", "UV_PYTHON", "UV_CONFIG_FILE"})


def _measured(
    stack: Stack, installed: Mapping[str, str], python: str, uv: Sequence[str], bystanders: Sequence[str] = ()
) -> str:
    """The key of a measurement: the installed set, from which installer and index, the Python, the platform, the
    child's variables that a plan states, what the fix claims to fix, and the code the child runs."""
    mine = {k: v for k, v in os.environ.items() if k.startswith("ENVAUDIT_") and k != "ENVAUDIT_CACHE_DIR"}
    variables = dict(stack.env) | submodules(stack.modules) | imported(stack.packages, bystanders) | mine
    if stack.claimed:  # what is set apart as failing before depends on it
        variables["claimed"] = ",".join(sorted(stack.claimed))
    if stack.reads:  # and which paths read count
        variables["reads"] = ",".join(sorted(stack.reads))
    if stack.pulled:  # and whose calls count
        variables["pulled"] = ",".join(sorted(stack.pulled))
    return buildmemory.key(dict(installed), python, here(), _installer(uv), variables, _child_code())


@functools.cache
def _child_code() -> str:
    """A digest of envaudit's version and of the files that build and measure a stack (`_CHILD_FILES`)."""
    import hashlib

    from envaudit import __version__

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(__version__.encode())
    for name in _CHILD_FILES:
        path = package / name
        for one in sorted(p for p in path.rglob("*.*") if p.suffix in (".py", ".json")) if path.is_dir() else [path]:
            digest.update(f"\0{one.relative_to(package)}\0".encode())
            try:
                digest.update(one.read_bytes())
            except OSError:
                digest.update(b"unreadable")
    return digest.hexdigest()[:32]


def _stamp(path: Path) -> str:
    try:
        return str(path.stat().st_mtime_ns)
    except OSError:
        return ""


def _fresh() -> bool:
    return os.environ.get(REBUILD, "") not in ("", "0")


def _again(stack: Stack, asked: str, uv: Sequence[str]) -> Built | None:
    """What an earlier build of the same request measured, where it may be reused; None: build it."""
    if _fresh() or (seen := buildmemory.recall("asked", asked)) is None:
        return None
    refused = seen.get("refused")
    if refused is not None:
        if (
            typecheck.problem(refused, Measurement, "a remembered refusal")
            or refused.get("status") != "not_installable"
        ):
            return None
        return Built(cast(Measurement, refused) | {"reused": True})
    installed, python, bystanders = seen.get("installed"), seen.get("python"), seen.get("bystanders", [])
    if not isinstance(installed, dict) or not isinstance(python, str) or not isinstance(bystanders, list):
        return None
    return _recalled(stack, installed, python, uv, [str(b) for b in bystanders])


def _recalled(
    stack: Stack, installed: Mapping[str, str], python: str, uv: Sequence[str], bystanders: Sequence[str] = ()
) -> Built | None:
    """What the imports probe measured in this installed set before, where it was measured."""
    key = _measured(stack, installed, python, uv, bystanders)
    if _fresh() or (seen := buildmemory.recall("measured", key)) is None:
        return None
    document, jax = seen.get("document"), seen.get("jax")
    if typecheck.problem(document, Measurement, "a remembered build") or typecheck.problem(jax, JaxFacts, "jax"):
        return None
    if cast(Measurement, document).get("status") != "built":
        return None
    return Built(cast(Measurement, document) | {"reused": True}, cast(JaxFacts, jax))


def _keep(stack: Stack, asked: str, found: Built, uv: Sequence[str]) -> None:
    """Remember what a build measured: an installed set measured to its end, or the installer's refusal."""
    document = found.document
    if document["status"] == "not_installable":
        buildmemory.remember("asked", asked, {"refused": dict(document)})
        return
    installed, python = document.get("installed"), document.get("python", "")
    if document["status"] != "built" or not installed or not python or found.jax.get("status") == "timeout":
        return
    cut = any(o.get("status") == "not_tried" for o in found.jax.get("imports") or [])
    if cut or any(o.get("status") == "timeout" for o in found.jax.get("calls") or []):
        return  # cut by the bound: another run may get further
    bystanders = list(document.get("bystanders") or [])
    if not document.get("reused"):  # built anew, and the probe skipped for what it measured before: kept already
        measured = {"document": dict(document), "jax": dict(found.jax)}
        buildmemory.remember("measured", _measured(stack, installed, python, uv, bystanders), measured)
    buildmemory.remember("asked", asked, {"installed": dict(installed), "python": python, "bystanders": bystanders})


def _built(
    stack: Stack, made: Twin, home: Path, deadline: float, uv: tuple[str, ...], say: Say, timeout: float
) -> Built:
    """The stack installed for the first of its Pythons that is here (the next where uv finds no wheel for it);
    where none is, for the first, which uv may fetch."""
    started = time.monotonic()
    env = uv_environ(home)
    wanted = [p for p in dict.fromkeys(stack.pythons) if p][:MAX_PYTHONS] or [this_python()]
    found = [(python, path) for python in wanted if (path := _local_python(uv, python, deadline, env, home))]
    first_reason, tried = "", list[str]()
    for number, (python, local) in enumerate(found or [(wanted[0], "")]):
        prefix = home / f"env{number}"
        if not local:
            say(f"Python {python} is not here: asking uv to fetch it")
        made_env = _run(uv, ["venv", "-q", "--python", local or python, str(prefix)], deadline, env, home)
        if made_env.status == "timeout" or (made_env.status and local):
            return _not(made_env.status, made_env.reason, made, started=started, python=python)
        if made_env.status:
            why = f"Python {python} is not here, and uv could not fetch it: {made_env.reason}"
            return _not("no_python", why, made, started=started, python=python)
        interpreter = prefix / ("Scripts" if os.name == "nt" else "bin") / "python"
        say(f"installing {len(made.requirements)} pins for Python {python} with uv (bound {timeout:.0f} s)")
        args = [
            "pip",
            "install",
            "-q",
            "--python",
            str(interpreter),
            *_constrained(stack, home),
            *_dated(stack),
            *made.requirements,
        ]
        install, made_by = _applied(stack, args, interpreter, local or python, deadline, uv, env, home, say)
        if install.status == "not_installable" and WRONG_PYTHON.search(install.reason):
            first_reason, tried = first_reason or install.reason, [*tried, python]
            continue  # no wheel for this Python: the next one here may have one
        if install.status:
            return _not(install.status, first_reason or install.reason, made, started=started, python=python)
        return _probed(stack, made, interpreter, prefix, deadline, uv, env, home, started, say, made_by)
    also = f" (and uv refused Python {', '.join(tried[1:])} here too)" if len(tried) > 1 else ""
    return _not("not_installable", first_reason + also, made, started=started, python=tried[0] if tried else wanted[0])


def _applied(
    stack: Stack,
    args: list[str],
    interpreter: Path,
    python: str,
    deadline: float,
    uv: tuple[str, ...],
    env: dict[str, str],
    home: Path,
    say: Say,
) -> tuple[_Ran, Made]:
    """The stack installed: its pins at once (`args`), or, for a fix's state with the commands it is made by,
    the environment's own pins first and then each command over them, as the user's installer runs it (the
    commands run are returned, as uv was given them, with how the environment's pins were installed and what they
    installed, for `python`: the interpreter it was made from). Where uv refuses
    the environment's pins together (pip leaves an environment in a state no resolver would choose), the modelled
    state is installed at once."""
    if not stack.applied or not stack.before:
        return _run(uv, args, deadline, env, home), Made()
    head = args[: args.index(str(interpreter)) + 1]
    first, pinned = _Ran("not_installable", "nothing to install"), list[str]()
    bases = _bases(stack)
    for pins, wheels, exact in bases:  # every distribution of the environment; where uv refuses them, fewer
        for _ in range(WHEELLESS_ROUNDS if wheels else 1):
            base = twin(pins, extras=stack.extras)
            if base.refused or not base.requirements:
                break
            # wheels only for what the audit did not read (pandas, gym); the audited ones are built where the last
            # base would build them too (jax 0.4.13 is an sdist: jax has wheels from 0.4.16)
            unread = set(pins) - set(stack.packages) if wheels else set()
            wheels_only = [arg for name in sorted(unread) for arg in ("--only-binary", name)]
            exactly = ["--no-deps"] if exact else []
            pinned = [*_constrained(stack, home), *_dated(stack), *wheels_only, *exactly, *base.requirements]
            first = _run(uv, [*head, *pinned], deadline, env, home)
            # a distribution with no wheel (gym 0.26.2, an sdist only) leaves the base, not the rest of it: the
            # next base (the audited ones alone) would let uv choose anew what the environment pinned (mujoco)
            lacking = (wheelless(first.reason) & unread) if first.status else set()
            if not lacking:
                break
            say(f"no wheel of {', '.join(sorted(lacking))}: the twin holds the rest of the environment without it")
            pins = {name: version for name, version in pins.items() if name not in lacking}
        if first.status != "not_installable" or WRONG_PYTHON.search(first.reason):
            break
    if first.status == "not_installable" and not WRONG_PYTHON.search(first.reason):
        say(f"uv refuses the environment's own pins together ({first.reason}): building the modelled state instead")
        return _run(uv, args, deadline, env, home), Made()
    if first.status:
        return first, Made()
    made = Made(before=_installed(uv, interpreter, deadline, env, home), python=python, base=pinned)
    if stack.installer == "pip" and (seeded := _run(uv, [*head[:2], "pip", *head[2:]], deadline, env, home)).status:
        return seeded, made  # the twin's own pip, to run the commands as the environment's pip will
    said: list[str] = []
    for step in stack.applied:
        if step.action == "uninstall":
            wanted = [name for name in step.requirements if not ACCELERATOR.match(canonicalize_name(name))]
        else:
            wanted = [r for r in (on_cpu(text) for text in step.requirements) if r]
        if not wanted:
            continue
        one = Applied(step.action, tuple(wanted))
        if stack.installer == "pip":
            say(f"applying the fix as its command does: pip {' '.join(one.pip_args())}")
            ran = _pip(interpreter, one.pip_args(), deadline, env, home)
            said.append(f"pip {' '.join(a for a in one.pip_args() if a not in ('-q', '--disable-pip-version-check'))}")
        else:
            command = one.args(str(interpreter))
            say(f"applying the fix as its command does: uv {' '.join(command[:2])} {' '.join(wanted)}")
            ran = _run(uv, command, deadline, env, home)
            said.append(f"uv {' '.join(c for c in command if c not in ('-q', '--python', str(interpreter)))}")
        if ran.status:
            return ran, replace(made, applied=said[:-1])
    return _Ran(None), replace(made, applied=said)


WHEELLESS_ROUNDS = 4  # a wheels-only base tried again without the distributions uv says have no wheel
_WHEELLESS = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9._-]*)==[^\s,]+ has no usable wheels")


def wheelless(said: str) -> set[str]:
    """The distributions uv's refusal says have no wheel it may use (`Because gym==0.26.2 has no usable wheels and
    you require gym==0.26.2, ...`, where it may not build one), by canonical name."""
    return {canonicalize_name(m.group(1)) for m in _WHEELLESS.finditer(said)}


def _bases(stack: Stack) -> list[tuple[Mapping[str, str], bool, bool]]:
    """What a fix's twin installs first, most faithful first: every distribution the environment has (those a
    command may break though no table knows them: pandas under a NumPy that moved), then only those the audit
    read, where uv cannot take all of them together (a user's own project installed from a path, a wheel of another
    index); between them, the environment less what the fix's commands install (`kept`). Each with whether what the
    audit did not read is installed from wheels only (where a smaller base follows, one that only a build from
    source gives, a compiler and minutes, is left to it; one without any wheel leaves the base: `wheelless`), and
    whether it is installed as it is (`--no-deps`): where uv refuses every distribution of the environment together
    (pip installs what no resolver chooses: d2l 1.0.3 pins numpy 1.23.5 under chex 0.1.82, which requires
    numpy>=1.25), the same distributions are installed exactly, each at its release, before any fewer are: the
    twin then holds the user's environment, inconsistency included, and the fix's commands run over it."""
    moved = {named(r) for step in stack.applied for r in step.requirements}
    # the environment less what the commands install anew: pip leaves states no resolver would choose (qax 0.3.1
    # beside jaxlib 0.4.13, which it requires >=0.4.24), and uv refuses them whole; the rest is still the user's
    kept = {name: version for name, version in stack.before.items() if name not in moved}
    audited = {name: version for name, version in stack.before.items() if name in stack.packages}
    smaller = audited != stack.before  # a smaller base follows: the larger ones from wheels only
    found = [(stack.before, smaller, False), (stack.before, smaller, True)]
    found += [(kept, smaller, False)] if kept and kept != stack.before else []
    return found + ([(audited, False, False)] if smaller else [])


PIP_REFUSED = re.compile(
    r"ResolutionImpossible|No matching distribution|Could not find a version|conflicting dependencies"
)


def _pip(interpreter: Path, args: list[str], deadline: float, env: dict[str, str], home: Path) -> _Ran:
    """One pip command by the twin's interpreter under what is left of the deadline, its output bounded: what went
    wrong, in pip's words (its ERROR lines); a resolver's refusal is `not_installable`."""
    mine = {k: v for k, v in env.items() if not k.startswith("UV_")} | {"PIP_NO_INPUT": "1", "PYTHONNOUSERSITE": "1"}
    ran, done = _bounded([str(interpreter), "-m", "pip", *args], f"pip {args[0]}", deadline, mine, home)
    if done is None:
        return ran
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip().startswith("ERROR:")]
    said = _one(" ".join(line.removeprefix("ERROR:").strip() for line in lines[:3])) or f"pip exited {done.returncode}"
    if OFFLINE.search(done.stderr):
        return _Ran("offline", said)
    # pip said why it would not install the plan (its resolver, or a release it will not install: brax 0.12.2's
    # wheel declares an entry point without a callable, "Invalid script entry point"): the user's paste fails alike;
    # a fault of this machine's (its disk, its permissions) is not the plan's
    refused = PIP_REFUSED.search(done.stderr) or (lines and not LOCAL_FAULT.search(done.stderr))
    return _Ran("not_installable" if refused else "error", said)


LOCAL_FAULT = re.compile(r"No space left on device|Permission denied|Read-only file system|MemoryError")


def _constrained(stack: Stack, home: Path) -> list[str]:
    """uv's arguments for the stack's constraints: a file of them in the build's private directory."""
    if not stack.constraints:
        return []
    path = home / "constraints.txt"
    path.write_text("".join(f"{name}=={version}\n" for name, version in sorted(stack.constraints.items())))
    return ["--constraint", str(path)]


def _dated(stack: Stack) -> list[str]:
    """uv's arguments for a stack built as of a day: every release uploaded before it, but the stack's own pins,
    which are exact (uv's --exclude-newer-package lifts the bound for each: a pin of a later release still installs)."""
    if not stack.as_of:
        return []
    tomorrow = (datetime.date.today() + datetime.timedelta(days=1)).isoformat()
    pinned = sorted(set(stack.packages) - set(stack.ranges))  # a range is resolved as of the day too
    lifted = [arg for name in pinned for arg in ("--exclude-newer-package", f"{name}={tomorrow}")]
    return ["--exclude-newer", stack.as_of, *lifted]


def _probed(
    stack: Stack,
    made: Twin,
    interpreter: Path,
    prefix: Path,
    deadline: float,
    uv: tuple[str, ...],
    env: dict[str, str],
    home: Path,
    started: float,
    say: Say,
    made_by: Made | None = None,
) -> Built:
    """The imports probe in the built environment, by its interpreter, under the runner's bounds (`made_by`: how a
    fix's state was made, by its commands over the environment's pins: what they moved, and what requires it, is
    imported there too, and what no longer imports where it did before them is their failure)."""
    made_by = made_by or Made()
    applied = made_by.applied
    built_s = time.monotonic() - started
    version = _venv_version(prefix)
    installed = _installed(uv, interpreter, deadline, env, home)
    bystanders = _bystanders(made_by.before, installed, interpreter, deadline, env) if applied else []
    if installed and (again := _recalled(stack, installed, version, uv, bystanders)) is not None:
        say(f"built in {built_s:.1f} s; measured before: {measurement_seen(again.document)}")
        seen = cast(Measurement, {k: v for k, v in again.document.items() if k != "applied"})
        seen["build_s"] = round(built_s, 3)
        if applied:
            seen["applied"] = list(applied)
        return Built(seen, again.jax)
    document: Measurement = {
        "status": "built",
        "python": version,
        "requirements": list(made.requirements),
        "left_out": list(made.left_out),
        "installed": installed,
        "build_s": round(built_s, 3),
    }
    if applied:
        document["applied"] = list(applied)
    if bystanders:
        document["bystanders"] = bystanders
    left = deadline - time.monotonic()
    if left < state.JAX_START_S:
        why = f"the bound was spent building it ({built_s:.1f} s): nothing was imported there"
        return Built({**document, "status": "timeout", "reason": why})
    say(f"built in {built_s:.1f} s; importing its libraries there")
    probing = time.monotonic()
    options = state.Options(
        names=("imports",),
        timeout=left,
        total=left,
        cache=False,
        python=str(interpreter),
        environ=child_environ(stack.env) | submodules(stack.modules) | imported(stack.packages, bystanders),
    )
    outcome = runner.run(options)
    jax = outcome.jax or {}
    claimed = set(stack.claimed)  # what the fix claims to fix must import and run after it, whatever it did before
    imports = list(jax.get("imports") or [])
    broke = {
        str(o["module"])
        for o in imports
        if o.get("status") == "error" and o.get("distribution") in bystanders and o.get("distribution") not in claimed
    }
    if broke and (earlier := _failing_before(stack, made_by, sorted(broke), deadline, uv, env, home)):
        say(f"failing before the fix's commands too, so not theirs: {', '.join(earlier)}")
        imports = [o for o in imports if not (o.get("status") == "error" and o.get("module") in earlier)]
    calls = list(jax.get("calls") or [])
    failed = failures(imports, calls, set(stack.reads), (set(stack.pulled) | arrived(stack, calls)) - claimed)
    failed += dropped(stack, imports, installed)
    document |= {
        "probe_s": round(time.monotonic() - probing, 3),
        "jax": jax.get("status", "error"),
        "tried": sum(o.get("status") != "not_tried" for o in imports),
        "called": sum(o.get("status") in ("ok", "error") for o in calls),
        "failed": failed,
    }
    if jax.get("status") != "ok" and jax.get("message"):
        document["jax_message"] = str(jax.get("message"))
    if jax.get("status") == "timeout":
        document |= {"status": "timeout", "reason": f"jax did not start there within the bound: {jax.get('message')}"}
    measured: JaxFacts = {
        "status": jax.get("status", "error"),
        "message": jax.get("message"),
        "stage": jax.get("stage"),
    }
    if imports:
        measured["imports"] = imports
    if calls:
        measured["calls"] = calls
    said = f"{document['tried']} imports tried, {document['called']} calls made"
    say(f"measured: jax {document['jax']}, {said}, {len(failed)} raised")
    return Built(document, measured)


def _bystanders(
    before: Mapping[str, str], after: Mapping[str, str], interpreter: Path, deadline: float, env: dict[str, str]
) -> list[str]:
    """The distributions a fix's commands moved (installed, removed or another release), and those installed that
    require one of them: what the commands may have broken that imported before (none where nothing moved or the
    twin's interpreter cannot say). jax's own packages and the installers are left out: jax is imported first."""
    moved = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
    if not moved:
        return []
    try:
        done = bounded.run(
            [str(interpreter), "-I", "-c", BYSTANDERS, json.dumps(moved)],
            timeout=max(min(deadline - time.monotonic(), FIND_S), 0.1),
            limit=OUTPUT_LIMIT,
            env=child_environ({}),
        )
        found = json.loads(done.stdout) if done.returncode == 0 and not done.timed_out else []
    except (OSError, ValueError):
        return []
    kept = [str(n) for n in found if isinstance(n, str) and not NOT_BYSTANDERS.match(n)]
    return kept[:MAX_BYSTANDERS]


def _failing_before(
    stack: Stack,
    made_by: Made,
    modules: Sequence[str],
    deadline: float,
    uv: tuple[str, ...],
    env: dict[str, str],
    home: Path,
) -> list[str]:
    """Those of `modules` that do not import where only the environment's own pins are installed (a second
    throwaway environment, from uv's cache): what failed before the fix's commands is not their failure."""
    prefix = home / "before"
    made = _run(uv, ["venv", "-q", "--python", made_by.python, str(prefix)], deadline, env, home)
    python = prefix / ("Scripts" if os.name == "nt" else "bin") / "python"
    pins = ["pip", "install", "-q", "--python", str(python), *made_by.base]  # as the twin's own were installed
    if made.status or _run(uv, pins, deadline, env, home).status:
        return []  # not known to fail before: theirs
    failing = []
    for module in modules:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        if not MODULE.fullmatch(module):
            continue
        try:
            done = bounded.run(
                [str(python), "-c", f"import {module}"],
                timeout=left,
                limit=OUTPUT_LIMIT,
                env=child_environ(stack.env),
            )
        except OSError:
            continue
        if done.returncode != 0 and not done.timed_out:
            failing.append(module)
    return failing


def measurement_seen(document: Measurement) -> str:
    """A remembered measurement in a few words, for the progress line."""
    if document["status"] == "not_installable":
        return "the installer refused this request"
    return f"jax {document.get('jax')}, {document.get('tried', 0)} imports, {len(document.get('failed') or [])} raised"


PART_FILES = 3  # a part, not a helper: one `jax_utils.py` renamed away is no JAX part dropped


def dropped(stack: Stack, imports: Sequence[ImportOutcome], installed: Mapping[str, str] | None = None) -> list[str]:
    """The libraries whose release in the twin has no file naming jax or flax where the environment's had some
    (`Stack.parts`): the fix takes away the JAX part the user imported (diffusers 0.42.1 has no Flax pipelines,
    transformers 5 no Flax models; their top-level import works, and the program's `from diffusers import
    FlaxDDPMScheduler` does not), a failure of the state whatever imported. So is a release installed there
    (`installed`) that holds no module at all, which the imports probe then has nothing of to import: e3nn-jax
    0.20.1's wheel and brax 0.12.2's hold their metadata only (`No module named 'e3nn_jax'` after a plan proven
    with it)."""
    found: list[str] = []
    seen: set[str] = set()
    there = installed or {}
    met = {canonicalize_name(str(o.get("distribution") or "")) for o in imports}
    for name, had in sorted(stack.parts.items()):
        name = canonicalize_name(name)
        if had >= PART_FILES and name in there and name not in met and name not in seen:
            seen.add(name)
            was = stack.before.get(name) or stack.packages.get(name, "")
            found.append(
                f"{name}: its release {there[name]} holds no module to import, where the installed {was}"
                f" had {had} files naming jax or flax: the fix drops the library the environment used"
            )
    for outcome in imports:
        name = canonicalize_name(str(outcome.get("distribution") or ""))
        had, has = stack.parts.get(name, 0), outcome.get("jax_files")
        if had >= PART_FILES and has == 0 and name not in seen:
            seen.add(name)
            was = stack.before.get(name) or stack.packages.get(name, "")
            found.append(
                f"{name}: its release {outcome.get('version')} has no file naming jax or flax, where the installed"
                f" {was} had {had}: the fix drops the JAX part the environment used"
            )
    return found


def arrived(stack: Stack, calls: Sequence[CallOutcome]) -> set[str]:
    """Of a live environment's twin (`before`: its own distributions), the libraries whose calls were made that it
    did not have and the fix's commands do not name: pulled in by what the fix moved (flax 0.7.4 brings
    orbax-checkpoint, which the installed flax 0.6.1 did not require), a call the user's program is not known to
    make, as for a library pulled in before (`Stack.pulled`)."""
    if not stack.before:
        return set()
    had = {canonicalize_name(name) for name in stack.before}
    asked = {named(r) for step in stack.applied for r in step.requirements}
    found = {canonicalize_name(str(o.get("distribution") or "")) for o in calls}
    return {name for name in found if name and name not in had and name not in asked}


def failures(
    imports: Sequence[ImportOutcome],
    calls: Sequence[CallOutcome],
    reads: Collection[str] | None = None,
    said: Collection[str] = (),
) -> list[str]:
    """Each import and call that raised, as a measurement says it; with `reads` (the libraries whose calls a fix
    claims to fix), a call read, not made, only of those: a path read in another library is a warning about it,
    not a failure of the state (a jax moved down for a regression leaves brainevent's Pallas kernels, off the
    program's path, calling a keyword that jax lacks), nor is one in a library whose import the fix claims (jaxns
    2.6.4 made to import with jax 0.5.3, whose `jaxify_likelihood`, which the program does not call, passes
    `pure_callback` a keyword that jax only raises on). The calls of the libraries in `said` (pulled in, nobody
    asked for them: `Stack.pulled`) are said, not failures."""
    raised = [_failed(o) for o in imports if o.get("status") == "error"]
    made = [o for o in calls if o.get("status") == "error" and o.get("distribution") not in said]
    kept = [o for o in made if reads is None or not o.get("read") or o.get("distribution") in reads]
    return raised + [_call_failed(o) for o in kept]


def _failed(outcome: ImportOutcome) -> str:
    at = f" (at {outcome['where']})" if outcome.get("where") else ""
    return f"{outcome.get('distribution')}: `import {outcome.get('module')}` raises {outcome.get('error')}{at}"


def _call_failed(outcome: CallOutcome) -> str:
    at = f" (at {outcome['where']})" if outcome.get("where") else ""
    if name := outcome.get("read"):  # read, not made: its code uses a name the jax there lacks
        return f"{outcome.get('distribution')}: `{outcome.get('call')}` uses `{name}`{at}: {outcome.get('error')}"
    return f"{outcome.get('distribution')}: `{outcome.get('call')}` raises {outcome.get('error')}{at}"


def _not(status: BuildStatus, reason: str, made: Twin, *, started: float | None = None, python: str = "") -> Built:
    document: Measurement = {"status": status, "reason": reason}
    if made.requirements:
        document["requirements"] = list(made.requirements)
    if made.left_out:
        document["left_out"] = list(made.left_out)
    if python:
        document["python"] = python
    if started is not None:
        document["build_s"] = round(time.monotonic() - started, 3)
    return Built(document)


@dataclass(frozen=True)
class Made:
    """How a fix's twin was made: the commands run over the environment's pins (none: its state installed at once),
    what those pins installed before them, and the Python it was made for (a path, or the version uv fetched)."""

    applied: Sequence[str] = ()
    before: Mapping[str, str] = field(default_factory=dict)
    python: str = ""
    base: Sequence[str] = ()  # uv's arguments that installed the environment's pins (their file, dates, wheels only)


MAX_BYSTANDERS = 24  # distributions a fix's commands moved, or that require one they moved, imported to see them work
# the twin's interpreter names each installed distribution that a moved one is, or that requires one (not only for
# an extra): those whose import the command may have broken (pandas 2.0.3 under the NumPy 2 a jax move brought)
BYSTANDERS = """import importlib.metadata as m, json, re, sys
canon = lambda n: re.sub(r"[-_.]+", "-", n or "").lower()
moved = set(json.loads(sys.argv[1]))
found = set()
for d in m.distributions():
    needs = {canon(re.split(r"[\\s;<>=!~\\[(]", r, maxsplit=1)[0]) for r in d.requires or () if "extra ==" not in r}
    if canon(d.metadata["Name"]) in moved or needs & moved:
        found.add(canon(d.metadata["Name"]))
print(json.dumps(sorted(found)))
"""
MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")  # a module's dotted name, nothing else
NOT_BYSTANDERS = re.compile(r"^(pip|setuptools|wheel|uv|jax|jaxlib|nvidia-.+|jax-(cuda|rocm).*)$")


@dataclass(frozen=True)
class _Ran:
    status: BuildStatus | None  # None: it succeeded
    reason: str = ""
    stdout: str = ""


def _run(uv: tuple[str, ...], args: list[str], deadline: float, env: dict[str, str], home: Path) -> _Ran:
    """One uv command under what is left of the deadline, its output bounded; what went wrong, in uv's words."""
    ran, done = _bounded([*uv, *args], f"uv {' '.join(args[:2])}", deadline, env, home)
    if done is None:
        return ran
    said = reason(done.stderr) or f"uv exited with status {done.returncode}"
    if OFFLINE.search(done.stderr):
        return _Ran("offline", said)
    return _Ran("not_installable" if args[0] == "pip" else "error", said)


def _bounded(
    argv: list[str], label: str, deadline: float, env: dict[str, str], home: Path
) -> tuple[_Ran, bounded.Finished | None]:
    """One installer command under what is left of the deadline, its output bounded: how it ended where that says
    all (done, not started, cut off), else what it printed, for its own reading of a failure."""
    left = deadline - time.monotonic()
    if left <= 0:
        return _Ran("timeout", f"the bound ran out before `{label}`"), None
    try:
        done = bounded.run(argv, timeout=left, limit=OUTPUT_LIMIT, env=env, cwd=str(home))
    except OSError as exc:
        return _Ran("error", f"could not start {label.split()[0]}: {exc.strerror or exc}"), None
    if done.timed_out:
        return _Ran("timeout", f"`{label}` did not finish within the bound"), None
    if done.cut:
        return _Ran("error", f"`{label}` printed more than {OUTPUT_LIMIT // 1024} KiB: cut off"), None
    if done.returncode == 0:
        return _Ran(None, stdout=done.stdout), None
    return _Ran("error"), done


def reason(stderr: str) -> str:
    """uv's error as one line: its `error:` line and its first cause, continuation lines joined (`No solution found
    when resolving dependencies: Because jax==0.6.0 depends on ml-dtypes>=0.5.0 and ...`); else its last line."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if line.startswith("error:")), None)
    if start is None:
        return _one(lines[-1]) if lines else ""
    said = [lines[start].removeprefix("error:").strip()]
    cause = [line.strip().removeprefix("cause:").strip() for line in lines[start + 1 :]]
    if cause:
        block = [cause[0]]
        for line, raw in zip(cause[1:], lines[start + 2 :], strict=False):
            if raw.strip().startswith(("cause:", "error:", "hint:", "help:")):
                break
            block.append(line)
        said.append(" ".join(block))
    return _one(": ".join(s.rstrip(":") for s in said if s))


def _one(text: str) -> str:
    line = re.sub(r"\s+", " ", re.sub(r"\x1b\[[0-9;]*m", "", text)).strip()
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 3] + "..."


def uv_options() -> tuple[str, ...]:
    """uv's global options for a uv envaudit runs: no configuration file found by walking up from the working
    directory, and the one the user chose by name (the module's docstring says which)."""
    chosen = user_uv_config()
    return ("--no-config", *(("--config-file", chosen) if chosen else ()))


def user_uv_config() -> str:
    """The uv configuration file this user chose: UV_CONFIG_FILE, else their own uv.toml, else the system's; the
    first that is a regular file only root or this user can change ("" where none is)."""
    explicit = os.environ.get("UV_CONFIG_FILE", "")
    if explicit:
        return explicit if safedir.trusted_file(explicit) else ""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    home = os.environ.get("HOME", "")
    found = [Path(xdg) / "uv" / "uv.toml"] if os.path.isabs(xdg) else []
    found += [Path(home) / ".config" / "uv" / "uv.toml"] if os.path.isabs(home) else []
    found.append(Path("/etc/uv/uv.toml"))
    return next((str(p) for p in found if safedir.trusted_file(p)), "")


def uv_cache_dir() -> str:
    """The cache uv would use (UV_CACHE_DIR, else XDG_CACHE_HOME/uv, else ~/.cache/uv; "" where none is named)."""
    xdg, home = os.environ.get("XDG_CACHE_HOME", ""), os.environ.get("HOME", "")
    if os.environ.get("UV_CACHE_DIR"):
        return os.environ["UV_CACHE_DIR"]
    if os.path.isabs(xdg):
        return os.path.join(xdg, "uv")
    return os.path.join(home, ".cache", "uv") if os.path.isabs(home) else ""


def uv_environ(home: Path) -> dict[str, str]:
    """uv's environment: the user's (their index and proxy are uv's), without colour or progress bars, with no
    virtual environment of theirs to install into, no configuration file but the one passed by name, and a cache
    that is this user's alone: uv's own where it is (`safedir.owned`), else envaudit's, else one in `home` (the
    build's or the fix's private directory, gone with it)."""
    dropped = ("VIRTUAL_ENV", "CONDA_PREFIX", "UV_PYTHON", "UV_CONFIG_FILE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    cache = uv_cache_dir()
    if not (cache and safedir.owned(cache)):
        cache = str(cachedir.private("uv") or home / "uv-cache")
    return env | {"NO_COLOR": "1", "UV_NO_PROGRESS": "1", "UV_CACHE_DIR": cache}


SUBMODULES = "ENVAUDIT_SUBMODULES"  # distribution=module,module;... : what probes/imports.py imports beside the tops


def submodules(modules: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The variable that asks the imports probe for these submodules too (none where there are none)."""
    said = ";".join(f"{name}={','.join(found)}" for name, found in sorted(modules.items()) if found)
    return {SUBMODULES: said} if said else {}


IMPORT = "ENVAUDIT_IMPORT"  # distribution,distribution : what probes/imports.py imports whatever they declare


def imported(packages: Mapping[str, str], also: Sequence[str] = ()) -> dict[str, str]:
    """The variable that asks the imports probe to import each planned library around jax (scope.LIBRARIES), which
    the probe otherwise finds only by what it declares: PennyLane, jaxtyping and pymc declare no jax, and a stack
    that plans one beside jax is built to see it import there (none where the plan has none; jax's accelerator
    packages are left out of the twin). `also`: the distributions a fix's commands moved or that require one they
    moved, imported whatever they are."""
    named = {n for n in packages if n in LIBRARIES and not ACCELERATOR.match(n)} | set(also)
    said = ",".join(sorted(named))
    return {IMPORT: said} if said else {}


def child_environ(plan_env: Mapping[str, str]) -> dict[str, str]:
    """The imports child's environment: the user's, without the variables a plan does not state (JAX_*, XLA_*,
    the CUDA ones: audited ones, `scope.selected`) nor what would reach into the built environment (PYTHONPATH, a
    user site), with the plan's own variables, and on the CPU (the twin has no accelerator)."""
    base = {
        k: v for k, v in os.environ.items() if k not in LEAKS and not (selected(k) and not k.startswith("ENVAUDIT_"))
    }
    # the libraries' code read once, for every twin (keyed by the files)
    return base | dict(plan_env) | state.uses_cache() | {"PYTHONNOUSERSITE": "1", "JAX_PLATFORMS": "cpu"}


def this_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _local_python(uv: tuple[str, ...], version: str, deadline: float, env: dict[str, str], home: Path) -> str:
    """An interpreter of this Python here: uv's own list (its managed Pythons, PATH), else pyenv's versions;
    "" where there is none (uv venv may then fetch one)."""
    found = _run(
        uv, ["python", "find", "--no-python-downloads", version], min(deadline, time.monotonic() + FIND_S), env, home
    )
    if found.status is None and found.stdout.strip():
        return found.stdout.strip().splitlines()[-1]
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    matches = [
        p
        for p in root.glob(f"{version}.*/bin/python{version}")
        if re.fullmatch(rf"{re.escape(version)}\.\d+", p.parent.parent.name)
    ]
    matches.sort(key=lambda p: int(p.parent.parent.name.rsplit(".", 1)[1]))
    return str(matches[-1]) if matches else ""


def _venv_version(prefix: Path) -> str:
    """The built environment's Python, as its pyvenv.cfg records it ("3.11.7")."""
    try:
        text = (prefix / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    found = re.search(r"^version(?:_info)?\s*=\s*([0-9][0-9.]*)", text, re.MULTILINE)
    return found[1] if found else ""


def _installed(
    uv: tuple[str, ...], interpreter: Path, deadline: float, env: dict[str, str], home: Path
) -> dict[str, str]:
    """What uv installed there (canonical name -> version); {} where it cannot say."""
    listed = _run(
        uv,
        ["pip", "list", "--python", str(interpreter), "--format", "json"],
        min(deadline, time.monotonic() + FIND_S),
        env,
        home,
    )
    try:
        rows = json.loads(listed.stdout) if listed.status is None else []
    except ValueError:
        return {}
    found = {
        canonicalize_name(str(row.get("name"))): str(row.get("version"))
        for row in rows
        if isinstance(row, dict) and row.get("name") and row.get("version")
    }
    return dict(sorted(found.items()))


PUBLISHED_S = 30.0  # the bound of the days asked of the index, all pins at once
_PUBLISHED = re.compile(r"was published at (\d{4}-\d{2}-\d{2})T")
_LONG_AGO = "1990-01-01"  # a cut-off before any release: uv's refusal then says when the pinned one was uploaded


def published(pins: Mapping[str, str], python: str, uv: Sequence[str] | None = None) -> dict[str, str]:
    """The day each pinned release was uploaded to the installer's index (YYYY-MM-DD), as uv says it where a cut-off
    excludes it (`--exclude-newer`: "The requested version, v0.4.4, was published at 2023-12-01T16:44:20Z"); from
    uv's cache first, else the index, all pins at once under one bound. A pin uv says nothing of is left out."""
    import concurrent.futures

    uv = tuple(uv) if uv is not None else uv_command()
    if uv is None or not pins:
        return {}
    deadline = time.monotonic() + PUBLISHED_S

    def day(name: str, version: str) -> str:
        with safedir.scratch("envaudit-published-") as home:
            listed = home / "requirements.in"
            listed.write_text(f"{name}=={version}\n", encoding="utf-8")
            args = ["pip", "compile", "-q", "--no-deps", "--exclude-newer", _LONG_AGO, "--no-header", str(listed)]
            args += ["--python-version", python] if python else []
            env = uv_environ(home)
            for offline in (("--offline",), ()):  # the cache answers in a second; the index in several
                ran = _bounded([*uv, *uv_options(), *args, *offline], "uv pip compile", deadline, env, home)[1]
                if ran is not None and (found := _PUBLISHED.search(ran.stderr)):
                    return found.group(1)
        return ""

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(pins), 8)) as pool:
        days = dict(zip(pins, pool.map(lambda item: day(*item), pins.items()), strict=True))
    return {name: found for name, found in days.items() if found}


FOLLOWING_S = 30.0  # the bound of the releases asked after one (uv's resolver, from its cache or the index)


def following(
    requirement: str, python: str, count: int, uv: Sequence[str] | None = None, before: str = ""
) -> list[str]:
    """The first `count` releases the installer's index has that a floor admits (`rlax>0.1.2`: 0.1.3, 0.1.4, ...), in
    order, each the lowest above the one before as uv resolves it for that Python alone (`--no-deps --resolution
    lowest`): the least moves to try before the installer's newest. A ceiling (`qax<0.3.1`) gives the releases
    below it, the highest first: the least moves down. `before` (a day, YYYY-MM-DD): only the releases uploaded
    before it, the newest first (uv's --exclude-newer): a library as it stood on a day. [] where uv is not here or
    says none."""
    down = ("<" in requirement and ">" not in requirement) or bool(before)
    uv = tuple(uv) if uv is not None else uv_command()
    name = named(requirement)
    if uv is None or not name:
        return []
    found: list[str] = []
    deadline = time.monotonic() + FOLLOWING_S
    with safedir.scratch("envaudit-releases-") as home:
        env = uv_environ(home)
        asked = requirement
        while len(found) < count:
            listed = home / "requirements.in"
            listed.write_text(asked + "\n", encoding="utf-8")
            resolution = "highest" if down else "lowest"
            args = ["pip", "compile", "-q", "--no-deps", "--resolution", resolution, "--no-header", "--no-annotate"]
            args += ["--exclude-newer", before] if before else []
            args += ["--python-version", python, str(listed)] if python else [str(listed)]
            ran = _run((*uv, *uv_options()), args, deadline, env, home)
            line = (
                next((x for x in ran.stdout.splitlines() if x.strip().startswith(f"{name}==")), "")
                if not ran.status
                else ""
            )
            if not line:
                break
            release = line.strip().split("==", 1)[1].split(";")[0].strip()
            found.append(release)
            asked = f"{name}{'<' if down else '>'}{release}"
    return found
