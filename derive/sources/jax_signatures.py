"""The keyword arguments each callable of a jax release accepts, read from its source with `ast` (no jax imported):
what `jax.numpy.clip(x, max=1)` needs of the release beside the name itself (jax 0.4.26's clip is
`def clip(a, a_min=None, a_max=None, out=None)`: `max=` raises TypeError; jax 0.4.27's takes `min`/`max` and keeps
`a_min`/`a_max` deprecated, jax-v0.4.26 and jax-v0.4.27 jax/_src/numpy/lax_numpy.py).

Per module, each name bound at module level to something callable: a `def` (its parameters a caller may name:
positional-or-keyword and keyword-only, not positional-only; whether it takes **kwargs; the last `def` of a name
wins, as `@overload` stubs precede the real one), a class (its own `__init__`, else its own `__new__`), or a
reference followed when resolving (`from jax._src.api import jit`, `clip = _clip`, `x = functools.partial(f, ...)`,
a wrapper `def f(*args, **kwargs): return _f(*args, **kwargs)`, a deprecation table's object). A name bound to
anything else (a ufunc object, a C++ class from jaxlib) or bound differently in two branches is not recorded: its
signature is unknown, and an unknown signature accepts every keyword (as **kwargs does).
"""

from __future__ import annotations

import ast
from typing import Any

from derive.sources import pyast

Binding = list[Any]  # ["def", [names], takes **kwargs] | ["ref", "jax.a.b"]
MAX_DEPTH = 20
# decorators (and wrapping calls, `jit = api_boundary(jit, ...)` in jax-v0.9.0 jax/_src/api.py) that leave a
# callable's keywords as its def says: each passes a call's keywords on to the function (jit, custom_jvp's
# resolve_kwargs and the caches included), or returns the function itself (export, implements, overload's stubs
# are followed by the real def). Any other (binary_ufunc makes a ufunc object, curry a partial, use_cpp_class swaps
# in jaxlib's class) leaves the signature unknown.
PRESERVING = frozenset(
    {
        "export", "jit", "pjit", "api_boundary", "implements", "_wraps", "wraps", "lru_cache", "cache",
        "weakref_lru_cache", "contextmanager", "overload", "custom_jvp", "custom_vjp", "annotate_function",
        "set_module", "_warn_on_positional_kwargs", "default_matmul_precision", "_add_doc", "vectorize",
        "handle_boolean_args", "named_call", "dataclass", "register_pytree_node_class",
        "register_pytree_with_keys_class", "register_dataclass", "total_ordering", "final", "partial",
    }
)  # fmt: skip


def _decorator_name(node: ast.expr) -> str:
    """The function a decorator names: `@export` export, `@partial(jit, inline=True)` jit, `@util.implements(np.x)`
    implements."""
    if isinstance(node, ast.Call):
        called = pyast.dotted(node.func)
        if called and called[-1] == "partial" and node.args:
            return _decorator_name(node.args[0])
        node = node.func
    parts = pyast.dotted(node)
    return parts[-1] if parts else ""


def _preserves(decorators: list[ast.expr]) -> bool:
    return all(_decorator_name(d) in PRESERVING for d in decorators)


def _parameters(args: ast.arguments, drop_first: bool) -> Binding:
    named = [a.arg for a in [*args.args, *args.kwonlyargs]]
    if drop_first and not args.posonlyargs and args.args:  # self / cls: bound, never named by a caller (a
        named = named[1:]  # positional-only `self, /` is not among the names)
    return ["def", named, args.kwarg is not None]


class _Callables:
    """One module's callables (see the module's docstring), statement by statement."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module, self.is_package = module, is_package
        self.found: dict[str, Binding] = {}
        self.local: dict[str, str] = {}  # a name an import binds -> the absolute dotted name it is
        self.conflicted: set[str] = set()

    def set(self, name: str, binding: Binding | None, branch: bool) -> None:
        if name in self.conflicted:
            return
        if binding is None:
            self.found.pop(name, None)
            if branch:
                self.conflicted.add(name)
            return
        if branch and name in self.found and self.found[name] != binding:
            self.found.pop(name)
            self.conflicted.add(name)
            return
        self.found[name] = binding

    def reference(self, node: ast.expr) -> str | None:
        """The absolute dotted name an expression names: an imported name, or a name of this module, with the
        attributes after it."""
        parts = pyast.dotted(node)
        if parts is None:
            return None
        root = self.local.get(parts[0], f"{self.module}.{parts[0]}")
        return ".".join([root, *parts[1:]])

    def block(self, body: list[ast.stmt], branch: bool) -> None:
        for node in body:
            self.statement(node, branch)

    def statement(self, node: ast.stmt, branch: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.set(node.name, self.function(node) if _preserves(node.decorator_list) else None, branch)
        elif isinstance(node, ast.ClassDef):
            self.set(node.name, self.cls(node) if _preserves(node.decorator_list) else None, branch)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                self.local[local] = alias.name if alias.asname else alias.name.split(".")[0]
                self.set(local, None, branch)
        elif isinstance(node, ast.ImportFrom):
            source = (
                pyast.relative(self.module, self.is_package, node.level, node.module) if node.level else node.module
            )
            for alias in node.names:
                if alias.name == "*" or not source:
                    continue
                local = alias.asname or alias.name
                self.local[local] = f"{source}.{alias.name}"
                self.set(local, ["ref", f"{source}.{alias.name}"], branch)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    if target.id == "_deprecations" and node.value is not None:
                        self.deprecations(node.value)
                    binding = self.assigned(node.value)
                    if binding != ["ref", f"{self.module}.{target.id}"]:  # (`jit = api_boundary(jit)`: as it was)
                        self.set(target.id, binding, branch)
                    self.local.pop(target.id, None)
                elif isinstance(target, ast.Tuple | ast.List):  # (`f.__doc__ = ...` binds no name)
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            self.set(name.id, None, branch)
        elif isinstance(node, ast.If):
            if not pyast.is_type_checking(node.test):
                self.block(node.body, True)
            self.block(node.orelse, True)
        elif isinstance(node, ast.Try | ast.TryStar):
            for part in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                self.block(part, True)
        elif isinstance(node, ast.With | ast.AsyncWith):
            self.block(node.body, branch)

    def assigned(self, value: ast.expr | None) -> Binding | None:
        """`x = y`, `x = mod.y`, `x = functools.partial(y, ...)`, `x = api_boundary(y, ...)`: a reference to y;
        anything else unknown."""
        if value is None:
            return None
        if isinstance(value, ast.Call):
            called = pyast.dotted(value.func)
            if not (called and called[-1] in PRESERVING and value.args):
                return None
            value = value.args[0]
        target = self.reference(value)
        return ["ref", target] if target else None

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool = False) -> Binding:
        """Its parameters; a wrapper that only passes *args and **kwargs on to another function is that one."""
        args = node.args
        if not method and args.vararg and args.kwarg and not (args.args or args.kwonlyargs or args.posonlyargs):
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            call = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
            if (
                isinstance(call, ast.Call)
                and [ast.unparse(a) for a in call.args] == [f"*{args.vararg.arg}"]
                and [(k.arg, ast.unparse(k.value)) for k in call.keywords] == [(None, args.kwarg.arg)]
            ):
                target = self.reference(call.func)
                if target:
                    return ["ref", target]
        return _parameters(args, drop_first=method)

    def cls(self, node: ast.ClassDef) -> Binding | None:
        methods = {item.name: item for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
        for name in ("__init__", "__new__"):
            if name in methods:
                return self.function(methods[name], method=True)
        return None  # its base's, a dataclass's fields, a NamedTuple's: not read

    def deprecations(self, value: ast.expr) -> None:
        """A deprecation table's working entries (`"name": (message, obj)`): `jax.tree_map` is tree_util's."""
        if not isinstance(value, ast.Dict):
            return
        for key, entry in zip(value.keys, value.values, strict=True):
            named = isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value not in self.found
            if named and isinstance(key, ast.Constant) and isinstance(entry, ast.Tuple) and len(entry.elts) == 2:
                target = self.reference(entry.elts[1])
                if target:
                    self.found[str(key.value)] = ["ref", target]


def read_callables(tree: ast.Module, module: str, is_package: bool) -> dict[str, Binding]:
    """The callables one module binds at module level (see the module's docstring)."""
    reader = _Callables(module, is_package)
    reader.block(tree.body, False)
    return dict(sorted(reader.found.items()))


def signature(modules: dict[str, Any], dotted: str, depth: int = 0) -> Binding | None:
    """The `def` a dotted name is in this release, followed through its references (the longest prefix that is a
    module, then the name it binds, else what its star imports bring), or None where it is not read."""
    parts = dotted.split(".")
    if depth > MAX_DEPTH:
        return None
    cut = next((c for c in range(len(parts) - 1, 0, -1) if ".".join(parts[:c]) in modules), 0)
    if not cut:
        return None
    module, name, rest = modules[".".join(parts[:cut])], parts[cut], parts[cut + 1 :]
    binding = module.get("callables", {}).get(name)
    if binding is None:
        for star in module.get("stars", []):
            if star in modules and name in modules[star].get("callables", {}):
                return signature(modules, ".".join([star, name, *rest]), depth + 1)
        return None
    if binding[0] == "ref":
        return signature(modules, ".".join([binding[1], *rest]), depth + 1)
    return binding if not rest else None


def accepts(binding: Binding | None, keyword: str) -> bool:
    """Whether a call may name `keyword`: an unknown signature, **kwargs, or a parameter of that name."""
    return binding is None or bool(binding[2]) or keyword in binding[1]
