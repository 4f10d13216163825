"""Confirm tpu-extra.toml by asking pip: for each jax release whose tpu extra pins a libtpu from the package index
(0.4.35 on), `pip install --dry-run --ignore-installed --report` of `jax[tpu]==V` for CPython on Linux x86_64 (3.11,
else 3.12 or 3.13 for the releases that dropped it), and the libtpu pip chose against the table's pin. Written to
envaudit/rules/tables/derived/tpu-extra-confirmed.json. jax 0.4.35 to 0.5.0 also pin a libtpu-nightly that only
Google's index has (`-f https://storage.googleapis.com/jax-releases/libtpu_releases.html`): said, not counted as
contradicted.

usage: python scripts/derive/confirm_tpu_extra.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from envaudit.rules import tpu_pins  # noqa: E402
from envaudit.rules.tablefiles import load  # noqa: E402

OUT = ROOT / "envaudit" / "rules" / "tables" / "derived" / "tpu-extra-confirmed.json"
PLATFORMS = [f"--platform=manylinux_2_{n}_x86_64" for n in (17, 27, 28, 31, 34)] + ["--platform=manylinux2014_x86_64"]
PYTHONS = ("3.11", "3.12", "3.13")


def chosen(jax: str) -> tuple[str, dict[str, str]]:
    """The first Python pip installs jax[tpu]==jax on, and what it would install there: name -> version (the
    last Python's error where none does)."""
    picked: dict[str, str] = {}
    for python in PYTHONS:
        picked = chosen_on(jax, python)
        if "error" not in picked:
            return python, picked
    return "", picked


def chosen_on(jax: str, python: str) -> dict[str, str]:
    """What pip would install for jax[tpu]==jax on one Python: name -> version, from its installation report."""
    target = ["--python-version", python, *PLATFORMS, "--only-binary=:all:"]
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        argv = [sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed", "--target", scratch]
        done = subprocess.run(
            [*argv, *target, "--report", str(report), f"jax[tpu]=={jax}"], capture_output=True, text=True
        )
        if done.returncode != 0:
            return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
        data = json.loads(report.read_text())
    return {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in data["install"]}


def main() -> int:
    results: list[dict[str, Any]] = []
    for row in load(tpu_pins.TPU_EXTRA)["release"]:
        pin = next((Requirement(p) for p in row["pins"] if Requirement(p).name == "libtpu"), None)
        if pin is None:
            continue
        jax = row["versions"][-1]  # the newest release of the run
        python, picked = chosen(jax)
        libtpu = picked.get("libtpu", "")
        verdict = "confirmed" if libtpu and pin.specifier.contains(libtpu, prereleases=True) else "contradicted"
        if not libtpu and "libtpu-nightly" in picked.get("error", ""):
            verdict = "not on the index"  # 0.4.35-0.5.0 also pin a libtpu-nightly that only Google's index has
        results.append(
            {
                "jax": jax,
                "python": python,
                "pin": str(pin),
                "pip_chose": libtpu or picked.get("error", ""),
                "verdict": verdict,
            }
        )
        print(f"jax[tpu]=={jax}: table {pin}, pip {libtpu or picked}: {verdict}")
    confirmed = sum(r["verdict"] == "confirmed" for r in results)
    contradicted = sum(r["verdict"] == "contradicted" for r in results)
    OUT.write_text(
        json.dumps(
            {
                "how": __doc__.splitlines()[0] if __doc__ else "",
                "confirmed": confirmed,
                "of": len(results),
                "runs": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"{confirmed} of {len(results)} confirmed, {contradicted} contradicted")
    return 1 if contradicted else 0


if __name__ == "__main__":
    raise SystemExit(main())
