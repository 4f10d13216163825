"""Derive, for each release of the jax libraries, every jax name its package code uses, read with `ast` from the
released file (wheel, else sdist): where (file:line), when it runs (at IMPORT: module level, class bodies,
decorators, default values, evaluated annotations; or at CALL: inside a function, with the enclosing function's
public name), and under which CONDITION on jax (derive/sources/guards.py) it runs:
- in a `try` whose handler catches what the use raises when jax lacks it (AttributeError for an attribute,
  ImportError for an import, TypeError for a keyword; Exception, BaseException or a bare except for any), the use
  never breaks: it is not a use here;
- in that handler, the fallback of version-compatible code, it runs where one of those caught uses fails (jax-md
  0.2.29's `except ImportError: from jax.core import ...`); in the `try`'s else, where none does;
- under an `if` that asks jax what it has (hasattr, getattr with a default, `"x" in jax.config.values`, `"x" in
  dir(jax.core)`) or its version, or after such a test in an `and` or an `or`, or after an `if` of that test whose
  branch returns or raises, it runs where the test says (the else: where it does not);
- under `if TYPE_CHECKING:`, never.
A use whose condition reads nothing of jax (a test of the library's own values that mentions a version, the else of
a hasattr of another object: equinox 0.13.8's `hasattr(aval, "to_tangent_aval")`, the handler of a `try` that
tries nothing of jax) is kept as before this reading: never a break.

A use is `jax.a.b` off any alias of jax (`import jax`, `import jax.numpy as jnp`, `from jax import lax`,
`from jax.interpreters import xla` then `xla.xe`), the import itself (`from jax.a import b` uses jax.a.b), and
`jax.config.update("x", ...)`, which uses the option jax.config.x; and each keyword argument a call of a jax name
passes (`jnp.clip(x, max=1)`, `functools.partial(jax.jit, static_argnames=...)`), which the release's callable
must take (derive/sources/jax_signatures.py). Tests, examples, docs and benchmarks are not package code and are
skipped. Each release's result is kept in the cache (derived/uses/PROJECT/VERSION.json).

usage: python -m derive.sources.library_uses [--cache DIR] [--offline] [--only PROJECT ...]
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import re
import time
from collections.abc import Container, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from derive.sources import guards, pyast, wheels
from derive.sources.guards import Condition

FORMAT = 17  # of the cached results: bumped when what is read changes (16: conditions and keywords kept; 17: an
# attribute set is no use of it, a metaclass runs at import)
LIBRARIES = Path(__file__).resolve().parents[2] / "envaudit" / "rules" / "tables" / "derived" / "libraries.toml"


def _libraries() -> dict[str, str]:
    """Each library of tables/derived/libraries.toml (derived by libraries.py) and the upload date its releases
    are read from."""
    import tomllib

    with LIBRARIES.open("rb") as handle:
        return {lib["package"]: lib["since"] for lib in tomllib.load(handle)["library"]}


SINCES = _libraries()
PROJECTS = tuple(SINCES)
# what a use raises where the jax release lacks what it needs, and the handlers that catch it
ATTRIBUTE, IMPORT, KEYWORD = "AttributeError", "ImportError", "TypeError"
CATCHES = {
    "AttributeError": {ATTRIBUTE},
    "ImportError": {IMPORT},
    "ModuleNotFoundError": {IMPORT},
    "TypeError": {KEYWORD},
    "Exception": {ATTRIBUTE, IMPORT, KEYWORD},
    "BaseException": {ATTRIBUTE, IMPORT, KEYWORD},
}
NOT_PACKAGE = {"tests", "test", "testing_data", "examples", "example", "docs", "doc", "benchmarks", "benchmark"}
VERSION_WORD = re.compile(r"version", re.IGNORECASE)
PYTHON_VERSION = {"sys.version_info", "sys.version", "platform.python_version", "sys.hexversion"}


@dataclass(frozen=True)
class Context:
    """Where a node runs: at import or on a call (of which function), under which conditions on jax (all must
    hold), inside which `try` bodies (each: its id, what its handlers catch)."""

    when: str = "import"
    function: str = ""
    in_function: bool = False
    guard: tuple[Condition, ...] = ()
    catching: tuple[tuple[int, frozenset[str]], ...] = ()

    def under(self, condition: Condition) -> Context:
        return replace(self, guard=(*self.guard, condition))


@dataclass(frozen=True)
class Use:
    api: str
    line: int
    when: str
    function: str
    guarded: bool  # never a break: a `try` catches it, or its condition reads nothing of jax
    keyword: str = ""  # a keyword argument of a call of `api`
    guard: tuple[Condition, ...] = field(default=())  # where it runs (all hold); () everywhere


def package_file(path: str, wheel: bool = False) -> bool:
    """Package code, not tests, examples, docs, benchmarks or build scripts. A top-level module is package code in a
    wheel (klujax is one file, klujax.py), not in an sdist (its setup.py, noxfile.py...)."""
    parts = path.split("/")
    name = parts[-1]
    if (len(parts) < 2 and not wheel) or name in {"setup.py", "conftest.py"}:
        return False
    if name.endswith("_test.py") or name.startswith("test_") or name == "tests.py":
        return False
    return not any(p in NOT_PACKAGE for p in parts[:-1])


def module_of(path: str) -> str:
    parts = path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def caught(handler: ast.ExceptHandler) -> frozenset[str]:
    """What a handler catches of what a use raises (a bare except: all of it)."""
    if handler.type is None:
        return frozenset({ATTRIBUTE, IMPORT, KEYWORD})
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = [k.attr if isinstance(k, ast.Attribute) else getattr(k, "id", "") for k in kinds]
    return frozenset(kind for name in names for kind in CATCHES.get(name, ()))


def _terminates(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return | ast.Raise | ast.Continue | ast.Break)


class _AnyObject:
    """What `guard_test` takes for a fallback: any object's hasattr counts."""

    def __contains__(self, name: object) -> bool:
        return True


ANY_OBJECT: Container[str] = _AnyObject()


def guard_test(test: ast.expr, jax_names: Container[str]) -> bool:
    """An `if` test that makes its branches conditional on what jax has: hasattr(...) or a 3-argument getattr of jax
    or one of its modules (a name of `jax_names`, the file's aliases of jax, or an attribute of one), a membership
    test against one (`"jax_x" in jax.config.values`, `"x" in dir(jax.core)`), or a version
    (jax.__version__, jax.version, __version_info__, packaging's Version); sys.version_info is Python's. A hasattr of
    anything else (penzai 0.1.5's `hasattr(array, "sharding")`) says nothing of the names jax has: measured, its
    branch's jax.sharding.GSPMDSharding raises with jax 0.7.0 (its else is a fallback: ANY_OBJECT, in conditional)."""
    for node in ast.walk(test):
        called = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else ""
        if (
            isinstance(node, ast.Call)
            and node.args
            and (called == "hasattr" or (called == "getattr" and len(node.args) == 3))
        ):
            found = chain(node.args[0])
            if found is not None and found[0] in jax_names:
                return True
        membership = isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
        if membership and jax_names is not ANY_OBJECT and isinstance(node, ast.Compare):  # (not for a fallback: the
            # else of `key in cache` runs with any jax)
            # `"jax_x" in jax.config.values`, `"x" in dir(jax.core)`: asks jax what it has
            for side in node.comparators:
                asked = side.args[0] if isinstance(side, ast.Call) and _called(side) == "dir" and side.args else side
                found = chain(asked)
                if found is not None and found[0] in jax_names:
                    return True
        text = ast.unparse(node) if isinstance(node, ast.Attribute | ast.Name) else ""
        if text and VERSION_WORD.search(text) and not any(text.startswith(p) for p in PYTHON_VERSION):
            return True
    return False


def _called(node: ast.Call) -> str:
    return node.func.id if isinstance(node.func, ast.Name) else ""


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def aliases(tree: ast.Module) -> dict[str, str]:
    """Each local name the file binds to a jax module or name by an import, anywhere in it: `import jax` (jax),
    `import jax.numpy as jnp` (jnp: jax.numpy), `from jax import lax` (lax: jax.lax). A name the file also binds
    by another import (from elsewhere) is ambiguous and dropped."""
    found: dict[str, str] = {}
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                target = alias.name if alias.asname else alias.name.split(".")[0]
                if alias.name == "jax" or alias.name.startswith("jax."):
                    found.setdefault(local, target)
                else:
                    other.add(local)
        elif isinstance(node, ast.ImportFrom) and node.names[0].name != "*":
            source = node.module or ""
            is_jax = node.level == 0 and (source == "jax" or source.startswith("jax."))
            for alias in node.names:
                local = alias.asname or alias.name
                if is_jax:
                    found.setdefault(local, f"{source}.{alias.name}")
                else:
                    other.add(local)
    return {name: target for name, target in found.items() if name not in other}


def chain(node: ast.expr) -> tuple[str, list[str]] | None:
    """(root name, attributes) of `a.b.c`, or None when it is not a plain dotted name."""
    parts = pyast.dotted(node)
    return (parts[0], parts[1:]) if parts else None


class _Finder:
    """Walks one file, recording each jax use with its context."""

    def __init__(self, tree: ast.Module, module: str) -> None:
        self.module = module
        self.aliases = aliases(tree)
        self.future = any(
            isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
            for n in tree.body
        )
        self.uses: list[Use] = []
        self.classes: list[str] = []
        self.called_at_import: set[str] = set()  # this module's functions that its module level calls
        self.tries = itertools.count()
        self.failures: dict[int, list[tuple[str, Condition]]] = {}  # a try body's caught uses: (raises, fails)

    def finish(self) -> list[Use]:
        """The uses, with those of a function this module calls at import time counted at import (flax's
        configurations.py defines its flags by calling its own helper at module level)."""
        called = {f"{self.module}.{name}" for name in self.called_at_import}
        return [replace(u, when="import") if u.when == "call" and u.function in called else u for u in self.uses]

    def add(self, api: str, node: ast.AST, ctx: Context, raises: str = ATTRIBUTE, keyword: str = "") -> None:
        """One use; caught by the innermost `try` around it that catches what it raises (then never a break, and
        the condition of that try's handlers), else kept with its conditions."""
        line = getattr(node, "lineno", 0)
        for frame, kinds in reversed(ctx.catching):
            if raises in kinds:
                works: Condition = {"accepts": [api, keyword]} if keyword else {"has": api}
                self.failures[frame].append((raises, guards.negate(works)))
                self.uses.append(Use(api, line, ctx.when, ctx.function, True, keyword))
                return
        dropped = bool(ctx.guard) and not guards.decidable(list(ctx.guard))
        self.uses.append(Use(api, line, ctx.when, ctx.function, dropped, keyword, () if dropped else ctx.guard))

    def body(self, statements: list[ast.stmt], ctx: Context) -> None:
        """A block in order: after `if <jax test>: return` (or raise), the rest runs where the test is false."""
        for statement in statements:
            self.visit(statement, ctx)
            if isinstance(statement, ast.If) and guard_test(statement.test, self.aliases):
                ends, otherwise = _terminates(statement.body), _terminates(statement.orelse)
                if ends != otherwise:
                    test = guards.condition(statement.test, self.aliases)
                    ctx = ctx.under(guards.negate(test) if ends else test)

    def visit(self, node: ast.AST, ctx: Context) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.function(node, ctx)
        elif isinstance(node, ast.ClassDef):
            for part in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                self.visit(part, ctx)
            for keyword in node.keywords:  # a class statement calls its metaclass (equinox 0.10.4's `class
                # Module(metaclass=_ModuleMeta)` runs _ModuleMeta.__new__ at import)
                if keyword.arg == "metaclass" and isinstance(keyword.value, ast.Name) and ctx.when == "import":
                    self.called_at_import.update(f"{keyword.value.id}.{m}" for m in ("__new__", "__init__"))
            self.classes.append(node.name)
            self.body(node.body, ctx)
            self.classes.pop()
        elif isinstance(node, ast.Lambda):
            self.arguments(node.args, ctx, annotations=False)
            function = ctx.function or self.qualified("<lambda>")
            self.visit(node.body, replace(ctx, when="call", function=function, catching=()))
        elif isinstance(node, ast.AnnAssign):
            if not self.future and not ctx.in_function:
                self.visit(node.annotation, ctx)
            self.visit(node.target, ctx)
            if node.value is not None:
                self.visit(node.value, ctx)
        elif isinstance(node, ast.Try | ast.TryStar):
            self.attempt(node, ctx)
        elif isinstance(node, ast.If | ast.IfExp):
            self.conditional(node, ctx)
        elif isinstance(node, ast.BoolOp):
            self.boolean(node, ctx)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            self.imported(node, ctx)
        elif isinstance(node, ast.Attribute):
            self.attribute(node, ctx)
        elif isinstance(node, ast.Call):
            self.call(node, ctx)
        elif isinstance(node, ast.Constant):
            return  # a string annotation is not evaluated
        else:
            for child in ast.iter_child_nodes(node):
                self.visit(child, ctx)

    def attempt(self, node: ast.Try | ast.TryStar, ctx: Context) -> None:
        """A `try`: its body's uses that a handler catches never break; a handler runs where one of them fails
        (the fallback of version-compatible code: one of the two works with each jax it supports), the else where
        none does. A handler of AttributeError or ImportError around nothing of jax is a fallback for something
        else: it runs where this cannot say (never a break, as before)."""
        frame = next(self.tries)
        self.failures[frame] = []
        kinds = frozenset().union(*(caught(h) for h in node.handlers))
        self.body(node.body, replace(ctx, catching=(*ctx.catching, (frame, kinds))) if kinds else ctx)
        failures = self.failures.pop(frame)
        for handler in node.handlers:
            catches = caught(handler)
            fails = list({json.dumps(f, sort_keys=True): f for raised, f in failures if raised in catches}.values())
            if fails:
                self.body(handler.body, ctx.under(fails[0] if len(fails) == 1 else {"any": fails}))
            elif catches & {ATTRIBUTE, IMPORT}:
                self.body(handler.body, ctx.under(guards.unknown(handler.type or handler)))
            else:
                self.body(handler.body, ctx)
        works = [guards.negate(f) for _, f in failures]
        self.body(node.orelse, ctx.under(guards.every(works)) if works else ctx)
        self.body(node.finalbody, ctx)

    def qualified(self, name: str) -> str:
        return ".".join([self.module, *self.classes, name])

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator, ctx)
        self.arguments(node.args, ctx, annotations=not self.future)
        if node.returns is not None and not self.future:
            self.visit(node.returns, ctx)
        # its body runs on a call, where no `try` around the def catches anything; its def's conditions hold
        function = ctx.function or self.qualified(node.name)
        inner = replace(ctx, when="call", function=function, in_function=True, catching=())
        classes, self.classes = self.classes, [*self.classes, node.name]
        self.body(node.body, inner)
        self.classes = classes

    def arguments(self, args: ast.arguments, ctx: Context, annotations: bool) -> None:
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.visit(default, ctx)
        if annotations:
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    self.visit(arg.annotation, ctx)

    def conditional(self, node: ast.If | ast.IfExp, ctx: Context) -> None:
        self.visit(node.test, ctx)
        if _type_checking(node.test):  # never runs
            orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
            for part in orelse:
                self.visit(part, ctx)
            return
        branch, fallback = ctx, ctx
        if guard_test(node.test, self.aliases):
            test = guards.condition(node.test, self.aliases)
            branch, fallback = ctx.under(test), ctx.under(guards.negate(test))
        elif guard_test(node.test, ANY_OBJECT):
            # the else of a hasattr of anything is a fallback for what lacks the attribute (equinox 0.13.8's
            # `if hasattr(aval, "to_tangent_aval"): ... else: jax.core.raise_to_shaped(aval)` runs only on old jax)
            fallback = ctx.under(guards.unknown(node.test))
        if isinstance(node, ast.If):
            self.body(node.body, branch)
            self.body(node.orelse, fallback)
        else:
            self.visit(node.body, branch)
            self.visit(node.orelse, fallback)

    def boolean(self, node: ast.BoolOp, ctx: Context) -> None:
        """`hasattr(jax, "a") and jax.a.b`: what follows a guard test in an `and` runs only where the test holds;
        `getattr(hjx, "HiPrim", None) or hjx.VJPHiPrimitive` (flax 0.12.10's fix for jax 0.11.2): in an `or`, only
        where it does not, the fallback of version-compatible code, as an `if`'s else is."""
        for value in node.values:
            self.visit(value, ctx)
            if guard_test(value, self.aliases):
                test = guards.condition(value, self.aliases)
                ctx = ctx.under(test if isinstance(node.op, ast.And) else guards.negate(test))

    def imported(self, node: ast.Import | ast.ImportFrom, ctx: Context) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("jax."):
                    self.add(alias.name, node, ctx, IMPORT)
            return
        source = node.module or ""
        if node.level == 0 and (source == "jax" or source.startswith("jax.")):
            for alias in node.names:
                self.add(source if alias.name == "*" else f"{source}.{alias.name}", node, ctx, IMPORT)

    def attribute(self, node: ast.Attribute, ctx: Context) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del):  # `jax.monitoring.record_scalar = ...` (keras 3.15.1, for a
            self.visit(node.value, ctx)  # jax without it) reads only what it is set on
            return
        found = chain(node)
        if found is not None and found[0] in self.aliases:
            self.add(".".join([self.aliases[found[0]], *found[1]]), node, ctx)
            return
        self.visit(node.value, ctx)

    def jax_name(self, node: ast.expr) -> str | None:
        found = chain(node) if isinstance(node, ast.Attribute | ast.Name) else None
        if found is None or found[0] not in self.aliases:
            return None
        return ".".join([self.aliases[found[0]], *found[1]])

    def call(self, node: ast.Call, ctx: Context) -> None:
        if ctx.when == "import" and not (ctx.guard or ctx.catching) and isinstance(node.func, ast.Name):
            self.called_at_import.add(node.func.id)
        called = self.jax_name(node.func)
        if called is not None:
            first = node.args[0] if node.args else None
            option = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
            if re.fullmatch(r"jax\.config(\.config)?\.update", called) and option.isidentifier():
                self.add(f"jax.config.{option}", node, ctx)
        # the keywords a call of a jax callable passes, and those a partial of one binds (`@partial(jax.jit,
        # static_argnames=...)` calls jax.jit with them where it decorates)
        target = called
        func = chain(node.func) if isinstance(node.func, ast.Attribute | ast.Name) else None
        if target is None and func is not None and [func[0], *func[1]][-1] == "partial" and node.args:
            target = self.jax_name(node.args[0])
        if target is not None and not target.startswith("jax.config."):
            for keyword in dict.fromkeys(k.arg for k in node.keywords if k.arg):
                self.add(target, node, ctx, KEYWORD, keyword)
        for child in ast.iter_child_nodes(node):
            self.visit(child, ctx)


def uses_in(source: str | bytes, module: str) -> list[Use]:
    """Every jax use of one file (see _Finder); a file that does not parse has none (and is reported)."""
    tree = wheels.parse(source)
    finder = _Finder(tree, module)
    finder.body(tree.body, Context())
    return finder.finish()


def import_source(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a `from X import ...` in `module` reads (`from . import a`, `from ..b import c`)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, node.module] if node.module else base)


def exports(tree: ast.Module, module: str, is_package: bool) -> Iterator[tuple[str, str, str]]:
    """(source module, name, public name) of each `from X import name [as alias]` at module level of a public
    module: how a function defined in a private module is reached."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.names[0].name != "*":
            source = import_source(node, module, is_package)
            for alias in node.names:
                yield source, alias.name, f"{module}.{alias.asname or alias.name}"


def imported_at_import(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """The modules a module imports when it is imported (statements outside functions: module level, `try`, `if`
    but `if TYPE_CHECKING:`, class bodies), resolved: `import a.b` imports a and a.b, `from a import b` imports a,
    and a.b if it is a module (the caller keeps only the package's own modules)."""
    found: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.If) and _type_checking(node.test):  # for a type checker only: a lazy package's
            pending.extend(node.orelse)  # (transformers') `import` imports none of it, its `else:` runs instead
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = import_source(node, module, is_package)
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names if alias.name != "*")
        else:
            pending.extend(ast.iter_child_nodes(node))
    return found


def reached(imports: dict[str, set[str]]) -> set[str]:
    """The package's modules that `import TOP` runs, for each top-level package TOP (the shallowest modules: a
    namespace package's, orbax.checkpoint): what its __init__ imports, and so on (a.b.c runs a and a.b first)."""
    seen: set[str] = set()
    pending = [m for m in imports if m.rpartition(".")[0] not in imports]
    while pending:
        module = pending.pop()
        parts = module.split(".")
        for cut in range(1, len(parts) + 1):
            name = ".".join(parts[:cut])
            if name in imports and name not in seen:
                seen.add(name)
                pending.extend(imports[name])
    return seen


def public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def public_name(qualified: str, reexported: dict[str, list[str]]) -> str:
    """The shortest public name of a function or method (haiku._src.transform.transform -> haiku.transform), from
    the re-exports of the package's public modules; a private helper keeps its own name."""
    parts = qualified.split(".")
    for cut in range(len(parts), 0, -1):
        head, tail = ".".join(parts[:cut]), parts[cut:]
        names = sorted(reexported.get(head, []), key=lambda n: (n.count("."), n))
        if names and public(".".join(tail)):
            shorter = ".".join([names[0], *tail])
            return min([shorter, qualified] if public(qualified) else [shorter], key=lambda n: (n.count("."), n))
    return qualified


ENTRY_POINTS = Path(__file__).resolve().parents[2] / "envaudit" / "rules" / "tables" / "derived" / "entry-points.toml"
MAX_REACHED = 50_000  # (function, class of self) states walked from one entry point


def entry_points(project: str) -> list[str]:
    """The public calls the library's own README shows its users making (tables/derived/entry-points.toml)."""
    import tomllib

    with ENTRY_POINTS.open("rb") as handle:
        libraries = tomllib.load(handle)["library"]
    return sorted({e for lib in libraries if lib["package"] == project for e in lib["entry_points"]})


class CallGraph:
    """Which of a release's functions call or name which, read with ast over every package file: enough to say
    which functions an entry point reaches. A call is resolved statically: a name the module defines or imports
    (through the package's re-exports), `self.m()`/`cls.m()` by the methods of the class the entry point was called
    on and its bases (a base's `run` calling `self.update` reaches the subclass's `update`), `super().m()` by the
    bases of the class that holds the call, a class called by its `__init__`; a function passed by name (a callback)
    counts as called. What is reached otherwise (a call through a value, getattr, a registry) is not seen: a use off
    every path found stays a warning."""

    def __init__(self) -> None:
        self.functions: dict[str, list[tuple[str, str]]] = {}  # outermost function -> ("self"|"super"|"name", x)
        self.classes: dict[str, list[str]] = {}  # class -> its bases, as dotted names
        self.links: dict[str, str] = {}  # MODULE.NAME -> what an import binds it to

    def merge(self, other: CallGraph) -> None:
        """Another file's calls added, as reading that file here would add them."""
        self.functions.update(other.functions)
        self.classes.update(other.classes)
        for name, target in other.links.items():
            self.links.setdefault(name, target)

    def read(self, tree: ast.Module, module: str, is_package: bool) -> None:
        local: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom) and node.names[0].name != "*":
                source = import_source(node, module, is_package)
                for alias in node.names:
                    local[alias.asname or alias.name] = f"{source}.{alias.name}"
        for name, target in local.items():
            self.links.setdefault(f"{module}.{name}", target)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                local[node.name] = f"{module}.{node.name}"
        self._body(tree.body, module, local)

    def _body(self, body: list[ast.stmt], prefix: str, local: dict[str, str]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[f"{prefix}.{node.name}"] = self._calls(node, local)
            elif isinstance(node, ast.ClassDef):
                qualified = f"{prefix}.{node.name}"
                bases = [chain(b) for b in node.bases]
                self.classes[qualified] = [
                    ".".join([local[b[0]], *b[1]]) for b in bases if b is not None and b[0] in local
                ]
                self._body(node.body, qualified, local)
            elif isinstance(node, ast.If | ast.Try | ast.TryStar | ast.With):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    for part in getattr(node, field, []):
                        self._body(part.body if isinstance(part, ast.ExceptHandler) else [part], prefix, local)

    @staticmethod
    def _calls(function: ast.AST, local: dict[str, str]) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                inner = node.func.value
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "super":
                    found.append(("super", node.func.attr))
                    continue
            if not isinstance(node, ast.Attribute | ast.Name) or not isinstance(node.ctx, ast.Load):
                continue
            named = chain(node)
            if named is None:
                continue
            root, attributes = named
            if root in ("self", "cls") and len(attributes) == 1:
                found.append(("self", attributes[0]))
            elif root in local:
                found.append(("name", ".".join([local[root], *attributes])))
        return list(dict.fromkeys(found))

    def resolve(self, dotted: str, depth: int = 0) -> str | None:
        """The function or class a dotted name is, followed through the package's imports and re-exports."""
        if dotted in self.functions or dotted in self.classes:
            return dotted
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            head = ".".join(parts[:cut])
            if head in self.links and depth < 20 and self.links[head] != head:
                return self.resolve(".".join([self.links[head], *parts[cut:]]), depth + 1)
        return None

    def method(self, cls: str, name: str, seen: frozenset[str] = frozenset()) -> str | None:
        """`name` as an instance of `cls` finds it: its own, else its bases' in order."""
        if f"{cls}.{name}" in self.functions:
            return f"{cls}.{name}"
        for base in self.classes.get(cls, []):
            resolved = self.resolve(base)
            if resolved in self.classes and resolved not in seen:
                found = self.method(resolved, name, seen | {cls})
                if found:
                    return found
        return None

    def _holder(self, function: str) -> str | None:
        holder = function.rpartition(".")[0]
        return holder if holder in self.classes else None

    def reached(self, entry: str) -> set[str]:
        """The functions an entry point (`diffrax.diffeqsolve`, `jaxopt.OptaxSolver.run`) reaches, itself included."""
        start: tuple[str, str | None] | None = None
        resolved = self.resolve(entry)
        if resolved in self.functions:
            start = (resolved, self._holder(resolved))
        else:
            holder, _, name = entry.rpartition(".")
            cls = self.resolve(holder)
            found = self.method(cls, name) if cls in self.classes else None
            start = (found, cls) if found else None
        if start is None:
            return set()
        seen, pending = {start}, [start]
        while pending and len(seen) < MAX_REACHED:
            function, this = pending.pop()
            for kind, target in self.functions.get(function, []):
                following: tuple[str, str | None] | None = None
                if kind == "self" and (this or self._holder(function)):
                    cls = this or self._holder(function)
                    found = self.method(cls, target) if cls else None
                    following = (found, cls) if found else None
                elif kind == "super" and self._holder(function):
                    for base in self.classes.get(self._holder(function) or "", []):
                        base_class = self.resolve(base)
                        found = self.method(base_class, target) if base_class in self.classes else None
                        if found:
                            following = (found, this)
                            break
                elif kind == "name":
                    resolved = self.resolve(target)
                    if resolved in self.functions:
                        following = (resolved, self._holder(resolved))
                    elif resolved in self.classes:
                        init = self.method(resolved, "__init__")
                        following = (init, resolved) if init else None
                if following is not None and following not in seen:
                    seen.add(following)
                    pending.append(following)
        return {function for function, _ in seen}


def jax_requirement(fields: dict[str, list[str]]) -> str | None:
    """The specifier this release declares on jax itself (an extra's requirement is not enforced): None when it
    declares none."""
    from packaging.requirements import InvalidRequirement, Requirement

    found = []
    for text in fields.get("Requires-Dist", []):
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.name.lower() != "jax":
            continue
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            found.append(str(requirement.specifier))
    return ",".join(s for s in found if s) if found else None


@dataclass(frozen=True)
class _FileRead:
    """What read_release takes of one file: the modules its import imports, its re-exports (a public module's),
    its jax uses (None for a file that names no jax), and its calls (read where an entry point needs them)."""

    imports: set[str]
    exports: list[tuple[str, str, str]]
    uses: list[Use] | None
    calls: CallGraph | None


_FILES: dict[tuple[str, bool, str], _FileRead | None] = {}  # (path, is_package, sha256) -> what it gave: a
# release repeats most files of the one before (transformers' 2,000), read once per run


def _read_file(name: str, data: bytes, module: str, is_package: bool, calls: bool) -> _FileRead | None:
    """One package file read (None: it does not parse), from _FILES where the same bytes at the same path were read
    before in this run; `calls`: with its calls (a CallGraph of this file alone)."""
    key = (name, is_package, hashlib.sha256(data).hexdigest())
    known = _FILES.get(key, _NOT_READ)
    if known is None or (isinstance(known, _FileRead) and (known.calls is not None or not calls)):
        return known
    try:
        tree = wheels.parse(data)
    except (SyntaxError, ValueError):
        _FILES[key] = None
        return None
    if isinstance(known, _FileRead):
        read = known
    else:
        uses = None
        if b"jax" in data:
            finder = _Finder(tree, module)
            finder.body(tree.body, Context())
            uses = finder.finish()
        found = list(exports(tree, module, is_package)) if public(module) else []
        read = _FileRead(imported_at_import(tree, module, is_package), found, uses, None)
    if calls:
        graph = CallGraph()
        graph.read(tree, module, is_package)
        read = replace(read, calls=graph)
    _FILES[key] = read
    return read


_NOT_READ = object()


def read_release(path: Path, entries: list[str] | None = None) -> dict[str, Any]:
    """Every jax use of a release's package code: "uses", api -> {"import": file:line, "call": {function:
    file:line}}, and "module" where only the import of that module runs it, not the import of the package's top
    level; "main": {entry point: the function it reaches that holds the use} for a use on a call that one of
    `entries` (the library's entry points) reaches. "conditional": the uses a jax release decides beyond having the
    name, each with the same places: a keyword argument (`keyword`) and a use under a condition (`guard`, a list of
    conditions that must all hold), one per (api, keyword, guard)."""
    reexported: dict[str, list[str]] = {}
    graph = CallGraph()
    trees: list[tuple[str, str, list[Use]]] = []
    unparsed: list[str] = []
    imports: dict[str, set[str]] = {}
    for name, data in wheels.python_files(path):
        if not package_file(name, wheel=path.name.endswith(".whl")):
            continue
        module, is_package = module_of(name), name.endswith("__init__.py")
        read = _read_file(name, data, module, is_package, calls=bool(entries))
        if read is None:
            unparsed.append(name)
            continue
        imports[module] = read.imports
        if entries and read.calls is not None:  # (the calls are read for the entry points alone)
            graph.merge(read.calls)
        for source, item, alias in read.exports:
            reexported.setdefault(f"{source}.{item}", []).append(alias)
        if read.uses is not None:
            trees.append((name, module, read.uses))
    found: dict[str, dict[str, Any]] = {}
    conditional: dict[str, dict[str, Any]] = {}
    guarded = 0
    at_top = reached(imports)
    reach = {entry: graph.reached(entry) for entry in entries or []}
    for name, module, file_uses in trees:
        for use in file_uses:
            if use.guarded:
                guarded += 1
                continue
            if use.keyword or use.guard:
                key = json.dumps([use.api, use.keyword, use.guard], sort_keys=True)
                entry = conditional.setdefault(key, {"api": use.api, "import": None, "call": {}})
                entry.update({"keyword": use.keyword} if use.keyword else {})
                entry.update({"guard": list(use.guard)} if use.guard else {})
            else:
                entry = found.setdefault(use.api, {"import": None, "call": {}})
            _place(entry, use, f"{name}:{use.line}", module in at_top, module, reexported, reach)
    fields = wheels.metadata(path)
    return {
        "format": FORMAT,
        "uses": dict(sorted(found.items())),
        "conditional": [conditional[k] for k in sorted(conditional)],
        "guarded": guarded,
        "unparsed": unparsed,
        "requires_jax": jax_requirement(fields),
        "entry_points": list(entries or []),
        "entry_points_found": sorted(e for e, functions in reach.items() if functions),
    }


def _place(
    entry: dict[str, Any],
    use: Use,
    where: str,
    top: bool,
    module: str,
    reexported: dict[str, list[str]],
    reach: dict[str, set[str]],
) -> None:
    """Where a use runs, added to its entry: the first place at import (one `import TOP` runs before one only the
    import of its own module runs), each public function that runs it on a call, and the entry points that reach
    that function."""
    if use.when == "import":  # `import TOP` raises; else only the import of this module
        if not entry["import"] or ("module" in entry and top):
            entry["import"] = where
            if top:
                entry.pop("module", None)
            else:
                entry["module"] = module
        return
    entry["call"].setdefault(public_name(use.function, reexported), where)
    for point, functions in reach.items():
        if use.function in functions:
            entry.setdefault("main", {}).setdefault(point, f"{use.function} ({where})")


def releases(project: str, cache: Path, offline: bool) -> list[wheels.Artefact]:
    """The project's final releases read here: those uploaded since its `since` in libraries.toml (2023-01-01 for
    a project not listed there), each from its pure wheel, else its sdist, else a platform wheel (klujax ships only
    those: their Python files are the same). A project with no final release has its pre-releases (pip installs the
    newest of them: jraph's releases are all .dev0); one with no release since then has its newest read."""
    data = wheels.project_json(project, cache, offline)
    every = wheels.artefacts(data, any_wheel=True) or wheels.artefacts(data, finals_only=False, any_wheel=True)
    since = SINCES.get(project, "2023-01-01")
    return [a for a in every if a.upload_time >= since] or every[-1:]


def uses_of(artefact: wheels.Artefact, cache: Path, offline: bool) -> dict[str, Any]:
    """A release's uses, from the cache when they were read before (from the same file)."""
    kept = cache / "derived" / "uses" / artefact.project / f"{artefact.version}.json"
    entries = entry_points(artefact.project)
    if kept.exists():
        data: dict[str, Any] = wheels.load_json(kept)
        if data.get("format") == FORMAT and data.get("sha256") == artefact.sha256 and data["entry_points"] == entries:
            return data
    data = read_release(wheels.fetch(artefact, cache, offline), entries)
    data.update(sha256=artefact.sha256, version=artefact.version, file=artefact.filename)
    data.update(upload_time=artefact.upload_time, kind=artefact.kind)
    wheels.dump_json(kept, data)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = wheels.arguments(__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--only", nargs="*", default=list(PROJECTS), help="these projects only")
    options = parser.parse_args(argv)
    cache = wheels.cache_of(options.cache)
    started = time.monotonic()
    for project in options.only:
        found = releases(project, cache, options.offline)
        wheels.fetch_all(found, cache, options.offline)
        for artefact in found:
            data = uses_of(artefact, cache, options.offline)
            print(f"{project} {artefact.version}: {len(data['uses'])} jax names, {data['guarded']} guarded uses")
        if not found:
            print(f"{project}: no release")
    print(f"done in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
