"""The probes share one kit (probes/_kit.py) instead of copies of its helpers, and still each run alone: as files
beside the kit, and exported by `envaudit probes NAME --script` as one standalone program for a bug report."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envaudit.files import probefiles
from tests.conftest import ROOT

KIT = ROOT / "probes" / "_kit.py"
ALLOWED = {
    "__future__",
    "numpy",
    "jax",
    "flax",
    "neural_tangents",
    "_kit",
    "argparse",
    "importlib",
    "json",
    "math",
    "sys",
    "traceback",
    "contextlib",
    "typing",
    "collections",
    "concurrent",
    "functools",
    "time",
    "os",
    "hashlib",
    "pathlib",
    "re",
    "sysconfig",
    "threading",
    "warnings",
}


def top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            names.add(node.targets[0].id)
    return names


@pytest.mark.parametrize("path", sorted(probefiles.available().values()), ids=lambda p: p.stem)
def test_a_probe_defines_nothing_the_kit_has(path: Path) -> None:
    assert top_level_names(path) & (top_level_names(KIT) - {"main"}) == set()


@pytest.mark.parametrize("path", [*sorted(probefiles.available().values()), KIT], ids=lambda p: p.stem)
def test_probes_import_nothing_of_envaudit(path: Path) -> None:
    tree = ast.parse(path.read_text())
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {str(n.module).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert modules <= ALLOWED, (path.name, modules - ALLOWED)


def test_the_numeric_probes_are_those_that_declare_it_and_need_jax_alone() -> None:
    """`NUMERIC = True` in a probe's file is the one list of numeric probes (the suites read `numeric_names`): each
    of them needs jax alone and computes on the device, and each file says it in one literal."""
    found = probefiles.available()
    names = probefiles.numeric_names()
    assert names == ("conv_chain", "dense_chain", "determinism", "matmul_precision", "ntk")
    for name in names:
        assert probefiles.requires(found[name]) == ("jax",) and not probefiles.off_device(found[name])
    declared = {n for n, p in found.items() if "\nNUMERIC = " in p.read_text()}
    assert declared == set(names)


@pytest.mark.jax
@pytest.mark.parametrize("name", sorted(probefiles.available()))
def test_the_exported_script_runs_alone(name: str, tmp_path: Path) -> None:
    """What a user attaches to an upstream issue: one file, run by plain python far from this checkout."""
    script = tmp_path / "repro.py"
    script.write_text(probefiles.script(probefiles.available()[name]))
    assert "import _kit" not in script.read_text()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_ENABLE_X64", "XLA_FLAGS")}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode in (0, 1, 77), proc.stderr[-2000:]
    assert json.loads(proc.stdout)["name"] == name


@pytest.mark.jax
def test_under_x64_a_tpu_checks_what_xla_tpu_implements() -> None:
    """XLA:TPU has no float64 FFT or LU and emulates float64 (measured on a TPU v5e: the fft and linalg probes raised,
    eager_jit ran out of time, so a healthy TPU host with JAX_ENABLE_X64=1 failed the audit): there "auto" checks
    float32, what a program there computes these in; an explicit float64 still runs as asked; a CPU keeps float64."""
    code = (
        "import sys, types, json; sys.path.insert(0, sys.argv[1]); import _kit as kit\n"
        "found = {}\n"
        "for platform in ('tpu', 'cpu'):\n"
        "    kit.devices = lambda: [types.SimpleNamespace(platform=platform)]\n"
        "    found[platform] = [kit.native(p) for p in ('auto', 'float64', 'float32')]\n"
        "print(json.dumps(found))\n"
    )
    env = {**os.environ, "JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "probes")], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found == {"tpu": ["float32", "float64", "float32"], "cpu": ["float64", "float64", "float32"]}
