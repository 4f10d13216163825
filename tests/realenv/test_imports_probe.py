"""The imports probe in a real environment built from the package index: it imports what users import.

flax 0.10.0's wheel ships `flaxlib/`, the source tree of a Rust extension (Cargo.toml, pyproject.toml, a `.pyi`
stub and no compiled module), and lists it in top_level.txt; flax never imports it. Measured before the probe
skipped source trees: `import flaxlib.flaxlib` raised, and a healthy flax 0.10.0 beside jax 0.4.36 failed the audit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envaudit.rules.registry import registry
from tests.conftest import ROOT, facts_from

pytestmark = [pytest.mark.realenv, pytest.mark.cost(90)]
UV = (sys.executable, "-m", "uv")
PROBE = ROOT / "probes" / "imports.py"


def test_a_source_tree_shipped_in_a_wheel_is_not_imported(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    subprocess.run([*UV, "venv", "-q", "--python", sys.executable, str(prefix)], check=True)
    python = prefix / "bin" / "python"
    pins = ["flax==0.10.0", "jax==0.4.36", "jaxlib==0.4.36"]
    subprocess.run([*UV, "pip", "install", "-q", "--python", str(python), *pins], check=True, capture_output=True)
    done = subprocess.run([str(python), str(PROBE)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    outcomes = result["facts"]["imports"]
    modules = {o["module"]: o for o in outcomes}
    assert modules["flax"]["status"] == "ok", modules["flax"]
    assert not [m for m in modules if m.startswith("flaxlib")], sorted(modules)
    assert [o for o in outcomes if o["status"] == "error"] == [], outcomes
    listed = json.loads(
        subprocess.check_output(
            [
                str(python),
                "-c",
                "import json, importlib.metadata as m; print(json.dumps("
                "{d.metadata['Name'].lower(): d.version for d in m.distributions()}))",
            ]
        )
    )
    packages = {name: listed[name] for name in ("flax", "jax", "jaxlib", "numpy", "scipy") if name in listed}
    jax = {"status": "ok", "jax_version": "0.4.36", "imports": outcomes}
    facts = facts_from({"packages": packages, "jax": jax, "origin": "live"})
    failing = [f for f in registry().evaluate_checks(facts) if f.severity == "fail"]
    assert not [f.id for f in failing if f.id.startswith(("import-fails", "removed-jax-api-in-flax"))], failing
