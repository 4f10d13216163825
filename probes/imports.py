"""Probe imports: every installed library that depends on jax, imported as its users import it.

`pip check` reads declared version ranges; it cannot see that dm-haiku 0.0.12 calls `jax.interpreters.xla.xe` at
import, which jax 0.4.36 removed, or that jax 0.4.20's `jax.scipy.linalg` needs a SciPy function SciPy 1.17 no
longer has. Importing shows it, in seconds: this probe imports, in the audited interpreter and after jax itself,

- each of jax's own optional submodules that `import jax` does not load (`jax.scipy.*`, read from jax's package
  directory), and
- every installed distribution whose requirements (Requires-Dist, an extra's included) name jax or jaxlib, but
  jax's own packages (jaxlib and the plugins, which `import jax` loads), and every one envaudit names in
  ENVAUDIT_IMPORT (the planned libraries around jax, which may declare no jax: PennyLane, jaxtyping, pymc; Keras
  keeps its own rule, its backend): its top-level modules (`top_level.txt`,
  else its RECORD; a namespace package, like `orbax`, through its packages that have an `__init__.py`; never a
  source tree the wheel ships by mistake, a directory with a project's build files: flax 0.10.0's `flaxlib/`).

A library that serves several frameworks keeps its JAX code in packages named `jax`: those (the shallowest) are
imported too (`import tensorflow_probability` is lazy; its JAX users import `tensorflow_probability.substrates.jax`),
and a top level that needs an optional dependency that is not installed (TensorFlow) is `needs`, never a failure.

Known answer: each import either works or raises; nothing is computed. Each outcome is one of `ok`, `error` (the
exception as Python's last traceback line prints it, and the library's own line that raised it), `needs` (an
optional dependency is missing), `not_tried`. The imports run in a thread of their own, since an import runs in C
and cannot be interrupted: the probe answers at 70 % of its bound (envaudit's child says it, ENVAUDIT_PROBE_BOUND_S)
with what they showed by then, and names the one in flight; what was not reached is `not_tried` (unknown, not a
failure). Measured here: 22 libraries with TensorFlow installed take 71 s to import (distrax 22 s, jax-md 15 s);
jax's own modules and flax, optax, chex, orbax-checkpoint and treescope 1.3 s. Before each import a line
`envaudit imports: importing MODULE (DIST VERSION)` is written on stderr, and each import in flight and each
distribution's outcomes are told as progress (`_kit.progress`), so that an import that kills the process is named in
the probe's crash, as that library's error with what it printed, and the outcomes before it are kept.

Then each library that imported runs its smoke call, where `calls/<distribution>.py` beside this file has one (a
flax train step, an optax update, an orbax save and restore, a diffrax solve...: what its README shows users call,
at tiny sizes, on the CPU): an import can work where the main call raises (diffrax 0.5.0's `diffeqsolve` with jax
0.10, jaxopt 0.8.3's `OptaxSolver.run` with jax 0.6). A library with no such file runs its README's quickstart
block, where the derivation kept one (`calls/_readme.py`, from `calls/_readme.json`: the first block of its README
that ran on its own), after every hand-written call, and only where what it took where it was measured fits twice
in what is left of the bound (else `not_tried`); what it raises in its own lines, or where no code of the library
reached, is no evidence and is `skip`. Each call is one outcome, `ok`, `error` (as an import's),
`skip` (not applicable here: its import failed, Keras on another backend, jax itself cannot compute, a README
block's own failure; why in `error`) or `not_tried`, in the
same thread, under the same bound, after a line `envaudit imports: calling CALL (DIST VERSION)` on stderr. Where no
`calls` directory is beside this file (the standalone program `envaudit probes imports --script` prints), no call
is made.

Threshold: none; the outcomes are facts about the environment, not a wrong answer of the probe, which passes when it
could try every import (skip: nothing installed depends on jax): envaudit reports them as `facts.jax.imports` and
`facts.jax.calls` (the result's `facts`), where its rules judge them (checks `import-fails` and `call-fails`, one
finding per distribution, folded under a rule that explains it). Metrics: tried, failed (numbers of modules),
called, calls_failed (numbers of calls).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import re
import sys
import sysconfig
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath
from typing import Any

import _kit as kit

NAME = "imports"
# Expected seconds on a 2-core CPU after jax is imported: flax, optax, chex, orbax-checkpoint and treescope import
# in 1.3 s together (measured, jax 0.10.1); neural-tangents brings TensorFlow, which takes more (health runs what
# fits its bound).
COST_S = 1.5
PLATFORM_COST_S = {"tpu": 1.8}  # cold on a TPU v5e, jax 0.10.2 (2026-12-06): 1.76, 1.61, beside the chip's child s
OFF_DEVICE = True  # it computes nothing on a device: beside an accelerator's child, it runs on the CPU
# jax's own distributions: `import jax` loads them (a broken one is jax's failure, in the jax facts)
OWN = re.compile(r"^(jax|jaxlib|jax-(cuda|rocm)\d*-(plugin|pjrt)|jax-metal|libtpu(-nightly)?|jax-tpu-embedding)$")
DEPENDS_ON = {"jax", "jaxlib"}
NOT_MODULES = {"tests", "test", "testing", "docs", "examples", "benchmarks", "scripts"}  # shipped by mistake
# a project's own build files: a top-level directory that holds one is a source tree shipped by mistake, not a package
# (flax 0.10.0's wheel ships flaxlib/, the Rust project of a later extension, with Cargo.toml and pyproject.toml and
# no compiled module: flax never imports it, and `import flaxlib.flaxlib` fails in every environment)
BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "Cargo.toml", "CMakeLists.txt", "meson.build")
SHARE = 0.7  # of the probe's bound, after which the probe answers with what the imports showed by then
FIT = 2.0  # a README's block starts where twice what it took where it was measured is left of that share
ALONE_S = 600.0  # the bound of a probe run alone (python probes/imports.py)
MAX_TEXT = 2000  # characters of an exception's text kept
MAX_WARNINGS = 3  # jax's deprecation warnings kept per import
HERE = os.path.dirname(os.path.abspath(__file__))  # the probe's own frames are never a library's line
CALLS = os.path.join(HERE, "calls")  # one smoke call per library: calls/<distribution>.py (absent: none is made)


Timed = Callable[[str, Callable[[str], Any]], Any]  # runs one import, knowing its module (Importer._timed)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement(line: str) -> tuple[str, bool]:
    """(canonical name, whether only an extra asks for it) of one Requires-Dist line (standard library only)."""
    found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
    name = canonical(found.group(1)) if found else ""
    _, _, marker = line.partition(";")
    return name, "extra" in marker


def name_of(dist: importlib.metadata.Distribution) -> str:
    return str((dist.metadata.get_all("Name") or [""])[0])


def keras_backend() -> str:
    """The backend Keras 3 imports: KERAS_BACKEND, else the `backend` of keras.json in KERAS_HOME or ~/.keras (keras
    3's keras/src/backend/config.py; its default is tensorflow)."""
    if said := os.environ.get("KERAS_BACKEND"):
        return said
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return "tensorflow"
    return str(config.get("backend", "tensorflow")) if isinstance(config, dict) else "tensorflow"


def on_jax(name: str, dist: importlib.metadata.Distribution) -> bool:
    """A library that imports jax without requiring it: Keras 3 with the jax backend (it declares no framework)."""
    version = str(dist.version or "")
    return (
        name == "keras"
        and version.split(".")[0].isdigit()
        and int(version.split(".")[0]) >= 3
        and (keras_backend() == "jax")
    )


def dependents() -> list[importlib.metadata.Distribution]:
    """The installed distributions that run on jax, each once (the first on sys.path, which is the one `import`
    finds), by name: those whose requirements name jax or jaxlib, and Keras 3 on its jax backend; those that require
    one of them (haliax 1.2 requires equinox, not jax, and fails at `import haliax` on jax's API); and those that
    declare no jax but ship a package named `jax` below their top level, their JAX backend (phiml's
    `phiml.backend.jax`, loaded only once a user picks JAX: `import phiml` works where it does not)."""
    installed: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():
        name = canonical(name_of(dist))
        if name and name not in installed and not OWN.match(name):
            installed[name] = dist
    # each one's requirements read once (METADATA, from disk at every `dist.requires`): (name, only for an extra)
    reads = {name: [requirement(line) for line in dist.requires or ()] for name, dist in installed.items()}
    found = {name for name, dist in installed.items() if {r for r, _ in reads[name]} & DEPENDS_ON or on_jax(name, dist)}
    # what requires (not only for an extra) a library that requires jax (not only for an extra), to a fixed point:
    # optree names jax for an extra only, so Keras, which requires optree, is not on jax through it
    needs = {name: {r for r, optional in read if r and not optional} for name, read in reads.items()}
    needing = {name for name, wanted in needs.items() if wanted & DEPENDS_ON}
    for _ in range(MAX_DEPTH):
        more = {name for name, wanted in needs.items() if name not in needing and wanted & needing}
        if not more:
            break
        needing |= more
    found |= needing
    # what envaudit asks for by name (a build's planned libraries around jax), whatever it declares; Keras 3 on its
    # backend's word alone (on_jax): on another backend its import is not a jax fact
    found |= {name for name in named() if name in installed and name != "keras"}
    # Keras 3 ships all its backends and imports the one configured (on_jax): its jax package is not its JAX use
    found |= {n for n, dist in installed.items() if n not in found and n != "keras" and backend_packages(dist)}
    return [installed[name] for name in sorted(found)]


MAX_DEPTH = 4  # requirements followed from a library on jax: haliax -> equinox -> jax is one
NO_JAX = "jax is not installed, and no installed library imports it at a module's top"
TOP_IMPORT = re.compile(rb"^(?:import jax|from jax)\b", re.MULTILINE)  # unindented: no try, if or def guards it


def needing_jax() -> list[importlib.metadata.Distribution]:
    """Where jax is not installed: the distributions (jax's own left out) with a module that imports jax at its
    top, unguarded (an unindented `import jax` or `from jax...`), each once: jaxns 2.6.4 declares no requirement and
    `import jaxns` raises for want of jax. Whether a library's import reaches such a module (transformers' Flax
    models are loaded lazily) is the import's to show, not this reading's."""
    found: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():
        name = canonical(name_of(dist))
        if name and name not in found and not OWN.match(name) and any(map(_imports_jax, _sources(dist))):
            found[name] = dist
    return [found[name] for name in sorted(found)]


def _sources(dist: importlib.metadata.Distribution) -> Iterator[pathlib.Path]:
    for path in files(dist):
        if path.suffix == ".py" and path.parts[0] not in NOT_MODULES:
            yield pathlib.Path(str(dist.locate_file(str(path))))


def _imports_jax(path: pathlib.Path) -> bool:
    try:
        return TOP_IMPORT.search(path.read_bytes()) is not None
    except OSError:
        return False


def backend_packages(dist: importlib.metadata.Distribution) -> bool:
    """Whether it ships a package named `jax` below its top level (RECORD's `top/.../jax/__init__.py`)."""
    return any(f.name == "__init__.py" and len(f.parts) > 2 and f.parent.name == "jax" for f in files(dist))


@functools.cache  # read for its modules, its jax packages, its JAX part and its reading: its RECORD parsed once
def files(dist: importlib.metadata.Distribution) -> tuple[PurePosixPath, ...]:
    """The distribution's installed files (RECORD) inside the environment's site directory."""
    return tuple(
        PurePosixPath(str(f))
        for f in dist.files or ()
        if ".." not in PurePosixPath(str(f)).parts and not str(f).split("/")[0].endswith((".dist-info", ".data"))
    )


def modules(dist: importlib.metadata.Distribution) -> list[str]:
    """Its top-level modules as users import them: top_level.txt, else the RECORD's; a namespace package (no
    `__init__.py`) through its packages that have one, but a directory that holds a project's build files
    (BUILD_FILES): a source tree shipped in the wheel by mistake, which no user imports."""
    paths = files(dist)
    listed = (dist.read_text("top_level.txt") or "").split()
    tops = listed or sorted({p.parts[0] if len(p.parts) > 1 else p.stem for p in paths if p.suffix == ".py"})
    tops = [t for t in dict.fromkeys(tops) if t.isidentifier() and not t.startswith("_") and t not in NOT_MODULES]
    tops = [t for t in tops if findable(t)]  # top_level.txt may name what is not there
    inits = {p.parent for p in paths if p.name == "__init__.py"}
    found = []
    for top in tops:
        if PurePosixPath(top) in inits or PurePosixPath(top + ".py") in paths or not paths:
            found.append(top)
            continue
        if any(PurePosixPath(top, name) in paths for name in BUILD_FILES):  # a source tree, not a package
            continue
        below = sorted(".".join(p.parts) for p in inits if len(p.parts) == 2 and p.parts[0] == top)
        found += below or [top]
    return found


def findable(top: str) -> bool:
    """Whether a top-level module is there to import; one whose finder raises (an import hook that breaks it) is,
    so that its import is tried and the error recorded, where asking first would end the probe's imports."""
    try:
        return importlib.util.find_spec(top) is not None
    except Exception:
        return True


def jax_packages(dist: importlib.metadata.Distribution, top: str) -> list[str]:
    """Its packages named `jax` under `top`, the shallowest only: how a library whose top level needs an optional
    framework serves JAX (tensorflow_probability.substrates.jax)."""
    named = [p for p in {f.parent for f in files(dist) if f.name == "__init__.py"} if p.parts[0] == top]
    named = [p for p in named if p.name == "jax"]
    if not named:
        return []
    depth = min(len(p.parts) for p in named)
    return sorted(".".join(p.parts) for p in named if len(p.parts) == depth)


def required(dist: importlib.metadata.Distribution) -> set[str]:
    """What it requires whatever extras are asked for."""
    return {name for name, optional in map(requirement, dist.requires or ()) if name and not optional}


def jax_submodules() -> list[str]:
    """jax's optional submodules that `import jax` does not load: jax.scipy's, from jax's package directory."""
    spec = importlib.util.find_spec("jax")
    found = []
    for location in spec.submodule_search_locations or () if spec else ():
        directory = os.path.join(location, "scipy")
        for entry in sorted(os.listdir(directory)) if os.path.isdir(directory) else ():
            name, ext = os.path.splitext(entry)
            package = os.path.isfile(os.path.join(directory, entry, "__init__.py"))
            if not name.startswith("_") and name.isidentifier() and (ext == ".py" or package):
                found.append(f"jax.scipy.{name}")
    return list(dict.fromkeys(found))


def where(exc: BaseException, distribution: str) -> str:
    """The line that raised, relative to its sys.path entry (`haiku/_src/transform.py:341`): the innermost frame in
    an installed package but jax's own (whose deprecation table raises what a library asked of it) unless the
    import is jax's, and but the standard library's and this probe's (a smoke call's file); "" where there is
    none."""
    stdlib = os.path.abspath(sysconfig.get_paths()["stdlib"])
    roots = sorted({os.path.abspath(p) for p in sys.path if p}, key=len, reverse=True)
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = os.path.abspath(frame.filename)
        if path.startswith(HERE + os.sep):  # this probe, its kit, a smoke call's own file
            continue
        inside = next((r for r in roots if path.startswith(r + os.sep)), None)
        if frame.filename.startswith("<") or inside is None or inside == stdlib:
            continue
        relative = os.path.relpath(path, inside).replace(os.sep, "/")
        if relative.split("/")[0] in ("jax", "jaxlib") and distribution != "jax":
            continue
        return f"{relative}:{frame.lineno}"
    return ""


def attempt(module: str, distribution: str, version: str) -> tuple[dict[str, Any], BaseException | None]:
    """One import, timed, with jax's deprecation warnings it raised; the exception, if any."""
    print(f"envaudit imports: importing {module} ({distribution} {version})", file=sys.stderr, flush=True)
    kit.progress("importing", doing={"imports": {"distribution": distribution, "version": version, "module": module}})
    start = time.monotonic()
    error: BaseException | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            importlib.import_module(module)
        except Exception as exc:  # an import that raises is the finding; one that kills the process is a crash
            error = exc
    outcome: dict[str, Any] = {
        "distribution": distribution,
        "version": version,
        "module": module,
        "status": "ok",
        "seconds": round(time.monotonic() - start, 3),
    }
    said = [str(w.message) for w in caught if "jax" in str(w.message).lower()][:MAX_WARNINGS]
    if said:
        outcome["warnings"] = [text[:MAX_TEXT] for text in said]
    if error is not None:
        outcome.update(status="error", error=f"{type(error).__name__}: {error}"[:MAX_TEXT])
        if at := where(error, distribution):
            outcome["where"] = at
    return outcome, error


def missing_module(error: BaseException | None, module: str) -> str | None:
    """The top-level module another distribution provides that a failed import did not find, or None (another
    error, or the module itself missing)."""
    if not isinstance(error, ModuleNotFoundError) or not error.name:
        return None
    missing = error.name.split(".")[0]
    return None if missing == module.split(".")[0] else missing


def missing_option(error: BaseException | None, module: str, dist: importlib.metadata.Distribution) -> str | None:
    """The optional dependency a failed import needs and does not find (its top-level name), or None."""
    missing = missing_module(error, module)
    if missing is None or provider(missing) in required(dist) | DEPENDS_ON:
        return None
    if not declared(dist, missing):  # objax 1.8.0 imports six and declares it nowhere: `import objax` fails
        return None
    return missing


# import names that are not their distribution's (the extras that declare them name the distribution)
DISTRIBUTION_OF = {
    "pil": "pillow",
    "yaml": "pyyaml",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "cv2": "opencv-python",
    "attr": "attrs",
    "grpc": "grpcio",
    "google": "protobuf",
    "tree": "dm-tree",
    "haiku": "dm-haiku",
    "dateutil": "python-dateutil",
    "pylab": "matplotlib",  # matplotlib's wheels install pylab.py beside the package (its RECORD)
    "mpl_toolkits": "matplotlib",
}


def provider(module: str) -> str:
    """The distribution that provides a top-level module, as far as names say."""
    return DISTRIBUTION_OF.get(canonical(module), canonical(module))


def declared(dist: importlib.metadata.Distribution, module: str) -> bool:
    """Whether the distribution asks for what provides this module anywhere (an extra included): a module it
    declares only in an extra is optional; one it declares nowhere is a dependency it forgot. A name matches its
    builds and prefixes (tensorflow: tensorflow-cpu; tensorflow: tf-nightly's does not, nor need it)."""
    wanted = provider(module)
    names = {name for name, _ in map(requirement, dist.requires or ())}
    return any(n == wanted or n.startswith(f"{wanted}-") or n.endswith(f"-{wanted}") for n in names)


def library(dist: importlib.metadata.Distribution, timed: Timed) -> list[dict[str, Any]]:
    """Every module of one distribution, imported, and its packages named `jax` (where a library that serves
    several frameworks keeps its JAX code: `import tensorflow_probability` is lazy, its JAX users import
    `tensorflow_probability.substrates.jax`); a top level that needs a missing optional dependency is `needs`.
    Then the submodules envaudit asks for (SUBMODULES: those its tables say break at their own import, such as
    transformers' Flax models, which a lazy `import transformers` does not reach), where their top level worked."""
    found = []
    part = jax_files(dist)
    for module in modules(dist):
        outcome, missing = timed(module, lambda m: tried(m, dist))
        found.append(outcome | {"jax_files": part})
        if outcome["status"] == "ok" or missing is not None:  # what failed otherwise fails its packages too
            packages = jax_packages(dist, module.split(".")[0])
            found += [timed(p, lambda m: tried(m, dist))[0] for p in packages if p != module]
    worked = {o["module"] for o in found if o["status"] == "ok"}
    done = {o["module"] for o in found}
    for module in asked(canonical(name_of(dist))):
        if module not in done and module.split(".")[0] in worked:
            found.append(timed(module, lambda m: tried(m, dist))[0])
    return found


JAX_PART = re.compile(r"(?:^|[/._])(?:jax|flax)(?:[/._]|$)", re.IGNORECASE)


def jax_files(dist: importlib.metadata.Distribution) -> int:
    """How many of the distribution's module files name jax or flax in their path: its JAX part, by the names it
    gives it (transformers 4.x's modeling_flax_*.py, diffusers' *_flax.py, tensorflow_probability/substrates/jax).
    A release that drops the part (transformers 5, diffusers 0.42.1) has none, where the installed one had some:
    what a fix moving it there would take from the user."""
    return sum(
        1 for f in files(dist) if f.suffix == ".py" and JAX_PART.search(str(f)) and not TESTS.intersection(f.parts)
    )


TESTS = frozenset({"test", "tests", "testing"})  # a wheel that stops shipping its tests drops no part


MAX_READ = 4  # modules imported, and calls read, per library for its uses of jax names the jax here lacks


def source(dist: importlib.metadata.Distribution, path: PurePosixPath) -> bytes:
    """A file of the distribution, as installed (b"" where it cannot be read)."""
    try:
        return pathlib.Path(str(dist.locate_file(str(path)))).read_bytes()
    except OSError:
        return b""


def reading(reader: Any, dist: importlib.metadata.Distribution, paths: list[PurePosixPath]) -> dict[str, Any]:
    """The uses of jax names in each of the distribution's files (calls/_uses.py), as kept where the files did not
    change since they were read (envaudit's cache), else read now and kept."""
    stats = []
    for path in paths:
        try:
            st = os.stat(str(dist.locate_file(str(path))))
        except OSError:
            continue
        stats.append((str(path), st.st_size, st.st_mtime_ns))
    key = reader.cache_key(canonical(name_of(dist)), str(dist.version), stats)
    kept = reader.load(key)
    if kept is not None:
        return dict(kept)
    found = {path: reader.read(source(dist, PurePosixPath(path))) for path, _, _ in stats}
    reader.store(key, found)
    return found


@functools.cache
def uses_reader() -> Any:
    """calls/_uses.py, loaded by its path, or None where it is not beside this file (the standalone program)."""
    path = os.path.join(CALLS, "_uses.py")
    spec = importlib.util.spec_from_file_location("_envaudit_uses", path) if os.path.isfile(path) else None
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


CALLING: dict[str, str] = {}  # distribution -> the call its file makes, once the file has said it (smoke)
SUBMODULES = "ENVAUDIT_SUBMODULES"  # distribution=module,module;... (envaudit/collect/build.py writes it)
IMPORT = "ENVAUDIT_IMPORT"  # distribution,distribution: imported whatever they declare (collect/build.py writes it)


def named() -> set[str]:
    """The distributions envaudit asks this probe to import whatever they declare (none where it names none)."""
    return {canonical(n.strip()) for n in os.environ.get(IMPORT, "").split(",") if n.strip()}


def asked(distribution: str) -> list[str]:
    """The submodules of a distribution envaudit asks this probe to import (none where it asks for none)."""
    for part in os.environ.get(SUBMODULES, "").split(";"):
        name, _, listed = part.partition("=")
        if canonical(name.strip()) == distribution:
            return [m for m in (s.strip() for s in listed.split(",")) if all(p.isidentifier() for p in m.split("."))]
    return []


def tried(module: str, dist: importlib.metadata.Distribution) -> tuple[dict[str, Any], str | None]:
    """One module of a distribution imported: its outcome (`needs` where it raised for want of an optional
    dependency that is not installed), and that dependency."""
    outcome, error = attempt(module, canonical(name_of(dist)), str(dist.version))
    missing = missing_option(error, module, dist)
    if missing is not None:
        said = f"{module} needs {missing}, which is not installed: {outcome['error']}"[:MAX_TEXT]
        outcome = {**outcome, "status": "needs", "error": said}
    elif forgot := undeclared(error, module, dist):
        outcome = {**outcome, "undeclared": forgot}
    return outcome, missing


def undeclared(error: BaseException | None, module: str, dist: importlib.metadata.Distribution) -> str | None:
    """The distribution a failed import needs, declares nowhere and does not find (objax 1.8.0 imports six), by
    the name that installs it: what the user installs to get past it. None where the import failed otherwise."""
    missing = missing_module(error, module)
    if missing is None or declared(dist, missing):
        return None
    # jax, where it is installed, fails as jax (its own failure); where it is not, it is what this one forgot
    if provider(missing) in DEPENDS_ON and importlib.util.find_spec("jax") is not None:
        return None
    return provider(missing)


def call_files() -> dict[str, str]:
    """The smoke calls beside this probe: canonical distribution name -> its file (none where `calls/` is absent)."""
    names = sorted(os.listdir(CALLS)) if os.path.isdir(CALLS) else []
    return {canonical(n[:-3]): os.path.join(CALLS, n) for n in names if n.endswith(".py") and not n.startswith("_")}


def on_cpu() -> Any:
    """A context that makes jax's default device the CPU (a smoke call computes off the accelerator), where jax
    has a CPU backend; else nothing."""
    import contextlib

    import jax

    try:
        return jax.default_device(jax.devices("cpu")[0])
    except Exception:  # no CPU backend (JAX_PLATFORMS without cpu): the default device, as the user's
        return contextlib.nullcontext()


def smoke(path: str, distribution: str, version: str) -> dict[str, Any]:
    """One library's hand-written smoke call (`run()` of its file), timed: ok, error (as an import's), or skip (its
    `skipped()` says why it does not apply here)."""
    start = time.monotonic()
    try:
        spec = importlib.util.spec_from_file_location(f"_envaudit_call_{canonical(distribution)}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        call = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(call)
    except Exception as error:  # a call file that does not load is an error of its call, as before
        said = {"distribution": distribution, "version": version, "call": distribution, "status": "error"}
        return said | {"error": f"{type(error).__name__}: {error}"[:MAX_TEXT], "seconds": elapsed(start)}
    name = str(getattr(call, "CALL", distribution))
    return made(distribution, version, name, call.run, getattr(call, "skipped", None), start=start)


def from_readme(block: dict[str, Any], distribution: str, version: str) -> dict[str, Any]:
    """One library's smoke call read from its README (calls/_readme.py): its block run as a hand-written call is,
    but what it raises counts against the library only where the library's code raised it (`_readme.own`); else
    it is skipped, saying why."""
    readme = readme_runner()
    name = str(block.get("call") or distribution)
    return made(
        distribution,
        version,
        name,
        functools.partial(readme.run, block, distribution),
        judge=functools.partial(readme.own, block=block, distribution=distribution),
    )


def made(
    distribution: str,
    version: str,
    name: str,
    run: Callable[[], object],
    skipped: Callable[[], object] | None = None,
    *,
    judge: Callable[[BaseException], str] | None = None,
    start: float | None = None,
) -> dict[str, Any]:
    """One smoke call made, timed, said before (a line on stderr, progress): ok, error (the exception as an
    import's, the library's line that raised it), skip where `skipped()` says why it does not apply, or where
    `judge` says what it raised is no evidence about the library, or it needs a module that is not installed
    (`needs`)."""
    start = time.monotonic() if start is None else start
    outcome: dict[str, Any] = {"distribution": distribution, "version": version, "call": name}
    print(f"envaudit imports: calling {name} ({distribution} {version})", file=sys.stderr, flush=True)
    kit.progress("calling", doing={"calls": dict(outcome)})
    CALLING[distribution] = name  # what the probe's answer names, should it never return
    try:
        why = str(skipped()) if skipped is not None else ""
        if why:
            return outcome | {"status": "skip", "error": why[:MAX_TEXT], "seconds": elapsed(start)}
        with warnings.catch_warnings(), on_cpu():
            warnings.simplefilter("ignore")  # a smoke call's deprecation warnings are not its outcome
            run()
    except (Exception, SystemExit) as error:  # a call that raises is the finding; one that kills the process a crash
        not_evidence = judge(error) if judge is not None else needs(error)
        if not_evidence:
            return outcome | {"status": "skip", "error": not_evidence[:MAX_TEXT], "seconds": elapsed(start)}
        if isinstance(error, SystemExit):
            raise
        outcome.update(status="error", error=f"{type(error).__name__}: {error}"[:MAX_TEXT])
        if at := where(error, distribution):
            outcome["where"] = at
    else:
        outcome["status"] = "ok"
    return outcome | {"seconds": elapsed(start)}


def needs(error: BaseException) -> str:
    """Why a smoke call's failure is no evidence about its library ("" where it is): it needs a module that is not
    installed (jaxopt's OptaxSolver without optax, an optional dependency jaxopt does not require): the call the
    README shows cannot be made here, as an import that needs a missing optional dependency is `needs`."""
    missing = error.name if isinstance(error, ModuleNotFoundError) and error.name else ""
    top = missing.split(".")[0]
    if not top or findable(top):
        return ""
    return f"not called: it needs {top}, which is not installed ({type(error).__name__}: {error})"[:MAX_TEXT]


def elapsed(start: float) -> float:
    return round(time.monotonic() - start, 3)


@functools.cache
def readme_runner() -> Any:
    """calls/_readme.py, loaded by its path (the probe imports nothing but the standard library, NumPy and its kit
    by name)."""
    spec = importlib.util.spec_from_file_location("_envaudit_readme", os.path.join(CALLS, "_readme.py"))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {CALLS}/_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def readme_blocks() -> dict[str, dict[str, Any]]:
    """The smoke calls read from READMEs (calls/_readme.py), by canonical distribution name; none where the runner
    is not beside this file or does not load."""
    if not os.path.isfile(os.path.join(CALLS, "_readme.py")):
        return {}
    try:
        found = readme_runner().blocks()
    except Exception:  # a runner that does not load: no README call, the hand-written ones still made
        return {}
    return {canonical(k): v for k, v in found.items()}


def jax_computes() -> str:
    """Why no smoke call is made: jax itself cannot compute here (JAX_PLATFORMS or JAX_PLATFORM_NAME naming a
    platform this machine lacks), which is jax's failure, in its facts, not a library's; "" where it computes.
    envaudit's child says so where jax's backend ended the process that reports its facts (an XLA flag XLA does
    not know aborts the process at jax's first use, which no `except` catches): ENVAUDIT_NO_CALLS."""
    if said := os.environ.get("ENVAUDIT_NO_CALLS"):
        return f"not called: {said}"[:MAX_TEXT]
    try:
        import jax
        import jax.numpy as jnp

        jax.devices()  # its default backend (JAX_PLATFORM_NAME=gpu without one: orbax asks for it)
        with on_cpu():
            float(jnp.ones(2).sum())
    except Exception as error:
        return f"not called: jax itself cannot compute here ({type(error).__name__}: {error})"[:MAX_TEXT]
    return ""


def imported_ok(outcomes: list[dict[str, Any]], distribution: str) -> str:
    """Why a distribution's smoke call is not made after its imports ("" where every module imported and one at
    least worked): a failed import is reported once, as the import's."""
    mine = [o for o in outcomes if o["distribution"] == distribution]
    if any(o["status"] == "error" for o in mine):
        return "not called: its import raised (the import's failure is the finding)"
    if not any(o["status"] == "ok" for o in mine):
        return "not called: none of its modules imported"
    return ""


class Importer(threading.Thread):
    """The imports, one after another, in a thread of their own: an import runs in C and cannot be interrupted, so
    the probe waits for them until its share of its bound and then answers with what they showed; one still in
    flight is named, those after it are `not_tried` (unknown, not failed). The smoke calls follow, the same way.
    The thread is a daemon: it ends with the child process."""

    def __init__(
        self, jax_version: str, dists: list[importlib.metadata.Distribution], until: float = float("inf")
    ) -> None:
        super().__init__(name="envaudit-imports", daemon=True)
        self.jax_version, self.dists, self.until = jax_version, dists, until
        self.lock = threading.Lock()
        self.outcomes: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        names = {canonical(name_of(d)) for d in dists}
        self.files = {k: v for k, v in call_files().items() if k in names}
        # a README's block where no hand-written call is (the hand-written one wins)
        self.blocks = {k: v for k, v in readme_blocks().items() if k in names and k not in self.files}
        self.current = ("", 0.0)  # the module being imported (or "call DIST") and since when
        self.stop = False

    def run(self) -> None:
        try:
            for module in jax_submodules():
                self._keep([self._timed(module, lambda m: attempt(m, "jax", self.jax_version)[0])])
            for dist in self.dists:
                self._keep(library(dist, self._timed))
            broken = jax_computes() if self.files or self.blocks else ""
            # the hand-written calls first, then the READMEs' blocks: a block never takes a hand-written call's time
            for source in (self.files, self.blocks):
                for dist in self.dists:
                    name, version = canonical(name_of(dist)), str(dist.version)
                    if name in source:
                        self._call(name, version, broken)
            for dist in self.dists:  # last: what no import or call reached, read (calls/_uses.py)
                self._read(dist)
        except Stopped:
            return

    def _read(self, dist: importlib.metadata.Distribution) -> None:
        """The library's code read for jax names the jax here lacks (calls/_uses.py), where every module of it
        imported (a failed import is the finding): a module with such a use at its import, which no import
        reached, is imported (the measurement; `read` says why); a use on a call is one call outcome `error`,
        read, not made (`read`: the name), at most MAX_READ of them, one per function, where its smoke call did not
        raise (that is its finding)."""
        name, version = canonical(name_of(dist)), str(dist.version)
        mine = [o for o in self.outcomes if o["distribution"] == name]
        if not self.jax_version or not mine or any(o["status"] == "error" for o in mine):
            return  # no jax to resolve its names in, or a failed import, which is the finding
        if (reader := uses_reader()) is None:
            return
        done = {o["module"] for o in mine}
        tops = {m.split(".")[0] for m in done}
        paths = [p for p in files(dist) if p.parts[0] in tops and reader.package_file(p.parts)]
        found = list(reader.broken((tuple(p.split("/")), uses) for p, uses in reading(reader, dist, paths).items()))
        at_import = {m: (f, u) for m, f, u, _ in reversed(found) if not u.function and m not in done}
        for module, (path, use) in sorted(at_import.items())[:MAX_READ]:
            outcome, _ = self._timed(module, lambda m: tried(m, dist))
            self._keep([outcome | {"read": f"{use.name} ({path}:{use.line})"}])
        calls: dict[str, dict[str, Any]] = {}
        if any(c["distribution"] == name and c["status"] == "error" for c in self.calls):
            found = []  # its smoke call raised: that is its finding, no call read beside it
        for module, path, use, raised in found:
            call = f"{module}.{use.function}"
            if use.function and call not in calls and len(calls) < MAX_READ:
                at = f"{path}:{use.line}"
                calls[call] = {"distribution": name, "version": version, "call": call, "status": "error"}
                said = f"{use.name}({use.keyword}=...)" if use.keyword else use.name
                calls[call] |= {"error": raised[:MAX_TEXT], "where": at, "read": said}
        with self.lock:
            self.calls += calls.values()
            if calls:
                kit.progress("called", facts={"calls": list(calls.values())})

    def _call(self, name: str, version: str, broken: str) -> None:
        if why := broken or imported_ok(self.outcomes, name):
            found = {"distribution": name, "version": version, "call": name, "status": "skip", "error": why}
        elif name in self.files:
            found = self._timed(f"call {name}", lambda _: smoke(self.files[name], name, version))
        elif why := self._unfit(name):
            call = str(self.blocks[name].get("call") or name)
            found = {"distribution": name, "version": version, "call": call, "status": "not_tried", "error": why}
        else:
            found = self._timed(f"call {name}", lambda _: from_readme(self.blocks[name], name, version))
        with self.lock:
            self.calls.append(found)
            self.current = ("", 0.0)
            kit.progress("called", facts={"calls": [found]})

    def _unfit(self, name: str) -> str:
        """Why a README's block is not started ("" where it is): what it took where it was measured, twice over,
        does not fit what is left of the probe's share of its bound (one cut there would say it did not return)."""
        measured = self.blocks[name].get("seconds")
        seconds = float(measured) if isinstance(measured, (int, float)) else 0.0
        left = self.until - time.monotonic()
        if FIT * seconds <= left:
            return ""
        return f"not tried: its README block took {seconds:g} s where it was measured; {max(left, 0):.1f} s were left"

    def _timed(self, module: str, do: Callable[[str], Any]) -> Any:
        """`do(module)`, once this thread has said which module it is importing (never after the answer)."""
        if self.stop:
            raise Stopped
        with self.lock:
            self.current = (module, time.monotonic())
        return do(module)

    def _keep(self, found: list[dict[str, Any]]) -> None:
        with self.lock:
            self.outcomes += found
            self.current = ("", 0.0)
            kit.progress("imported", facts={"imports": found})  # kept by envaudit if the process dies later

    def answer(self, bound: float) -> list[dict[str, Any]]:
        """What the imports showed by now; the one in flight and those not reached as not tried."""
        with self.lock:
            self.stop = True
            found = list(self.outcomes)
            module, since = self.current
        done = {(o["distribution"], o["module"]) for o in found}
        said = f"not tried: the imports before it took {SHARE:.0%} of the probe's bound of {bound:g} s"
        version = self.jax_version
        late = [("jax", version, m) for m in jax_submodules()]
        late += [(canonical(name_of(d)), str(d.version), m) for d in self.dists for m in modules(d)]
        for name, version, m in late:
            if (name, m) in done:
                continue
            why = (
                f"still importing after {time.monotonic() - since:.1f} s, past {SHARE:.0%} of the probe's "
                f"bound of {bound:g} s"
                if m == module
                else said
            )
            found.append({"distribution": name, "version": version, "module": m, "status": "not_tried", "error": why})
        return found

    def called(self, bound: float) -> list[dict[str, Any]]:
        """What the smoke calls showed by now (after `answer`): the one in flight and those not reached as not
        tried."""
        with self.lock:
            found = list(self.calls)
            doing, since = self.current
        done = {o["distribution"] for o in found}
        for dist in self.dists:
            name = canonical(name_of(dist))
            if (name not in self.files and name not in self.blocks) or name in done:
                continue
            in_flight = doing == f"call {name}"  # it did not return: `timeout`; one not reached is unknown
            why = (
                f"still calling after {time.monotonic() - since:.1f} s, past {SHARE:.0%} of the probe's bound of "
                f"{bound:g} s"
                if in_flight
                else f"not tried: what ran before it took {SHARE:.0%} of the probe's bound of {bound:g} s"
            )
            status = "timeout" if in_flight else "not_tried"
            said = {
                "distribution": name,
                "version": str(dist.version),
                "call": CALLING.get(name) or str(self.blocks.get(name, {}).get("call") or name),
                "status": status,
            }
            found.append(said | {"error": why})
        return found


class Stopped(Exception):
    """The probe answered: no further import starts."""


def run(precision: str = "auto", seed: int = 0) -> dict[str, object]:
    del precision, seed
    start, bound = time.monotonic(), kit.bound_s(ALONE_S)
    try:
        import jax  # first: a library's import must not be the one that imports jax (jax's own failure is jax's)
    except ModuleNotFoundError as error:
        if error.name != "jax" or importlib.util.find_spec("jax") is not None:
            raise  # jax is there and broken: jax's failure, the child's to report
        version, dists = "", needing_jax()  # jax not installed: what imports it anyway
    else:
        version, dists = str(jax.__version__), dependents()
    importer = Importer(version, dists, until=start + SHARE * bound)
    importer.start()
    importer.join(timeout=max(SHARE * bound - (time.monotonic() - start), 0.0))
    late = importer.is_alive()
    outcomes = importer.answer(bound) if late else importer.outcomes
    calls = importer.called(bound) if late else importer.calls
    if not outcomes:
        return kit.result(NAME, "skip", {}, {}, "nothing installed depends on jax" if version else NO_JAX)
    failed = [o for o in outcomes if o["status"] == "error"]
    tried = sum(o["status"] != "not_tried" for o in outcomes)
    broke = [o for o in calls if o["status"] == "error"]
    called = sum(o["status"] in ("ok", "error") for o in calls)
    metrics: dict[str, object] = {"tried": tried, "failed": len(failed), "not_tried": len(outcomes) - tried}
    metrics |= {"called": called, "calls_failed": len(broke)}
    said = "; ".join(f"import {o['module']} ({o['distribution']} {o['version']}): {o['error']}" for o in failed)
    message = f"{tried} modules tried, {len(failed)} raise" + (f" (facts.jax.imports): {said}" if said else "")
    said = "; ".join(f"{o['call']} ({o['distribution']} {o['version']}): {o['error']}" for o in broke)
    message += f"; {called} calls made, {len(broke)} raise" + (f" (facts.jax.calls): {said}" if said else "")
    if tried < len(outcomes):
        message += f"; {len(outcomes) - tried} not tried within {SHARE:.0%} of the probe's bound ({bound:g} s)"
    if unmade := sum(o["status"] == "not_tried" for o in calls):
        message += f"; {unmade} calls not tried within {SHARE:.0%} of the probe's bound ({bound:g} s)"
    outcomes, calls = fitted(outcomes, calls)
    facts: dict[str, object] = {"imports": outcomes} | ({"calls": calls} if calls else {})
    return kit.result(NAME, "pass", metrics, {}, message[:MESSAGE_CHARS]) | {"facts": facts}


RESULT_BYTES = 192 * 1024  # the answer is one protocol line, which envaudit reads up to 256 KiB (child/runner.py)
MESSAGE_CHARS = 4000  # the message sums up; each outcome keeps its own error in the facts


def fitted(
    outcomes: list[dict[str, Any]], calls: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The outcomes with their texts cut shorter, by halves, until the answer fits its line (80 libraries raising 3 KB
    each once made a line envaudit cut, and every import's failure was lost to one "probe error"): every outcome is
    kept, with the start of what it raised."""
    limit = MAX_TEXT
    while limit > 64 and len(json.dumps({"imports": outcomes, "calls": calls}, default=str)) > RESULT_BYTES:
        limit //= 2
        outcomes, calls = [_cut(o, limit) for o in outcomes], [_cut(c, limit) for c in calls]
    return outcomes, calls


def _cut(outcome: dict[str, Any], limit: int) -> dict[str, Any]:
    texts = {k: str(v)[:limit] for k, v in outcome.items() if k in ("error", "where") and isinstance(v, str)}
    lists = {k: [str(t)[:limit] for t in v] for k, v in outcome.items() if k == "warnings" and isinstance(v, list)}
    return outcome | texts | lists


if __name__ == "__main__":
    sys.exit(kit.main(NAME, __doc__, run))
