"""The CUDA libraries jax refuses when its CUDA backend starts (`tables/cuda-minimums.toml`, derived by
derive/tables/cuda_minimums.py from the wheels of jax, its pjrt plugins and the nvidia-* libraries;
`rules/cuda_minimums.py`): the derivation's reading of the check and of the headers, a sample re-derived from the
real wheels, and a plan below a minimum failing with one root and a fix that leaves none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from derive.tables import cuda_minimums as derivation
from envaudit.cli import main
from envaudit.model.facts import Facts
from envaudit.rules import cuda_minimums, extras
from tests.conftest import BESIDE_MISCOMPILES, derive_cache
from tests.planfix import requested

ROOT = Path(__file__).resolve().parents[2]


TABLE = cuda_minimums.MINIMUMS.load()

CHECKING = b"""
def _check_cuda_versions(raise_on_first_error=False):
  def _version_check(name, get_version, get_build_version, scale_for_comparison=1, min_supported_version=0):
    pass
  _version_check("CUDA", rt, rt_build, scale_for_comparison=10, min_supported_version=12010)
  _version_check("cuFFT", fft, fft_build, scale_for_comparison=100)
  # _version_check("cuSOLVER", solver, solver_build, scale_for_comparison=100, min_supported_version=11400)
  if hasattr(cuda_versions, "cusparse_get_version"):
    _version_check("cuSPARSE", sp, sp_build, scale_for_comparison=100, min_supported_version=12100)

def initialize():
  _check_cuda_versions(raise_on_first_error=True)
"""


def test_the_derivation_reads_what_the_check_compares_and_whether_it_runs() -> None:
    """A commented-out comparison is not code (cuSOLVER in the plugin), one without an absolute minimum compares
    with the build only, and a module that defines the check but never calls it (jax 0.6.0) checks nothing."""
    found = derivation.checks(CHECKING)
    assert found == {"runs": True, "minimums": {"CUDA": 12010, "cuSPARSE": 12100}, "build": ["cuFFT"], "line": 2}
    unused = CHECKING.replace(b"  _check_cuda_versions(raise_on_first_error=True)", b"  pass")
    assert derivation.checks(unused)["runs"] is False  # type: ignore[index]
    assert derivation.checks(b"def initialize():\n  pass\n") is None


def test_a_header_define_is_expanded_as_the_compiler_would() -> None:
    """cusparse.h continues its define over lines, cublas_api.h composes it, cupti_version.h says it plainly."""
    cusparse = (
        "#define CUSPARSE_VER_MAJOR 12\n#define CUSPARSE_VER_MINOR 0\n#define CUSPARSE_VER_PATCH 2\n"
        "#define CUSPARSE_VERSION (CUSPARSE_VER_MAJOR * 1000 + \\\n    CUSPARSE_VER_MINOR *  100 + \\\n"
        "    CUSPARSE_VER_PATCH)\n"
    )
    assert derivation.header_value(cusparse, "CUSPARSE_VERSION") == 12002
    assert derivation.header_value("#define CUPTI_API_VERSION 18  /* 12.0 */\n", "CUPTI_API_VERSION") == 18
    assert derivation.header_value("#define CUDART_VERSION 12010U\n", "CUDART_VERSION") == 12010
    assert derivation.header_value("#define X (Y << 2)\n#define Y 1\n", "X") is None  # not plain arithmetic
    assert derivation.header_value("", "CUDART_VERSION") is None


@pytest.mark.realenv
@pytest.mark.cost(30)
def test_a_sample_rederived_from_the_real_wheels(tmp_path: Path) -> None:
    """jax-cuda12-pjrt 0.6.0 (no check) and 0.6.1 (restored), and the cuSPARSE and cuPTI wheels each side of the
    minimum, ranged out of the wheels on the index here and compared with the committed table."""
    cache = derive_cache(tmp_path)
    pjrt = derivation.released("jax-cuda12-pjrt", cache, False)
    for version in ("0.6.0", "0.6.1"):
        (row,) = [r for r in TABLE["check"] if r["code"] == "jax-cuda12-pjrt" and version in r["versions"]]
        found = derivation.check_of("jax-cuda12-pjrt", pjrt[version], cache, False)
        assert (found["runs"], found["minimums"], found["build"]) == (row["runs"], row["minimums"], row["build"])
    assert found["runs"] and found["minimums"]["cuSPARSE"] == 12100
    libraries = {row["name"]: row for row in TABLE["library"]}
    for name, versions in {"cuSPARSE": ("12.0.2.55", "12.1.0.106"), "cuPTI": ("12.0.146", "12.2.142")}.items():
        wheels = derivation.released(derivation.LIBRARIES[name][0], cache, False)
        for version in versions:
            assert derivation.number_of(name, wheels[version], cache, False) == libraries[name]["values"][version]
    assert libraries["cuSPARSE"]["values"]["12.0.2.55"] < 12100 <= libraries["cuSPARSE"]["values"]["12.1.0.106"]


def test_each_library_reports_a_number_that_grows_with_its_wheel() -> None:
    """What the headers say orders as the wheel versions do: a header misread would break it."""
    for row in TABLE["library"]:
        ordered = sorted(row["values"].items(), key=lambda item: Version(item[0]))
        numbers = [number for _, number in ordered]
        assert numbers == sorted(numbers) and len(numbers) >= 15, row["name"]


def test_the_derived_runtime_minimum_is_the_hand_rules_boundary() -> None:
    """cuda12-runtime-below-121 (read from the changelog) and the derived minimum agree: the first runtime wheel
    jax accepts is a 12.1 one."""
    runtime = next(row for row in TABLE["library"] if row["name"] == "CUDA")
    accepted = [v for v, n in runtime["values"].items() if n >= 12010]
    assert min(accepted, key=Version).startswith("12.1.")
    assert max((v for v in runtime["values"] if v not in accepted), key=Version).startswith("12.0.")


def test_every_plugin_pin_meets_the_minimum_its_release_checks() -> None:
    """The fix moves a wheel to the installed plugin's own pin: that pin must be above the minimum, or the fix would
    leave the refusal it fixes."""
    libraries = {row["wheel"]: row for row in TABLE["library"]}
    checked = 0
    for plugin in extras.CUDA_EXTRA.load()["plugin"]:
        pjrt = plugin["name"].replace("-plugin", "-pjrt")
        for version in plugin["versions"]:
            row = next((r for r in TABLE["check"] if r["code"] == pjrt and version in r["versions"]), None)
            for pin in map(Requirement, plugin["pins"]) if row and row["runs"] else ():
                library = libraries.get(pin.name)
                if library is None or library["name"] not in row["minimums"]:  # type: ignore[index]
                    continue
                lowest = min((v for v in library["values"] if pin.specifier.contains(v)), key=Version)
                assert library["values"][lowest] >= row["minimums"][library["name"]], (pjrt, version, pin)  # type: ignore[index]
                checked += 1
    assert checked >= 30


def plan(*arguments: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    main(["plan", *arguments, *BESIDE_MISCOMPILES, "--format", "json"])
    return list(json.loads(capsys.readouterr().out)["findings"])


def stack(release: str) -> list[str]:
    return [f"jax=={release}", f"jaxlib=={release}", f"jax-cuda12-plugin=={release}", f"jax-cuda12-pjrt=={release}"]


def test_a_cusparse_below_the_minimum_fails_once_and_its_fix_leaves_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """cuSPARSE 12.0 (CUDA 12.0's) under the 0.7.0 plugin: jax refuses it; the plugin's own pin folds under it; the
    fix, re-planned, is clean of both."""
    found = plan(*stack("0.7.0"), "nvidia-cusparse-cu12==12.0.2.55", capsys=capsys)
    roots = [f for f in found if f["severity"] == "fail" and not f["caused_by"]]
    assert [f["id"] for f in roots] == ["cusparse-below-jax-minimum"]
    assert "12002" in roots[0]["detail"] and "12100" in roots[0]["detail"]
    pinned = next(f for f in found if f["id"] == "nvidia-cusparse-cu12-outside-jax-pin")
    assert pinned["caused_by"] == "cusparse-below-jax-minimum"
    asked = requested(roots[0]["fix"])
    (moved,) = [r for r in map(Requirement, asked.requirements) if r.name == "nvidia-cusparse-cu12"]
    assert set(asked.requirements) - {str(moved)} == set(stack("0.7.0"))
    lowest = next(s.version for s in moved.specifier if s.operator == ">=")
    after = plan(*stack("0.7.0"), f"nvidia-cusparse-cu12=={lowest}", capsys=capsys)
    assert not [f for f in after if "cusparse" in f["id"]]


def test_a_release_that_defines_no_check_refuses_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """jax-cuda12-pjrt 0.6.0 never calls the check (0.6.1 restored it): the same cuSPARSE is only outside the pin."""
    ids = {f["id"] for f in plan(*stack("0.6.0"), "nvidia-cusparse-cu12==12.0.2.55", capsys=capsys)}
    assert "cusparse-below-jax-minimum" not in ids and "nvidia-cusparse-cu12-outside-jax-pin" in ids


def test_a_single_package_cuda_jaxlib_is_checked_by_jax_itself(capsys: pytest.CaptureFixture[str]) -> None:
    """jax 0.4.26's xla_bridge.py checks cuBLAS against 12.1 for a jaxlib+cuda12 build with no plugin beside it."""
    single = ["jax==0.4.26", "jaxlib==0.4.26+cuda12.cudnn89", "nvidia-cudnn-cu12==8.9.7.29"]
    ids = {f["id"] for f in plan(*single, "nvidia-cublas-cu12==12.0.2.224", capsys=capsys)}
    assert "cublas-below-jax-minimum" in ids
    assert "cublas-below-jax-minimum" not in {
        f["id"] for f in plan(*single, "nvidia-cublas-cu12==12.1.3.1", capsys=capsys)
    }


def test_a_hand_rule_on_the_same_library_is_the_one_root(capsys: pytest.CaptureFixture[str]) -> None:
    """The CUDA runtime 12.0 under the 0.7.0 plugin: cuda12-runtime-below-121 and the derived check say the same
    cause once."""
    found = plan(*stack("0.7.0"), "nvidia-cuda-runtime-cu12==12.0.146", capsys=capsys)
    derived = next(f for f in found if f["id"] == "cuda-runtime-below-jax-minimum")
    assert derived["caused_by"] == "cuda12-runtime-below-121"


def test_where_the_table_cannot_speak_nothing_is_said() -> None:
    """A wheel release the table does not list, and jax running on the GPU (the check passed), say nothing."""
    check = cuda_minimums.below_minimum("cuSPARSE")
    packages = {"jax": "0.7.0", "jaxlib": "0.7.0", "jax-cuda12-plugin": "0.7.0", "jax-cuda12-pjrt": "0.7.0"}
    assert check(Facts(packages={**packages, "nvidia-cusparse-cu12": "12.0.2.55"}, origin="plan"))
    assert not check(Facts(packages={**packages, "nvidia-cusparse-cu12": "12.0.9.999"}, origin="plan"))
    live = Facts(
        packages={**packages, "nvidia-cusparse-cu12": "12.0.2.55"},
        origin="live",
        jax={"status": "ok", "platform": "gpu"},
    )
    assert not check(live)


@pytest.mark.parametrize(
    "env",
    [
        {"JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"},  # every release honours it (os.getenv)
        {"JAX_PLATFORMS": "cpu"},  # jax does not start the CUDA backend
    ],
)
def test_no_refusal_where_jax_runs_no_check(env: dict[str, str]) -> None:
    check = cuda_minimums.below_minimum("cuSPARSE")
    packages = {"jax": "0.7.0", "jaxlib": "0.7.0", "jax-cuda12-plugin": "0.7.0", "jax-cuda12-pjrt": "0.7.0"}
    below = {**packages, "nvidia-cusparse-cu12": "12.0.2.55"}
    assert check(Facts(packages=below, origin="plan"))
    assert not check(Facts(packages=below, origin="plan", env=env))
    assert check(Facts(packages=below, origin="plan", env={"JAX_PLATFORMS": "cuda,cpu"}))


def test_only_the_plugin_jax_loads_compares_the_cu12_wheels(capsys: pytest.CaptureFixture[str]) -> None:
    """The CUDA 13 plugin loads the CUDA 13 wheels, not a -cu12 one left beside it; a CUDA 12 pjrt of another
    release than jaxlib is skipped by jax (review: both failed)."""
    cuda13 = ["jax==0.9.0", "jaxlib==0.9.0", "jax-cuda13-plugin==0.9.0", "jax-cuda13-pjrt==0.9.0"]
    assert "cublas-below-jax-minimum" not in {
        f["id"] for f in plan(*cuda13, "nvidia-cublas-cu12==12.0.2.224", capsys=capsys)
    }
    check = cuda_minimums.below_minimum("cuBLAS")
    skewed = {"jax": "0.7.1", "jaxlib": "0.7.1", "jax-cuda12-pjrt": "0.7.0", "nvidia-cublas-cu12": "12.0.2.224"}
    assert not check(Facts(packages=skewed, origin="plan"))


def test_a_minimum_no_wheel_release_fails_has_no_check() -> None:
    """Every CUDA 12 cuPTI wheel reports API 18 or more, every cuSOLVER one 11402 or more: their minimums (18, 11400)
    can refuse none, so no check is listed for them; cuSPARSE's can, and is."""
    numbers = {row["name"]: row["values"] for row in TABLE["library"]}
    assert min(numbers["cuPTI"].values()) >= 18 and min(numbers["cuSOLVER"].values()) >= 11400
    assert "cuSPARSE" in cuda_minimums.libraries()
    assert not {"cuPTI", "cuSOLVER"} & set(cuda_minimums.libraries())
