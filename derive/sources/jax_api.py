"""Derive each jax release's API surface from its released file (wheel, else sdist), read with `ast` only.

For every module of the release (jax/**/*.py; jax/_src too: its modules are what the public ones re-export, and
what libraries reach into), the names it binds at module level (assignments, defs, classes, import bindings,
`__all__`, star imports resolved within jax), its child modules (an attribute once imported: counted present),
and its `__getattr__` deprecation table (`_deprecations = {"name": ("message", obj_or_None)}` read by
jax._src.deprecations.deprecation_getattr: `(msg, None)` raises AttributeError(msg), `(msg, obj)` warns and
works). Also the `jax.config` options the release defines, the members of its Config class and the deprecated
names its `__getattr__` still answers (jax 0.4.20 to 0.4.24: `jax.config.define_bool_state`). A module whose
surface cannot be read to the end (a star import from outside jax, a `__getattr__` of its own, `globals()`) is
`open`: a name it does not list is not ruled out.

Each release's surface is kept in the cache (derived/jax/VERSION.json); `lookup` answers whether a dotted name is
there, as `import`/attribute access would find it.

usage: python -m derive.sources.jax_api [--cache DIR] [--offline]
"""

from __future__ import annotations

import ast
import contextlib
import re
import time
from pathlib import Path
from typing import Any

from packaging.version import Version

from derive.sources import jax_signatures, pyast, wheels

FIRST = "0.3.0"
FORMAT = 8  # of the cached surfaces: bumped when what is read changes, so that the cache is re-read (8: raising stubs)
CONFIG_CALL = re.compile(
    r"^(define_|DEFINE_)?\w*?(bool|int|float|string|enum|enum_class|str|list|object)\w*_(state|flag)$"
)
DEFINE_FLAG = re.compile(r"^DEFINE_(bool|boolean|integer|float|string|enum|enum_class|list|multi_\w+)$")

Surface = dict[str, Any]  # {"names": [...], "removed": {name: msg}, "deprecated": {name: msg}, "open": bool, ...}


def module_name(path: str) -> str | None:
    """jax/a/b.py -> jax.a.b, jax/a/__init__.py -> jax.a; None for what is not a module of jax."""
    if not path.startswith("jax/") or not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if all(p.isidentifier() for p in parts) else None


def _strings(node: ast.AST | None) -> list[str] | None:
    """The strings of a literal list/tuple of strings, else None."""
    if isinstance(node, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [str(e.value) for e in node.elts if isinstance(e, ast.Constant)]
    return None


def text_of(node: ast.AST) -> str:
    """A message as jax writes it: string literals joined (implicitly, or with +); anything else as its source."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return text_of(node.left) + text_of(node.right)
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(v) + "}" for v in node.values)
    return ast.unparse(node)


def raising_stub(node: ast.stmt) -> str | None:
    """The message of a public module-level function whose body (past its docstring) only raises, else None: what
    jax leaves where an API was removed but its name kept (jax 0.4.35's `host_callback.call` and `id_tap` raise
    NotImplementedError): there to import, gone at the first call."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith("_"):
        return None
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return None
    raised = body[0].exc
    args = raised.args if isinstance(raised, ast.Call) else []
    name = ast.unparse(raised.func if isinstance(raised, ast.Call) else raised)
    said = " ".join(text_of(args[0]).split()) if args else ""
    return f"{name}: {said}" if STUB_SAYS.search(said) else None


# what a stub left for a removed API says (jax's own words: host_callback's "has been deprecated since March 2024 and
# is now no longer supported", colab_tpu's "was required for older JAX versions"); a function that raises by design
# (jax._src.util.assert_unreachable, jnp.fromfile's "is not implemented because ...") says none of it
STUB_SAYS = re.compile(r"deprecat|no longer|(has been|was) removed|older (jax|versions)", re.IGNORECASE)


def deprecation_table(node: ast.AST) -> tuple[dict[str, str], dict[str, str]]:
    """(removed, deprecated) from a `_deprecations` dict literal: name -> jax's message. A value whose object is
    the constant None raises AttributeError(message); any other object still works (with a warning)."""
    removed: dict[str, str] = {}
    deprecated: dict[str, str] = {}
    if not isinstance(node, ast.Dict):
        return removed, deprecated
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue
        if isinstance(value, ast.Tuple) and len(value.elts) == 2:
            message, obj = value.elts
            gone = isinstance(obj, ast.Constant) and obj.value is None
            (removed if gone else deprecated)[key.value] = " ".join(text_of(message).split())
        else:
            deprecated[key.value] = ""  # an entry read otherwise: kept working, the conservative reading
    return removed, deprecated


class _Reader:
    """Module-level bindings of one module, in statement order (a top-level `del` unbinds; a binding in any branch
    of an `if` or `try` counts, except under `if TYPE_CHECKING:`, which never runs)."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module, self.is_package = module, is_package
        self.names: set[str] = set()
        self.all: list[str] | None = None
        self.stars: set[str] = set()
        self.removed: dict[str, str] = {}
        self.stubs: set[str] = set()  # of `removed`: names still bound, whose function raises when called
        self.deprecated: dict[str, str] = {}
        self.open = False
        self.getattr_own = False
        self.getattr_table = False

    def block(self, body: list[ast.stmt], top: bool) -> None:
        for node in body:
            self.statement(node, top)

    def bind(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.names.add(target.id)
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self.bind(element)
        elif isinstance(target, ast.Starred):
            self.bind(target.value)

    def statement(self, node: ast.stmt, top: bool) -> None:
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            self.assignment(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self.names.add(node.name)
            self.getattr_own |= node.name == "__getattr__"
            if top and (message := raising_stub(node)) is not None:
                self.removed[node.name] = message
                self.stubs.add(node.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                self.names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            self.import_from(node)
        elif isinstance(node, ast.If):
            if not pyast.is_type_checking(node.test):
                self.block(node.body, False)
            self.block(node.orelse, False)
        elif isinstance(node, ast.Try | ast.TryStar):
            for part in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                self.block(part, False)
        elif isinstance(node, ast.With | ast.AsyncWith):
            self.block(node.body, False)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.While):
            if isinstance(node, ast.For | ast.AsyncFor):
                self.bind(node.target)
            self.block(node.body, False)
            self.block(node.orelse, False)
        elif isinstance(node, ast.Delete) and top:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.names.discard(target.id)
        elif isinstance(node, ast.Expr):
            self.expression(node.value)

    def assignment(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            self.bind(target)
            # a name bound to a raising stub is one (jax 0.4.35's host_callback: `id_tap = call`)
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Name) and node.value.id in self.stubs:
                self.removed[target.id] = self.removed[node.value.id]
                self.stubs.add(target.id)
            if isinstance(target, ast.Name) and target.id == "_deprecations" and node.value is not None:
                removed, deprecated = deprecation_table(node.value)
                self.removed.update(removed)
                self.deprecated.update(deprecated)
            if isinstance(target, ast.Name) and target.id == "__all__":
                listed = _strings(node.value)
                if listed is None:
                    self.open = True
                else:
                    self.all = [*(self.all or []), *listed] if isinstance(node, ast.AugAssign) else listed
            names = {t.id for t in ast.walk(target) if isinstance(t, ast.Name)}
            if "__getattr__" in names:
                self.getattr_from(node.value, names)

    def getattr_from(self, value: ast.AST | None, targets: set[str]) -> None:
        """`__getattr__ = deprecation_getattr(__name__, _deprecations)` is the table; a lazy loader's
        `__getattr__, ... = attach(__name__, [names])` lists its names; any other `__getattr__` leaves it open."""
        if isinstance(value, ast.Call):
            called = ast.unparse(value.func)
            if "deprecation_getattr" in called:
                self.getattr_table = True
                return
            listed = [s for arg in value.args for s in (_strings(arg) or [])]
            if "attach" in called and listed:
                self.names.update(listed)
                if "__all__" in targets:
                    self.all = listed
                return
        self.getattr_own = True

    def import_from(self, node: ast.ImportFrom) -> None:
        source = pyast.relative(self.module, self.is_package, node.level, node.module) if node.level else node.module
        for alias in node.names:
            if alias.name == "*":
                self.stars.add(source or "")
            else:
                self.names.add(alias.asname or alias.name)

    def expression(self, value: ast.expr) -> None:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            owner = value.func.value
            if isinstance(owner, ast.Name) and owner.id == "__all__":
                self.all = [*(self.all or []), *(s for a in value.args for s in (_strings(a) or []))]
        for sub in ast.walk(value):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "globals":
                self.open = True

    def surface(self) -> Surface:
        if self.getattr_own and not (self.removed or self.deprecated):
            self.open = True
        return {
            "names": sorted(self.names),
            "all": self.all,
            "stars": sorted(self.stars),
            "removed": dict(sorted(self.removed.items())),
            "stubs": sorted(self.stubs),
            "deprecated": dict(sorted(self.deprecated.items())),
            "open": self.open,
        }


def read_module(source: bytes, module: str, is_package: bool) -> Surface:
    """One module's surface (see _Reader) and its callables (jax_signatures); a module that does not parse is
    open."""
    reader = _Reader(module, is_package)
    try:
        tree = wheels.parse(source)
    except (SyntaxError, ValueError):
        reader.open = True
        return reader.surface()
    reader.block(tree.body, True)
    return {**reader.surface(), "callables": jax_signatures.read_callables(tree, module, is_package)}


def config_options(trees: dict[str, ast.Module]) -> list[str]:
    """The names of the options every `*_state(name=...)`/`define_*_state(...)`/`*_flag(...)`/`DEFINE_*(...)`
    call of the release defines, wherever it is (jax/_src/config.py and the modules that add their own)."""
    found: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if not (CONFIG_CALL.match(called) or DEFINE_FLAG.match(called)):
                continue
            named = [k.value for k in node.keywords if k.arg == "name"]
            first = named[0] if named else node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.isidentifier():
                found.add(first.value)
    return sorted(found)


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def config_members(trees: dict[str, ast.Module]) -> list[str]:
    """The members of jax's Config class (its methods, class attributes and `self.x =` assignments): what
    `jax.config.x` finds besides the options."""
    found: set[str] = set()
    for name in ("jax._src.config", "jax.config"):
        tree = trees.get(name)
        for node in tree.body if tree else []:
            if isinstance(node, ast.ClassDef) and node.name == "Config":
                for item in ast.walk(node):
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        found.add(item.name)
                    elif isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store) and _is_self(item.value):
                        found.add(item.attr)
                for item in node.body:
                    if isinstance(item, ast.Assign | ast.AnnAssign):
                        targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                        found.update(t.id for t in targets if isinstance(t, ast.Name))
    return sorted(found)


def config_deprecated(trees: dict[str, ast.Module]) -> list[str]:
    """The names Config's own `__getattr__` still answers, deprecated (jax 0.4.20 to 0.4.24: `if name in
    _CONFIG_DEPRECATIONS: fn = globals().get(name)`, with a DeprecationWarning): `jax.config.define_bool_state`
    works there. Read as the names of the module-level literal the `__getattr__` tests `name in`, that the module
    binds at its top level (what `globals().get` finds)."""
    found: set[str] = set()
    for name in ("jax._src.config", "jax.config"):
        tree = trees.get(name)
        if tree is None:
            continue
        literals: dict[str, list[str]] = {}
        bound: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound.add(target.id)
                        value = node.value
                        keys = (
                            value.keys
                            if isinstance(value, ast.Dict)
                            else value.elts
                            if isinstance(value, ast.Set | ast.List | ast.Tuple)
                            else []
                        )
                        strings = [k.value for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                        if strings:
                            literals[target.id] = strings
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                bound.add(node.name)
        for node in tree.body:
            if not (isinstance(node, ast.ClassDef) and node.name == "Config"):
                continue
            for item in node.body:
                if not (isinstance(item, ast.FunctionDef) and item.name == "__getattr__"):
                    continue
                for test in ast.walk(item):
                    if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.In):
                        table = test.comparators[0]
                        if isinstance(table, ast.Name) and table.id in literals:
                            found.update(n for n in literals[table.id] if n in bound)
    return sorted(found)


def resolve_stars(modules: dict[str, Surface]) -> None:
    """A star import adds the source's `__all__` (else its public names); from outside jax, or from an open
    module, it leaves the importer open. Repeated until nothing changes (stars of stars)."""
    changed = True
    while changed:
        changed = False
        for surface in modules.values():
            for star in surface["stars"]:
                source = modules.get(star)
                if source is None:
                    if not surface["open"]:
                        surface["open"], changed = True, True
                    continue
                exported = source["all"] if source["all"] is not None else [n for n in source["names"] if n[:1] != "_"]
                new = set(exported) - set(surface["names"])
                if new:
                    surface["names"] = sorted({*surface["names"], *new})
                    changed = True
                if source["open"] and not surface["open"]:
                    surface["open"], changed = True, True


def read_release(path: Path) -> dict[str, Any]:
    """A release's surface from its file: every module, its children, the config options and Config's members."""
    modules: dict[str, Surface] = {}
    trees: dict[str, ast.Module] = {}
    for name, data in wheels.python_files(path):
        module = module_name(name)
        if module is None:
            continue
        is_package = name.endswith("__init__.py")
        modules[module] = read_module(data, module, is_package)
        if module.startswith("jax._src.config") or module == "jax.config" or b"_state(" in data or b"DEFINE_" in data:
            with contextlib.suppress(SyntaxError, ValueError):
                trees[module] = wheels.parse(data)
    for module in list(modules):  # a package's child modules: present once imported
        parent, _, child = module.rpartition(".")
        if parent in modules:
            modules[parent].setdefault("children", []).append(child)
    for surface in modules.values():
        surface["children"] = sorted(surface.get("children", []))
    resolve_stars(modules)
    return {
        "format": FORMAT,
        "modules": dict(sorted(modules.items())),
        "config_options": config_options(trees),
        "config_members": config_members(trees),
        "config_deprecated": config_deprecated(trees),
    }


def lookup(release: dict[str, Any], dotted: str) -> tuple[str | None, str]:
    """Where `dotted` (jax.a.b...) stops being there in this release: (the first prefix of it that is absent, jax's
    message where its deprecation table says it was removed), or (None, "") when it is there. Walked as Python
    does: a child module, else a name the module binds (a value: what lies past it is not read), else its
    deprecation table; an open module keeps whatever it does not rule out."""
    modules = release["modules"]
    parts = dotted.split(".")
    if parts[0] != "jax" or "jax" not in modules:
        return None, ""
    current = "jax"
    for index, part in enumerate(parts[1:], start=1):
        prefix = ".".join(parts[: index + 1])
        if current == "jax" and part == "config" and index + 1 < len(parts):
            there, message = _config_has(release, parts[index + 1])
            return (None, "") if there else (f"{prefix}.{parts[index + 1]}", message)
        surface = modules[current]
        if part in surface["children"] and f"{current}.{part}" in modules:
            current = f"{current}.{part}"
            continue
        if part in surface["removed"]:
            return prefix, surface["removed"][part]
        if part in surface["names"] or part in surface["deprecated"] or surface["open"]:
            return None, ""
        return prefix, ""
    return None, ""


def stubbed(release: dict[str, Any], prefix: str) -> bool:
    """Whether what `lookup` found absent (`prefix`) is a name still bound whose function only raises: importing it
    works, calling it does not."""
    module, _, name = prefix.rpartition(".")
    return name in release["modules"].get(module, {}).get("stubs", ())


def _config_has(release: dict[str, Any], name: str) -> tuple[bool, str]:
    """`jax.config.NAME`: an option, a member of Config, or a name of the jax.config module where there is one."""
    module = release["modules"].get("jax.config")
    if name in release["config_options"] or name in release["config_members"]:
        return True, ""
    if name in release.get("config_deprecated", []):  # Config.__getattr__ answers it, with a DeprecationWarning
        return True, ""
    if module is not None:
        if name in module["removed"]:
            return False, module["removed"][name]
        if name in module["names"] or name in module["deprecated"]:
            return True, ""
    return False, ""


def releases(cache: Path, offline: bool) -> list[wheels.Artefact]:
    """jax's releases from FIRST on, each with its file (wheel, else sdist)."""
    first = Version(FIRST)
    return [a for a in wheels.artefacts(wheels.project_json("jax", cache, offline)) if Version(a.version) >= first]


def surface_of(artefact: wheels.Artefact, cache: Path, offline: bool) -> dict[str, Any]:
    """A release's surface, from the cache when it was read before (and its file's sha256 still matches)."""
    kept = cache / "derived" / "jax" / f"{artefact.version}.json"
    if kept.exists():
        data: dict[str, Any] = wheels.load_json(kept)
        if data.get("format") == FORMAT and data.get("sha256") == artefact.sha256:
            return data
    data = read_release(wheels.fetch(artefact, cache, offline))
    data["sha256"], data["version"], data["file"] = artefact.sha256, artefact.version, artefact.filename
    wheels.dump_json(kept, data)
    return data


def main(argv: list[str] | None = None) -> int:
    options = wheels.arguments(__doc__.splitlines()[0] if __doc__ else "").parse_args(argv)
    cache = wheels.cache_of(options.cache)
    started = time.monotonic()
    found = releases(cache, options.offline)
    wheels.fetch_all(found, cache, options.offline)
    for artefact in found:
        surface = surface_of(artefact, cache, options.offline)
        print(f"jax {artefact.version}: {len(surface['modules'])} modules, {len(surface['config_options'])} options")
    print(f"{len(found)} jax releases in {time.monotonic() - started:.1f}s; surfaces in {cache / 'derived' / 'jax'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
