"""The checks of how an environment is put together, on facts: what each sees, and the fix it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from envaudit.rules.registry import registry
from tests.conftest import ROOT, facts_from

STALE = {
    "name": "jax",
    "versions": ["0.4.30", "0.10.2"],
    "locations": ["/old/jax-0.4.30.dist-info", "/venv/site/jax-0.10.2.dist-info"],
}


def found(fragment: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {f.id: (f.detail, f.fix) for f in registry().evaluate_checks(facts_from(fragment))}


def test_pythonpath_shadowing_names_the_variable_and_keeps_the_other_entries() -> None:
    alone = found({"duplicates": [STALE], "python": {"pythonpath": "/old/"}})
    assert alone["pythonpath-shadows"][1] == "unset PYTHONPATH"
    assert "jax 0.4.30 in /old (PYTHONPATH)" in alone["pythonpath-shadows"][0]
    kept = found({"duplicates": [STALE], "python": {"pythonpath": "/src/mine:/old"}})
    assert kept["pythonpath-shadows"][1] == "export PYTHONPATH=/src/mine"
    elsewhere = found(
        {"duplicates": [STALE], "python": {"pythonpath": "/src/mine"}}
    )  # a duplicate PYTHONPATH did not make
    assert "pythonpath-shadows" not in elsewhere and "duplicate-distribution" in elsewhere


def test_a_copy_of_the_same_version_on_pythonpath_is_only_a_duplicate() -> None:
    same = {**STALE, "versions": ["0.10.2", "0.10.2"]}
    result = found({"duplicates": [same], "python": {"pythonpath": "/old"}})
    assert "pythonpath-shadows" not in result and "duplicate-distribution" in result


def test_jax_platforms_that_the_machine_lacks() -> None:
    no_gpu = {"nvidia": {"status": "absent"}, "packages": {"jax": "0.10.2", "jaxlib": "0.10.2"}}
    for asked in ("cuda", "gpu", "rocm", "cuda,rocm"):
        fix = found({**no_gpu, "env": {"JAX_PLATFORMS": asked}})["jax-platforms-unavailable"][1]
        assert fix == "unset JAX_PLATFORMS"
    for fine in ("cpu", "cuda,cpu", ""):  # cpu is always there, and jax passes over cuda without a GPU (0.4.31+)
        assert "jax-platforms-unavailable" not in found({**no_gpu, "env": {"JAX_PLATFORMS": fine}})
    plugin = {"jax": "0.10.2", "jaxlib": "0.10.2", "jax-cuda12-plugin": "0.10.2", "jax-cuda12-pjrt": "0.10.2"}
    assert "jax-platforms-unavailable" not in found(
        {"packages": plugin, "env": {"JAX_PLATFORMS": "cuda"}, "nvidia": {"status": "ok", "gpus": []}}
    )
    assert "jax-platforms-unavailable" not in found({"packages": plugin, "env": {"JAX_PLATFORMS": "cuda"}})  # unknown
    gpu_no_plugin = found(
        {
            "packages": no_gpu["packages"],
            "env": {"JAX_PLATFORMS": "cuda"},
            "nvidia": {"status": "ok", "gpus": [{"index": 0}]},
        }
    )
    assert "'jax[cuda12]==0.10.2'" in gpu_no_plugin["jax-platforms-unavailable"][1]


def test_coupling_fix_is_for_this_platform_and_this_interpreter() -> None:
    mismatch = {
        "packages": {"jax": "0.4.30", "jaxlib": "0.4.25"},
        "python": {"executable": "/env/bin/python"},
        "requirements": [{"package": "jax", "requires": "jaxlib<=0.4.30,>=0.4.27", "installed": "0.4.25"}],
    }
    cpu = found({**mismatch, "nvidia": {"status": "absent"}})["jax-jaxlib-coupling"][1]
    assert cpu == "/env/bin/python -m pip install jaxlib==0.4.30"  # jax is there, and no CUDA wheel
    gpu = found({**mismatch, "nvidia": {"status": "ok", "gpus": [{"index": 0}]}})["jax-jaxlib-coupling"][1]
    assert gpu == "/env/bin/python -m pip install 'jax[cuda12]==0.4.30' jaxlib==0.4.30"


def test_jax_own_requirements_fail_and_others_warn() -> None:
    reqs = [
        {"package": "jax", "requires": "ml-dtypes>=0.4.0", "installed": "0.2.0"},
        {"package": "optax", "requires": "chex>=0.1.87", "installed": "0.1.80"},
    ]
    result = found({"requirements": reqs, "packages": {"jax": "0.4.30", "ml-dtypes": "0.2.0"}})
    assert result["jax-requirement-unsatisfied"][1] == "python -m pip install 'ml-dtypes>=0.4.0'"
    assert "chex" in result["requirement-unsatisfied"][0] and "ml-dtypes" not in result["requirement-unsatisfied"][0]


def test_broken_jax_without_a_known_cause_reinstalls_the_same_release_only() -> None:
    fix = found(
        {
            "jax": {"status": "import_error", "message": "ImportError: libjax.so: file too short"},
            "packages": {"jax": "0.10.2", "jaxlib": "0.10.2"},
        }
    )["jax-broken"][1]
    assert fix == "python -m pip install --force-reinstall --no-deps jax==0.10.2 jaxlib==0.10.2"


def test_the_user_site_shadowing_the_environment_is_named_with_a_fix_that_needs_no_root() -> None:
    user = {
        "name": "jax",
        "versions": ["0.4.30", "0.10.2"],
        "locations": [
            "/home/u/.local/lib/python3.11/site-packages/jax-0.4.30.dist-info",
            "/usr/lib/python3/dist-packages/jax-0.10.2.dist-info",
        ],
    }
    python = {"user_site": "/home/u/.local/lib/python3.11/site-packages", "executable": "/usr/bin/python3"}
    result = found({"duplicates": [user], "python": python})
    detail, fix = result["user-site-shadows"]
    assert "jax 0.4.30 in /home/u/.local/lib/python3.11/site-packages (user site)" in detail
    assert fix == "export PYTHONNOUSERSITE=1" and "pip uninstall" in detail  # the other way, said
    assert "pythonpath-shadows" not in result


def test_the_user_site_is_a_fact_of_the_interpreter(tmp_path: Path) -> None:
    """Where the interpreter's user site lies (PYTHONUSERBASE moves it), as the interpreter itself says."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); from envaudit.collect import _interpreter; "
        "print(json.dumps(_interpreter.python_facts()))"
    )
    env = {**os.environ, "PYTHONUSERBASE": str(tmp_path)}
    out = subprocess.run(
        [sys.base_prefix + "/bin/python3", "-c", code, str(ROOT)], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out)["user_site"].startswith(str(tmp_path))


def test_a_jaxlib_with_cuda_built_in_is_a_cuda_platform_and_is_kept() -> None:
    """jaxlib 0.4.23+cuda12.cudnn89 carries CUDA and is not on PyPI: JAX_PLATFORMS=cuda is no failure there, and
    a coupling fix moves jax to it rather than replacing it with the CPU wheel."""
    built = {"jax": "0.4.20", "jaxlib": "0.4.23+cuda12.cudnn89"}
    gpu = {"status": "ok", "gpus": [{"index": 0}]}
    assert "jax-platforms-unavailable" not in found(
        {"packages": built, "env": {"JAX_PLATFORMS": "cuda"}, "nvidia": gpu}
    )
    reqs = [{"package": "jax", "requires": "jaxlib<=0.4.20", "installed": "0.4.23+cuda12.cudnn89"}]
    fix = found({"packages": built, "requirements": reqs, "nvidia": gpu})["jax-jaxlib-coupling"][1]
    assert fix == "python -m pip install jax==0.4.23"


def test_rocm_asked_on_an_nvidia_machine_is_not_answered_with_cuda_wheels() -> None:
    nvidia = {"status": "ok", "gpus": [{"index": 0}]}
    fix = found(
        {"packages": {"jax": "0.10.2", "jaxlib": "0.10.2"}, "env": {"JAX_PLATFORMS": "rocm"}, "nvidia": nvidia}
    )["jax-platforms-unavailable"][1]
    assert fix == "unset JAX_PLATFORMS"


def test_a_relative_pythonpath_entry_is_the_absolute_one_python_uses(tmp_path: Path) -> None:
    """PYTHONPATH=. puts the current directory on sys.path as an absolute path: the fact says that path."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); from envaudit.collect import _interpreter; "
        "print(json.dumps(_interpreter.python_facts()))"
    )
    env = {**os.environ, "PYTHONPATH": "old:."}
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)], env=env, capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout
    assert json.loads(out)["pythonpath"] == os.pathsep.join([str(tmp_path / "old"), str(tmp_path)])
