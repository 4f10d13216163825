"""What pip would install for a requirement on CPython for Linux x86_64: its resolver's `--dry-run --report`, run
on the first of 3.11, 3.12 and 3.13 that it can install on (the releases that dropped 3.11 resolve on 3.12). The
confirmations ask it and compare its choice with a derived table; only metadata is downloaded."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

# every glibc manylinux tag a current x86_64 Linux accepts (NVIDIA's CUDA 13 wheels are manylinux_2_25 only)
PLATFORMS = [f"--platform=manylinux_2_{n}_x86_64" for n in range(17, 40)] + ["--platform=manylinux2014_x86_64"]
PYTHONS = ("3.11", "3.12", "3.13")


def chosen(requirement: str) -> tuple[str, dict[str, str]]:
    """The first Python pip installs the requirement on, and what it would install there: name -> version (the
    last Python's error, under "error", where none does)."""
    picked: dict[str, str] = {}
    for python in PYTHONS:
        picked = chosen_on(requirement, python)
        if "error" not in picked:
            return python, picked
    return "", picked


def chosen_on(requirement: str, python: str) -> dict[str, str]:
    """What pip would install for the requirement on one Python: name -> version, from its installation report."""
    target = ["--python-version", python, *PLATFORMS, "--only-binary=:all:"]
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        argv = [sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed", "--target", scratch]
        done = subprocess.run([*argv, *target, "--report", str(report), requirement], capture_output=True, text=True)
        if done.returncode != 0:
            return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
        data = json.loads(report.read_text())
    return {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in data["install"]}
