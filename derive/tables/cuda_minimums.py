"""Derive the CUDA library versions jax refuses when its CUDA backend starts, from the released wheels themselves:

- `check`: for each release of the code that runs jax's `_check_cuda_versions` (jax's own `jax/_src/xla_bridge.py`
  for a single-package CUDA jaxlib; `jax_plugins/xla_cudaNN/__init__.py` of each jax-cuda12-pjrt and
  jax-cuda13-pjrt release for the plugins), read with `ast` from the wheel: each `_version_check("cuBLAS", ...)`
  it makes (a commented-out one is not code), its absolute `min_supported_version`, the libraries it compares only
  with the build's own version (to jax 0.4.25 every library, a real comparison that tables/cuda-builds.toml reads;
  from 0.4.26 cuFFT, and cuDNN in the plugin, the build's version floored by `scale_for_comparison` against an
  unscaled installed version, which any installed release passes), and whether the module
  calls the check at all (jax-cuda12-pjrt 0.4.30 to 0.6.0 defines nothing of it; 0.6.1 restored it);
- `library`: for each nvidia-*-cu12 wheel release of a library some release has an absolute minimum for, the
  number jax compares, read from the header the wheel ships (`CUBLAS_VERSION` in cublas_api.h, `CUPTI_API_VERSION`
  in cupti_version.h, ...): the wheel's own version does not say it for cuPTI, and the header is what the library
  reports (jaxlib's versions_helpers.cc returns cublasGetVersion(), cuptiGetVersion(), cusparseGetProperty's
  major * 1000 + minor * 100 + patch, which is cusparse.h's CUSPARSE_VERSION).

The minimums are all CUDA 12-era numbers (CUDA 12.1, cuBLAS 12.1, cuPTI API 18), met by every CUDA 13 wheel, so
only the -cu12 wheels are read. Written to envaudit/rules/tables/cuda-minimums.toml; every member is ranged out of
the remote wheel once and cached, so a second run writes the same bytes.

usage: python -m derive.tables.cuda_minimums [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from packaging.version import Version

from derive.sources import wheels
from envaudit.rules.cuda_minimums import MINIMUMS

ROOT = Path(__file__).resolve().parents[2]
TABLE = MINIMUMS.path
FIRST_JAX = Version("0.4.16")  # the first jax with a CUDA 12 jaxlib (cuda-extra.toml covers from here)
CHECK = "_check_cuda_versions"
CODE = {  # who runs the check -> the file of its wheel that holds it
    "jax": "jax/_src/xla_bridge.py",
    "jax-cuda12-pjrt": "jax_plugins/xla_cuda12/__init__.py",
    "jax-cuda13-pjrt": "jax_plugins/xla_cuda13/__init__.py",
}
# jax's name of a library -> the wheel that ships it, its header, and the define that says the number jax compares
LIBRARIES = {
    "CUDA": ("nvidia-cuda-runtime-cu12", "cuda_runtime_api.h", "CUDART_VERSION"),
    "cuBLAS": ("nvidia-cublas-cu12", "cublas_api.h", "CUBLAS_VERSION"),
    "cuDNN": ("nvidia-cudnn-cu12", "cudnn_version.h", "CUDNN_VERSION"),
    "cuFFT": ("nvidia-cufft-cu12", "cufft.h", "CUFFT_VERSION"),
    "cuPTI": ("nvidia-cuda-cupti-cu12", "cupti_version.h", "CUPTI_API_VERSION"),
    "cuSOLVER": ("nvidia-cusolver-cu12", "cusolver_common.h", "CUSOLVER_VERSION"),
    "cuSPARSE": ("nvidia-cusparse-cu12", "cusparse.h", "CUSPARSE_VERSION"),
}


def linux_wheel(files: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The release's Linux x86_64 wheel (the CUDA wheels and the pjrt plugins are platform wheels), else its
    pure-Python wheel (jax's)."""
    wheels = sorted((f for f in files if f["filename"].endswith(".whl")), key=lambda f: f["filename"])
    linux = [f for f in wheels if "linux" in f["filename"] and "x86_64" in f["filename"]]
    pure = [f for f in wheels if f["filename"].endswith("-none-any.whl")]
    return next(iter(linux or pure), None)


def released(project: str, cache: Path, offline: bool) -> dict[str, dict[str, Any]]:
    """Each final release's wheel to read (jax's from FIRST_JAX)."""
    data = wheels.project_json(project, cache, offline)
    base = wheels.PYPI.format(name=project)
    found = {}
    for version, files in data["releases"].items():
        picked = linux_wheel(files) if wheels.final(version) is not None else None
        if picked is not None and (project != "jax" or Version(version) >= FIRST_JAX):
            found[version] = {**picked, "url": urljoin(base, picked["url"])}
    return found


def member(wheel: dict[str, Any], key: str, wanted: Callable[[str], bool], cache: Path, offline: bool) -> bytes | None:
    return wheels.wheel_member(wheel["filename"], wheel["url"], cache, offline, key, wanted)


def _constant(node: ast.expr | None) -> Any:
    return node.value if isinstance(node, ast.Constant) else None


def checks(source: bytes) -> dict[str, Any] | None:
    """What the module's _check_cuda_versions compares: {"runs", "minimums" {name: int}, "build" [names], "line"};
    None where it defines none."""
    tree = wheels.parse(source)
    defined = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == CHECK]
    if not defined:
        return None
    minimums, build = {}, []
    for node in ast.walk(defined[0]):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_version_check"):
            continue
        name = _constant(node.args[0]) if node.args else None
        keywords = {k.arg: _constant(k.value) for k in node.keywords}
        if not isinstance(name, str):
            continue
        if keywords.get("min_supported_version"):
            minimums[name] = int(keywords["min_supported_version"])
        else:
            build.append(name)
    calls = [
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == CHECK
    ]
    inside = {id(n) for n in ast.walk(defined[0])}
    runs = any(id(call) not in inside for call in calls)
    return {"runs": runs, "minimums": minimums, "build": sorted(build), "line": defined[0].lineno}


def check_of(code: str, wheel: dict[str, Any], cache: Path, offline: bool) -> dict[str, Any]:
    """What one release of that code checks (nothing where its file defines no check)."""
    path = CODE[code]
    source = member(wheel, Path(path).name, lambda n: n == path, cache, offline)
    found = checks(source) if source is not None else None
    return {"file": path, **(found or {"runs": False, "minimums": {}, "build": [], "line": 0})}


def check_rows(cache: Path, offline: bool) -> list[dict[str, Any]]:
    rows = []
    for code in CODE:
        by_version = released(code, cache, offline)
        found = wheels.parallel(functools.partial(check_of, code, cache=cache, offline=offline), [*by_version.values()])
        rows += [{"code": code, "version": version, **row} for version, row in zip(by_version, found, strict=True)]
    return sorted(rows, key=lambda r: (r["code"], Version(r["version"])))


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(.+?)[ \t]*(?://.*|/\*.*)?$", re.M)


def header_value(text: str, define: str) -> int | None:
    """The integer a header's #define says, its macros expanded (CUBLAS_VERSION is an expression of
    CUBLAS_VER_MAJOR, ...); None where it says none or something other than integer arithmetic."""
    joined = re.sub(r"\\\r?\n", " ", text)  # a define continued over lines (CUSPARSE_VERSION)
    defines = {name: value for name, value in _DEFINE.findall(joined)}

    def value(name: str, depth: int = 0) -> int | None:
        if name not in defines or depth > 8:
            return None
        try:
            tree = ast.parse(re.sub(r"(\d+)[uUlL]+\b", r"\1", defines[name]), mode="eval")
        except SyntaxError:
            return None
        return evaluate(tree.body, depth)

    def evaluate(node: ast.expr, depth: int) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return value(node.id, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = evaluate(node.left, depth), evaluate(node.right, depth)
            if left is None or right is None:
                return None
            return left + right if isinstance(node.op, ast.Add) else left * right
        return None

    return value(define)


def number_of(name: str, wheel: dict[str, Any], cache: Path, offline: bool) -> int | None:
    """The number one wheel release of the library says in its header (None where it ships no such header)."""
    _, header, define = LIBRARIES[name]
    data = member(wheel, header, lambda n: n.endswith(f"/include/{header}"), cache, offline)
    return header_value(data.decode("utf-8", "replace"), define) if data is not None else None


def library_rows(names: set[str], cache: Path, offline: bool) -> list[dict[str, Any]]:
    rows = []
    for name in sorted(names):
        project, header, define = LIBRARIES[name]
        by_version = released(project, cache, offline)
        numbers = wheels.parallel(
            functools.partial(number_of, name, cache=cache, offline=offline), [*by_version.values()]
        )
        values = {version: number for version, number in zip(by_version, numbers, strict=True) if number is not None}
        rows.append({"name": name, "wheel": project, "header": header, "define": define, "values": values})
    return rows


def render(checks_: list[dict[str, Any]], libraries: list[dict[str, Any]], read: str) -> str:
    lines = [
        "# The CUDA libraries jax refuses when its CUDA backend starts, read from the released wheels: DERIVED by",
        "# derive/tables/cuda_minimums.py, do not edit by hand. [[check]]: what each release of the code that runs",
        "# _check_cuda_versions compares (jax's xla_bridge.py for a single-package CUDA jaxlib, the pjrt plugin's",
        "# __init__.py otherwise): `minimums` the absolute minimums, `build` the libraries compared only with the",
        "# build's own version (to jax 0.4.25 a real check: tables/cuda-builds.toml; from 0.4.26 the build's version",
        "# floored against an unscaled installed one, which any release passes), `runs` whether the module calls it.",
        "# [[library]]: per wheel release, the number jax compares for it, from the header the wheel ships.",
        'source = "the wheels on https://pypi.org/ of jax, jax-cuda12-pjrt, jax-cuda13-pjrt and nvidia-*-cu12"',
        f'read = "{read}"',
    ]
    for row in checks_:
        lines += ["", "[[check]]", f'code = "{row["code"]}"', f"versions = {wheels.toml_list(row['versions'])}"]
        lines += [f'file = "{row["file"]}"', f"line = {row['line']}", f"runs = {str(row['runs']).lower()}"]
        lines += [f"build = {wheels.toml_list(row['build'])}"]
        pairs = ", ".join(f"{wheels.toml_string(k)} = {v}" for k, v in sorted(row["minimums"].items()))
        lines += [f"minimums = {{ {pairs} }}" if pairs else "minimums = {}"]
    for row in libraries:
        lines += ["", "[[library]]", f'name = "{row["name"]}"', f'wheel = "{row["wheel"]}"']
        lines += [f'header = "{row["header"]}"', f'define = "{row["define"]}"', "[library.values]"]
        lines += [
            f"{wheels.toml_string(v)} = {n}" for v, n in sorted(row["values"].items(), key=lambda i: Version(i[0]))
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    rows = check_rows(cache, options.offline)
    grouped: list[dict[str, Any]] = []
    for code in CODE:
        own = [r for r in rows if r["code"] == code]
        lines = {r["version"]: r["line"] for r in own}
        for run in wheels.runs(own, ("code", "file", "runs", "build", "minimums")):
            grouped.append({**run, "line": lines[run["versions"][0]]})  # where its first release defines the check
    needed = {name for row in rows for name in row["minimums"]}
    libraries = library_rows(needed, cache, options.offline)
    counts = {code: sum(r["code"] == code for r in rows) for code in CODE}
    read = ", ".join(f"{n} {code} releases" for code, n in counts.items())
    read += f", {sum(len(r['values']) for r in libraries)} library wheel releases"
    wheels.write_table(options, render(grouped, libraries, read), read, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
