"""Confirm cuda-extra.toml by asking pip: for the newest jax release of each run of the cuda12 and cuda13 extras, and
the newest of each run of the single-package extras (cuda12-pip, cuda), `pip install --dry-run --ignore-installed
--report` of `jax[EXTRA]==V` for CPython on Linux x86_64, and what pip chose against the table: jaxlib and jax's
plugins at the releases `rules/extras.py` plans, and every nvidia-* wheel within the pins of the plugin release it
chose. Written to envaudit/rules/tables/derived/cuda-extra-confirmed.json. The single-package CUDA jaxlibs
(`jaxlib==0.4.20+cuda12.cudnn89`) are on jax's own index only (`-f
https://storage.googleapis.com/jax-releases/jax_cuda_releases.html`), as are some plugin releases (jax 0.7.1's cuda13
extra pins jax-cuda13-plugin 0.7.1, which PyPI does not have): said, not counted as contradicted.

usage: python -m derive.confirm.cuda_extra
"""

from __future__ import annotations

import json
import re
from typing import Any

from packaging.requirements import Requirement
from packaging.version import Version

from derive.sources import resolver
from envaudit.rules import extras
from envaudit.rules.table import TABLES

OUT = TABLES / "derived" / "cuda-extra-confirmed.json"
EXTRAS = ("cuda12", "cuda13", "cuda12-pip", "cuda", "cuda12-local", "cuda13-local", "rocm", "rocm7-local")


def plugin_pins() -> dict[tuple[str, str], list[str]]:
    return {(row["name"], v): row["pins"] for row in extras.CUDA_EXTRA.load()["plugin"] for v in row["versions"]}


def with_cuda(extra: str, jax: str) -> set[str]:
    """The plugins jax[EXTRA]==V installs with their CUDA extra (whose nvidia-* pins then apply), from the table."""
    rows = [r for r in extras.CUDA_EXTRA.load()["extra"] if r["name"] == extra and jax in r["versions"]]
    texts = [text for row in rows for text in row["installs"] if "[with-cuda]" in text]
    return {Requirement(text.replace("{V}", jax)).name for text in texts}


def verdict(
    planned: dict[str, str], picked: dict[str, str], pins: dict[tuple[str, str], list[str]], with_cuda: set[str]
) -> list[str]:
    """What pip chose that the table does not say: [] where it agrees."""
    wrong = [
        f"{name} {picked.get(name)} (table {version})"
        for name, version in planned.items()
        if Version(picked.get(name, "0")) != Version(version)
    ]
    for plugin, version in planned.items():
        if plugin not in with_cuda:
            continue  # a -local extra installs the plugin without its CUDA wheels: its pins do not apply
        for pin in pins.get((plugin, version), ()):
            req = Requirement(pin)
            chose = picked.get(req.name)
            if req.specifier and (chose is None or not req.specifier.contains(chose, prereleases=True)):
                wrong.append(f"{req.name} {chose} (table {pin})")
    return wrong


def main() -> int:
    pins = plugin_pins()
    results: list[dict[str, Any]] = []
    for row in extras.CUDA_EXTRA.load()["extra"]:
        if row["name"] not in EXTRAS:
            continue
        jax = row["versions"][-1]  # the newest release of the run
        planned = extras.implied(jax, {row["name"]})
        python, picked = resolver.chosen(f"jax[{row['name']}]=={jax}")
        if "error" in picked:  # jax's own distribution at a release only jax's index has: the table cannot help it
            absent = re.search(r"No matching distribution found for (jax[a-z0-9-]*)", picked["error"])
            said, wrong = picked["error"], ["not on the index" if absent else "pip could not install it"]
        else:
            wrong = verdict(planned, picked, pins, with_cuda(row["name"], jax))
            said = ", ".join(f"{n} {v}" for n, v in sorted(picked.items()) if n.startswith(("jax", "nvidia-")))
        kind = "confirmed" if not wrong else "not on the index" if wrong == ["not on the index"] else "contradicted"
        results.append({"extra": row["name"], "jax": jax, "python": python, "pip_chose": said, "verdict": kind})
        print(f"jax[{row['name']}]=={jax}: {kind} {wrong or ''}")
    confirmed = sum(r["verdict"] == "confirmed" for r in results)
    contradicted = sum(r["verdict"] == "contradicted" for r in results)
    document = {"how": __doc__.splitlines()[0] if __doc__ else "", "confirmed": confirmed, "of": len(results)}
    OUT.write_text(json.dumps({**document, "runs": results}, indent=2) + "\n")
    print(f"{confirmed} of {len(results)} confirmed, {contradicted} contradicted")
    return 1 if contradicted else 0


if __name__ == "__main__":
    raise SystemExit(main())
