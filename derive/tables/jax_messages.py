"""Derive the messages jax says about its environment, as each release tag's sources print them, written to
envaudit/rules/tables/derived/jax-messages.toml.

At every final release tag (jax-vX.Y.Z) of a bare git mirror of github.com/jax-ml/jax (--jax-git) from FIRST on,
the files that speak of jax's environment are read (FILES: backend initialisation in xla_bridge.py, the version
checks of jax/_src/lib/__init__.py and jaxlib/plugin_support.py, the CUDA and ROCm plugins, the Cloud TPU start and
cluster code, jaxlib's cpu_feature_guard.c). Python files are read with `ast`: every `raise X(message)`, every
logger.error/exception/critical call (jax logs an error), every logger.warning and warnings.warn (jax warns and goes
on), the message turned into a signature's text
(rules/signatures.py) from its literal parts (string literals joined, implicitly or with +; an f-string's fields,
`%` specifications and str.format fields as `{any}`; a name as the value its function last bound to it before the
line). The C file is read for its PyErr_Format/PyErr_SetString literals, each `#if` branch its own text. Two kinds of
message are CPython's words about what jax imports: an import of a module that is neither the standard library, nor
jax's, nor a requirement of jax at that tag (its setup.py's install_requires) and is not guarded by a `try` raises
"No module named 'X'" (the row says which of jax's extras install it); a jaxlib module jax's lib imports answers an
attribute it lacks (a jax newer than its jaxlib) with "module 'jaxlib.X' has no attribute ...".

A message's category is read from where it lives (CATEGORY, then a function whose name says otherwise: BY_FUNCTION).
A text too bare to tell a message by (no literal word of 6 characters, fewer than MIN_WORDS literal words) is left
out. Each text is one row: its first and last tag, the line at its first tag, how jax says it (raises, logs, warns,
imports). Each tag's reading is kept in the cache (derived/jax-messages-N/TAG.json): a tag does not change.

usage: python -m derive.tables.jax_messages --jax-git DIR [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.version import Version

from derive.sources import jax_git, wheels
from envaudit.rules.jax_messages import CATEGORIES, MESSAGES

TABLE = MESSAGES.path
FIRST = Version("0.4.1")  # the first release the other jax tables read (0.4.0 is yanked)
READER = "jax-messages-1"  # the cache folder of the readings: a new name when what a reading holds changes
MIN_WORDS = 3  # literal words a text needs to be told from another line
# where the words of CPython's own messages are (an import that fails, an attribute a module lacks)
NO_MODULE = "https://github.com/python/cpython/blob/v3.11.0/Lib/importlib/_bootstrap.py"
NO_ATTRIBUTE = "https://github.com/python/cpython/blob/v3.11.0/Objects/moduleobject.c"

# each file read, and the category of what it says (its functions may say otherwise: BY_FUNCTION)
CATEGORY: dict[str, str] = {
    "jax/_src/xla_bridge.py": "backend-init",
    "jax/_src/lib/xla_bridge.py": "backend-init",  # (to jax 0.4.13)
    "jax/_src/lib/__init__.py": "version-check",
    "jaxlib/plugin_support.py": "version-check",
    "jax_plugins/cuda/__init__.py": "cuda-libraries",
    "plugins/cuda/__init__.py": "cuda-libraries",  # (jax 0.4.16 to 0.4.2x)
    "jax_plugins/rocm/__init__.py": "plugin-load",
    "jax/_src/cloud_tpu_init.py": "tpu-runtime",
    "jax/_src/clusters/cloud_tpu_cluster.py": "tpu-runtime",
    "jaxlib/cpu_feature_guard.c": "cpu-features",
}
# xla_bridge.py also holds jax's device API (process_index, its renamed aliases, compile options, topologies) and
# the checks of its own options: of its functions, those that start a backend, load a plugin or check what a backend
# needs are read (by name), and the module's own statements (importing jax_plugins)
READ_IN_BRIDGE = re.compile(r"^$|backend|platform|plugin|tpu|cuda|version|gpu_client")
SKIP_IN_BRIDGE = re.compile(r"^(?:register_backend_factory|backends_are_initialized|_validate_backend\w*)$")
# in xla_bridge.py and jax's lib, a function whose name says what it checks (_check_cuda_versions and its
# nested _version_check, discover_pjrt_plugins, tpu_client_timer_callback, _cuda_path): its messages are of that
# category, the first that names it
REFINED = ("jax/_src/xla_bridge.py", "jax/_src/lib/xla_bridge.py", "jax/_src/lib/__init__.py")
BY_FUNCTION: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"cuda|cudnn|nccl|cublas|cusparse|nvcc|ptxas|^_version_check$|^_make_msg$", re.I), "cuda-libraries"),
    (re.compile(r"tpu", re.I), "tpu-runtime"),
    (re.compile(r"plugin", re.I), "plugin-load"),
)
# a logger's call and how it says its message: at error level ("logs"), or as a warning ("warns", as warnings.warn)
LOG_CALLS = {
    "warning": "warns",
    "warn": "warns",
    "error": "logs",
    "exception": "logs",
    "critical": "logs",
    "fatal": "logs",
}
OWN = ("jax", "jaxlib", "jax_plugins", "jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin", "libtpu")
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[sdifrxXeEgGcau%]")
_FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
ANY = "{any}"


@dataclass(frozen=True)
class Said:
    """One message at one tag: its text, its category, the file and line where it is, and how jax says it."""

    text: str
    category: str
    path: str
    line: int
    said: str  # "raises", "logs" (an error), "warns" (a warning, logged or warnings.warn), "imports"
    extras: tuple[str, ...] = ()  # for a module jax does not require: the extras of jax that install it


def _percent(text: str) -> str:
    return _PERCENT.sub(lambda m: "%" if m[0] == "%%" else ANY, text)


def _format(text: str) -> str:
    return _FORMAT_FIELD.sub(lambda m: {"{{": "{", "}}": "}"}.get(m[0], ANY), text)


class _Scope:
    """The names a function (or the module) binds, each with its values by line: a message held in a variable is
    the value bound last before the line that says it."""

    def __init__(self, body: list[ast.stmt]) -> None:
        self.bound: dict[str, list[tuple[int, ast.expr]]] = {}
        stack: list[ast.AST] = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.bound.setdefault(target.id, []).append((node.lineno, node.value))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self.bound.setdefault(node.target.id, []).append((node.lineno, node.value))
            stack.extend(ast.iter_child_nodes(node))

    def value(self, name: str, line: int) -> ast.expr | None:
        before = [(at, value) for at, value in self.bound.get(name, []) if at < line]
        return max(before, key=lambda item: item[0])[1] if before else None


def template(node: ast.expr, scope: _Scope, depth: int = 0) -> str:
    """A message as a signature's text: its literal parts as they are, every value it is given as `{any}`."""
    if depth > 8:
        return ANY
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(part.value) if isinstance(part, ast.Constant) else template(part, scope, depth + 1)
            for part in node.values
        )
    if isinstance(node, ast.FormattedValue):
        return ANY
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return template(node.left, scope, depth + 1) + template(node.right, scope, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _percent(template(node.left, scope, depth + 1))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _format(template(node.func.value, scope, depth + 1))
    if isinstance(node, ast.Name) and (bound := scope.value(node.id, node.lineno)) is not None:
        return template(bound, scope, depth + 1)
    return ANY


def tidy(text: str) -> str:
    """A text as a signature holds it: runs of `{any}` (and the spaces between them) one; one it begins with, and
    the punctuation after it, dropped (a match need not start at the line's start); the ends stripped."""
    text = re.sub(r"\{any\}(?:\s*\{any\})+", ANY, text)
    text = re.sub(r"^\s*\{any\}[\s:.,;]*", "", text)
    return text.strip()


def telling(text: str) -> bool:
    """Whether a text can be told from another line: a literal word of 6 characters (what signatures look for
    first), MIN_WORDS literal words, and no brace of its own (a brace would read as a placeholder)."""
    literal = text.replace(ANY, " ")
    words = literal.split()
    return "{" not in literal and "}" not in literal and len(words) >= MIN_WORDS and max(map(len, words)) >= 6


def _category(path: str, function: str) -> str:
    for pattern, category in BY_FUNCTION if path in REFINED else ():
        if function and pattern.search(function):
            return category
    return CATEGORY[path]


def _read(path: str, function: str) -> bool:
    """Whether a function's messages are about jax's environment (xla_bridge.py's: READ_IN_BRIDGE)."""
    if not path.endswith("xla_bridge.py"):
        return True
    return bool(READ_IN_BRIDGE.search(function)) and not SKIP_IN_BRIDGE.match(function)


def _called(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _receiver(node: ast.Call) -> str:
    func = node.func
    return func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""


def _message(node: ast.AST) -> tuple[ast.expr, str] | None:
    """The message a statement or call says, and how: raises, logs (at warning or worse), warns."""
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
        called = _called(node.exc)
        if called.endswith(("Error", "Exception", "Warning")) or called == "Exception":
            return node.exc.args[0], "raises"
    if isinstance(node, ast.Call) and node.args:
        called, receiver = _called(node), _receiver(node)
        if called in LOG_CALLS and (receiver in ("logging", "log") or receiver.endswith("logger")):
            how = LOG_CALLS[called]
            return node.args[0], how if len(node.args) == 1 else f"{how} %"
        if called == "warn" and receiver in ("warnings", ""):
            return node.args[0], "warns"
    return None


def _functions(tree: ast.Module) -> Iterator[tuple[str, list[ast.stmt]]]:
    """The module's own statements (""), then each function's, by its qualified name (a nested function's within
    the one that defines it: tpu_client_timer_callback._log_warning; a method's within its class)."""
    yield "", tree.body
    stack: list[tuple[str, ast.AST]] = [("", tree)]
    while stack:
        prefix, parent = stack.pop()
        for node in ast.iter_child_nodes(parent):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}.{node.name}" if prefix else node.name
                if not isinstance(node, ast.ClassDef):
                    yield name, node.body
                stack.append((name, node))
            elif not isinstance(node, ast.Lambda):
                stack.append((prefix, node))


def _own(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a body, not those of the functions and classes it defines."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))


def python_messages(source: str, path: str) -> list[Said]:
    """What one Python file raises, logs and warns, each at its line (the line its message starts on)."""
    tree = wheels.parse(source)
    found = []
    for function, body in _functions(tree):
        if not _read(path, function):
            continue
        scope = _Scope(body)
        for node in _own(body):
            said = _message(node)
            if said is None:
                continue
            expression, how = said
            text = template(expression, scope)
            if how.endswith(" %"):  # logging's own formatting: the message is a %-template of the arguments after it
                text, how = _percent(text), how.removesuffix(" %")
            text = tidy(text)
            if isinstance(expression, ast.Name) and (bound := scope.value(expression.id, expression.lineno)):
                expression = bound  # the line the message's words are on
            if telling(text):
                found.append(Said(text, _category(path, function), path, expression.lineno, how))
    return sorted(found, key=lambda s: s.line)


_C_CALL = re.compile(r"PyErr_(?:Format|SetString)\s*\(\s*PyExc_\w+\s*,")
_C_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def c_messages(source: str, path: str) -> list[Said]:
    """What a C file raises through PyErr_Format/PyErr_SetString: the adjacent literals of each call (to its `);`),
    an `#if` branch's literals one text each (cpu_feature_guard.c says one thing on macOS, another elsewhere), each
    at the line of its first literal."""
    lines = source.splitlines()
    found = []
    for call in _C_CALL.finditer(source):
        common: list[tuple[int, str]] = []  # (line, literal) outside any #if
        branches: list[list[tuple[int, str]]] = []
        inside = False
        for number in range(source.count("\n", 0, call.start()), len(lines)):
            line = lines[number].strip()
            if line.startswith("#if"):
                inside = True
                branches.append([])
            elif line.startswith(("#else", "#elif")) and inside:
                branches.append([])
            elif line.startswith("#endif"):
                inside = False
            else:
                literals = [(number + 1, m[1]) for m in _C_LITERAL.finditer(line)]
                (branches[-1] if inside else common).extend(literals)
                if ");" in line:
                    break
        for parts in [sorted(common + branch) for branch in branches] or [common]:
            if not parts:
                continue
            text = tidy(_percent("".join(p for _, p in parts).encode().decode("unicode_escape")))
            if telling(text):
                found.append(Said(text, CATEGORY[path], path, parts[0][0], "raises"))
    return found


def _guarded(tree: ast.Module) -> set[int]:
    """The lines of the imports a `try` holds, and of those its handlers fall back to (jax then does without the
    module, or tries another)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try | ast.TryStar) and node.handlers:
            held = [*node.body, *(s for h in node.handlers for s in h.body)]  # and the fallback a handler tries
            for statement in held:
                lines |= {n.lineno for n in ast.walk(statement) if isinstance(n, ast.Import | ast.ImportFrom)}
    return lines


def _distribution_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~\[;]", r.strip(), maxsplit=1)[0].lower().replace("-", "_") for r in requirements}


def requirements(setup: str | None) -> tuple[set[str], dict[str, set[str]]]:
    """jax's setup.py at a tag: the names install_requires lists, and each extra's names (`{name}` of an f-string
    kept as written: only the names matter)."""
    if setup is None:
        return set(), {}
    tree = wheels.parse(setup)
    required: set[str] = set()
    extras: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.keyword):
            continue
        if node.arg == "install_requires" and isinstance(node.value, ast.List):
            required = _distribution_names([ast.unparse(e).strip("'\"f") for e in node.value.elts])
        if node.arg == "extras_require" and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(value, ast.List):
                    extras[str(key.value)] = _distribution_names([ast.unparse(e).strip("'\"f") for e in value.elts])
    return required, extras


def _imported(node: ast.AST) -> list[str]:
    """The modules an import statement names (`import a.b` and `from a.b import c`: a.b), none of a relative one."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def import_messages(source: str, path: str, required: set[str], extras: dict[str, set[str]]) -> list[Said]:
    """CPython's words about what a file imports: a module jax does not require, imported where no `try` holds it
    ("No module named 'requests'"); and, for jax's lib, each jaxlib module it imports, whose missing attribute is a
    jax newer than its jaxlib ("module 'jaxlib.xla_extension' has no attribute ...")."""
    tree = wheels.parse(source)
    guarded = _guarded(tree)
    lib = path == "jax/_src/lib/__init__.py"
    found = []
    for function, body in _functions(tree):
        for node in _own(body):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            modules = _imported(node)
            if lib and isinstance(node, ast.ImportFrom) and node.module == "jaxlib" and node.level == 0:
                modules = [f"jaxlib.{a.name}" for a in node.names]  # `from jaxlib import X`: X is a module of jaxlib
            for name in modules:
                top = name.split(".")[0]
                if lib and top == "jaxlib" and name != "jaxlib":
                    text = f"module '{name}' has no attribute '{ANY}'"
                    found.append(Said(text, "version-check", path, node.lineno, "imports"))
                if top in OWN or top in sys.stdlib_module_names or top.lower() in required or node.lineno in guarded:
                    continue
                installing = tuple(sorted(e for e, names in extras.items() if top.lower() in names))
                text = f"No module named '{top}'"
                found.append(Said(text, _category(path, function), path, node.lineno, "imports", installing))
    return sorted(found, key=lambda s: s.line)


def read_tag(git: Path, tag: str) -> list[Said]:
    """Every message of the files a tag has, in the order of CATEGORY, each file's in line order."""
    present = jax_git.files(git, tag)
    required, extras = requirements(jax_git.show(git, tag, "setup.py"))
    found: list[Said] = []
    for path in CATEGORY:
        if path not in present:
            continue
        source = jax_git.show(git, tag, path)
        if source is None:
            continue
        if path.endswith(".c"):
            found += c_messages(source, path)
            continue
        said = python_messages(source, path) + import_messages(source, path, required, extras)
        found += sorted(said, key=lambda s: s.line)
    return found


def reading(git: Path, tag: str, cache: Path) -> list[Said]:
    """A tag's messages, read once and kept in the cache (a tag does not move)."""
    kept = cache / "derived" / READER / f"{tag}.json"
    if kept.exists():
        return [Said(**{**item, "extras": tuple(item["extras"])}) for item in wheels.load_json(kept)]
    found = read_tag(git, tag)
    wheels.dump_json(kept, [asdict(s) for s in found])
    return found


def combine(readings: list[tuple[str, Version, list[Said]]]) -> list[dict[str, Any]]:
    """One row per text, in the order first seen: its category and line where it is first said, its first and
    last release, how jax says it, the extras that install a module it names."""
    rows: dict[str, dict[str, Any]] = {}
    for tag, version, said in readings:
        for s in said:
            row = rows.get(s.text)
            if row is None:
                if s.category not in CATEGORIES:
                    raise SystemExit(f"{tag} {s.path}:{s.line}: category {s.category!r} is not one envaudit judges")
                at = jax_git.url(tag, s.path, s.line)
                words = NO_MODULE if s.text.startswith("No module named") else at
                words = NO_ATTRIBUTE if s.said == "imports" and " has no attribute " in s.text else words
                rows[s.text] = {
                    "text": s.text,
                    "category": s.category,
                    "said": s.said,
                    "first": str(version),
                    "last": str(version),
                    "at": at,
                    "words": words,
                    "extras": list(s.extras),
                }
            else:
                row["last"] = str(version)
                row["extras"] = sorted({*row["extras"], *s.extras})
    return list(rows.values())


def _string(text: str) -> str:
    """A TOML basic string of a text that may hold a line break or a tab (a message of several lines)."""
    return wheels.toml_string(text).replace("\n", "\\n").replace("\t", "\\t")


def render(rows: list[dict[str, Any]], read: str, first: str, last: str) -> str:
    counts = {c: sum(r["category"] == c for r in rows) for c in CATEGORIES}
    lines = [
        "# The messages jax says about its environment (backend initialisation, version checks, CPU features, CUDA",
        "# libraries, the TPU runtime, plugin loading), each as a signature's text (envaudit/rules/signatures.py:",
        "# `{any}` where jax inserts a value) with the first and last release tag that says it, the line it is on at",
        "# its first tag (`at`), where its words are (`words`: jax's line, or CPython's for what jax imports) and how",
        "# jax says it (raises, logs, warns, imports). DERIVED by derive/tables/jax_messages.py from the sources at",
        "# every final release tag of jax's repository, read with ast (cpu_feature_guard.c: its literals); do not",
        "# edit by hand, re-run the script. envaudit/rules/jax_messages.py judges each row no other rule's",
        "# signature reads, by its category. Rows per category: "
        + ", ".join(f"{c} {n}" for c, n in counts.items())
        + ".",
        'source = "https://github.com/jax-ml/jax (jax, jaxlib and the plugins\' sources at each jax-vX.Y.Z tag)"',
        f"read = {wheels.toml_string(read)}",
        f"covers_from = {wheels.toml_string(first)}",
        f"covers_to = {wheels.toml_string(last)}",
    ]
    for row in rows:
        lines += ["", "[[message]]"]
        lines += [
            f"{key} = {_string(row[key])}" for key in ("text", "category", "said", "first", "last", "at", "words")
        ]
        lines.append(f"extras = {wheels.toml_list(row['extras'])}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.jax_git_options(__doc__, TABLE, argv)
    tags = jax_git.release_tags(options.jax_git, FIRST)
    if not tags:
        raise SystemExit(f"{options.jax_git}: no release tag from jax-v{FIRST} on")
    readings = [(tag, version, reading(options.jax_git, tag, cache)) for tag, version in tags]
    rows = combine(readings)
    first, last = str(tags[0][1]), str(tags[-1][1])
    read = f"{len(tags)} release tags jax-v{first} to jax-v{last}, {len(rows)} messages"
    wheels.write_table(options, render(rows, read, first, last), read, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
