"""CUDA wheels older than a single-package CUDA jaxlib's build (`tables/cuda-builds.toml`): every library of every
build at its boundary (the build's own version passes, the one just below is refused), the printed fix re-planned,
and the cases where jax's check does not run (a CUDA plugin replaces it; jax already runs on the GPU)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet

from envaudit.cli import main
from envaudit.commands.plan import ARGUMENTS
from envaudit.model import fixes
from envaudit.rules import cuda_builds
from envaudit.rules.cuda_builds import Row
from tests.conftest import BESIDE_MISCOMPILES, derive_cache, facts_from
from tests.planfix import requested

CHECK = "cuda-library-older-than-jaxlib-build"
TABLE = cuda_builds.BUILDS.load()
RELEASES = ("0.4.17", "0.4.18", "0.4.19", "0.4.20", "0.4.21", "0.4.22", "0.4.23", "0.4.24", "0.4.25")


LABELS = {"12": "+cuda12.cudnn89", "11": "+cuda11.cudnn86"}  # the single-package builds of each CUDA major


def row(rows: Sequence[Row], key: Callable[[Row], str], version: str) -> Row:
    [found] = [r for r in rows if SpecifierSet(key(r)).contains(version)]
    return found


def compared(release: str, major: str) -> list[tuple[str, str, str, str]]:
    """(jaxlib, wheel, built as compared, jax's pin) for each library jax `release` compares with its own jaxlib of
    that CUDA major."""
    build = row([r for r in TABLE["build"] if r["cuda"].startswith(f"{major}.")], lambda r: r["jaxlib"], release)
    components = row(TABLE["compare"], lambda r: r["jax"], release)["components"]
    return [
        (release + LABELS[major], wheel, ".".join(build["built"][wheel].split(".")[:count]), build["pins"][wheel])
        for wheel, count in components.items()
        if wheel.endswith(f"-cu{major}")
    ]


CASES = [case for release in RELEASES for major in LABELS for case in compared(release, major)]


def plan(capsys: pytest.CaptureFixture[str], *pins: str) -> list[dict[str, Any]]:
    main(["plan", *pins, "--compute-capability", "9.0", *BESIDE_MISCOMPILES, "--format", "json"])
    return list(json.loads(capsys.readouterr().out)["findings"])


def below(version: str) -> str:
    """The version one step below in the last component compared (12.2 -> 12.1, 11.0.8 -> 11.0.7, 11.0 -> 10.9)."""
    parts = [int(n) for n in version.split(".")]
    while parts and parts[-1] == 0:
        parts = parts[:-1]
    return ".".join(map(str, [*parts[:-1], parts[-1] - 1, *([9] * (len(version.split(".")) - len(parts)))]))


@pytest.mark.parametrize(("jaxlib", "wheel", "built", "pin"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_each_library_at_its_build_version(
    capsys: pytest.CaptureFixture[str], jaxlib: str, wheel: str, built: str, pin: str
) -> None:
    pins = [f"jax=={jaxlib.split('+')[0]}", f"jaxlib=={jaxlib}"]
    assert CHECK not in {f["id"] for f in plan(capsys, *pins, f"{wheel}=={built}")}
    assert CHECK not in {f["id"] for f in plan(capsys, *pins, f"{wheel}=={pin}")}
    found = [f for f in plan(capsys, *pins, f"{wheel}=={below(built)}") if f["id"] == CHECK]
    assert len(found) == 1 and f"{wheel} {below(built)}" in found[0]["detail"], found
    asked = requested(found[0]["fix"])  # lines, not a command: they name no index (-f), whoever installs them does
    assert asked.requirements[1:] == tuple(pins) and list(asked.files) == [ARGUMENTS], asked
    assert not (asked.remove or asked.unset or asked.export), asked
    name, _, version = asked.requirements[0].partition(">=")
    after = plan(capsys, *pins, f"{name}=={version}")
    assert name == wheel and version == pin and not [f for f in after if f["severity"] == "fail"], after


@pytest.mark.parametrize(
    ("jax", "jaxlib", "wheel"),
    [
        ("0.4.26", "0.4.25", "nvidia-cublas-cu12==12.1.3.1"),  # jax 0.4.26 compares with fixed 12.1-era minimums
        ("0.4.20", "0.4.18", "nvidia-cusolver-cu12==11.5.1.52"),  # jax 0.4.20 compares cuSOLVER by major.minor
        ("0.4.23", "0.4.20", "nvidia-cublas-cu12==12.1.3.1"),  # jaxlib 0.4.20 cannot report cuBLAS: jax asks not
    ],
)
def test_the_comparison_is_the_installed_jaxs(
    capsys: pytest.CaptureFixture[str], jax: str, jaxlib: str, wheel: str
) -> None:
    """_check_cuda_versions is jax's code and the build versions are jaxlib's: a jax with a jaxlib of another
    release compares as that jax does (found by review: both pairs were failed, both are accepted by jax)."""
    assert CHECK not in {f["id"] for f in plan(capsys, f"jax=={jax}", f"jaxlib=={jaxlib}+cuda12.cudnn89", wheel)}
    same = plan(capsys, f"jax=={jaxlib}", f"jaxlib=={jaxlib}+cuda12.cudnn89", wheel)
    assert jax != "0.4.20" or CHECK in {f["id"] for f in same}  # jax 0.4.18 itself refuses cuSOLVER 11.5.1


def test_the_fix_holds_the_cuda_wheels_jaxlib_was_built_with() -> None:
    """A framework built for CUDA 12.1 moved cuBLAS back; making room by upgrading it would bring cuDNN 9, which
    this cuDNN 8.9 build cannot load: the fix keeps the other CUDA wheels, so pip fits them or changes nothing."""
    stack = {
        "jax": "0.4.23",
        "jaxlib": "0.4.23+cuda12.cudnn89",
        "nvidia-cublas-cu12": "12.1.3.1",
        "nvidia-cudnn-cu12": "8.9.2.26",
        "torch": "2.1.0",
    }
    facts = facts_from({"packages": stack, "requires": {"torch": ["nvidia-cublas-cu12==12.1.3.1"]}})
    [found] = cuda_builds.refused(facts)
    asked = requested(found.fix.command)
    assert {"nvidia-cudnn-cu12==8.9.2.26", "jaxlib==0.4.23+cuda12.cudnn89"} <= set(asked.requirements), asked
    assert asked.links == (fixes.CUDA_RELEASES,), asked  # a command installs the +cuda jaxlib from jax's own index


def test_the_reported_case_jax_19121(capsys: pytest.CaptureFixture[str]) -> None:
    """jaxlib 0.4.23 with cuBLAS 12.1.3 (the wheel other CUDA 12.1 frameworks pin): 'Found cuBLAS version 120103,
    but JAX was built against version 120205' in the issue; one failure here, naming cuBLAS."""
    found = plan(capsys, "jax==0.4.23", "jaxlib==0.4.23+cuda12.cudnn89", "nvidia-cublas-cu12==12.1.3.1")
    fails = [f for f in found if f["severity"] == "fail"]
    assert [f["id"] for f in fails] == [CHECK] and "cuBLAS" in fails[0]["detail"]


def test_torch_113s_cublas_under_a_cuda11_build(capsys: pytest.CaptureFixture[str]) -> None:
    """torch 1.13 pins nvidia-cublas-cu11==11.10.3.66 (CUDA 11.7's); jax[cuda11_pip] 0.4.23 was built with CUDA 11.8's
    cuBLAS 11.11: jax refuses it. The fix is the extra's own pin, the CUDA 12 wheels never asked for."""
    found = plan(capsys, "jax[cuda11_pip]==0.4.23", "nvidia-cublas-cu11==11.10.3.66")
    [failing] = [f for f in found if f["id"] == CHECK]
    assert "nvidia-cublas-cu11 11.10.3.66" in failing["detail"] and "11.11" in failing["detail"]
    asked = requested(failing["fix"])
    assert "nvidia-cublas-cu11>=11.11" in asked.requirements and not [r for r in asked.requirements if "-cu12" in r]


OUTSIDE = ["0.4.16+cuda12.cudnn89", "0.4.26+cuda12.cudnn89", "0.4.16+cuda11.cudnn86", "0.4.23"]


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
    from envaudit.judge import causes
    from envaudit.rules import evaluate

    facts = facts_from({"packages": STACK, "nvidia": GPU, "env": {}, "jax": {"status": "ok", "platform": "cpu"}})
    evaluated = evaluate(facts)
    linked = causes.link(evaluated.findings, evaluated)
    assert [f.id for f in linked if not f.caused_by and f.severity == "fail"] == [CHECK]
    assert {f.id: f.caused_by for f in linked}.get("gpu-present-jax-on-cpu") == CHECK


def test_no_jax_or_a_jax_that_is_no_version_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: packaging 22-24 (allowed by pyproject) raise InvalidVersion in `contains` for what is no
    version, where 26 returns False; the check must not ask. Those releases' behaviour is put in place here."""
    from packaging.version import Version

    strict = SpecifierSet.contains
    monkeypatch.setattr(SpecifierSet, "contains", lambda self, item, *a, **k: strict(self, Version(str(item)), *a, **k))
    for jax in (None, "", "foo"):
        stack = {"jaxlib": "0.4.23+cuda12.cudnn89", "nvidia-cublas-cu12": "12.1.3.1"}
        facts = facts_from({"packages": stack | ({"jax": jax} if jax is not None else {})})
        assert cuda_builds.refused(facts) == []
    assert cuda_builds.refused(facts_from({"packages": stack | {"jax": "0.4.23"}}))  # the strict stand-in works


@pytest.mark.realenv
@pytest.mark.cost(10)
def test_the_cuda11_pins_are_what_the_released_jax_wheels_declare(tmp_path: Path) -> None:
    """The CUDA 11 rows' versions are jax's own cuda11_pip pins: read again from the METADATA of the jax 0.4.17 and
    0.4.25 wheels on the index here (ranged out of the remote wheel), each the row's major.minor."""
    from urllib.parse import urljoin

    from packaging.requirements import Requirement

    from derive.sources import wheels
    from derive.tables.declared import metadata_file

    cache = derive_cache(tmp_path)
    data = wheels.project_json("jax", cache, False)
    for release in ("0.4.17", "0.4.25"):
        picked = metadata_file(data["releases"][release])
        assert picked is not None
        url = urljoin(wheels.PYPI.format(name="jax"), picked["url"])
        declared = wheels.fields(wheels.wheel_metadata(picked["filename"], url, cache, False))["Requires-Dist"]
        pins = {
            r.name: next(s.version for s in r.specifier if s.operator == ">=")
            for r in map(Requirement, declared)
            if r.marker is not None and r.marker.evaluate({"extra": "cuda11-pip"}) and r.name.startswith("nvidia-")
        }
        build = row([r for r in TABLE["build"] if r["cuda"].startswith("11.")], lambda r: r["jaxlib"], release)
        assert {wheel: pins[wheel] for wheel in build["pins"]} == build["pins"], (release, pins)
