"""A README block as a library's smoke call, in real environments built from the package index.

flashbax has no hand-written call; its README's quickstart (https://pypi.org/project/flashbax/0.1.3/, README lines
98-127: `fbx.make_flat_buffer(...)`, its init, add and sample) is the block the derivation kept
(envaudit/rules/tables/derived/readme-calls.toml, run there with flashbax 0.1.3). flashbax 0.1.2 imports with any
jax, and its buffers call `jax.tree_map` (flashbax/buffers/item_buffer.py:93, api-removals.toml's entry, read at
0.1.2), which jax 0.6.0 removed: the same block runs beside jax 0.5.3 and raises in flashbax's code beside jax 0.6.0,
where the import alone shows nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envaudit.rules.registry import registry
from tests.conftest import ROOT, facts_from

pytestmark = [pytest.mark.realenv, pytest.mark.cost(120)]
UV = (sys.executable, "-m", "uv")
PROBE = ROOT / "probes" / "imports.py"
BLOCKS = ROOT / "probes" / "calls" / "_readme.json"


def _probed(where: Path, pins: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The imports probe's answer in a fresh environment of these pins (uv's shared cache), and what is installed."""
    subprocess.run([*UV, "venv", "-q", "--python", sys.executable, str(where)], check=True)
    python = where / "bin" / "python"
    subprocess.run([*UV, "pip", "install", "-q", "--python", str(python), *pins], check=True, capture_output=True)
    done = subprocess.run([str(python), str(PROBE)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    program = (
        "import json, importlib.metadata as m; "
        "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"
    )
    listed = subprocess.check_output([str(python), "-c", program])
    return json.loads(done.stdout), json.loads(listed)


def test_flashbax_s_readme_block_runs_with_jax_0_5_and_fails_in_flashbax_with_jax_0_6(tmp_path: Path) -> None:
    block = json.loads(BLOCKS.read_text(encoding="utf-8"))["blocks"]["flashbax"]
    assert "make_flat_buffer" in block["code"]  # the README's quickstart, as the derivation kept it
    outcomes: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}
    for jax in ("0.5.3", "0.6.0"):
        result, installed = _probed(tmp_path / jax, ["flashbax==0.1.2", f"jax=={jax}", f"jaxlib=={jax}"])
        imports = [o for o in result["facts"]["imports"] if o["distribution"] == "flashbax"]
        assert imports and {o["status"] for o in imports} == {"ok"}, imports  # the import alone shows nothing
        calls = {o["distribution"]: o for o in result["facts"]["calls"]}
        outcomes[jax] = (calls["flashbax"], installed)
    ran, _ = outcomes["0.5.3"]
    assert ran["status"] == "ok" and ran["call"] == block["call"], ran
    failed, installed = outcomes["0.6.0"]
    assert failed["status"] == "error" and "tree_map" in failed["error"], failed
    assert failed["where"].startswith("flashbax/"), failed  # flashbax's own line, not the block's
    measured = {"status": "ok", "jax_version": "0.6.0", "calls": [failed]}
    facts = facts_from({"packages": installed, "jax": measured, "origin": "live"})
    found = {f.id: f for f in registry().evaluate_checks(facts)}
    assert found["call-fails-flashbax"].severity == "fail", found
    assert "`" + block["call"] + "` raises AttributeError" in found["call-fails-flashbax"].detail
