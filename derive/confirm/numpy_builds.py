"""Confirm numpy-builds.toml by measurement: each row's newest release, and the release that fixes it, installed
beside NumPy 2 in fresh uv venvs (Python 3.11, wheels from the package index) and imported; the first must fail with
NumPy's message, the second import. Written to tables/derived/numpy-builds-confirmed.json; a contradiction makes the
script exit 1.

usage: python -m derive.confirm.numpy_builds
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from packaging.version import Version

from derive.sources import wheels
from envaudit.rules import numpy_builds
from envaudit.rules.table import TABLES

OUTPUT = TABLES / "derived" / "numpy-builds-confirmed.json"
NUMPY = "2.0.2"
PYTHON = "3.11"
UV = (sys.executable, "-m", "uv")
TIMEOUT_S = 600


def imports(package: str, version: str) -> tuple[bool, str]:
    """Whether `import MODULE` works with the release beside NumPy 2, and the last line it printed."""
    module = package.replace("-", "_")
    with tempfile.TemporaryDirectory() as where:
        venv = Path(where) / "venv"
        subprocess.run([*UV, "venv", "-q", "-p", PYTHON, str(venv)], check=True, timeout=TIMEOUT_S)
        python = str(venv / "bin" / "python")
        pins = [f"{package}=={version}", f"numpy=={NUMPY}"]
        subprocess.run([*UV, "pip", "install", "-q", "--python", python, *pins], check=True, timeout=TIMEOUT_S)
        done = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True, timeout=TIMEOUT_S)
    said = (done.stderr.strip().splitlines() or [""])[-1]
    return done.returncode == 0, said


def main() -> int:
    results: list[dict[str, Any]] = []
    for row in numpy_builds.BUILDS.load()["build"]:
        if PYTHON not in row["pythons"]:
            continue
        sides = [(max(row["versions"], key=Version), False)] + ([(row["fixed"], True)] if row["fixed"] else [])
        for version, expected in sides:
            imported, said = imports(row["package"], version)
            verdict = "confirmed" if imported == expected else "contradicted"
            print(f"{verdict:12} {row['package']} {version} with numpy {NUMPY}: imports {imported} ({said[:100]})")
            results.append({"package": row["package"], "version": version, "numpy": NUMPY, "imports": imported})
            results[-1] |= {"predicted_imports": expected, "said": said}
    wheels.dump_json(OUTPUT, {"python": PYTHON, "results": results})
    return 0 if all(r["imports"] == r["predicted_imports"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
