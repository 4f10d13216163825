"""Derive a smoke call for each library around jax from its own README: the first code block that is a
self-contained quickstart (derive/sources/quickstart.py: it imports the library, calls its names, defines what it
uses, and reaches no file, network, dataset, subprocess, plot, other framework, GPU or long loop), measured.

For each library of tables/derived/libraries.toml that has no hand-written call (probes/calls/<distribution>.py,
which wins), the README is the newest release's long description (PyPI's `info.description`, as entry_points.py
reads it). Its quickstart blocks, in README order (at most MAX_CANDIDATES), are run in a fresh uv environment on a
CPU (JAX_PLATFORMS=cpu), with that release and the jax its resolver picks (and the other libraries around jax the
block imports), by the runner the imports probe uses (probes/calls/_readme.py), in a thread as the probe runs it,
with the network cut (every proxy variable at a closed port, Hugging Face offline) and its home, working and
temporary directories fresh and watched: the first block that returns within BLOCK_S, in MAX_SECONDS or less, and
writes no file is kept, run again alone where blocks before it ran in its process. A block that does not run even
there is no evidence, and is not kept: each library left without one says why (`[[rejected]]`).

Downloads are cached under the derivation's cache (uv's cache in CACHE/uv), never in the repository; what a library
measured is kept in CACHE/derived/readme-calls/ and measured again only where its release, its blocks, the newest
jax, the Python or the runner changed. The table is generated into probes/calls/_readme.json, which the imports
probe reads (derive/generated.py).

usage: python -m derive.tables.readme_calls [--cache DIR] [--offline] [--output FILE] [--only NAME ...]
    [--python PATH|VERSION ...]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet

from derive.sources import library_uses, quickstart, readme_code, wheels
from envaudit.rules.table import TABLES

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = TABLES / "derived" / "readme-calls.toml"
LIBRARIES = library_uses.LIBRARIES
CALLS = ROOT / "probes" / "calls"
RUNNER = CALLS / "_readme.py"
UV = (sys.executable, "-m", "uv")
PYTHONS = ("3.11", "3.12")  # what the environments are built with: the first a release accepts
MAX_CANDIDATES = 3  # blocks tried per library, in README order
INSTALL_S = 600  # one environment's install
BLOCK_S = 60  # one block's run, after the imports
MAX_SECONDS = 10.0  # a block kept: what it may take on a 2-core CPU (the imports probe's share is shared by all)
MEASURE_FORMAT = 1  # of the cached measurements: bumped when what is measured changes
CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, a request fails at once
NO_NETWORK = {
    **dict.fromkeys(("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"), CLOSED),
    "no_proxy": "",
    "NO_PROXY": "",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
# why a library has no kept block, beyond what the README's code shows (quickstart.REASONS)
MEASURED = {
    "no-readme": "no README on PyPI",
    "no-code": "the README shows no Python code",
    "install": "its newest release does not install here",
    "import": "its newest release does not import in a fresh environment",
    "raised": "the block raised in a fresh environment with its newest release",
    "timeout": f"the block did not return within {BLOCK_S} s",
    "slow": f"the block took more than {MAX_SECONDS:g} s",
    "writes": "the block wrote files",
}
STAGES = ("syntax", "no-import", "no-call", "no-jax")  # a block further on than these shows the most of a quickstart

# The program run in the built environment: the imports, then each block by the probe's runner in a thread, timed,
# the watched directories listed before and after; one JSON line on stdout.
HARNESS = textwrap.dedent(
    """
    import importlib, importlib.metadata, importlib.util, json, os, sys, threading, time
    runner, request = sys.argv[1], json.loads(sys.argv[2])
    spec = importlib.util.spec_from_file_location("_envaudit_readme", runner)
    readme = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(readme)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    started = time.monotonic()
    import jax
    for module in request["modules"]:
        importlib.import_module(module)
    imported = time.monotonic() - started
    out.write(json.dumps({"imported": round(imported, 3)}) + "\\n")
    out.flush()
    def listing():
        found = set()
        for top in request["watch"]:
            for where, dirs, files in os.walk(top):
                dirs[:] = [d for d in dirs if d not in ("__pycache__", ".cache")]
                found.update(os.path.relpath(os.path.join(where, f), top) for f in files)
        return found
    results = []
    for block in request["blocks"]:
        before, box = listing(), {}
        def go():
            try:
                readme.run(block, request["distribution"])
                box["ok"] = True
            except BaseException as error:
                box["error"] = (type(error).__name__ + ": " + str(error))[:400]
                box["own"] = readme.own(error, block, request["distribution"])[:400]
        thread = threading.Thread(target=go, daemon=True)
        start = time.monotonic()
        thread.start()
        thread.join(request["bound"])
        seconds = round(time.monotonic() - start, 3)
        if thread.is_alive():
            results.append({"status": "timeout", "seconds": seconds})
            break
        written = sorted(listing() - before)[:5]
        status = "ok" if box.get("ok") else "raised"
        results.append({"status": status, "seconds": seconds, "written": written, **box})
        if status == "ok" and not written:
            break
    version = importlib.metadata.version(request["distribution"])
    said = {"jax": jax.__version__, "version": version, "import_s": round(imported, 3), "results": results}
    out.write(json.dumps(said) + "\\n")
    out.flush()
    os._exit(0)
    """
)


@dataclass(frozen=True)
class Library:
    package: str
    modules: list[str]
    extra: str  # the extra that brings jax ("" where it is required, or where none does)
    optional_jax: bool = False  # jax is not required whatever is asked (an extra, a backend it imports)


@dataclass
class Kept:
    package: str
    version: str
    jax: str
    python: str
    seconds: float
    modules: list[str]
    call: str
    source: str
    code: str


@dataclass
class Rejected:
    package: str
    reason: str  # quickstart.REASONS' or MEASURED's key
    detail: str = ""
    tried: list[str] = field(default_factory=list)

    def why(self) -> str:
        said = quickstart.REASONS.get(self.reason) or MEASURED[self.reason]
        detail = " ".join(self.detail.split())  # one line: what a library printed may hold several
        return f"{said} ({detail})" if detail else said


def hand_written(calls: Path = CALLS) -> set[str]:
    """The distributions with a hand-written smoke call (probes/calls/<distribution>.py): theirs wins."""
    return {p.stem.replace("_", "-") for p in calls.glob("[!_]*.py")}


def libraries(path: Path = LIBRARIES) -> list[Library]:
    """The libraries around jax (tables/derived/libraries.toml), with the modules their newest wheel installs."""
    with path.open("rb") as handle:
        rows = tomllib.load(handle)["library"]
    return [Library(row["package"], list(row["imports"]), "") for row in rows]


def requires_jax(requires_dist: list[str]) -> bool:
    """Whether jax or jaxlib is required whatever extras are asked for."""
    for line in requires_dist:
        name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if name and name[1].lower() in ("jax", "jaxlib") and "extra" not in line.partition(";")[2]:
            return True
    return False


def jax_extra(requires_dist: list[str]) -> str:
    """The extra that brings jax, where only an extra does ("" where jax or jaxlib is required whatever is asked):
    one named for jax first (cvxpylayers' `jax`, not its `all`, which asks for Apple's MLX), else the one that asks
    for least."""
    extras: dict[str, list[str]] = {}
    for line in requires_dist:
        name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        named = re.search(r"""extra\s*==\s*['"]([\w.-]+)['"]""", line)
        if not named:
            if name and name[1].lower() in ("jax", "jaxlib"):
                return ""
            continue
        extras.setdefault(named[1], []).append(name[1].lower() if name else "")
    bringing = [e for e, names in extras.items() if {"jax", "jaxlib"} & set(names)]
    return min(bringing, key=lambda e: ("jax" not in e.lower(), len(extras[e]), e), default="")


@dataclass(frozen=True)
class Choice:
    """What the README offers: its candidate blocks (in order), or why it offers none."""

    candidates: list[readme_code.Block]
    rejected: Rejected | None


def choose(package: str, readme: str, modules: list[str], optional_jax: bool = False) -> Choice:
    """The README's quickstart blocks (at most MAX_CANDIDATES); where there is none, why, from the block that came
    closest: the first of those that got furthest (parsed, imported the library, called it)."""
    if not readme.strip():
        return Choice([], Rejected(package, "no-readme"))
    blocks = readme_code.blocks(readme)
    judged = [(block, quickstart.reject(block.code, modules, optional_jax=optional_jax)) for block in blocks]
    candidates = [block for block, why in judged if why is None]
    if candidates:
        return Choice(candidates[:MAX_CANDIDATES], None)
    if not judged:
        return Choice([], Rejected(package, "no-code"))
    rejections = [(block, why) for block, why in judged if why is not None]
    furthest = max(_stage(why.reason) for _, why in rejections)
    block, why = next((b, w) for b, w in rejections if _stage(w.reason) == furthest)
    where = f"README lines {block.first}-{block.last}"
    return Choice([], Rejected(package, why.reason, f"{where}: {why.detail}" if why.detail else where))


def _stage(reason: str) -> int:
    return STAGES.index(reason) if reason in STAGES else len(STAGES)


def call_name(code: str, modules: list[str]) -> str:
    """What the block calls of the library, as the hand-written calls name it: its first three names, in order."""
    names = [entry.removesuffix(".__init__") for entry, _ in readme_code.calls(code, modules)]
    names = list(dict.fromkeys(n for n in names if library_uses.public(n)))
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def interpreters(asked: list[str]) -> dict[str, str]:
    """The interpreters to build with, by their version ("3.11" -> its path), in the order asked: a path, or a
    version uv finds here ("3.12"); one that is not here is left out, saying so."""
    found: dict[str, str] = {}
    for python in asked:
        path = python
        if os.sep not in python:
            done = subprocess.run(
                [*UV, "python", "find", "--no-config", python], capture_output=True, text=True, check=False
            )
            if done.returncode:
                print(f"Python {python} is not here: no environment is built with it", flush=True)
                continue
            path = done.stdout.strip()
        said = subprocess.run(
            [path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if said.returncode == 0:
            found.setdefault(said.stdout.strip(), path)
    return found


def python_for(requires: str, versions: list[str]) -> str:
    """The first of the Pythons here the release accepts (its Requires-Python), "" where it accepts none."""
    try:
        accepted = SpecifierSet(requires or "")
    except ValueError:
        return versions[0] if versions else ""
    return next((v for v in versions if accepted.contains(f"{v}.0") or accepted.contains(f"{v}.99")), "")


class Measurer:
    """Blocks run in fresh environments, one at a time, each library's outcome kept in the cache."""

    def __init__(self, cache: Path, pythons: dict[str, str], newest_jax: str) -> None:
        self.cache, self.pythons, self.newest_jax = cache, pythons, newest_jax
        self.runner = hashlib.sha256(RUNNER.read_bytes() + HARNESS.encode()).hexdigest()[:16]

    def key(self, lib: Library, version: str, codes: list[str], others: list[str], python: str) -> str:
        asked = [lib.package, lib.modules, lib.extra, version, codes, others, python]
        return _digest(MEASURE_FORMAT, asked, self.newest_jax, self.runner)

    def measure(
        self, lib: Library, version: str, blocks: list[readme_code.Block], others: list[str], python: str
    ) -> dict[str, Any]:
        """What running the blocks showed with this Python (the harness's answer, or `failed`: why there is none),
        from the cache where the same was measured before."""
        path = self.cache / "derived" / "readme-calls" / f"{lib.package}.json"
        key = self.key(lib, version, [b.code for b in blocks], others, python)
        if path.is_file():
            kept = wheels.load_json(path)
            if isinstance(kept, dict) and kept.get("key") == key:
                return dict(kept["measured"])
        measured = self._run(lib, version, blocks, others, self.pythons[python])
        wheels.dump_json(path, {"key": key, "measured": measured})
        return measured

    def _run(
        self, lib: Library, version: str, blocks: list[readme_code.Block], others: list[str], interpreter: str
    ) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="envaudit-readme-") as scratch:
            root = Path(scratch)
            venv = root / "venv"
            env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_", "PYTHON"))}
            env |= {"UV_CACHE_DIR": str(self.cache / "uv"), "UV_NO_PROGRESS": "1"}
            made = subprocess.run(
                [*UV, "venv", "-q", "--no-config", "--python", interpreter, str(venv)],
                capture_output=True,
                text=True,
                env=env,
                timeout=INSTALL_S,
                check=False,
            )
            if made.returncode:
                return {"failed": "install", "said": _last(made.stderr, root)}
            python = str(venv / "bin" / "python")
            wanted = f"{lib.package}[{lib.extra}]" if lib.extra else lib.package
            pins = [f"{wanted}=={version}", "jax", *others]
            try:
                install = subprocess.run(
                    [*UV, "pip", "install", "-q", "--no-config", "--python", python, *pins],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=INSTALL_S,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return {"failed": "install", "said": f"the install took more than {INSTALL_S} s"}
            if install.returncode:
                return {"failed": "install", "said": _last(install.stderr, root)}
            return self._blocks(lib, blocks, python, root)

    def _blocks(self, lib: Library, blocks: list[readme_code.Block], python: str, root: Path) -> dict[str, Any]:
        measured = self._harness(lib, [b.code for b in blocks], python, root)
        results = measured.get("results") or []
        if len(results) > 1 and results[-1].get("status") == "ok" and not results[-1].get("written"):
            alone = self._harness(lib, [blocks[len(results) - 1].code], python, root)  # as the probe runs it
            measured |= {"results": [*results[:-1], *(alone.get("results") or [{"status": "raised"}])]}
        return measured

    def _harness(self, lib: Library, codes: list[str], python: str, root: Path) -> dict[str, Any]:
        home, work, tmp = root / "home", root / "work", root / "tmp"
        for directory in (home, work, tmp):
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
        request = {
            "distribution": lib.package,
            "modules": lib.modules,
            "blocks": [{"code": code, "modules": lib.modules} for code in codes],
            "bound": BLOCK_S,
            "watch": [str(home), str(work), str(tmp)],
        }
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "JAX_PLATFORMS": "cpu",
            "MPLBACKEND": "Agg",
            **NO_NETWORK,
        }
        bound = 120 + BLOCK_S * len(codes)  # the imports, then each block
        try:
            done = subprocess.run(
                [python, "-c", HARNESS, str(RUNNER), json.dumps(request)],
                capture_output=True,
                text=True,
                cwd=work,
                env=env,
                timeout=bound,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"failed": "timeout", "said": f"the imports and blocks took more than {bound} s"}
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines or "results" not in lines[-1]:  # died importing the library, or running a block
            said = _last(done.stderr, root) or f"exit {done.returncode}"
            return {"failed": "raised" if lines else "import", "said": said}
        answer: dict[str, Any] = lines[-1]
        return answer


EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt): ")  # a traceback's last line


def _last(text: str, root: Path) -> str:
    """The exception a traceback ends with, else the last line that says something (no path of this machine)."""
    lines = [line.strip() for line in text.replace(str(root), "ENV").splitlines() if line.strip()]
    raised = [line for line in lines if EXCEPTION.match(line)]
    return (raised or lines or [""])[-1][:300]


def judged(
    lib: Library, version: str, blocks: list[readme_code.Block], measured: dict[str, Any], python: str
) -> Kept | Rejected:
    """The first block that ran within its bound, quickly enough and writing nothing; else why none is kept."""
    if failed := measured.get("failed"):
        return Rejected(lib.package, str(failed), str(measured.get("said", "")))
    results = list(measured.get("results") or [])
    for block, result in zip(blocks, results, strict=False):
        if result.get("status") == "ok" and not result.get("written") and result["seconds"] <= MAX_SECONDS:
            source = f"https://pypi.org/project/{lib.package}/{version}/ (README lines {block.first}-{block.last})"
            call = call_name(block.code, lib.modules)
            return Kept(
                lib.package,
                str(measured["version"]),
                str(measured["jax"]),
                python,
                float(result["seconds"]),
                lib.modules,
                call,
                source,
                block.code.strip("\n") + "\n",
            )
    tried = [f"lines {b.first}-{b.last}: {_result(r)}" for b, r in zip(blocks, results, strict=False)]
    last = results[-1] if results else {"status": "raised"}
    reason = {"ok": "writes" if last.get("written") else "slow", "timeout": "timeout"}.get(last["status"], "raised")
    return Rejected(lib.package, reason, tried[-1] if tried else "", tried)


def _result(result: dict[str, Any]) -> str:
    if result.get("status") == "timeout":
        return f"no return within {BLOCK_S} s"
    if result.get("written"):
        return f"wrote {', '.join(result['written'])}"
    if result.get("status") == "ok":
        return f"took {result['seconds']:g} s"
    return str(result.get("error", "raised"))


def derive(
    cache: Path, offline: bool, pythons: dict[str, str], only: list[str] | None = None
) -> tuple[list[Kept], list[Rejected]]:
    """Each library without a hand-written call: its kept block, or why it has none; one library at a time."""
    mine = hand_written()
    chosen = [lib for lib in libraries() if lib.package not in mine and lib.modules]
    chosen = [lib for lib in chosen if not only or lib.package in only]
    jax = str(wheels.project_json("jax", cache, offline)["info"]["version"])
    measurer = Measurer(cache, pythons, jax)
    modules = {m: lib.package for lib in libraries() for m in lib.modules}
    kept: list[Kept] = []
    rejected: list[Rejected] = []
    for lib in chosen:
        started = time.monotonic()
        data = wheels.project_json(lib.package, cache, offline)
        version = str(data["info"]["version"])
        requires = list(data["info"].get("requires_dist") or [])
        lib = replace(lib, extra=jax_extra(requires), optional_jax=not requires_jax(requires))
        choice = choose(lib.package, str(data["info"].get("description") or ""), lib.modules, lib.optional_jax)
        python = python_for(str(data["info"].get("requires_python") or ""), list(pythons))
        if choice.rejected is None and not python:
            said = f"it requires Python {data['info'].get('requires_python')}; here: {', '.join(pythons)}"
            choice = Choice([], Rejected(lib.package, "install", said))
        if choice.rejected is not None:
            rejected.append(choice.rejected)
            print(f"{lib.package}: {choice.rejected.why()}", flush=True)
            continue
        others = sorted(
            {
                modules[m]
                for b in choice.candidates
                for m in _imports(b.code)
                if modules.get(m, lib.package) != lib.package
            }
        )
        measured = measurer.measure(lib, version, choice.candidates, others, python)
        found = judged(lib, version, choice.candidates, measured, python)
        if isinstance(found, Kept):
            kept.append(found)
            said = f"kept {found.source}, {found.seconds:g} s"
        else:
            rejected.append(found)
            said = found.why()
        print(f"{lib.package}: {said} ({time.monotonic() - started:.0f} s)", flush=True)
    return kept, rejected


def _imports(code: str) -> set[str]:
    """The modules the code imports (its top-level module and each dotted prefix: orbax.checkpoint's orbax too)."""
    try:
        tree = wheels.parse(code)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    for name in quickstart.imported_modules(tree):
        parts = name.split(".")
        found.update(".".join(parts[:cut]) for cut in range(1, len(parts) + 1))
    return found


def render(kept: list[Kept], rejected: list[Rejected], read: str, python: str) -> str:
    groups = Counter(r.reason for r in rejected)
    prose = (
        "The smoke calls read from the libraries' READMEs: DERIVED by derive/tables/readme_calls.py, do not edit by"
        " hand. For each library of libraries.toml with no hand-written call (probes/calls/<distribution>.py wins),"
        " the first code block of its newest release's README (PyPI's long description) that is a self-contained"
        " quickstart (derive/sources/quickstart.py) and that ran, in a fresh uv environment on a CPU with no network,"
        " with that release and the jax its resolver picked, returning within"
        f" {MAX_SECONDS:g} s and writing no file: `version` and `jax` are what it ran with, `seconds` what the block"
        " took after the imports (compiling included, a 2-core CPU), `source` the README's lines. The imports probe"
        " runs it as the library's call (probes/calls/_readme.py, from probes/calls/_readme.json, generated from"
        " this table); what it raises counts against the library only where the library's code raised it."
        " `[[rejected]]`: the libraries without a block, and why."
    )
    header = textwrap.wrap(prose, width=116, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)
    counted = ", ".join(f"{n} {reason}" for reason, n in sorted(groups.items(), key=lambda g: (-g[1], g[0])))
    counts = f"{len(kept)} kept of {len(kept) + len(rejected)} libraries; rejected: {counted}"
    header += textwrap.wrap(counts, width=116, initial_indent="# ", subsequent_indent="# ")
    lines = [
        *header,
        "source = \"https://pypi.org/pypi/NAME/json (the newest release's README, info.description), each block run"
        ' in a uv environment"',
        f'read = "{read}, Python {python}, {len(kept)} kept of {len(kept) + len(rejected)} libraries"',
    ]
    for row in sorted(kept, key=lambda k: k.package):
        lines += ["", "[[library]]", f"package = {wheels.toml_string(row.package)}"]
        lines.append(f"version = {wheels.toml_string(row.version)}")
        lines.append(f"jax = {wheels.toml_string(row.jax)}")
        lines.append(f"python = {wheels.toml_string(row.python)}")
        lines.append(f"seconds = {row.seconds:g}")
        lines.append(f"modules = {wheels.toml_list(row.modules)}")
        lines.append(f"call = {wheels.toml_string(row.call)}")
        lines.append(f"source = {wheels.toml_string(row.source)}")
        lines.append(f"code = {toml_text(row.code)}")
    for r in sorted(rejected, key=lambda r: r.package):
        lines += ["", "[[rejected]]", f"package = {wheels.toml_string(r.package)}"]
        lines.append(f"reason = {wheels.toml_string(r.reason)}")
        lines.append(f"why = {wheels.toml_string(r.why())}")
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # a block's text that TOML would read back otherwise fails here, not in the probe
    return text


def toml_text(text: str) -> str:
    """A multi-line TOML literal string of the text (read back as it is); a basic string where it holds what a
    literal one cannot (three quotes, a control character)."""
    if "'''" in text or re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text):
        return wheels.toml_string(text).replace("\n", "\\n")
    return "'''\n" + text + "'''"


def main(argv: list[str] | None = None) -> int:
    parser = wheels.arguments(__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--only", nargs="*", default=None, help="these libraries only (the others are left out)")
    parser.add_argument(
        "--python",
        action="append",
        default=None,
        help="an interpreter (a path, or a version uv finds) to build with, the first a release accepts; again for"
        f" another (default: this one, then {', '.join(PYTHONS[1:])})",
    )
    options = parser.parse_args(argv)
    cache = wheels.cache_of(options.cache)
    started = time.monotonic()
    pythons = interpreters(options.python or [sys.executable, *PYTHONS[1:]])
    kept, rejected = derive(cache, options.offline, pythons, options.only)
    versions = [(k.package, k.version) for k in kept] + [("jax", k.jax) for k in kept]
    # the newest upload among the releases the kept blocks ran with, not today: the same runs give the same bytes
    read = max((wheels.newest_upload(p, [v], cache) for p, v in versions), default="")
    python = ", ".join(sorted({k.python for k in kept}) or pythons)
    options.output.write_text(render(kept, rejected, read, python))
    groups = Counter(r.reason for r in rejected)
    print(f"{len(kept)} kept, {len(rejected)} rejected ({dict(groups)}): {options.output.name} in "
          f"{time.monotonic() - started:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
