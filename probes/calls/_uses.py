"""The calls the imports probe does not make, read: each library's uses of a jax name that the jax installed here
does not have, found in its installed code and measured against that jax.

A library breaks on a path no import or smoke call reaches: `jaxline.experiment` annotates with `jnp.DeviceArray`
(gone in jax 0.4.14), a module `import jaxline` never imports; pytensor 2.14.2's JAX dispatch calls `jnp.product`
inside a function, so `import pytensor` works and sampling with JAX raises; openfermion 1.6.1's THC objective does
`from jax.config import config` in a module five packages deep. The derived table knows the libraries it read; this
reads the one installed here, whatever it is.

Each `.py` file of the distribution (but tests, examples and docs) whose text mentions jax is parsed with `ast`; a
use is a name off an alias of jax or jaxlib (`import jax.numpy as jnp` then `jnp.DeviceArray`, `from jax
import lax` then `lax.foo`, `from jax.config import config`, `import jax.experimental.maps`), with where it is
(file:line) and when it runs: at the module's import (module level, class bodies, decorators, defaults, annotations
where they are evaluated) or on a call (inside a function, named). A use under a test that asks what jax has or its
version (`hasattr`, `getattr`, a name with "version" in it, `TYPE_CHECKING`, jax itself), inside a `try` whose
handlers catch what a missing name raises, or in such a handler (the fallback), is version-compatible code and not
read: this is a reading that may miss a break, never one that invents one.

Each name read is then RESOLVED in the jax this process imported (the measurement): attribute by attribute, a
submodule found on disk where no attribute is (`jax.experimental.pjit`), never executing a library's code. A name
that resolves is present; one whose resolution raised for another reason (an optional dependency of a jax module,
jax2tf's TensorFlow) is unknown; one jax does not have is missing, with what Python raises for it.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import textwrap
import types
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

ROOTS = ("jax", "jaxlib")
# a test that asks what jax has, or a version: its branches are version-compatible code
GUARD_WORDS = re.compile(r"version|hasattr|getattr|TYPE_CHECKING|find_spec|dir\b", re.IGNORECASE)
# what a missing name raises, and the handlers that catch it
CATCHING = {"AttributeError", "ImportError", "ModuleNotFoundError", "Exception", "BaseException", "NameError"}
NOT_PACKAGE = {"tests", "test", "testing", "examples", "example", "docs", "doc", "benchmarks", "benchmark", "scripts"}
HEAVY = re.compile(r"jax2tf|tensorflow|torch")  # jax modules that import another framework: not imported to resolve
TEST_MODULE = re.compile(r"(^test_|_test\.py$|_tests\.py$|_test_utils?\.py$|^conftest\.py$)")
MAX_FILE_BYTES = 2 * 1024 * 1024  # a generated file larger than this is not read


@dataclass(frozen=True)
class Use:
    """One use of a jax name in a library's file: the dotted name, its line, the function that runs it ("" at the
    module's import), for `from M import N` the module M that must be importable, and for a call the keyword
    argument it passes (dm-pix 0.4.3's `jnp.reshape(x, newshape=...)`, removed from jax 0.4.36's reshape)."""

    name: str
    line: int
    function: str
    module: str = ""
    keyword: str = ""  # a keyword argument the call of `name` passes, which the callable must take


def package_file(parts: tuple[str, ...]) -> bool:
    """Whether a file (its path's parts inside the site directory) is package code: a `.py` file not under tests,
    examples, docs or benchmarks, and no test module shipped beside the code (chex's `asserts_chexify_test.py`,
    orbax's `*_test_utils.py`: what a library's own tests run is no user's path)."""
    if not parts or not parts[-1].endswith(".py") or any(p in NOT_PACKAGE for p in parts[:-1]):
        return False
    return not TEST_MODULE.search(parts[-1])


def module_of(parts: tuple[str, ...]) -> str:
    """The dotted module a package file is (`jaxline/experiment.py` -> `jaxline.experiment`)."""
    names = list(parts[:-1]) + ([] if parts[-1] == "__init__.py" else [parts[-1][:-3]])
    return ".".join(names)


def _catches(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name | ast.Attribute) and ast.unparse(k).split(".")[-1] in CATCHING for k in kinds)


class _Reader(ast.NodeVisitor):
    """Walks one module, keeping its aliases of jax and where each node runs."""

    def __init__(self, lazy_annotations: bool) -> None:
        self.aliases: dict[str, str] = {}
        self.uses: list[Use] = []
        self.function = ""  # the function whose body this is ("" at import)
        self.guarded = 0  # inside version-compatible code
        self.lazy_annotations = lazy_annotations

    def _use(self, name: str, line: int, module: str = "", keyword: str = "") -> None:
        if not self.guarded:
            self.uses.append(Use(name, line, self.function, module, keyword))

    def _guard(self, test: ast.expr) -> bool:
        for node in ast.walk(test):
            text = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
            if text and (GUARD_WORDS.search(text) or text in self.aliases):
                return True
        return False

    def _bind(self, name: str, dotted: str) -> None:
        """An alias bound; in version-compatible code only where the name is not bound yet: the fallback of a
        `try` (chex 0.1.86: `from jax._src import compiler`, except ImportError `from jax._src import dispatch as
        compiler`) names what runs only where the first import failed."""
        if not (self.guarded and name in self.aliases):
            self.aliases[name] = dotted

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] in ROOTS:
                if alias.asname:  # `import jax.numpy as jnp`: jnp is jax.numpy
                    self._bind(alias.asname, alias.name)
                else:  # `import jax.numpy`: the name bound is jax
                    self._bind(alias.name.split(".")[0], alias.name.split(".")[0])
                self._use(alias.name, node.lineno, module=alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module or node.module.split(".")[0] not in ROOTS:
            return
        for alias in node.names:
            if alias.name == "*":
                continue
            full = f"{node.module}.{alias.name}"
            self._bind(alias.asname or alias.name, full)
            self._use(full, node.lineno, module=node.module)

    def visit_Assign(self, node: ast.Assign) -> None:
        """A name bound again is no longer the alias it was (orbax's `ifrt_programs = ifrt_programs.ifrt_programs`
        binds a C++ module's object), unless it is bound to another alias (`np2 = jnp`): what an attribute of jax
        holds is not followed."""
        self.visit(node.value)
        value = _dotted(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if value in self.aliases and not self.function:
                    self.aliases[target.id] = self.aliases[value]
                else:
                    self.aliases.pop(target.id, None)
            else:
                self.visit(target)

    def _jax_name(self, node: ast.expr) -> str:
        """The jax name a chain of attributes off an alias is (`jnp.DeviceArray` -> jax.numpy.DeviceArray), or ""."""
        head, _, rest = _dotted(node).partition(".")
        return ".".join(filter(None, [self.aliases[head], rest])) if head in self.aliases else ""

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load) and (name := self._jax_name(node)):
            self._use(name, node.lineno)
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        """A call of a jax name: each keyword argument it passes is a use of that keyword (`jnp.reshape(x,
        newshape=s)`); then the call's parts as any expression's."""
        if name := self._jax_name(node.func):
            for keyword in node.keywords:
                if keyword.arg is not None:
                    self._use(name, node.lineno, keyword=keyword.arg)
        self.generic_visit(node)

    def _guarded(self, nodes: Sequence[ast.AST]) -> None:
        self.guarded += 1
        for child in nodes:
            self.visit(child)
        self.guarded -= 1

    def visit_If(self, node: ast.If) -> None:
        if self._guard(node.test):
            self._guarded([node.test, *node.body, *node.orelse])
        else:
            self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        if self._guard(node.test):
            self._guarded([node.test, node.body, node.orelse])
        else:
            self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        if any(self._guard(v) for v in node.values[:-1]):
            self._guarded(node.values)
        else:
            self.generic_visit(node)

    def visit_Try(self, node: ast.Try | ast.TryStar) -> None:
        caught = any(_catches(h) for h in node.handlers)
        (self._guarded if caught else self._plain)(node.body)
        for handler in node.handlers:
            self._guarded(handler.body)  # a fallback: runs where what was tried is missing
        self._plain(node.orelse)
        self._plain(node.finalbody)

    def visit_TryStar(self, node: ast.TryStar) -> None:
        self.visit_Try(node)

    def _plain(self, nodes: list[ast.stmt]) -> None:
        for child in nodes:
            self.visit(child)

    def _body(self, name: str, body: list[ast.stmt] | list[ast.expr]) -> None:
        before, self.function = self.function, self.function or name
        for child in body:
            self.visit(child)
        self.function = before

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.visit(node.args)  # defaults run at the definition
        if not self.lazy_annotations and node.returns is not None:
            self.visit(node.returns)
        self._body(node.name, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_arguments(self, node: ast.arguments) -> None:
        for default in [*node.defaults, *(d for d in node.kw_defaults if d is not None)]:
            self.visit(default)
        if not self.lazy_annotations:
            for arg in [*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg]:
                if arg is not None and arg.annotation is not None:
                    self.visit(arg.annotation)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)
        self._body("<lambda>", [node.body])

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        # a variable's annotation is evaluated at module and class level only, and never lazily
        if not self.lazy_annotations and not self.function:
            self.visit(node.annotation)


def _dotted(node: ast.expr) -> str:
    """`a.b.c` of a chain of attributes off a name ("" for anything else)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def uses_in(source: bytes) -> list[Use]:
    """Every unguarded use of a jax name in one module's source ([] where it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lazy = any(
        isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
        for n in tree.body
    )
    reader = _Reader(lazy)
    reader.visit(tree)
    return reader.uses


def _quiet_getattr(obj: object, name: str) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(obj, name)


def _spec(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None


def missing(use: Use) -> str:
    """What Python raises for a use whose name the jax here lacks ("" where the name is there, or where resolving
    it raised for another reason: unknown, never missing)."""
    try:
        return _missing(use)
    except Exception:
        return ""


NAMES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_jax_names.json")
NAMES_FORMAT = 1  # of _jax_names.json (derive/generated.py writes it)


@functools.cache
def _ever() -> dict[str, frozenset[str]] | None:
    """Each public jax module's names in any release read (_jax_names.json, derived from jax's files), or None
    where the file is not here or not this format (then every missing name is read)."""
    try:
        with open(NAMES, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != NAMES_FORMAT:
        return None
    return {str(module): frozenset(names) for module, names in dict(document.get("names") or {}).items()}


def ever(dotted: str) -> bool:
    """Whether some jax release had this name (`jax.numpy.DeviceArray`: yes; `jax.numpy.random`, which
    tensorflow-probability's rewritten NumPy code names: never). A name in a private module (`jax._src.*`), or where
    the names are not here, counts as had: it is read."""
    module, _, name = dotted.rpartition(".")
    known = _ever()
    if known is None or any(part.startswith("_") for part in module.split(".")) or not module:
        return True
    return module in known and name in known[module]


def _missing(use: Use) -> str:
    """What Python raises for the use here, but "" for a name no jax release ever had (`ever`): no API change."""
    said, where = _first_missing(use)
    return said if said and ever(where) else ""


def _first_missing(use: Use) -> tuple[str, str]:
    if use.keyword:
        return _keyword_missing(use), use.name
    if use.module and _spec(use.module) is None and use.module not in sys.modules:
        return f"ModuleNotFoundError: No module named '{use.module}'", use.module
    parts = use.name.split(".")
    obj: object = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=2):
        dotted = ".".join(parts[:i])
        try:
            obj = _quiet_getattr(obj, part)
            continue
        except AttributeError as error:
            raised = error
        if not isinstance(obj, types.ModuleType):
            return f"AttributeError: {raised}", dotted
        if _spec(dotted) is None:
            if use.module and dotted == use.name:  # `from M import N`, N neither an attribute nor a module
                return f"ImportError: cannot import name '{part}' from '{use.module}'", dotted
            if use.module == use.name:
                return f"ModuleNotFoundError: No module named '{dotted}'", dotted
            return f"AttributeError: {raised}", dotted
        if use.module == use.name or i == len(parts) or HEAVY.search(dotted):
            return "", ""  # a module on disk: there (one that imports a framework, jax2tf's, is not imported)
        obj = importlib.import_module(dotted)  # a submodule of jax's not yet imported (jax.interpreters.batching)
    return "", ""


def _keyword_missing(use: Use) -> str:
    """What a call raises for a keyword argument the jax callable here does not take: none in its signature (and no
    **kwargs), or one jax keeps only to raise (its default a `DeprecatedArg`, jax's marker for a deprecated
    argument, and its code raising where it is passed: jnp.reshape's `newshape` from 0.4.36). "" where the name
    itself is missing (said once, by its plain use) or the callable has no signature to read."""
    if _missing(Use(use.name, use.line, use.function)):
        return ""
    obj: object = importlib.import_module(use.name.split(".")[0])
    for part in use.name.split(".")[1:]:
        obj = _quiet_getattr(obj, part)
    try:
        parameters = inspect.signature(obj).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    found = parameters.get(use.keyword)
    short = use.name.rsplit(".", 1)[-1]
    if found is None:
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            return ""
        return f"TypeError: {short}() got an unexpected keyword argument '{use.keyword}'"
    if type(found.default).__name__ == "DeprecatedArg" and _raises_on(obj, use.keyword):
        return f"the {use.keyword} argument of {use.name} was removed: jax keeps it only to raise where it is passed"
    return ""


def _raises_on(function: object, keyword: str) -> bool:
    """Whether the function's own code raises where the keyword is passed: a `raise` that names it (jax 0.5.0's
    reshape: `raise TypeError("The newshape argument to jnp.reshape was removed ...")`), not a warning (jax 0.4.29's
    clip only warns that `a_min` is deprecated, and works), nor a raise under a test of another of its arguments
    (jax 0.4.35's pure_callback warns that `vectorized` is deprecated, and raises, naming it, only where
    `vmap_method` is passed too: equinox's callbacks, which pass `vectorized` alone, work there)."""
    try:
        source = textwrap.dedent(inspect.getsource(inspect.unwrap(function)))  # type: ignore[arg-type]
        tree = ast.parse(source)
    except (OSError, TypeError, ValueError, SyntaxError):
        return False
    defined = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    if defined is None:
        return False
    arguments = defined.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    others = {a.arg for a in every if a is not None and a.arg != keyword}
    return _raise_alone(defined, keyword, others, False)


def _raise_alone(node: ast.AST, keyword: str, others: set[str], guarded: bool) -> bool:
    """Whether a `raise` naming the keyword lies below this node under no test of another argument (`guarded`)."""
    if isinstance(node, ast.Raise):
        return not guarded and keyword in ast.unparse(node)
    if isinstance(node, ast.If):
        inner = guarded or any(isinstance(n, ast.Name) and n.id in others for n in ast.walk(node.test))
        return any(_raise_alone(child, keyword, others, inner) for child in (*node.body, *node.orelse))
    return any(_raise_alone(child, keyword, others, guarded) for child in ast.iter_child_nodes(node))


def read(data: bytes) -> list[Use]:
    """The uses in one file's bytes ([] for a file that does not mention jax, or too large to be code)."""
    return uses_in(data) if b"jax" in data and len(data) <= MAX_FILE_BYTES else []


def broken(files: Iterable[tuple[tuple[str, ...], list[Use]]]) -> Iterator[tuple[str, str, Use, str]]:
    """(module, its file, use, what it raises) for each use read in the files given ((parts, uses) of each) of a
    jax name the jax here lacks; each name resolved once."""
    seen: dict[tuple[str, str, str], str] = {}
    for parts, found in files:
        for use in found:
            key = (use.name, use.module, use.keyword)
            if key not in seen:
                seen[key] = missing(use)
            if seen[key]:
                yield module_of(parts), "/".join(parts), use, seen[key]


# The uses read are kept, per distribution, where envaudit says (ENVAUDIT_USES_CACHE: a directory of its private
# cache, made 0700 before this child started): parsing a library's code costs seconds (flax, optax and
# orbax-checkpoint: 300 files, 4.9 MB, 1.9 s on a 2-core CPU), resolving what it read against jax milliseconds.
CACHE = "ENVAUDIT_USES_CACHE"
MAX_KEPT = 512  # readings kept (a distribution's release each, about 20 KB); the oldest go first
FORMAT = 3  # of a cached reading: bumped when what is read changes (2: a fallback import keeps the alias; 3: keywords)


def cache_key(name: str, version: str, stats: list[tuple[str, int, int]]) -> str:
    """The file a distribution's reading is kept in: its name, version and each file's path, size and mtime."""
    digest = hashlib.sha256(json.dumps([FORMAT, name, version, sorted(stats)]).encode()).hexdigest()[:32]
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}-{digest}.json"


def load(key: str) -> dict[str, list[Use]] | None:
    """A distribution's reading kept under `key`, or None (no cache, none kept, or unreadable)."""
    directory = os.environ.get(CACHE, "")
    if not directory:
        return None
    try:
        fd = os.open(os.path.join(directory, key), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            kept = json.loads(handle.read(MAX_FILE_BYTES * 4))
        return {
            path: [Use(str(n), int(at), str(f), str(m), str(k)) for n, at, f, m, k in uses]
            for path, uses in kept.items()
        }
    except (OSError, ValueError, TypeError):
        return None


def store(key: str, reading: dict[str, list[Use]]) -> None:
    """Keeps a distribution's reading (written whole, then renamed into place; nothing where there is no cache)."""
    directory = os.environ.get(CACHE, "")
    if not directory or not os.path.isdir(directory):
        return
    text = json.dumps(
        {path: [[u.name, u.line, u.function, u.module, u.keyword] for u in uses] for path, uses in reading.items()}
    )
    temporary = os.path.join(directory, f".{key}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, os.path.join(directory, key))
        kept = sorted(os.scandir(directory), key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
        for entry in kept[:-MAX_KEPT] if len(kept) > MAX_KEPT else []:  # the oldest readings, past the bound
            os.unlink(entry.path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
