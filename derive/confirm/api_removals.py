"""Confirm the derived removals by measurement: for each library of api-removals.toml, one boundary installed on
both sides from the package index and imported, as its user would, against what the table predicts there.

For each library, the import-time entries are tried newest removal first: the library's newest release read with
the use, beside the first jax release without the name (the import must raise) and beside the jax release before
it (the import must work), in fresh uv venvs on this Python; a pair that does not install here (no wheel for this
Python) is passed over for the next entry. What is imported is the module the entry names, else the package's top
level. The outcomes go to envaudit/rules/tables/derived/confirmed.json, with the exception text of the failing
side; a boundary that the measurement contradicts is reported and makes the script exit 1.

usage: python -m derive.confirm.api_removals [--cache DIR] [--only PROJECT ...] [--per-library N]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from derive.sources import jax_api, library_uses, wheels
from envaudit.rules.api_removals import REMOVALS, Use, removal_start
from envaudit.rules.table import TABLES

ROOT = Path(__file__).resolve().parents[2]
TABLE = REMOVALS.path
OUTPUT = TABLES / "derived" / "confirmed.json"
UV = (sys.executable, "-m", "uv")
TIMEOUT_S = 600
EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit): ")  # the line a traceback ends its exception with


def newest_with_use(use: Use, versions: list[str]) -> str:
    """The newest release read that the entry's `versions` name."""
    inside = [v for v in versions if any(SpecifierSet(s).contains(v, prereleases=True) for s in use["versions"])]
    return max(inside, key=Version, default="")


def imported_module(use: Use, uses: dict[str, Any], files: set[str]) -> str:
    """The module the entry names, else the package of the file the use is in (from the release's uses): its top
    level, or below a namespace package (orbax/ has no __init__.py: orbax.checkpoint)."""
    if "module" in use:
        return str(use["module"])
    where = uses.get(use["api"], {}).get("import") or ""
    parts = where.split(":")[0].split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        if "/".join([*parts[:depth], "__init__.py"]) in files:
            return ".".join(parts[:depth])
    return ""


def predicted(table: list[Use], package: str, version: str, jax: str, module: str) -> bool:
    """Whether the table says `import module` raises with this jax: an import-time entry of the release that the
    package's top level reaches (no `module`), or that names this very module."""
    return any(
        u["package"] == package
        and u["kind"] == "import"
        and u.get("module", module) == module
        and SpecifierSet(u["jax"]).contains(jax, prereleases=True)
        and any(SpecifierSet(s).contains(version, prereleases=True) for s in u["versions"])
        for u in table
    )


def attempt(packages: list[str], module: str, workdir: Path, program: str = "") -> tuple[str, str]:
    """("imported" | "raised" | "not-installable", what it said) in a fresh venv: `import module`, or the program
    given (which ends without an error where nothing it calls raises)."""
    venv = workdir / "venv"
    subprocess.run([*UV, "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=TIMEOUT_S)
    python = str(venv / "bin" / "python")
    install = subprocess.run(
        [*UV, "pip", "install", "-q", "--python", python, *packages],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    if install.returncode != 0:
        said = install.stderr.replace(str(venv), "VENV").strip().splitlines()
        return "not-installable", said[-1] if said else ""
    done = subprocess.run(
        [python, "-c", program or f"import {module}"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"JAX_PLATFORMS": "cpu"},
    )
    lines = done.stderr.replace(str(venv), "VENV").strip().splitlines()  # no path of this machine in the output
    raised = [line for line in lines if EXCEPTION.match(line)] or lines  # not jax's traceback-filtering notice
    return ("imported", "") if done.returncode == 0 else ("raised", raised[-1] if raised else f"exit {done.returncode}")


def confirm(table: list[Use], use: Use, version: str, module: str, jax_versions: list[str]) -> dict[str, Any] | None:
    """Both sides of one boundary, each against what the table predicts there (the jax before may lack another
    name the release uses: then the table says so too); None when either side does not install here."""
    without = removal_start(use)
    before = [v for v in jax_versions if Version(v) < Version(without)]
    if not before:
        return None
    with_api = max(before, key=Version)
    sides = {}
    for jax in (without, with_api):
        with tempfile.TemporaryDirectory(prefix="envaudit-confirm-") as tmp:
            pins = [f"{use['package']}=={version}", f"jax=={jax}", f"jaxlib=={jax}"]
            status, said = attempt(pins, module, Path(tmp))
        if status == "not-installable":
            return None
        expected = "raised" if predicted(table, use["package"], version, jax, module) else "imported"
        sides[jax] = {"status": status, "predicted": expected, "said": said}
    agrees = all(side["status"] == side["predicted"] for side in sides.values())
    return {
        "package": use["package"],
        "version": version,
        "api": use["api"],
        "import": module,
        "jax_without": without,
        "jax_with": with_api,
        "sides": sides,
        "verdict": "confirmed" if agrees else "contradicted",
    }


def main(argv: list[str] | None = None) -> int:
    parser = wheels.arguments(__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--only", nargs="*", default=None, help="these libraries only")
    parser.add_argument("--per-library", type=int, default=1, help="boundaries to confirm per library")
    options = parser.parse_args(argv)
    cache = wheels.cache_of(options.cache)
    table = REMOVALS.read(TABLE)["use"]
    jax_versions = [a.version for a in jax_api.releases(cache, options.offline)]
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    found: list[dict[str, Any]] = []
    projects = options.only or list(dict.fromkeys(u["package"] for u in table))
    for project in projects:
        releases = {a.version: a for a in library_uses.releases(project, cache, options.offline)}
        entries = [u for u in table if u["package"] == project and u["kind"] == "import" and removal_start(u)]
        done = 0
        for use in sorted(entries, key=lambda u: Version(removal_start(u)), reverse=True):
            version = newest_with_use(use, list(releases))
            if not version:
                continue
            uses = library_uses.uses_of(releases[version], cache, options.offline)["uses"]
            wheel = wheels.fetch(releases[version], cache, options.offline)
            module = imported_module(use, uses, {name for name, _ in wheels.python_files(wheel)})
            result = confirm(table, use, version, module, jax_versions) if module else None
            if result is None:
                continue
            found.append(result | {"python": python})
            sides = f"jax {result['jax_without']} / {result['jax_with']}"
            print(f"{project} {version} {use['api']}: {sides}: {result['verdict']}", flush=True)
            done += 1
            if done >= options.per_library:
                break
        if not done:
            print(f"{project}: no import-time boundary installs here", flush=True)
    kept = [r for r in (wheels.load_json(OUTPUT) if OUTPUT.exists() else []) if r["package"] not in projects]
    wheels.dump_json(OUTPUT, sorted([*kept, *found], key=lambda r: (r["package"], r["api"])))  # --only: the rest kept
    return 1 if any(r["verdict"] == "contradicted" for r in found) else 0


if __name__ == "__main__":
    raise SystemExit(main())
