"""A library's smoke call that raises in another library's code, in real environments built from the package index.

diffrax 0.7.0's implicit solvers solve their linear systems with lineax; lineax 0.0.8 keeps a Python bool in its LU
state, which jax 0.8.2 traces (TracerBoolConversionError at lineax/_solver/lu.py; lineax#187, fixed by lineax commit
dd8debd, first released in 0.1.0). `import diffrax` and diffrax's README call (Tsit5) work; the implicit solve its
docs give for stiff problems (Kvaerno5, a PIDController, a vector state: probes/calls/diffrax.py) raises. The
finding's fix is a newer release of the library whose code raised (lineax), jax held, which the plan's twin proves.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envaudit.rules import calls
from tests.conftest import ROOT, facts_from

pytestmark = [pytest.mark.realenv, pytest.mark.cost(60)]
UV = (sys.executable, "-m", "uv")
PROBE = ROOT / "probes" / "imports.py"
STACK = ["diffrax==0.7.0", "equinox==0.13.2", "jax==0.8.2", "jaxlib==0.8.2", "jaxtyping==0.3.4", "optimistix==0.0.11"]


def _calls(where: Path, pins: list[str]) -> dict[str, Any]:
    """The imports probe's answer in a fresh environment of these pins (uv's shared cache)."""
    subprocess.run([*UV, "venv", "-q", "--python", sys.executable, str(where)], check=True)
    python = where / "bin" / "python"
    subprocess.run([*UV, "pip", "install", "-q", "--python", str(python), *pins], check=True, capture_output=True)
    done = subprocess.run([str(python), str(PROBE)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, Any] = json.loads(done.stdout)["facts"]
    return found


def test_diffrax_s_implicit_solve_raises_in_lineax_0_0_8_and_the_fix_is_a_newer_lineax(tmp_path: Path) -> None:
    broken = _calls(tmp_path / "broken", [*STACK, "lineax==0.0.8"])
    (call,) = [o for o in broken["calls"] if o["distribution"] == "diffrax"]
    assert call["status"] == "error" and "TracerBoolConversionError" in call["error"], call
    assert call["where"].startswith("lineax/"), call  # lineax's line, not diffrax's
    assert {o["status"] for o in broken["imports"] if o["distribution"] in ("diffrax", "lineax")} == {"ok"}
    facts = facts_from({"packages": {"jax": "0.8.2", "jaxlib": "0.8.2"}, "jax": {"status": "ok", **broken}})
    (found,) = [o for o in calls.failures(facts) if o.about == "diffrax"]
    assert "lineax>0.0.8" in found.fix.install and "jax==0.8.2" in found.fix.command, found.fix
    fixed = _calls(tmp_path / "fixed", [*STACK, "lineax==0.1.0"])
    assert {o["distribution"]: o["status"] for o in fixed["calls"]}["diffrax"] == "ok", fixed["calls"]


# diffrax#514: backpropagating through a solve (diffrax's default adjoint runs equinox's checkpointed loop) raises in
# equinox 0.11.7 under jax 0.4.34's tangent checks; equinox 0.11.8 (PR #871) fixed it, nothing else moved
AUDIT = (sys.executable, "-m", "envaudit", "--python")
GRADIENT = ["diffrax==0.6.0", "jaxtyping==0.2.34", "jax==0.4.34", "jaxlib==0.4.34", "numpy==2.1.2", "scipy==1.14.1"]


def test_diffrax_s_gradient_raises_in_equinox_0_11_7_and_the_plan_moves_equinox_alone(tmp_path: Path) -> None:
    broken = _calls(tmp_path / "broken", [*GRADIENT, "equinox==0.11.7"])
    (call,) = [o for o in broken["calls"] if o["distribution"] == "diffrax"]
    assert call["status"] == "error" and "Custom JVP rule" in call["error"] and call["where"].startswith("equinox/")
    done = subprocess.run(
        [*AUDIT, str(tmp_path / "broken" / "bin" / "python"), "--probe", "imports", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    plan = json.loads(done.stdout)["plan"]["fix"]
    # equinox up with jax held; lineax and optimistix, whose `equinox>=` floors equinox 0.11.8 meets, stay put
    assert "'equinox>0.11.7'" in plan and "jax==0.4.34" in plan, plan
    moved = [word.strip("'") for word in plan.split() if any(op in word for op in "=<>")]
    assert sorted(moved) == ["equinox>0.11.7", "jax==0.4.34", "jaxlib==0.4.34"], plan
    fixed = _calls(tmp_path / "fixed", [*GRADIENT, "equinox==0.11.8"])
    assert {o["distribution"]: o["status"] for o in fixed["calls"]}["diffrax"] == "ok", fixed["calls"]
