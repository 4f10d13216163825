"""The condition under which a library's guarded jax use runs, kept as a small tree and evaluated against each jax
release: version-compatible code asks jax what it has (`if hasattr(jax.tree_util, "register_dataclass"):`), or
tries one name and falls back to another (`try: from jax.extend.core import Primitive` / `except ImportError:
from jax.core import Primitive`), so that each branch runs on the jax releases the test picks; a branch breaks only
on a release where it runs and reads a name (or passes a keyword) that release lacks.

A condition is JSON (kept in the uses cache):
    {"has": "jax.a.b"}                 the release has the name (as `hasattr`/`import` finds it)
    {"accepts": ["jax.a.f", "kw"]}     the release's jax.a.f takes the keyword argument kw
    {"version": [">=", "0.4.30", "tuple"|"str"]}  jax's version compared as the library compares it: as a
                                       version (`jax.__version_info__ >= (0, 4, 30)`, `Version(jax.__version__)`)
                                       or as Python compares strings (`jax.__version__ >= "0.4.30"`)
    {"not": C}, {"all": [C, ...]}, {"any": [C, ...]}
    {"unknown": "source"}              a test this does not evaluate (of the library's own values, a version kept
                                       in a variable): neither true nor false
Evaluation is three-valued (Kleene's): a use counts as running on a release only where its condition is True.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from typing import Any

from packaging.version import InvalidVersion, Version

from derive.sources import pyast

Condition = dict[str, Any]
COMPARE: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
# what a library calls on jax's version string to compare it as a version (packaging's Version and parse,
# pkg_resources' parse_version, distutils' LooseVersion, a helper of its own: mpi4jax 0.9's versiontuple)
VERSION_CALLS = {"Version", "parse", "parse_version", "LooseVersion", "StrictVersion", "versiontuple"}
# what a membership test reads of jax to ask for a name: `"jax_x" in jax.config.values`, `"x" in dir(jax.core)`
CONTAINERS = {"values", "_value_holders", "__dict__", "__all__"}


def unknown(node: ast.AST) -> Condition:
    return {"unknown": ast.unparse(node)[:200]}


def negate(condition: Condition) -> Condition:
    inner: Condition = condition.get("not", {"not": condition})
    return inner


def every(conditions: list[Condition]) -> Condition:
    return conditions[0] if len(conditions) == 1 else {"all": conditions}


def jax_path(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The jax name a plain dotted expression is, through the file's aliases of jax (`jnp.x`: jax.numpy.x)."""
    parts = pyast.dotted(node)
    if parts is None or parts[0] not in aliases:
        return None
    return ".".join([aliases[parts[0]], *parts[1:]])


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _asked(node: ast.Call, aliases: dict[str, str]) -> str | None:
    """`hasattr(jax.x, "name")`, `getattr(jax.x, "name", default)`: the name asked for, jax.x.name."""
    called = node.func.id if isinstance(node.func, ast.Name) else ""
    if called not in ("hasattr", "getattr") or len(node.args) < 2 or (called == "getattr" and len(node.args) != 3):
        return None
    owner, name = jax_path(node.args[0], aliases), _string(node.args[1])
    return f"{owner}.{name}" if owner and name else None


def _version_side(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """How jax's version is read on one side of a comparison: "tuple" (`jax.__version_info__`, or the version
    string through a version parser), "str" (`jax.__version__` itself, compared as a string); None otherwise."""
    path = jax_path(node, aliases)
    if path in ("jax.__version_info__", "jax.version._version_as_tuple"):
        return "tuple"
    if path in ("jax.__version__", "jax.version.__version__", "jax.version._version"):
        return "str"
    if isinstance(node, ast.Call) and node.args and not node.keywords:
        parts = pyast.dotted(node.func)
        if parts and parts[-1] in VERSION_CALLS and _version_side(node.args[0], aliases) == "str":
            return "tuple"
    return None


def _version_literal(node: ast.expr, kind: str) -> str | None:
    """The version a literal states: "0.4.30", (0, 4, 30), Version("0.4.30"); as the other side reads it."""
    if kind == "str":
        return _string(node)
    if (
        isinstance(node, ast.Tuple)
        and node.elts
        and all(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in node.elts)
    ):
        return ".".join(str(e.value) for e in node.elts if isinstance(e, ast.Constant))
    if isinstance(node, ast.Call) and len(node.args) == 1:
        parts = pyast.dotted(node.func)
        if parts and parts[-1] in VERSION_CALLS:
            return _string(node.args[0])
    return _string(node)


def _comparison(node: ast.Compare, aliases: dict[str, str]) -> Condition:
    if len(node.ops) != 1:
        return unknown(node)
    op, left, right = node.ops[0], node.left, node.comparators[0]
    if isinstance(op, ast.Is | ast.IsNot) and isinstance(right, ast.Constant) and right.value is None:
        asked = _asked(left, aliases) if isinstance(left, ast.Call) else None
        if asked:  # `getattr(jax, "x", None) is None`: the release lacks it
            return {"not": {"has": asked}} if isinstance(op, ast.Is) else {"has": asked}
        return unknown(node)
    if isinstance(op, ast.In | ast.NotIn):
        name, container = _string(left), right
        if isinstance(container, ast.Call) and isinstance(container.func, ast.Name) and container.func.id == "dir":
            container = container.args[0] if container.args else container
        path = jax_path(container, aliases)
        if name and path:
            owner = path.rsplit(".", 1)[0] if path.rsplit(".", 1)[-1] in CONTAINERS else path
            has: Condition = {"has": f"{owner}.{name}"}
            return has if isinstance(op, ast.In) else negate(has)
        return unknown(node)
    symbol = COMPARE.get(type(op))
    if symbol is None:
        return unknown(node)
    for ours, theirs, said in ((left, right, symbol), (right, left, FLIPPED[symbol])):
        kind = _version_side(ours, aliases)
        literal = _version_literal(theirs, kind) if kind else None
        if kind and literal:
            return {"version": [said, literal, kind]}
    return unknown(node)


def condition(test: ast.expr, aliases: dict[str, str]) -> Condition:
    """The condition an `if` test (or an operand of `and`/`or`) states about jax."""
    if isinstance(test, ast.BoolOp):
        parts = [condition(v, aliases) for v in test.values]
        return {"all": parts} if isinstance(test.op, ast.And) else {"any": parts}
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return negate(condition(test.operand, aliases))
    if isinstance(test, ast.Call):
        asked = _asked(test, aliases)
        return {"has": asked} if asked else unknown(test)
    if isinstance(test, ast.Compare):
        return _comparison(test, aliases)
    return unknown(test)


def evaluate(
    cond: Condition, has: Callable[[str], bool], accepts: Callable[[str, str], bool], version: str
) -> bool | None:
    """True, False, or None (unknown) on one jax release: `has` and `accepts` ask its surface."""
    if "all" in cond:
        found = [evaluate(c, has, accepts, version) for c in cond["all"]]
        return False if False in found else None if None in found else True
    if "any" in cond:
        found = [evaluate(c, has, accepts, version) for c in cond["any"]]
        return True if True in found else None if None in found else False
    if "not" in cond:
        inner = evaluate(cond["not"], has, accepts, version)
        return None if inner is None else not inner
    if "has" in cond:
        return has(cond["has"])
    if "accepts" in cond:
        return accepts(*cond["accepts"])
    if "version" in cond:
        return _version_holds(cond["version"], version)
    return None


def _version_holds(test: list[str], version: str) -> bool | None:
    symbol, literal, kind = test
    if kind == "str":
        return OPERATORS[symbol](version, literal)
    try:
        return OPERATORS[symbol](Version(version), Version(literal))
    except InvalidVersion:
        return None


def leaves(cond: Condition) -> Iterator[Condition]:
    for key in ("all", "any"):
        for part in cond.get(key, []):
            yield from leaves(part)
    if "not" in cond:
        yield from leaves(cond["not"])
    elif not ({"all", "any"} & set(cond)):
        yield cond


def decidable(conditions: list[Condition]) -> bool:
    """Whether some jax release could make every condition true: each reads jax somewhere (a test of the library's
    own values alone is never true here)."""
    return all(any("unknown" not in leaf for leaf in leaves(c)) for c in conditions)


def words(cond: Condition) -> str:
    """The condition as the evidence says it."""
    if "all" in cond:
        return " and ".join(words(c) for c in cond["all"])
    if "any" in cond:
        return "(" + " or ".join(words(c) for c in cond["any"]) + ")"
    if "not" in cond:
        inner = cond["not"]
        if "has" in inner:
            return f"without {inner['has']}"
        if "accepts" in inner:
            return f"{inner['accepts'][0]} refusing {inner['accepts'][1]}="
        return f"not ({words(inner)})"
    if "has" in cond:
        return f"with {cond['has']}"
    if "accepts" in cond:
        return f"{cond['accepts'][0]} taking {cond['accepts'][1]}="
    if "version" in cond:
        symbol, literal, kind = cond["version"]
        return f"jax {symbol} {literal}" if kind != "str" else f"jax.__version__ {symbol} '{literal}' (as strings)"
    return f"`{cond.get('unknown', '')}`"
