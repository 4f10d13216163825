"""Confirm declared-requires.toml by measurement: for a sample of projects, the newest release's first bounded
requirement, resolved by pip on both sides of the bound (a pinned version of what it names that the bound excludes,
which pip must refuse, and the newest one it admits, which pip must accept), against what the table predicts.

pip resolves for CPython 3.11 on Linux x86_64 (`pip install --dry-run --ignore-installed --only-binary=:all:
--python-version 3.11 --platform manylinux_2_X_x86_64`, glibc 2.17 to 2.35), downloading metadata only; its
verdict goes to tables/derived/declared-confirmed.json beside the table's (a bound whose either side pip cannot
install here is left out), and a contradiction makes the script exit 1.

usage: python -m derive.confirm.declared [--cache DIR] [--only PROJECT ...]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from derive.sources import wheels
from envaudit.model.facts import Facts, PythonFacts
from envaudit.rules import declared
from envaudit.rules.table import TABLES

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = TABLES / "derived" / "declared-confirmed.json"
SAMPLE = ("tensorflow", "flax", "optax", "chex", "orbax-checkpoint", "equinox", "neural-tangents", "scipy")
PYTHON = "3.11"
TIMEOUT_S = 600
GLIBC = range(17, 36)  # the manylinux wheels a Linux x86_64 machine with glibc 2.35 installs


def newest_bounded(project: str) -> tuple[str, Requirement] | None:
    """The project's newest release in the table for this Python, and its first requirement with a version bound
    there."""
    rows = [
        r
        for r in declared.DECLARED.load()["release"]
        if r["package"] == project and SpecifierSet(r["python"]).contains(f"{PYTHON}.0")
    ]
    if not rows:
        return None
    version = max((v for r in rows for v in r["versions"]), key=Version)
    facts = Facts(packages={}, python=PythonFacts(version=PYTHON), origin="plan")
    for text in (declared.applying(facts, project, version) or [[]])[0]:
        req = Requirement(text)
        if req.specifier:
            return version, req
    return None


def sides(req: Requirement, cache: Path) -> tuple[str, str] | None:
    """A final release for this Python of what `req` names outside its specifier (the newest such), and the newest
    inside."""
    releases = sorted(
        (
            v
            for v, files in wheels.project_json(req.name, cache, False)["releases"].items()
            if any(SpecifierSet(f.get("requires_python") or "").contains(f"{PYTHON}.0") for f in files)
        ),
        key=Version,
    )
    releases = [v for v in releases if wheels.final(v) is not None]
    inside = [v for v in releases if req.specifier.contains(v)]
    outside = [v for v in releases if not req.specifier.contains(v)]
    return (outside[-1], inside[-1]) if inside and outside else None


def predicted_refused(project: str, version: str, name: str, pinned: str) -> bool:
    facts = Facts(packages={project: version, name: pinned}, python=PythonFacts(version=PYTHON), origin="plan")
    return any(r.get("package") == project for r in declared.unmet(facts))


def pip_refuses(pins: list[str]) -> tuple[bool | None, str]:
    """Whether pip's resolver refuses the pins together (ResolutionImpossible), None where it fails otherwise (no
    wheel of a pin for this Python and platform), and its last error line."""
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    platforms = [w for glibc in GLIBC for w in ("--platform", f"manylinux_2_{glibc}_x86_64")]
    command += ["--only-binary=:all:", "--python-version", PYTHON, *platforms, "--platform", "manylinux2014_x86_64"]
    command += pins
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    said = ([line for line in done.stderr.splitlines() if line.startswith("ERROR")] or [""])[-1]
    if done.returncode != 0 and "ResolutionImpossible" not in done.stderr:
        return None, said
    return done.returncode != 0, said


def main(argv: list[str] | None = None) -> int:
    parser = wheels.arguments(__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--only", nargs="*", default=list(SAMPLE))
    options = parser.parse_args(argv)
    cache = wheels.cache_of(options.cache)
    results: list[dict[str, Any]] = []
    for project in options.only:
        found = newest_bounded(project)
        pair = sides(found[1], cache) if found else None
        if found is None or pair is None:
            print(f"{project}: no bounded requirement to try")
            continue
        version, req = found
        tried = []
        for pinned in pair:
            pins = [f"{project}=={version}", f"{req.name}=={pinned}"]
            refused, said = pip_refuses(pins)
            expected = predicted_refused(project, version, str(req.name), pinned)
            print(
                f"{'not tried' if refused is None else 'confirmed' if refused == expected else 'contradicted':12}",
                " ".join(pins),
                f"table {expected}, pip {refused} ({said[:100]})",
            )
            tried.append({"pins": pins, "requirement": str(req), "table_refuses": expected, "pip_refuses": refused})
        if all(t["pip_refuses"] is not None for t in tried):  # a bound is confirmed on both sides, or not at all
            results += tried
    platform = f"manylinux_2_{GLIBC[0]} to manylinux_2_{GLIBC[-1]}, x86_64"
    wheels.dump_json(OUTPUT, {"python": PYTHON, "platform": platform, "results": results})
    return 0 if all(r["table_refuses"] == r["pip_refuses"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
