"""Which probes exist and where: the standalone programs of `probes/`, shipped in the wheel as `envaudit/_probes`.

A probe is found by its file alone (any `probes/NAME.py` not starting with `_`), so adding one is adding its file.
Its summary is the first line of its docstring, read without importing it (importing a probe imports jax). Probes
share one kit (`probes/_kit.py`); `script` inlines it, so the program attached to a bug report is one file.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Literal

Platform = Literal["cpu", "tpu", "gpu"]  # the platform classes a probe's cost is declared for


def probes_dir() -> Path:
    """Probes ship inside the wheel as envaudit/_probes; in a checkout that is a link to the top-level probes/."""
    package = Path(__file__).resolve().parent.parent  # envaudit/
    shipped = Path(__file__).parent.parent / "_probes"
    return shipped if shipped.is_dir() else package.parent / "probes"


def available() -> dict[str, Path]:
    return {p.stem: p for p in sorted(probes_dir().glob("*.py")) if not p.name.startswith("_")}


def _constant(path: Path, name: str) -> object:
    """A module-level constant of the probe file, read without importing it (None when it has none)."""
    return _constants(str(path), path.stat().st_mtime_ns).get(name)


@functools.lru_cache(maxsize=256)
def _constants(path: str, mtime_ns: int) -> dict[str, object]:
    """The file's module-level literal constants, parsed once per version of it: CPython 3.11's ast.parse is not
    safe in two threads at once ("AST constructor recursion depth mismatch"), and the runner's second child is
    planned in a thread (child/runner.py primes this first)."""
    found: dict[str, object] = {}
    for node in ast.parse(Path(path).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            for target in (t for t in node.targets if isinstance(t, ast.Name)):
                try:
                    found.setdefault(target.id, ast.literal_eval(node.value))
                except (ValueError, TypeError, SyntaxError, RecursionError):
                    found.setdefault(target.id, None)
    return found


def cost(path: Path, platform: Platform = "cpu") -> float:
    """The probe's declared cost with a cold compilation cache: on the CPU `COST_S` (seconds on a 2-core CPU), on
    an accelerator its `PLATFORM_COST_S` entry for that class where one was measured (a TPU compiles each program
    for seconds: conv_chain 0.5 s on the CPU, 3.6 s on a TPU v5e, measured in a run after another probe compiled: jax's
    start and XLA's first compile are `child/state.jax_start`'s), else the CPU's (no GPU is measured here: a GPU's
    compile runs on the host's CPU too). 1 s when it declares none."""
    measured = _constant(path, "PLATFORM_COST_S")
    if platform != "cpu" and isinstance(measured, dict) and (found := _seconds(measured.get(platform))):
        return found
    return _seconds(_constant(path, "COST_S")) or 1.0


def _seconds(value: object) -> float:
    """A number of seconds above zero, else 0."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0.0


def compiles_first(path: Path) -> bool:
    """Whether the probe's run reaches `kit.compile_all` before it computes anything of its own
    (`COMPILES_FIRST = True`): its programs may then be compiled ahead while another probe runs (kit.prepare)."""
    return _constant(path, "COMPILES_FIRST") is True


def off_device(path: Path) -> bool:
    """Whether the probe computes on no device (`OFF_DEVICE = True`: the imports probe): where an accelerator is,
    it runs beside the child that holds it, on the CPU (child/runner.py)."""
    return _constant(path, "OFF_DEVICE") is True


def numeric(path: Path) -> bool:
    """Whether the probe declares itself numeric (`NUMERIC = True`): what a model computes (a dense chain, a
    convolution chain, an NTK, a matmul) and its reruns, in the precision asked for, against its known answer at
    HIGHEST (and reported at the user's default precision) or its own first run, with jax alone: every healthy
    machine passes it in float32 and in float64. Not the accuracies a platform documents (fft, linalg, eager_jit:
    `platform_error`), nor what a library adds (flax_dtype, ntk_nt need flax or neural-tangents), nor the known
    regressions and the imports. The declaration is the one definition: the suites and scripts read `numeric_names`."""
    return _constant(path, "NUMERIC") is True


def numeric_names() -> tuple[str, ...]:
    """The numeric probes' names (`numeric`), in file order: the one list every suite and script reads."""
    return tuple(name for name, path in available().items() if numeric(path))


def requires(path: Path) -> tuple[str, ...]:
    """The distributions the probe needs (jax, and its `REQUIRES`): without one of them it cannot apply."""
    value = _constant(path, "REQUIRES")
    named = tuple(str(v) for v in value) if isinstance(value, tuple | list) else ()
    return ("jax", *named)


def summary(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return docstring.splitlines()[0] if docstring else ""


KIT_IMPORT = "import _kit as kit\n"


def script(path: Path) -> str:
    """The probe as one standalone program: its `import _kit as kit` replaced by the kit's code and a `kit`
    namespace of the kit's public names (made before the probe's own definitions, whose `main` differs)."""
    source = path.read_text(encoding="utf-8")
    kit_path = path.with_name("_kit.py")
    kit = kit_path.read_text(encoding="utf-8")
    tree = ast.parse(kit)
    body_start = tree.body[1].lineno if ast.get_docstring(tree) else tree.body[0].lineno
    lines = [
        line
        for line in kit.splitlines(keepends=True)[body_start - 1 :]
        if line != "from __future__ import annotations\n"
    ]
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            names.append(node.targets[0].id)
    names = [n for n in names if not n.startswith("_")]
    shim = "kit = types.SimpleNamespace(" + ", ".join(f"{n}={n}" for n in names) + ")\n"
    inlined = (
        "# ---- envaudit's probe kit (probes/_kit.py), inlined ----\nimport types\n" + "".join(lines) + "\n" + shim
    )
    return source.replace(KIT_IMPORT, inlined + "# ---- the probe ----\n", 1)
