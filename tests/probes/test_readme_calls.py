"""The imports probe runs the README blocks (probes/calls/_readme.json) as smoke calls, on the real jax: a copy of
probes/ with blocks written for libraries installed for the test (tests/probes/test_imports.py's way), and the
rules judge what it reports as they judge a hand-written call's outcome."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envaudit.rules.registry import registry
from tests.conftest import facts_from
from tests.probes.test_imports import install

pytestmark = pytest.mark.jax
ROOT = Path(__file__).resolve().parents[2]

LIBRARIES: dict[str, dict[str, Any]] = {
    "readmegood": {
        "requires": ["jax"],
        "files": {
            "readmegood/__init__.py": "import jax.numpy as jnp\n\ndef double(x):\n    return jnp.asarray(x) * 2\n"
        },
    },
    "readmeold": {  # a release that calls a name jax 0.6.0 removed, on its main path (jaxopt 0.8.3's jax.tree_map)
        "requires": ["jax"],
        "files": {"readmeold/__init__.py": "import jax\n\ndef leaves(tree):\n    return jax.tree_map(abs, tree)\n"},
    },
    "readmeown": {"requires": ["jax"], "files": {"readmeown/__init__.py": "def ok():\n    return 1\n"}},
    "readmeslow": {"requires": ["jax"], "files": {"readmeslow/__init__.py": "def ok():\n    return 1\n"}},
}
BLOCKS = {
    "readmegood": ("import readmegood\nassert readmegood.double(2) == 4\n", 0.1),
    "readmeold": ("import readmeold\nreadmeold.leaves({'a': -1.0})\n", 0.1),
    "readmeown": ("import readmeown\nreadmeown.ok()\nprint(result)\n", 0.1),  # a NameError of the snippet
    "readmeslow": ("import readmeslow\nreadmeslow.ok()\n", 1e6),  # never fits the probe's bound
    "optax": ("import optax\nraise RuntimeError('a block where a hand-written call is')\n", 0.1),
}


def test_a_readme_block_is_its_library_s_call_and_only_the_library_s_own_failure_counts(tmp_path: Path) -> None:
    probes = tmp_path / "probes"
    shutil.copytree(ROOT / "probes", probes, ignore=shutil.ignore_patterns("__pycache__"))
    blocks = {
        name: {"call": f"{name}.main", "modules": [name], "code": code, "seconds": seconds}
        for name, (code, seconds) in BLOCKS.items()
    }
    (probes / "calls" / "_readme.json").write_text(json.dumps({"format": 1, "blocks": blocks}), encoding="utf-8")
    site = tmp_path / "site"
    install(site, LIBRARIES)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, str(probes / "imports.py")], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    calls = {o["distribution"]: o for o in json.loads(done.stdout)["facts"]["calls"]}
    assert calls["readmegood"]["status"] == "ok" and calls["readmegood"]["call"] == "readmegood.main"
    old = calls["readmeold"]
    assert old["status"] == "error" and "tree_map" in old["error"] and old["where"] == "readmeold/__init__.py:4"
    own = calls["readmeown"]
    assert own["status"] == "skip" and "own code line 3" in own["error"] and "NameError" in own["error"]
    assert calls["readmeslow"]["status"] == "not_tried" and "README block took" in calls["readmeslow"]["error"]
    if "optax" in calls:  # installed here beside flax: its hand-written call is made, never the block
        assert calls["optax"]["call"] == "optax.adam(...).update" and calls["optax"]["status"] == "ok", calls["optax"]
    assert "envaudit imports: calling readmeold.main (readmeold 1.0)" in done.stderr
    jax = {"status": "ok", "jax_version": "0.10.1", "calls": list(calls.values())}
    facts = facts_from({"packages": {"jax": "0.10.1", **dict.fromkeys(LIBRARIES, "1.0")}, "jax": jax})
    failing = {f.id for f in registry().evaluate_checks(facts) if f.severity == "fail"}
    assert "call-fails-readmeold" in failing
    assert not failing & {"call-fails-readmeown", "call-fails-readmegood", "call-fails-readmeslow"}
