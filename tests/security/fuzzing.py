"""The adversary kept in the repository: seeded mutation fuzzers of every input envaudit reads, run in-process
through the command line (`cli.main`), each input judged by the exit-code contract alone: 0, 1 or 2, never 3 (an
internal error: a traceback the user would have seen) and never an exception out of `main`.

Families, mutation: `check` (saved reports), `compare` (several of them), `plan` (requirements files,
pyproject.toml, uv.lock, pylock.toml, a pip report, the arguments), `triage` (pasted texts), `args` (the command line
of the verbs that do not start jax) and `snapshot` (what `fix --restore` reads). Seeds are the repository's own
fixtures; mutations replace JSON values, lines and words with what broke readers before (huge and non-finite
numbers, other scripts' digits, control characters, surrogates, deep nesting, long lines, variables, paths out of
the tree). Grammar: `requirements` and `pyproject` (files written from the grammars pip and PEP 621 read, each
part drawn from valid and hostile values), `report` (pasted reports made of the forms triage reads: freezes,
lists, jax's environment report, prose, templates, tracebacks, nvidia-smi), `verbs` (every option of each verb
that starts no jax, read from its own argparse parser, with values of its kind and edge values). Besides the exit
code, an input breaks the contract where any output shows a traceback, or exit 2 says more than one line.
The same seed gives the same inputs: a failure is reproduced by its family, seed and index.
tests/security/test_fuzz.py runs each family for a few seconds in CI; `python -m scripts.fuzz` runs them longer.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envaudit.cli import main
from tests.conftest import FIXTURES

# what broke readers before, and what a hostile file would hold
STRINGS = [
    "",
    " ",
    "٣.٢",  # Arabic-Indic digits: int() reads them
    "1e309",
    "nan",
    "inf",
    "-1",
    "0.0.0",
    "\x00",
    "\x1b[31mred\x1b[0m",
    "\ud800",
    "a" * 5000,
    "<script>alert(1)</script>",
    "|pipe|cell|",
    "../../../../etc/shadow",
    "/proc/self/environ",
    "${HF_TOKEN}",
    "https://user:secret@example.com/simple?token=abc",
    "jax==0.4.30",
    "jax[cuda12]==0.4.30",
    "jax===${HF_TOKEN}",
    "9" * 400,
    "\n\n",
    "{}",
    "--python",
]
VALUES: list[Any] = [None, True, False, 0, -1, 10**20, 2**64, 1e308, -1e308, 0.5, [], {}, [[[[]]]], *STRINGS]
LINES = [
    "-r ../../../../etc/passwd",
    "-r /proc/self/environ",
    "-c ${SECRET}",
    "numpy==${NUMPY_VERSION}",
    "-e git+https://u:p@example.com/r.git#egg=x",
    "jax==0.4.30 --hash=sha256:" + "0" * 64,
    "jaxlib==0.4.30; python_version <<< '3'",
    "jax @ https://example.com/jax-0.4.30-py3-none-any.whl",
    "\\",
    "[tool.envaudit]",
    'ignore = { "tf32-default-matmul-precision" = 3 }',
    "[[package]]",
    'name = "jax"',
    'version = "0.4.30"',
    "jax: 0.٤.30",
    "jaxlib: 1e309",
    "NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2",
    "jax-cuda12-plugin: nan",
    "Python 3.11.7 (main, ...) [GCC 12.2.0]",
    "Traceback (most recent call last):",
    "jaxlib is version 0.1.69, but this version of jax requires version 0.1.74.",
    "x" * 3000,
]


@dataclass
class Outcome:
    """What a run of a family gave: inputs tried, exits seen, the inputs that broke the contract, the slowest."""

    inputs: int = 0
    exits: Counter[int] = field(default_factory=Counter)
    broken: list[str] = field(default_factory=list)  # "family seed index: what happened"
    worst_s: float = 0.0
    worst: str = ""


def _mutate_json(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """The value with one random part replaced (or grown: a list duplicated, an object given a strange key)."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        changed = dict(value)
        roll = rng.random()
        if roll < 0.1:
            del changed[key]
        elif roll < 0.2:
            changed[rng.choice(STRINGS)] = rng.choice(VALUES)
        else:
            changed[key] = _mutate_json(value[key], rng, depth + 1)
        return changed
    if isinstance(value, list) and value and rng.random() < 0.8:
        index = rng.randrange(len(value))
        items = list(value)
        if rng.random() < 0.1:
            return items * rng.randint(2, 50)
        items[index] = _mutate_json(value[index], rng, depth + 1)
        return items
    if rng.random() < 0.05:  # nesting deeper than json.dumps writes: a marker, written out by _deep
        return f"{DEEP}{rng.choice([10, 100, 5000, 100000])}"
    return rng.choice(VALUES)


DEEP = "envaudit-fuzz-deep:"


def _deep(text: str) -> str:
    """A JSON text with each deep-nesting marker written as that many nested lists."""
    while (at := text.find(f'"{DEEP}')) >= 0:
        end = text.index('"', at + 1)
        depth = int(text[at + 1 + len(DEEP) : end])
        text = text[:at] + "[" * depth + "0" + "]" * depth + text[end + 1 :]
    return text


def _mutate_text(text: str, rng: random.Random) -> str:
    """The text with a few lines or words replaced, inserted, duplicated or cut, or a byte changed."""
    lines = text.splitlines() or [""]
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        where = rng.randrange(len(lines)) if lines else 0
        if roll < 0.3:
            lines.insert(where, rng.choice(LINES + STRINGS))
        elif roll < 0.5 and lines:
            words = lines[where].split(" ")
            words[rng.randrange(len(words))] = rng.choice(STRINGS)
            lines[where] = " ".join(words)
        elif roll < 0.6 and lines:
            del lines[where]
        elif roll < 0.7 and lines:
            lines[where:where] = [lines[where]] * rng.choice([2, 100, 3000])
        elif roll < 0.8:
            cut = rng.randrange(len(text) + 1)
            return text[:cut]
        elif lines:
            line = lines[where]
            at = rng.randrange(len(line) + 1)
            lines[where] = (
                line[:at] + chr(rng.choice([0, 7, 27, 0x202E, 0x0663, 0xFEFF, rng.randrange(32, 0x2FFF)])) + line[at:]
            )
    return "\n".join(lines) + rng.choice(["\n", "", "\r\n"])


def _seeds(pattern: str, under: Path = FIXTURES) -> list[Path]:
    return sorted(p for p in under.glob(pattern) if p.is_file())


def _json_text(path: Path, rng: random.Random) -> str:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return _mutate_text(path.read_text(encoding="utf-8", errors="surrogateescape"), rng)
    if rng.random() < 0.8:
        return _deep(json.dumps(_mutate_json(document, rng)))
    return _mutate_text(json.dumps(document, indent=1), rng)


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    return path


# Each family: (a seed's index, rng, a scratch directory) -> the argv of one input
Family = Callable[[random.Random, Path], list[str]]


def _check(rng: random.Random, scratch: Path) -> list[str]:
    seed = rng.choice(_seeds("replay/*.json") + _seeds("tpu/*.json") + _seeds("plan-inputs/*/report.json"))
    path = _write(scratch, "report.json", _json_text(seed, rng))
    return ["check", str(path), "--format", rng.choice(["text", "json", "markdown", "prometheus", "github"])]


def _compare(rng: random.Random, scratch: Path) -> list[str]:
    seeds = _seeds("replay/*.json") + _seeds("tpu/*.json")
    paths = [str(_write(scratch, f"r{n}.json", _json_text(rng.choice(seeds), rng))) for n in range(rng.randint(1, 3))]
    return ["compare", *paths, "--format", rng.choice(["text", "json"])]


def _plan(rng: random.Random, scratch: Path) -> list[str]:
    seed = rng.choice([p for p in _seeds("plan-inputs/**/*") + _seeds("inputs-round3/**/*") if p.suffix != ".md"])
    text = seed.read_text(encoding="utf-8", errors="surrogateescape")
    if seed.suffix == ".json":
        path = _write(scratch, "report.json", _json_text(seed, rng))
        return ["plan", "--pip-report", str(path), "--format", rng.choice(["text", "json"])]
    name = {".toml": seed.name, ".lock": seed.name, ".yml": "environment.yml"}.get(seed.suffix, "requirements.txt")
    path = _write(scratch, name, _mutate_text(text, rng))
    flags = rng.sample(["--python", "3.11", "--extra", "cpu", "--all-extras", "--os", "Linux", "--env", "X=1"], 2)
    flags = [f for f in flags if f.startswith("-")][:1]
    argv = ["plan", "-r", str(path)] if name == "requirements.txt" and rng.random() < 0.5 else ["plan", str(path)]
    return [*argv, *(["--python", rng.choice(["3.11", "3.1x", "\u0663.\u0661\u0661"])] if "--python" in flags else [])]


def _triage(rng: random.Random, scratch: Path) -> list[str]:
    seed = rng.choice(_seeds("triage*/*.txt"))
    path = _write(scratch, "paste.txt", _mutate_text(seed.read_text(encoding="utf-8", errors="surrogateescape"), rng))
    return ["triage", str(path), "--format", rng.choice(["text", "json", "markdown"])]


def _args(rng: random.Random, scratch: Path) -> list[str]:
    verb = rng.choice(["plan", "rules", "probes", "schema", "check", "compare", "triage", "hook", "nope", "--format"])
    words = [
        rng.choice(
            [
                "--format",
                "--strict",
                "--ignore",
                "--python",
                "--driver",
                "--gpus",
                "--env",
                "--each",
                "--compute-capability",
                "--cuda",
                "-r",
                "--output",
                "--show-host",
                "status",
                "x",
            ]
        )
        for _ in range(rng.randint(0, 4))
    ]
    words += [rng.choice(STRINGS) for _ in range(rng.randint(0, 3))]
    argv = [verb, *rng.sample(words, len(words))]
    if "--output" in argv:  # never write outside the scratch directory
        argv[argv.index("--output") :] = ["--output", str(scratch / "out")]
    return [a for a in argv if "\x00" not in a]


def _snapshot(rng: random.Random, scratch: Path) -> list[str]:
    document = {"python": "/nonexistent/bin/python", "distributions": [{"name": "jax", "version": "0.4.30"}]}
    path = scratch / f"snap-{rng.randrange(10**9)}.json"
    text = (
        _deep(json.dumps(_mutate_json(document, rng)))
        if rng.random() < 0.8
        else _mutate_text(json.dumps(document), rng)
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as handle:
        handle.write(text)
    return ["fix", "--restore", str(path), "--dry-run"]


NAMES = ["jax", "jaxlib", "flax", "optax", "jax-cuda12-plugin", "libtpu", "numpy", "chex", "Jax_Lib", "equinox"]
ODD_NAMES = ["x", "-bad", "a.b-c_d", "\u00e9", "jax..lib"]
VERSIONS = ["0.4.30", "0.4.23", "0.10.2", "0.10.1", "0.6.2", "0.4.25", "0.8.5", "1.26.4", "2.2.6", "0.1.82", "0.12.1"]


def _version(rng: random.Random) -> str:
    """A version from PEP 440's grammar, or one that broke readers."""
    if rng.random() < 0.6:
        return rng.choice(VERSIONS)
    if rng.random() < 0.1:
        return rng.choice(["", "٣.٢", "1e309", "nan", "9" * rng.choice([5, 400, 5000]), "0.4.*", "${V}", "0.4.30 "])
    parts = ".".join(str(rng.choice([0, 0, 1, 4, 12, 30, 10**6])) for _ in range(rng.randint(1, 5)))
    parts += rng.choice(["", "", "rc1", ".dev20240125", ".post1", "a0", "b2"])
    return parts + rng.choice(["", "", "", "+cuda12.cudnn89", "+local.1"])


def _requirement(rng: random.Random) -> str:
    name = rng.choice(NAMES) if rng.random() < 0.95 else rng.choice(ODD_NAMES)
    extras = rng.choice(["", "", "", "", "[cuda12]", "[tpu]", "[cpu,cuda12]", "[", "[\u00e9]"]) if name == "jax" else ""
    operators = ["==", ">=", "<", "~=", "!=", "===", "<=", ">"]
    if rng.random() < 0.7:
        spec = f"=={_version(rng)}"
    else:
        spec = ",".join(f"{rng.choice(operators)}{_version(rng)}" for _ in range(rng.randint(0, 3)))
    marker = rng.choice(
        [
            "",
            "",
            "",
            "",
            "",
            "",
            "; python_version < '3.12'",
            "; sys_platform == 'linux'",
            "; platform_machine == 'aarch64'",
            "; extra == 'gpu'",
            "; python_version <<< '3'",
            "; os_name == 'nt' and python_full_version >= '3.11.0'",
        ]
    )
    return f"{name}{extras}{spec}{marker}"


def _requirements(rng: random.Random, scratch: Path) -> list[str]:
    lines = []
    for _ in range(rng.randint(0, 12)):
        kind = rng.random()
        if kind < 0.8:
            lines.append(_requirement(rng))
        elif kind < 0.9:
            lines.append(rng.choice(["# a comment", "", "   ", "\\", "jax==0.4.30 \\", "--pre", "--no-index"]))
        elif kind < 0.96:
            lines.append(
                rng.choice(
                    [
                        "-i https://u:tok@example.com/simple",
                        "--extra-index-url https://example.com",
                        "-f ./wheels",
                        "-r other.txt",
                        "-c constraints.txt",
                        "--hash=sha256:" + "0" * 64,
                    ]
                )
            )
        else:
            lines.append(rng.choice(LINES))
    (scratch / "other.txt").write_text(_requirement(rng) + "\n")
    (scratch / "constraints.txt").write_text(_requirement(rng) + "\n")
    path = _write(scratch, "requirements.txt", "\n".join(lines) + "\n")
    return ["plan", "-r", str(path), "--format", rng.choice(["text", "json", "markdown", "github"])]


def _pyproject(rng: random.Random, scratch: Path) -> list[str]:
    deps = ", ".join(json.dumps(_requirement(rng)) for _ in range(rng.randint(0, 6)))
    extra = ", ".join(json.dumps(_requirement(rng)) for _ in range(rng.randint(0, 3)))
    python = rng.choice([">=3.11", ">=3.12,<3.13", "==3.12.*", ">=4", "~=3.10", "nan", ">=3.11,<3.11"])
    tool = rng.choice(
        ["", "[tool.envaudit]\nstrict = true\n", "[tool.envaudit]\nstrict = 3\n", "[tool.envaudit.ignore]\nx = 1\n"]
    )
    text = (
        f'[project]\nname = "p"\nversion = "0"\nrequires-python = "{python}"\ndependencies = [{deps}]\n'
        f"[project.optional-dependencies]\ngpu = [{extra}]\n{tool}"
    )
    if rng.random() < 0.3:
        text = _mutate_text(text, rng)
    path = _write(scratch, "pyproject.toml", text)
    flags = rng.choice(
        [[], ["--extra", "gpu"], ["--all-extras"], ["--python", rng.choice(["3.11", "3.12", "2.7", "x"])]]
    )
    return ["plan", str(path), *flags]


FORMS = [
    "{n}=={v}",
    "{n} {v}",
    "{n}: {v}",
    "{n} - {v}",
    "the {n} version used ({v})",
    "I use {n} {v} on Python {p}",
    "Can be solved by downgrading {n} to {v}",
    "├── {n} [required: >=0.4, installed: {v}]",
    "Successfully installed {n}-{v}",
    "{p} (main, Jun 11 2023, 05:26:28) [GCC 11.4.0]",
    "cpython-{p}-macos-aarch64-none",
    "conda create -n x python={p}",
    "### What jax/jaxlib version are you using?\n{v} {v}",
    "jax:    {v}\njaxlib: {v}\nnumpy:  {v}\npython: {p}",
    "| NVIDIA-SMI 535.104.05   Driver Version: {v}   CUDA Version: {v} |",
    "Traceback (most recent call last):\nAttributeError: module 'jax' has no attribute '{n}'",
    "RuntimeError: Unable to initialize backend 'cuda': {n} {v}",
    "jaxlib is version {v}, but this version of jax requires version {v}.",
]


def _report(rng: random.Random, scratch: Path) -> list[str]:
    lines = []
    for _ in range(rng.randint(1, 15)):
        form = rng.choice(FORMS)
        lines.append(
            form.format(n=rng.choice(NAMES), v=_version(rng), p=rng.choice(["3.11.7", "3.10", "3.٣", "9" * 50]))
        )
    text = "\n".join(lines)
    if rng.random() < 0.3:
        text = _mutate_text(text, rng)
    path = _write(scratch, "paste.txt", text)
    return ["triage", str(path), "--format", rng.choice(["text", "json", "markdown"])]


# the verbs that start no jax, no build and change nothing, with the words they need first
SAFE = {
    "plan": [],
    "rules": [],
    "probes": [],
    "schema": [],
    "check": [],
    "compare": [],
    "triage": [],
    "suggest": [],
    "hook": ["status"],
}


def _value(action: Any, rng: random.Random, scratch: Path) -> str:
    dest = str(action.dest)
    if dest in ("output", "snapshot", "status_file", "prometheus_dir"):  # never written outside the scratch
        return str(scratch / "out")
    if action.choices and rng.random() < 0.8:
        return str(rng.choice(list(action.choices)))
    if rng.random() < 0.3:
        return rng.choice(STRINGS)
    if dest in ("python",):
        return rng.choice(["/nonexistent/bin/python", "3.11", "3.12", str(scratch)])
    return rng.choice(["1", "0", "-1", "20", "1e6", "3.11", "535.104.05", "8.0", "12.4", "x", "jax==0.4.30", "A=B"])


def _verbs(rng: random.Random, scratch: Path) -> list[str]:
    import argparse

    from envaudit.cli import build_parser

    verb = rng.choice(sorted(SAFE))
    parsers = [a for a in build_parser(verb)._actions if isinstance(a, argparse._SubParsersAction)]
    own = parsers[0].choices[verb]
    options = [a for a in own._actions if a.option_strings and a.dest not in ("help", "version")]
    argv = [verb, *SAFE[verb]]
    for action in rng.sample(options, k=rng.randint(0, min(4, len(options)))):
        argv.append(rng.choice(action.option_strings))
        if action.nargs != 0:
            argv.append(_value(action, rng, scratch))
    if verb in ("check", "compare"):
        argv.append(str(_write(scratch, "report.json", _json_text(rng.choice(_seeds("replay/*.json")), rng))))
    elif verb == "triage":
        argv.append(str(_write(scratch, "paste.txt", rng.choice(FORMS).format(n="jax", v="0.4.30", p="3.11"))))
    elif verb == "plan":
        argv.append(rng.choice(["jax==0.4.30", "jaxlib==0.4.30", _requirement(rng)]))
    return [a for a in argv if "\x00" not in a]


FAMILIES: dict[str, Family] = {
    "check": _check,
    "compare": _compare,
    "plan": _plan,
    "triage": _triage,
    "args": _args,
    "snapshot": _snapshot,
    "requirements": _requirements,
    "pyproject": _pyproject,
    "report": _report,
    "verbs": _verbs,
}


def _broken(code: int, stderr: str) -> str:
    """How an input broke the contract ("" where it did not): an exit other than 0, 1, 2; a traceback shown; an
    exit 2 that says more than its one line."""
    if code not in (0, 1, 2):
        return f"exit {code}"
    if "Traceback (most recent call last)" in stderr:
        return "a traceback"
    said = [line for line in stderr.splitlines() if line.strip()]
    if code == 2 and len(said) != 1:
        return f"exit 2 in {len(said)} lines"
    return ""


def inputs(family: str, seed: int) -> Iterator[tuple[int, random.Random]]:
    """Endless (index, rng) pairs: input `index` of `seed` is always the same input."""
    index = 0
    while True:
        yield index, random.Random(f"{family}:{seed}:{index}")
        index += 1


def run(family: str, seed: int, seconds: float, outcome: Outcome | None = None, limit: int | None = None) -> Outcome:
    """Inputs of one family, for `seconds` (and at most `limit` of them), each through `main` with its output
    swallowed and stdin empty."""
    outcome = outcome or Outcome()
    make = FAMILIES[family]
    deadline = time.monotonic() + seconds
    with tempfile.TemporaryDirectory(prefix="envaudit-fuzz-") as where:
        scratch = Path(where)
        for index, rng in inputs(family, seed):
            if time.monotonic() > deadline or (limit is not None and index >= limit):
                break
            for leftover in scratch.iterdir():
                leftover.unlink() if leftover.is_file() or leftover.is_symlink() else None
            argv = make(rng, scratch)
            said = io.StringIO()
            started = time.monotonic()
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(said):
                    code = main(argv)
            except BaseException as exc:
                code = -1
                said.write(f"{type(exc).__name__}: {exc}")
            took = time.monotonic() - started
            outcome.inputs += 1
            outcome.exits[code] += 1
            if took > outcome.worst_s:
                outcome.worst_s, outcome.worst = took, f"{family} {seed} {index}"
            if why := _broken(code, said.getvalue()):
                outcome.broken.append(f"{family} {seed} {index}: {why}: {said.getvalue().strip()[:300]}")
    return outcome
