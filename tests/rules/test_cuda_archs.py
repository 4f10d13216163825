"""The GPU architectures each jax CUDA build carries code for (`tables/cuda-archs.toml`, derived by
derive/tables/cuda_archs.py from the plugins' wheels and .bazelrc at jaxlib's tags; `rules/cuda_archs.py`): the
derivation's reading of a fatbinary and of .bazelrc, NVIDIA's compatibility rules, a sample re-derived from a real
wheel, and plans on GPUs a build has no code for (real reports: jax#22723, jax#40487) failing with one root."""

from __future__ import annotations

import json
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from derive.tables import cuda_archs as derivation
from envaudit.cli import main
from envaudit.model.facts import GPU, Facts, JaxFacts
from envaudit.rules import cuda_archs
from envaudit.rules.cuda_archs import ArchBuild
from tests.conftest import BESIDE_MISCOMPILES, derive_cache
from tests.planfix import requested

ROOT = Path(__file__).resolve().parents[2]


TABLE = cuda_archs.ARCHS.load()


def fatbin(entries: list[tuple[int, int]]) -> bytes:
    """A fatbinary as nvcc lays it out: the 16-byte header, then per entry a 64-byte header (kind, its own size,
    the payload's size, the architecture at offset 28) and its payload."""
    body = b""
    for kind, arch in entries:
        payload = b"\0" * 24
        header = struct.pack("<HHIQ", kind, 0x101, 64, len(payload)) + b"\0" * 12 + struct.pack("<I", arch)
        body += header.ljust(64, b"\0") + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def test_the_fatbinaries_of_a_shared_object_are_read_entry_by_entry() -> None:
    """Two fatbinaries among other bytes: every cubin (kind 2) and PTX (kind 1) entry is found, nothing else."""
    data = b"\x7fELF" + b"x" * 100 + fatbin([(2, 50), (2, 80), (1, 90)]) + b"y" * 33 + fatbin([(2, 90), (1, 120)])
    assert derivation.fatbin_targets(data) == {"sass": {50, 80, 90}, "ptx": {90, 120}}
    assert derivation.fatbin_targets(b"no fatbinary here") == {"sass": set(), "ptx": set()}


def test_bazelrc_settings_read_as_the_cuda_configure_rule_reads_them() -> None:
    """sm_XY is a cubin, compute_XY a cubin and PTX; a list of bare X.Y values is a cubin each and PTX for the
    highest; from 0.7.2 each CUDA major has its own config."""
    old = 'build:cuda --action_env TF_CUDA_COMPUTE_CAPABILITIES="sm_52,sm_60,sm_70,sm_80,compute_90"\n'
    assert derivation.setting(old, "cuda") == {"sass": [52, 60, 70, 80, 90], "ptx": [90]}
    assert derivation.setting(old, "cuda_v12") == derivation.setting(old, "cuda")  # one setting for every major
    bare = 'build:cuda --action_env TF_CUDA_COMPUTE_CAPABILITIES="3.5,5.2,6.0,7.0,8.0"\n'
    assert derivation.setting(bare, "cuda") == {"sass": [35, 52, 60, 70, 80], "ptx": [80]}
    split = (
        'common:cuda_v12 --repo_env HERMETIC_CUDA_COMPUTE_CAPABILITIES="sm_50,sm_90,compute_120"\n'
        'common:cuda_v13 --repo_env HERMETIC_CUDA_COMPUTE_CAPABILITIES="sm_75,compute_120"\n'
    )
    assert derivation.setting(split, "cuda_v13") == {"sass": [75, 120], "ptx": [120]}
    assert derivation.setting(split, "cuda") is None


def row(sass: list[int], ptx: list[int]) -> ArchBuild:
    return {"package": "jaxlib", "versions": [], "sass": sass, "ptx": ptx, "read_from": "wheel"}


def test_nvidias_compatibility_rules() -> None:
    """A cubin runs on its own major at an equal or higher minor (discrete GPUs), PTX on its capability or newer;
    an integrated (Tegra) GPU runs only its own cubin."""
    build = row([50, 60, 70, 80], [90])
    assert cuda_archs.runs(build, 86) and cuda_archs.runs(build, 75)  # sm_80 on an RTX 3090, sm_70 on a T4
    assert cuda_archs.runs(build, 100)  # PTX compute_90, compiled by the driver for a B200
    assert not cuda_archs.runs(build, 37)  # Kepler: no cubin of major 3, PTX only for 9.0
    assert not cuda_archs.runs(row([52, 60], [90]), 50)  # an sm_52 cubin does not run on 5.0
    assert not cuda_archs.runs(build, 87) and not cuda_archs.runs(build, 72)  # Orin, Xavier: sm_80/sm_70 not theirs
    assert cuda_archs.runs(row([87], []), 87) and cuda_archs.runs(row([], [80]), 87)


def test_the_table_covers_both_plugins_and_the_single_package_builds() -> None:
    """Every plugin release on PyPI that carries GPU code, and jaxlib's tags from 0.3.10: rows agree on shape."""
    packages = {r["package"] for r in TABLE["build"]}
    assert packages == {"jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin"}
    for build in TABLE["build"]:
        assert build["sass"] and build["versions"], build
        assert build["read_from"] == ("wheel" if build["package"] != "jaxlib" else ".bazelrc")


def facts_of(package: str, version: str, cc: str, **more: Any) -> Facts:
    packages = {"jax": version, "jaxlib": version, package: version}
    if package == "jaxlib":
        packages = {"jax": version, "jaxlib": f"{version}+cuda12.cudnn89"}
    gpu: GPU = {"index": 0, "name": "GPU", "compute_capability": cc}
    return Facts(packages=packages, nvidia={"status": "ok", "gpus": [gpu]}, origin="plan", **more)


def test_each_build_runs_where_it_has_code_and_not_below_it() -> None:
    """For every release of the table: a GPU of each of its cubins' capabilities is fine, a discrete GPU of a
    capability below all it carries is a failure."""
    for build in TABLE["build"]:
        version = build["versions"][-1]
        for sass in build["sass"]:
            if sass in cuda_archs.INTEGRATED:
                continue
            assert not cuda_archs.missing(facts_of(build["package"], version, f"{sass // 10}.{sass % 10}")), build
        lowest = min(build["sass"] + build["ptx"])
        below = max(cc for cc in (30, 35, 37, 50, 52, 60, 61, 70) if cc < lowest)  # the nearest GPU below it
        found = cuda_archs.missing(facts_of(build["package"], version, f"{below // 10}.{below % 10}"))
        assert found and f"sm_{build['sass'][0]}" in found[0].detail, build


def test_a_build_the_table_cannot_speak_for_and_a_jax_seen_on_the_gpu_say_nothing() -> None:
    """A release the table lacks, a dev or local build of a listed one (a Jetson build from source carries PyPI's
    numbers and its own code), jax kept off CUDA, and jax that computed on that GPU here: nothing."""
    assert cuda_archs.missing(facts_of("jax-cuda12-plugin", "0.4.30", "8.7"))
    assert not cuda_archs.missing(facts_of("jax-cuda12-plugin", "0.4.30.1", "8.7"))
    assert not cuda_archs.missing(facts_of("jax-cuda12-plugin", "0.4.30.dev20240601", "8.7"))
    assert not cuda_archs.missing(facts_of("jax-cuda12-plugin", "0.4.30", "8.7", env={"JAX_PLATFORMS": "cpu"}))
    computed: JaxFacts = {"status": "ok", "platform": "gpu", "backend": "cuda"}
    assert not cuda_archs.missing(replace(facts_of("jax-cuda12-plugin", "0.4.30", "8.7"), origin="live", jax=computed))
    fell_back: JaxFacts = {"status": "ok", "platform": "cpu", "backend": "cpu"}
    assert cuda_archs.missing(replace(facts_of("jax-cuda12-plugin", "0.4.30", "8.7"), origin="live", jax=fell_back))


def plan(*arguments: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    main(["plan", *arguments, *BESIDE_MISCOMPILES, "--format", "json"])
    return list(json.loads(capsys.readouterr().out)["findings"])


def roots(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in found if f["severity"] == "fail" and not f["caused_by"]]


@pytest.mark.parametrize("release", ["0.4.30", "0.11.1"])
def test_jetson_orin_with_the_pypi_cuda12_wheels_fails_with_no_command(
    release: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """jax#22723 (plugin 0.4.30) and jax#40487 (0.11.1): Orin (8.7) lists the GPU and dies with 'no kernel image is
    available'. No plugin on PyPI carries sm_87 or PTX at or below 8.7, so the finding says what to do and runs
    nothing."""
    found = plan(f"jax[cuda12]=={release}", "--compute-capability", "8.7", "--machine", "aarch64", capsys=capsys)
    (root,) = [f for f in roots(found) if f["id"] == "gpu-architecture-not-in-jax-build"]
    assert "8.7" in root["detail"] and "no kernel image" in root["detail"] and not root["fix"]


def test_a_gpu_below_an_old_build_is_fixed_by_the_newest_release_that_has_its_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A GTX 750 Ti (5.0) under jaxlib 0.4.20+cuda12 (lowest cubin sm_52) fails; the fix is the newest jax[cuda12]
    whose plugin carries sm_50, and that plan is clean of the check."""
    found = plan("jax[cuda12_pip]==0.4.20", "--compute-capability", "5.0", capsys=capsys)
    (failing,) = [f for f in found if f["id"] == "gpu-architecture-not-in-jax-build"]
    asked = requested(failing["fix"])
    (pin,) = [r for r in asked.requirements if r.startswith("jax[cuda12]==")]
    after = plan(pin, "--compute-capability", "5.0", capsys=capsys)
    assert "gpu-architecture-not-in-jax-build" not in {f["id"] for f in after}


def test_the_hand_rules_on_the_same_fault_fold_under_the_derived_fix(capsys: pytest.CaptureFixture[str]) -> None:
    """A V100 (7.0) under the CUDA 13 plugin: cuda13-compute-capability-below-75 (the install guide) says the same
    cause as the derived check, which has the release to move to; that plan is clean of both."""
    found = plan("jax[cuda13]==0.8.0", "--compute-capability", "7.0", capsys=capsys)
    guide = next(f for f in found if f["id"] == "cuda13-compute-capability-below-75")
    assert guide["caused_by"] == "gpu-architecture-not-in-jax-build"
    (root,) = [f for f in roots(found) if f["id"] == "gpu-architecture-not-in-jax-build"]
    (pin,) = [r for r in requested(root["fix"]).requirements if r.startswith("jax[cuda12]==")]
    after = plan(pin, "--compute-capability", "7.0", capsys=capsys)
    assert not {"gpu-architecture-not-in-jax-build", "cuda13-compute-capability-below-75"} & {f["id"] for f in after}


@pytest.mark.parametrize("cc", ["8.6", "10.0", "9.0"])
def test_gpus_a_build_has_code_for_are_not_failed(cc: str, capsys: pytest.CaptureFixture[str]) -> None:
    """An RTX 3090 (sm_80's cubin), a B200 (compute_90's PTX) and an H100 under jax[cuda12] 0.4.30."""
    found = plan("jax[cuda12]==0.4.30", "--compute-capability", cc, capsys=capsys)
    assert "gpu-architecture-not-in-jax-build" not in {f["id"] for f in found}


@pytest.mark.realenv
@pytest.mark.cost(15)
def test_a_sample_rederived_from_a_real_wheel(tmp_path: Path) -> None:
    """jax-cuda13-plugin 0.10.2 (the first with sm_110, for Thor), read from its wheel on the index here, against
    the committed table."""
    cache = derive_cache(tmp_path)
    wheels = derivation.released("jax-cuda13-plugin", cache, False)
    found = derivation.wheel_targets(wheels["0.10.2"], cache, False)
    (committed,) = [b for b in TABLE["build"] if b["package"] == "jax-cuda13-plugin" and "0.10.2" in b["versions"]]
    assert found == {"sass": committed["sass"], "ptx": committed["ptx"]}
    assert 110 in found["sass"]
