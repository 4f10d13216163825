"""The smoke calls read from the libraries' READMEs: for a library with no hand-written call beside this file, the
first code block of its README that runs on its own (its quickstart), run as the library's call.

The blocks are chosen and measured by derive/tables/readme_calls.py (each ran, on a CPU, with the library's newest
release and the jax its resolver picked, in a fresh environment with no network, and wrote no file) and kept in
`_readme.json` beside this file, generated from envaudit/rules/tables/derived/readme-calls.toml: `blocks()` reads
them. The imports probe (probes/imports.py) runs one as it runs a hand-written call (`run` raising where the call
fails), and asks `own` whether what it raised is evidence about the library: a block is a user's program, not the
library, so what raises in the block's own lines (a name it misspelt, an import of what is not installed here, its
own use of a jax name a newer jax removed, its own assertion), or in code that no frame of the library's modules
reached, says nothing of the library, and is no failure of its call.

Standard library only: the probe runs in the audited interpreter, whatever Python it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import sysconfig
import traceback
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCKS = os.path.join(HERE, "_readme.json")  # generated: derive/generated.py
FORMAT = 1  # of _readme.json


def filename(distribution: str) -> str:
    """The name a block's code is compiled under: its frames are told from every file's by it."""
    return f"<readme {distribution}>"


def blocks(path: str = BLOCKS) -> dict[str, dict[str, Any]]:
    """The README blocks, by canonical distribution name: `call` (what users call, as the hand-written calls name
    it), `modules` (the library's modules), `code`; none where the file is absent or not this format."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("blocks"), dict):
        return {}
    return {str(k): v for k, v in data["blocks"].items() if isinstance(v, dict) and isinstance(v.get("code"), str)}


def run(block: dict[str, Any], distribution: str) -> None:
    """The block's code run as a module of its own (`__readme_<distribution>__`, in sys.modules while it runs, so a
    dataclass or a pickle of a class it defines finds its module), what it prints sent to stderr (the probe's answer
    is its stdout, when it runs alone); raises what it raises."""
    name = "__readme_" + "".join(c if c.isalnum() else "_" for c in distribution) + "__"
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        code = compile(str(block["code"]), filename(distribution), "exec")
        with contextlib.redirect_stdout(sys.stderr):
            exec(code, module.__dict__)  # the README's code, chosen and measured by the derivation
    finally:
        sys.modules.pop(name, None)


def own(error: BaseException, block: dict[str, Any], distribution: str) -> str:
    """Why what the block raised is not evidence about the library ("" where it is): the innermost frame of its
    traceback outside the standard library and this probe is the block's own line, or no frame of the library's
    modules is in it (the block's own call of jax, NumPy or another library). A library's frame that raises, or one
    whose call raised further in (in jax, NumPy, another library), is the library's path failing."""
    said = f"{type(error).__name__}: {error}"
    if isinstance(error, SystemExit):
        return f"the README block exited ({said}): no evidence about {distribution}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not _python_or_probe(f.filename)]
    modules = [str(m) for m in block.get("modules") or ()]
    if not frames or frames[-1].filename == filename(distribution):
        line = next((f.lineno for f in reversed(frames) if f.filename == filename(distribution)), None)
        at = f" line {line}" if line else ""
        return f"raised in the README block's own code{at} ({said}), not in {distribution}'s"
    if not any(_in(f.filename, modules) for f in frames):
        return f"raised where no code of {distribution} reached ({said}): the README block's own call"
    return ""


def _python_or_probe(path: str) -> bool:
    """A frame of Python itself (its standard library, `<frozen importlib._bootstrap>`) or of this probe."""
    if path.startswith("<") and not path.startswith("<readme "):
        return True
    absolute = os.path.abspath(path)
    stdlib = os.path.abspath(sysconfig.get_paths()["stdlib"])
    here = os.path.dirname(HERE)  # probes/: the imports probe, its kit, the calls
    return not path.startswith("<") and (absolute.startswith(here + os.sep) or _site(absolute) == stdlib)


def _site(path: str) -> str | None:
    """The sys.path entry a file is under (the longest), or None."""
    roots = sorted({os.path.abspath(p) for p in sys.path if p}, key=len, reverse=True)
    return next((r for r in roots if path.startswith(r + os.sep)), None)


def _in(path: str, modules: list[str]) -> bool:
    """Whether a frame's file is one of the library's modules (`jax_md/space.py` for `jax_md`, `orbax/export/...`
    for `orbax.export`), read relative to its sys.path entry."""
    if path.startswith("<"):
        return False
    absolute = os.path.abspath(path)
    root = _site(absolute)
    if root is None:
        return False
    dotted = os.path.splitext(os.path.relpath(absolute, root))[0].replace(os.sep, ".")
    return any(dotted == m or dotted.startswith(m + ".") for m in modules)
