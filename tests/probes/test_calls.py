"""The smoke calls (probes/calls/): each file runs here, and what the imports probe makes of a call that raises
or hangs, for real: jax on the CPU, a fault (tests/faults/<name>/sitecustomize.py) on the child's PYTHONPATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import envaudit_run

ROOT = Path(__file__).resolve().parents[2]
CALLS = ROOT / "probes" / "calls"
FAULTS = ROOT / "tests" / "faults"

# One child for every file: each call made as the probe makes it (its `smoke`), where its library is installed
EVERY_CALL = """
import importlib.metadata, json, sys
sys.path.insert(0, sys.argv[1])
import imports
import jax
found = {}
for name, path in imports.call_files().items():
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        found[name] = {"status": "not installed"}
        continue
    found[name] = imports.smoke(path, name, version)
print(json.dumps(found))
"""


def _env(fault: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTS / fault), str(ROOT)])}


def _audit(fault: str, *args: str) -> tuple[int, dict[str, Any]]:
    done = envaudit_run(sys.executable, "--probe", "imports", *args, "--format", "json", env=_env(fault), timeout=300)
    return done.returncode, json.loads(done.stdout)


def test_each_call_file_names_its_distribution_and_its_call() -> None:
    import ast

    for path in sorted(CALLS.glob("[!_]*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assigned = [(t, n.value) for n in tree.body if isinstance(n, ast.Assign) for t in n.targets]
        said = {t.id: value for t, value in assigned if isinstance(t, ast.Name)}
        distribution = ast.literal_eval(said["DISTRIBUTION"])
        assert distribution.replace("-", "_") == path.stem, path
        assert ast.literal_eval(said["CALL"]) and "Measured: " in (ast.get_docstring(tree) or ""), path
        assert "https://" in (ast.get_docstring(tree) or ""), path  # the README line it follows
        assert any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body), path


@pytest.mark.jax
def test_every_call_file_runs_ok_here() -> None:
    done = subprocess.run(
        [sys.executable, "-c", EVERY_CALL, str(ROOT / "probes")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert {"flax", "optax", "orbax-checkpoint"} <= {n for n, o in found.items() if o["status"] == "ok"}, found
    assert all(o["status"] in ("ok", "skip", "not installed") for o in found.values()), found


@pytest.mark.jax
def test_a_call_that_raises_is_its_library_s_failure_and_its_import_still_works() -> None:
    code, report = _audit("optax_update_raises")
    found = {f["id"]: f for f in report["findings"]}
    assert code == 1, found
    failed = found["call-fails-optax"]
    assert failed["severity"] == "fail" and "`optax.adam(...).update` raises" in failed["detail"]
    assert "AttributeError: module 'jax' has no attribute 'tree_map'" in failed["detail"]
    assert not [i for i in found if i.startswith("import-fails-")]
    imports = report["facts"]["jax"]["imports"]
    assert {o["status"] for o in imports if o["distribution"] == "optax"} == {"ok"}
    calls = {o["distribution"]: o for o in report["facts"]["jax"]["calls"]}
    assert calls["optax"]["status"] == "error" and calls["flax"]["status"] == "ok"


@pytest.mark.jax
def test_a_call_that_hangs_is_named_at_the_bound_and_the_imports_are_kept() -> None:
    code, report = _audit("call_hangs", "--timeout", "20")
    probe = next(p for p in report["probes"] if p["name"] == "imports")
    assert probe["status"] == "pass" and probe["duration_s"] < 20, probe
    calls = {o["distribution"]: o for o in report["facts"]["jax"]["calls"]}
    assert calls["optax"]["status"] == "timeout" and "still calling" in calls["optax"]["error"], calls
    assert calls["orbax-checkpoint"]["status"] == "not_tried"  # after it: not reached, unknown
    imports = report["facts"]["jax"]["imports"]
    assert {o["distribution"] for o in imports if o["status"] == "ok"} >= {"flax", "optax", "orbax-checkpoint"}
    assert code == 0 and not [f for f in report["findings"] if f["id"].startswith("call-fails-")], report["findings"]
    # no pass either: the call that never returned is named (it was not_tried, and the audit said OK)
    hangs = {f["id"]: f for f in report["findings"] if f["id"].startswith("call-does-not-return")}
    assert list(hangs) == ["call-does-not-return-optax"] and hangs["call-does-not-return-optax"]["severity"] == "warn"
    assert "`optax.adam(...).update` did not return" in hangs["call-does-not-return-optax"]["detail"], hangs


NEEDS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import imports

def needs_optional():
    import optional_module_not_installed_here  # jaxopt's OptaxSolver without optax

def needs_jax_part():
    import jax.no_such_part_of_jax  # a module of jax that is gone: the library's failure

found = [imports.made("lib", "1.0", "lib.call", f) for f in (needs_optional, needs_jax_part)]
print(json.dumps(found))
"""


def test_a_call_that_needs_a_module_not_installed_is_skipped_and_one_of_jax_that_is_gone_fails() -> None:
    """fix-pass-5's ott-jax: jaxopt's smoke call (OptaxSolver) raised No module named 'optax', an optional dependency
    jaxopt does not require, so every plan was judged to leave a failure it did not cause."""
    done = subprocess.run(
        [sys.executable, "-c", NEEDS, str(ROOT / "probes")], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    optional, gone = json.loads(done.stdout)
    assert optional["status"] == "skip" and "needs optional_module_not_installed_here" in optional["error"]
    assert gone["status"] == "error" and "jax.no_such_part_of_jax" in gone["error"]
