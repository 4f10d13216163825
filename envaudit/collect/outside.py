"""The facts of an environment envaudit is not installed in: `--python PATH` (an interpreter, or a virtualenv's or
conda environment's directory).

Users keep many environments and want one auditor, not one per environment. The audited interpreter runs
`_interpreter.py` by path (standard library only) and prints its Python facts and its distributions; they are
judged here with the same functions as a live audit's (`packages.select`, `packages.check`). Its jax facts and
probes run in that interpreter too (`Options.python`); the machine's facts (platform, NVIDIA) are this process's,
the same machine's. A path that is no Python interpreter is bad input: one line, exit 2.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypedDict, cast

from envaudit.child import bounded
from envaudit.collect import packages
from envaudit.model import typecheck
from envaudit.model.exitcodes import BadInput
from envaudit.model.facts import PythonFacts
from envaudit.model.redact import scrub, scrub_all

SCRIPT = Path(__file__).with_name("_interpreter.py")
CANDIDATES = ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe")  # venv and conda layouts


class _DistributionOptional(TypedDict, total=False):
    installer: str  # its INSTALLER file (envaudit 0.2 did not say)
    recorded: bool  # it has a RECORD file, which its installer needs to replace it (absent: not said)
    requested: bool  # installed by name (its REQUESTED file), not pulled in by another (absent: not said)


class Distribution(_DistributionOptional):  # one entry of `_interpreter.distributions()`, as the other one says it
    name: str
    version: str
    location: str
    requires: list[str]


class _Said(TypedDict, total=False):
    markers: dict[str, str]  # PEP 508 environment markers


class Answer(_Said):  # what `_interpreter.py` prints; its python facts are checked as a report's
    distributions: list[Distribution]


class InterpreterError(BadInput, ValueError):
    """--python names no usable interpreter; the message is one line."""


def resolve(path: str) -> str:
    """The interpreter at `path`, or in the environment directory `path`. Not its link target: a virtualenv's
    bin/python links to the base interpreter, whose environment is another one."""
    try:
        where = Path(path).expanduser()
        if where.is_dir():
            found = next((where / c for c in CANDIDATES if (where / c).is_file()), None)
            if found is None:
                raise InterpreterError(f"--python {path}: no Python interpreter in that directory (no bin/python)")
            where = found
        if not where.is_file():
            raise InterpreterError(f"--python {path}: no such file")
        if not os.access(where, os.X_OK):
            raise InterpreterError(f"--python {path}: not executable")
        return os.path.abspath(where)
    except (OSError, RuntimeError) as exc:  # a name the system refuses (too long, a loop), or no home for ~
        said = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InterpreterError(f"--python {_short(path)}: {said}") from None


def _short(path: str) -> str:
    """A path as an error line quotes it: its end, where it is long (a 4,000-byte name is no line)."""
    return path if len(path) <= 120 else f"...{path[-100:]}"


def describe(python: str, timeout: float = 60.0) -> dict[str, Any]:
    """What the interpreter says of itself (`_interpreter.py`'s JSON object), within `timeout` and `bounded.LIMIT`
    bytes; whatever it starts is killed with it (`bounded.run`)."""
    try:
        # by path: sys.path starts with the script's directory, never the working one (a json.py there is not
        # imported); not `-I`: it says what the interpreter's programs see, PYTHONPATH and the user site included
        done = bounded.run([python, str(SCRIPT)], timeout=timeout)
    except OSError as exc:
        raise InterpreterError(f"--python {python}: cannot run it: {exc.strerror or exc}") from None
    if done.timed_out:
        raise InterpreterError(f"--python {python}: no answer within {timeout:g} s")
    if done.cut:
        raise InterpreterError(f"--python {python}: printed more than {bounded.LIMIT // 2**20} MiB on one stream")
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python's stack
        data = None
    if done.returncode != 0 or not isinstance(data, dict) or not isinstance(data.get("distributions"), list):
        last = scrub((done.stderr.strip().splitlines() or ["no output"])[-1])[:200]  # cut after: a whole URL
        raise InterpreterError(f"--python {python}: not a Python interpreter envaudit can use ({last})")
    if wrong := typecheck.problem(data, Answer, "its answer"):  # a wrapper's or a forged answer: checked, as facts
        raise InterpreterError(f"--python {python}: not a Python interpreter envaudit can use ({wrong})")
    return scrub_all(data)  # its text reaches the report: a requirement's URL may hold a token


def facts(python: str, timeout: float = 60.0) -> tuple[PythonFacts, packages.Installed]:
    """(python facts, what `packages.get_packages` returns) for that interpreter's environment."""
    data = describe(python, timeout)
    answer = cast(Answer, data)
    dists = [
        packages.Dist(
            name=d["name"],
            version=d["version"],
            location=d["location"],
            requires=tuple(d["requires"]),
            installer=d.get("installer", ""),
            requested=d.get("requested", False),
        )
        for d in answer["distributions"]
    ]
    versions, duplicates = packages.select(dists)
    markers = answer.get("markers")
    problems, requires = packages.check(dists, markers)
    said = {} if data.get("python") is None else data["python"]  # null: it said nothing of itself
    if wrong := typecheck.problem(said, PythonFacts, "python"):  # the other interpreter's word, checked as a report's
        raise InterpreterError(f"--python {python}: not a Python interpreter envaudit can use ({wrong})")
    chosen = packages.requested(dists)
    return cast(PythonFacts, said), (versions, problems, duplicates, requires, packages.installers(dists), chosen)
