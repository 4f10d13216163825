"""Builds each broken environment of envs.py once, for real, from the package index, and hands out copies.

The environments are kept outside the checkout, in TEST_ENVS/real (tests/conftest.py), one directory per recipe (its
name and a digest of its steps), so later runs reuse them, whichever checkout runs them, and builds of recipes that
changed are removed; they are built in a temporary directory and renamed into place, so an interrupted build is
never reused. pip's cache is the user's (shared by every build and every fix). envaudit runs in each copy from this
checkout, through a .pth file the copy is given.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, TEST_ENVS
from tests.realenv.envs import BROKEN, Broken

HOME = TEST_ENVS / "real"
UV = (sys.executable, "-m", "uv")
UV_BIN = Path(sys.executable).parent  # where the test extra installed uv's command, for the user's shell PATH
# The probes that see what these environments break (a known regression, flax, the libraries' imports: a library
# that does not import, neural-tangents' included); the numeric probes (envaudit.files.probefiles.numeric_names) and
# neural-tangents' kernels have suites of their own, and cost each of the suite's audits seconds
# here (ntk_nt on the jax 0.4.25 a neural-tangents fix lands on: a minute)
PROBES = [arg for name in ("known_regressions", "flax_dtype", "imports") for arg in ("--probe", name)]


def _site_packages(prefix: Path) -> Path:
    return next((prefix / "lib").glob("python3*/site-packages"))


def _prefix(env: Broken) -> Path:
    digest = hashlib.sha256(json.dumps([env.steps, env.maker, "uv-built", "warmed"]).encode()).hexdigest()[:12]
    return HOME / f"{env.name}-{digest}"


@functools.cache
def prune() -> None:
    """Remove the builds no recipe of envs.py makes any more (a recipe changed or renamed: its old build would stay
    for ever, at 0.5-3 GB each); a build in progress (a dot name) is left to its own process."""
    current = {_prefix(env).name for env in BROKEN}
    for old in HOME.glob("*") if HOME.is_dir() else []:
        if old.is_dir() and not old.name.startswith(".") and old.name not in current:
            shutil.rmtree(old, ignore_errors=True)


def built(env: Broken) -> Path:
    prune()
    prefix = _prefix(env)
    if prefix.is_dir():
        return prefix
    HOME.mkdir(parents=True, exist_ok=True)
    building = HOME / f".{prefix.name}.{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    python = building / "bin" / "python"
    if env.maker == "uv":  # uv from the package index (the test extra): its venv has no pip
        subprocess.run([*UV, "venv", "-q", "--python", sys.executable, str(building)], check=True)
    else:  # a venv with its pip, which the fixes use
        subprocess.run([sys.executable, "-m", "venv", str(building)], check=True)
    # installed by uv either way: the same wheels as pip's from the package index, five times faster here (jax 0.10.1:
    # 3.2 s against pip's 16 s, both caches warm), which keeps the suite within CI's time
    install = [*UV, "pip", "install", "-q", "--python", str(python)]
    for step in env.steps:
        args = [a.replace("{stale}", str(building / "stale")) for a in step]
        subprocess.run([*install, *args], check=True, capture_output=True)
    # uv compiles no bytecode: one audit compiles what the audits import (not all of SciPy or TensorFlow, as
    # `--compile-bytecode` would: 13 s of CPU for jax 0.10.1's stack against an audit's 3), and every copy's audits
    # read it (3.4 s an audit against 6.2 s here); its verdict does not matter
    subprocess.run(
        [str(python), "-m", "envaudit", *PROBES, "--format", "json"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=600,
        check=False,
    )
    building.rename(prefix)
    return prefix


def copy(prefix: Path, where: Path, damaged: bool = False) -> Path:
    """A copy of the environment (a virtualenv runs from anywhere as `bin/python -m ...`), any {stale} directory
    with it, and a .pth file that runs envaudit from this checkout. Its files are hard links (a fix only unlinks and
    writes files anew: pip and uv install, uninstall and compile that way), 2.4 s a copy less here; one that a test
    damages in place is copied."""
    target = where / prefix.name
    shutil.copytree(prefix, target, symlinks=True, copy_function=shutil.copy2 if damaged else _linked)
    (_site_packages(target) / "envaudit-checkout.pth").write_text(f"{ROOT}\n", encoding="utf-8")
    return target


def _linked(source: str, destination: str) -> None:
    """A hard link, or a copy where the temporary directory is on another file system than the builds."""
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)
