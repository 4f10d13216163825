"""Confirm tpu-extra.toml by asking pip: for each jax release whose tpu extra pins a libtpu from the package index
(0.4.35 on), `pip install --dry-run --ignore-installed --report` of `jax[tpu]==V` for CPython on Linux x86_64 (3.11,
else 3.12 or 3.13 for the releases that dropped it), and the libtpu pip chose against the table's pin. Written to
envaudit/rules/tables/derived/tpu-extra-confirmed.json. jax 0.4.35 to 0.5.0 also pin a libtpu-nightly that only
Google's index has (`-f https://storage.googleapis.com/jax-releases/libtpu_releases.html`): said, not counted as
contradicted.

usage: python -m derive.confirm.tpu_extra
"""

from __future__ import annotations

import json
from typing import Any

from packaging.requirements import Requirement

from derive.sources import resolver
from envaudit.rules import tpu_pins
from envaudit.rules.table import TABLES

OUT = TABLES / "derived" / "tpu-extra-confirmed.json"


def main() -> int:
    results: list[dict[str, Any]] = []
    for row in tpu_pins.TPU_EXTRA.load()["release"]:
        pin = next((Requirement(p) for p in row["pins"] if Requirement(p).name == "libtpu"), None)
        if pin is None:
            continue
        jax = row["versions"][-1]  # the newest release of the run
        python, picked = resolver.chosen(f"jax[tpu]=={jax}")
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
