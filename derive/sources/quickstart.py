"""Whether a README code block is a self-contained quickstart, read with ast and nothing run: it imports the library,
calls at least one of its names, defines every name it uses, and reaches nothing outside a process computing on a
CPU (a file, the network, a dataset download, a subprocess, a plot, another framework, a GPU or TPU, a script's
arguments, a loop of many steps). `reject` says why a block is not one, in words grouped by `Reason`; "" where it
is. What a block does when it runs is measured apart (derive/tables/readme_calls.py): this only chooses what to run.
"""

from __future__ import annotations

import ast
import builtins
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from derive.sources import pyast, readme_code, wheels

MAX_STEPS = 20  # a loop of more steps (a `range` bound) is a training loop, not a smoke call's few steps


@dataclass(frozen=True)
class Rejection:
    reason: str  # the group (REASONS' keys)
    detail: str  # what in the block shows it

    def __str__(self) -> str:
        return f"{REASONS[self.reason]} ({self.detail})" if self.detail else REASONS[self.reason]


REASONS = {
    "syntax": "not Python this parser reads (a shell line, a notebook's magic, elided code)",
    "no-import": "imports none of the library's modules",
    "no-call": "calls none of the library's names",
    "no-jax": "names no jax, where the library runs on jax only when asked (a backend, an extra)",
    "file": "reads or writes a file",
    "network": "reaches the network (a URL, a download, a dataset, a pretrained model)",
    "framework": "needs another framework",
    "plot": "plots",
    "process": "starts a process or a distributed runtime",
    "device": "asks for a GPU or a TPU",
    "script": "runs as a script (its arguments, its input, a __main__ guard, a sleep)",
    "loop": "loops over many steps (a training loop)",
    "placeholder": "holds a placeholder (`...` for a value)",
    "fragment": "uses names it does not define (a fragment of a longer program)",
}

# A dotted name (or the start of one) a block calls or names, and the reason it gives: matched on the whole name or
# its first part (`open(`, `plt.plot`, `jax.devices("gpu")` by its string below)
NAMES: dict[str, str] = {
    **dict.fromkeys(
        (
            "open",
            "Path",
            "pathlib",
            "os.path",
            "os.makedirs",
            "os.mkdir",
            "os.remove",
            "os.listdir",
            "glob",
            "shutil",
            "tempfile",
            "pickle",
            "h5py",
            "np.load",
            "np.save",
            "np.savez",
            "np.loadtxt",
            "np.savetxt",
            "numpy.load",
            "numpy.save",
            "jnp.load",
            "jnp.save",
            "pd.read_csv",
            "pandas.read_csv",
            "imageio",
            "cv2",
            "PIL",
        ),
        "file",
    ),
    **dict.fromkeys(
        (
            "urlopen",
            "urllib",
            "requests",
            "httpx",
            "wget",
            "gdown",
            "datasets",
            "tfds",
            "tensorflow_datasets",
            "huggingface_hub",
            "kagglehub",
        ),
        "network",
    ),
    **dict.fromkeys(("torch", "torchvision", "tensorflow", "tf", "paddle", "mxnet", "cupy"), "framework"),
    **dict.fromkeys(("plt", "matplotlib", "seaborn", "sns", "plotly", "IPython", "display", "mediapy"), "plot"),
    **dict.fromkeys(
        ("subprocess", "os.system", "os.popen", "multiprocessing", "jax.distributed", "mpi4py", "ray", "wandb"),
        "process",
    ),
    **dict.fromkeys(
        (
            "input",
            "sys.argv",
            "argparse",
            "absl.app",
            "app.run",
            "flags.FLAGS",
            "time.sleep",
            "exit",
            "quit",
            "sys.exit",
        ),
        "script",
    ),
}
# a name part that says the same whatever comes before it (`dataset.download()`, `ckpt.save(path)`)
PARTS: dict[str, str] = {
    "download": "network",
    "from_pretrained": "network",
    "load_dataset": "network",
    "hf_hub_download": "network",
    "gpu": "device",
    "GPU": "device",
    "tpu": "device",
    "TPU": "device",
    "CUDA": "device",
    "TRITON": "device",
    "save": "file",
    "savefig": "file",
    "to_csv": "file",
    "read_csv": "file",
    "restore": "file",
    "load_checkpoint": "file",
    "save_checkpoint": "file",
    "cuda": "device",
    "show": "plot",
}
URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
FILE_NAME = re.compile(r"\.(csv|npy|npz|pkl|pickle|ckpt|h5|hdf5|json|ya?ml|txt|png|jpe?g|gif|mp4|wav|pt|pth|msgpack)$")
DEVICES = {"gpu", "cuda", "tpu", "rocm", "metal"}
BUILTINS = set(dir(builtins)) | {"__name__", "__file__"}
ARITHMETIC: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Pow: operator.pow,
    ast.FloorDiv: operator.floordiv,
}


def reject(code: str, modules: list[str], *, optional_jax: bool = False) -> Rejection | None:
    """Why the block is not a self-contained quickstart of the library whose modules are given; None where it is.
    Of a library that runs on jax only when asked (`optional_jax`: tensorly, whose backend is NumPy's unless set),
    the block must name jax (an import, a string): else it would not run jax at all."""
    try:
        tree = wheels.parse(code)
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", None) or 1
        text = code.splitlines()[line - 1].strip() if 0 < line <= len(code.splitlines()) else ""
        return Rejection("syntax", f"line {line}: `{text[:60]}`" if text else f"line {line}")
    if not readme_code.bindings(tree, modules):
        return Rejection("no-import", "")
    if not readme_code.calls(code, modules):
        return Rejection("no-call", "")
    if optional_jax and not names_jax(tree):
        return Rejection("no-jax", "")
    return outside(tree) or looping(tree) or placeholder(tree) or fragment(tree)


def names_jax(tree: ast.Module) -> bool:
    """Whether the block imports jax or names it in a string (`tl.set_backend("jax")`)."""
    if any(m == "jax" or m.startswith("jax.") for m in imported_modules(tree)):
        return True
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and "jax" in n.value for n in ast.walk(tree))


def outside(tree: ast.Module) -> Rejection | None:
    """The first thing the block names that reaches outside a process computing on a CPU (a name the block binds
    itself, `input = jnp.ones(3)`, is its own)."""
    own = assigned(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            named = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for module in named:
                if why := _named(module.split(".")):
                    return Rejection(why, f"import {module}")
        elif isinstance(node, ast.If) and _main_guard(node.test):
            return Rejection("script", "if __name__ == '__main__'")
        elif isinstance(node, ast.With) and any(_opens(item.context_expr) for item in node.items):
            return Rejection("file", f"line {node.lineno}: a file opened in `with`")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if URL.match(text):
                return Rejection("network", f"line {node.lineno}: {text[:60]!r}")
            if text.lower() in DEVICES:
                return Rejection("device", f"line {node.lineno}: {text!r}")
            if "\n" not in text and " " not in text and FILE_NAME.search(text):
                return Rejection("file", f"line {node.lineno}: {text[:60]!r}")
        elif isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Load):
            parts = pyast.dotted(node)
            if parts and parts[0] not in own and (why := _named(parts)):
                return Rejection(why, f"line {node.lineno}: {'.'.join(parts)}")
    return None


def _named(parts: list[str]) -> str:
    """The reason a dotted name gives (NAMES on the name or a leading part of it; PARTS on any part), or ""."""
    for cut in range(len(parts), 0, -1):
        if (why := NAMES.get(".".join(parts[:cut]))) is not None:
            return why
    return next((PARTS[p] for p in parts if p in PARTS), "")


def _main_guard(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and any(
        isinstance(side, ast.Name) and side.id == "__name__" for side in (test.left, *test.comparators)
    )


def _opens(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and (pyast.dotted(expr.func) or [""])[-1] in (
        "open",
        "File",
        "TemporaryDirectory",
    )


def looping(tree: ast.Module) -> Rejection | None:
    """A `while` loop, or a `range` of more than MAX_STEPS steps (its bound a number, or a name the block assigns
    a number once)."""
    constants = _constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.While):
            return Rejection("loop", f"line {node.lineno}: a while loop")
        if isinstance(node, ast.Call) and pyast.dotted(node.func) == ["range"] and node.args:
            low, high = (None, _number(node.args[0], constants)) if len(node.args) == 1 else _pair(node, constants)
            steps = high - (low or 0.0) if high is not None else None
            if steps is not None and steps > MAX_STEPS:
                return Rejection("loop", f"line {node.lineno}: {steps:g} steps")
    return None


def _pair(node: ast.Call, constants: dict[str, float]) -> tuple[float | None, float | None]:
    low, high = (_number(a, constants) for a in node.args[:2])
    return (low, high) if low is not None else (None, None)


def _constants(tree: ast.Module) -> dict[str, float]:
    """The names the block assigns a number exactly once."""
    found: dict[str, list[float | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(_number(node.value, {}))
    return {name: values[0] for name, values in found.items() if len(values) == 1 and values[0] is not None}


def _number(node: ast.expr, constants: dict[str, float]) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        left, right = _number(node.left, constants), _number(node.right, constants)
        if left is None or right is None:
            return None
        return ARITHMETIC[type(node.op)](left, right) if not (isinstance(node.op, ast.Pow) and right > 64) else None
    return None


def placeholder(tree: ast.Module) -> Rejection | None:
    """`...` where a value goes (an argument, an assignment's value, an element): elided code. Not a body's `...`
    (a stub), nor an index's (`x[..., 0]`)."""
    for node in ast.walk(tree):
        values: list[ast.expr] = []
        if isinstance(node, ast.Call):
            values = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.Return) and node.value is not None:
            values = [node.value]
        elif isinstance(node, ast.List | ast.Tuple | ast.Set):
            values = list(node.elts)
        elif isinstance(node, ast.Dict):
            values = [v for v in node.values if v is not None]
        for value in values:
            if isinstance(value, ast.Constant) and value.value is Ellipsis:
                return Rejection("placeholder", f"line {value.lineno}")
    return None


def fragment(tree: ast.Module) -> Rejection | None:
    """A name the block reads and never binds (an import, an assignment, a definition, an argument, a loop's or a
    `with`'s or an `except`'s target), nor Python's builtins: the block leans on code the README shows elsewhere.
    A block that star-imports binds what it cannot be told from here: it is not judged by this."""
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)):
        return None
    bound = assigned(tree) | imported(tree)
    used: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            used.setdefault(node.id, node.lineno)
    free = sorted((line, name) for name, line in used.items() if name not in bound and name not in BUILTINS)
    if free:
        said = ", ".join(f"`{name}`" for _, name in free[:3])
        more = f" and {len(free) - 3} more" if len(free) > 3 else ""
        return Rejection("fragment", f"line {free[0][0]}: {said}{more}")
    return None


def imported_modules(tree: ast.Module) -> list[str]:
    """The modules the block imports, absolute ones, in order."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return found


def imported(tree: ast.Module) -> set[str]:
    return {
        a.asname or a.name.split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }


def assigned(tree: ast.Module) -> set[str]:
    """The names the block binds but by an import: an assignment, a definition, an argument, a loop's or a `with`'s
    or an `except`'s target, a `global`."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
    return bound
