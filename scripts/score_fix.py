"""Score `envaudit fix` on a set of real environments whose expectations were written before envaudit ran on them.

For each case of the set's cases.toml (tests/fixtures/fix-pass-N, their README says how they were collected): the
environment is built with the case's installer and Python (`python3.X` on PATH), its `then` installed over it, and
the user's program run from a neutral directory (the ground truth: it should fail, or, for a look-alike, fail for
its own reason). Then `envaudit fix --dry-run` prints the one plan and whether a built twin proved it; the plan is
pasted into bash as a user would, whatever its proof (the installer's exit says whether it took it), and the
program is run again. A case "runs after the one plan" where the plan was proven (what `fix --yes` applies) and the
program ran after it.

One JSON line per case, then the counts. The environments are built under --work (a temporary directory by
default) and removed unless --keep.

usage: python -m scripts.score_fix SET_DIR [--case NAME ...] [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROBES = ("--probe", "imports", "--probe", "known_regressions")
BUILD_S = 1800.0
FIX_S = 1800.0
PROGRAM_S = 600.0


@dataclass
class Scored:
    case: str
    broken: bool  # the collector's expert fix changes something (not a look-alike)
    built: bool
    before: str  # the program's last line before
    plan: str
    proof: str
    applied: bool | None  # the installer took the pasted plan (None: no plan)
    after: str
    runs_after: bool

    @property
    def counted(self) -> bool:
        return self.broken and self.proof == "proven" and self.runs_after


def _run(
    argv: list[str], timeout: float, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f} s"
    return done.returncode, (done.stdout + done.stderr)


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def interpreter(version: str) -> str | None:
    """`pythonX.Y` from PATH where it runs, else pyenv's installed X.Y (a pyenv shim of a version not selected
    runs nothing)."""
    found = shutil.which(f"python{version}")
    if found and _run([found, "-c", ""], 60)[0] == 0:
        return found
    rc, root = _run(["pyenv", "root"], 60) if shutil.which("pyenv") else (1, "")
    pythons = sorted(Path(root.strip(), "versions").glob(f"{version}.*/bin/python{version}")) if rc == 0 else []
    return str(pythons[-1]) if pythons else None


def build(case: dict[str, Any], env: Path) -> tuple[bool, str]:
    python = interpreter(case["python"])
    if python is None:
        return False, f"no python{case['python']} here"
    uv = [sys.executable, "-m", "uv"]
    if case["installer"] == "uv":
        steps = [[*uv, "venv", "-q", "-p", python, str(env)]]
        install = [*uv, "pip", "install", "-q", "--python", str(env / "bin" / "python")]
    else:
        steps = [[python, "-m", "venv", str(env)]]
        install = [str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    steps.append([*install, *case["stack"]])
    if case.get("then"):
        steps.append([*install, "--upgrade", *case["then"]])
    for step in steps:
        rc, out = _run(step, BUILD_S)
        if rc:
            return False, _last(out)
    return True, ""


def program(case: dict[str, Any], env: Path, neutral: Path) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return _run([str(env / "bin" / "python"), "-c", case["program"]], PROGRAM_S, cwd=neutral, env=clean)


def plan(env: Path, neutral: Path) -> tuple[str, str, str]:
    """(the printed plan, its proof, the whole output)."""
    argv = [sys.executable, "-m", "envaudit", "fix", "--dry-run", *PROBES, "--python", str(env / "bin" / "python")]
    _, out = _run(argv, FIX_S, cwd=neutral)
    command = next((m.group(1) for m in re.finditer(r"^the plan: (.*)$", out, re.M)), "")
    proof = next((m.group(1) for m in re.finditer(r"^(proven|unproven|refused)\b", out, re.M)), "")
    return command, proof, out


def score(name: str, case: dict[str, Any], work: Path) -> Scored:
    env, neutral = work / name, work / f"{name}.cwd"
    neutral.mkdir(parents=True, exist_ok=True)
    broken = not str(case.get("expert_fix", "none")).strip().lower().startswith("none")
    built, why = build(case, env)
    if not built:
        return Scored(name, broken, False, why, "", "", None, "", False)
    _, before = program(case, env, neutral)
    command, proof, out = plan(env, neutral)
    (work / f"{name}.fix.log").write_text(out, encoding="utf-8")
    applied: bool | None = None
    after = ""
    rc = 1
    if command:
        took, said = _run(["bash", "-c", command], BUILD_S, cwd=neutral)
        applied = took == 0
        rc, after = program(case, env, neutral)
        after = _last(after) if rc else "ok"
        if not applied:
            after = f"installer refused: {_last(said)}"
    return Scored(name, broken, True, _last(before), command, proof, applied, after, bool(command) and rc == 0)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="score_fix")
    p.add_argument("set", type=Path)
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--work", type=Path)
    p.add_argument("--keep", action="store_true")
    a = p.parse_args(argv)
    cases: dict[str, Any] = tomllib.loads((a.set / "cases.toml").read_text(encoding="utf-8"))["cases"]
    chosen = a.case or sorted(cases)
    work = a.work or Path(tempfile.mkdtemp(prefix="score-fix-"))
    results = []
    try:
        for name in chosen:
            scored = score(name, cases[name], work)
            results.append(scored)
            print(json.dumps(asdict(scored)), flush=True)
            if not a.keep:
                shutil.rmtree(work / name, ignore_errors=True)
    finally:
        if not a.keep and a.work is None:
            shutil.rmtree(work, ignore_errors=True)
    broken = [s for s in results if s.broken]
    printed = [s for s in results if s.plan]
    print(
        f"runs after the one plan: {sum(s.counted for s in broken)} of {len(broken)} broken;"
        f" installer refused {sum(s.applied is False for s in printed)} of {len(printed)} printed plans;"
        f" look-alikes with a plan: {sum(bool(s.plan) for s in results if not s.broken)}"
        f" of {sum(not s.broken for s in results)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
