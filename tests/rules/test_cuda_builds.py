"""CUDA wheels older than a single-package CUDA jaxlib's build (`tables/cuda-builds.toml`): every library of every
build at its boundary (the build's own version passes, the one just below is refused), the printed fix re-planned,
and the cases where jax's check does not run (a CUDA plugin replaces it; jax already runs on the GPU)."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet

from envaudit.cli import main
from envaudit.rules import cuda_builds, tables
from tests.conftest import facts_from

CHECK = "cuda-library-older-than-jaxlib-build"
BUILDS = tables.load(cuda_builds.BUILDS)["build"]
CASES = [(build, lib, jaxlib) for build in BUILDS for lib in build["libraries"]
         for jaxlib in ("0.4.17", "0.4.18", "0.4.19", "0.4.20", "0.4.21", "0.4.22", "0.4.23", "0.4.24", "0.4.25")
         if SpecifierSet(build["jaxlib"]).contains(jaxlib)
         and ("only" not in lib or SpecifierSet(lib["only"]).contains(jaxlib))]  # fmt: skip


def plan(capsys: pytest.CaptureFixture[str], *pins: str) -> list[dict[str, Any]]:
    main(["plan", *pins, "--compute-capability", "9.0", "--format", "json"])
    return list(json.loads(capsys.readouterr().out)["findings"])


def below(version: str) -> str:
    """The version one step below in the last component compared (12.2 -> 12.1, 11.0.8 -> 11.0.7, 11.0 -> 10.9)."""
    parts = [int(n) for n in version.split(".")]
    while parts and parts[-1] == 0:
        parts = parts[:-1]
    return ".".join(map(str, [*parts[:-1], parts[-1] - 1, *([9] * (len(version.split(".")) - len(parts)))]))


@pytest.mark.parametrize(("build", "lib", "jaxlib"), CASES, ids=[f"{c[2]}-{c[1]['name']}" for c in CASES])
def test_each_library_at_its_build_version(
    capsys: pytest.CaptureFixture[str], build: dict[str, Any], lib: dict[str, str], jaxlib: str
) -> None:
    pins = [f"jax=={jaxlib}", f"jaxlib=={jaxlib}+cuda12.cudnn89"]
    assert CHECK not in {f["id"] for f in plan(capsys, *pins, f"{lib['wheel']}=={lib['built']}")}
    assert CHECK not in {f["id"] for f in plan(capsys, *pins, f"{lib['wheel']}=={lib['pin']}")}
    found = [f for f in plan(capsys, *pins, f"{lib['wheel']}=={below(lib['built'])}") if f["id"] == CHECK]
    assert len(found) == 1 and f"{lib['wheel']} {below(lib['built'])}" in found[0]["detail"], found
    words = shlex.split(found[0]["fix"])
    assert words[1:4] == ["-m", "pip", "install"] and words[5:] == pins, words
    name, _, version = words[4].partition(">=")
    after = plan(capsys, *pins, f"{name}=={version}")
    assert name == lib["wheel"] and not [f for f in after if f["severity"] == "fail"], after


def test_the_reported_case_jax_19121(capsys: pytest.CaptureFixture[str]) -> None:
    """jaxlib 0.4.23 with cuBLAS 12.1.3 (the wheel other CUDA 12.1 frameworks pin): 'Found cuBLAS version 120103,
    but JAX was built against version 120205' in the issue; one failure here, naming cuBLAS."""
    found = plan(capsys, "jax==0.4.23", "jaxlib==0.4.23+cuda12.cudnn89", "nvidia-cublas-cu12==12.1.3.1")
    fails = [f for f in found if f["severity"] == "fail"]
    assert [f["id"] for f in fails] == [CHECK] and "cuBLAS" in fails[0]["detail"]


OUTSIDE = ["0.4.16+cuda12.cudnn89", "0.4.26+cuda12.cudnn89", "0.4.23+cuda11.cudnn86", "0.4.23"]


@pytest.mark.parametrize("jaxlib", OUTSIDE)
def test_outside_the_table_nothing_is_said(capsys: pytest.CaptureFixture[str], jaxlib: str) -> None:
    found = plan(capsys, f"jax=={jaxlib.split('+')[0]}", f"jaxlib=={jaxlib}", "nvidia-cuda-runtime-cu12==12.0.146")
    assert CHECK not in {f["id"] for f in found}


def test_a_cuda_plugin_replaces_the_check(capsys: pytest.CaptureFixture[str]) -> None:
    pins = ["jax==0.4.23", "jaxlib==0.4.23+cuda12.cudnn89", "nvidia-cublas-cu12==12.1.3.1"]
    assert CHECK not in {f["id"] for f in plan(capsys, *pins, "jax-cuda12-plugin==0.4.23")}


GPU = {"status": "ok", "driver_version": "535.104.05", "gpus": [{"index": 0, "compute_capability": "9.0"}]}
STACK = {"jax": "0.4.25", "jaxlib": "0.4.25+cuda12.cudnn89", "nvidia-cublas-cu12": "12.2.5.6"}


def test_a_live_jax_on_the_gpu_passed_the_check_whatever_the_wheels_say() -> None:
    facts = facts_from({"packages": STACK, "nvidia": GPU, "jax": {"status": "ok", "platform": "gpu"}})
    assert cuda_builds.refused(facts) == []


def test_a_live_jax_fallen_back_to_the_cpu_is_one_failure_with_its_cause() -> None:
    """The fallback warning (gpu-present-jax-on-cpu) is a consequence, folded under the refused library."""
    from envaudit import causes
    from envaudit.rules import evaluate

    facts = facts_from({"packages": STACK, "nvidia": GPU, "env": {}, "jax": {"status": "ok", "platform": "cpu"}})
    linked = causes.link(evaluate(facts), facts)
    assert [f.id for f in linked if not f.caused_by and f.severity == "fail"] == [CHECK]
    assert {f.id: f.caused_by for f in linked}.get("gpu-present-jax-on-cpu") == CHECK
