"""What jax's accelerator extras install (cuda-extra.toml, derived by derive/tables/cuda_extra.py; rules/extras.py):
the derivation's reading of Requires-Dist, the table against the METADATA of the jax installed here, and a plan of
an extra modelled as what it installs, so that the checks of an installed stack apply to it."""

from __future__ import annotations

import json
from importlib.metadata import distribution
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from derive.tables import cuda_extra as derivation
from envaudit.cli import main
from envaudit.model import fixes
from envaudit.rules import extras
from tests.conftest import BESIDE_MISCOMPILES

ROOT = Path(__file__).resolve().parents[2]


def test_the_derivation_reads_each_extra_as_pip_does() -> None:
    """with_cuda is with-cuda (pip normalises extra names), a Linux marker applies, the release is written {V}."""
    declared = [
        "nvidia-cublas-cu12 >=12.1.3.1 ; extra == 'with_cuda'",  # the spelling of plugin 0.4.30 to 0.5.1
        'nvidia-cudnn-cu13<10.0,>=9.12.0.46; sys_platform == "linux" and extra == "with-cuda"',
        'nvidia-nccl-cu13>=2.27; sys_platform == "win32" and extra == "with-cuda"',
        "nvidia-nvvm; extra == 'with-cuda'",
        "jax-cuda13-pjrt==0.9.0",
        "not a requirement",
    ]
    assert derivation.nvidia_pins(declared, "with-cuda") == [
        "nvidia-cublas-cu12>=12.1.3.1",
        "nvidia-cudnn-cu13<10.0,>=9.12.0.46",
        "nvidia-nvvm",
    ]
    jax = {
        "Requires-Dist": [
            "jaxlib ==0.4.20+cuda12.cudnn89 ; extra == 'cuda12_pip'",
            'jax-cuda12-plugin[with_cuda]<=0.4.35,>=0.4.34; extra == "cuda12"',
            'jax-rocm7-plugin==0.9.2.*; extra == "rocm7-local"',
            "jaxlib ==0.4.20 ; extra == 'cpu'",
        ]
    }
    texts = [derivation._text(r, "0.4.20") for r in derivation._installed_by(jax, "cuda12-pip")]
    assert texts == ["jaxlib=={V}+cuda12.cudnn89"]
    texts = [derivation._text(r, "0.4.35") for r in derivation._installed_by(jax, "cuda12")]
    assert texts == ["jax-cuda12-plugin[with-cuda]<={V},>=0.4.34"]
    texts = [derivation._text(r, "0.9.2") for r in derivation._installed_by(jax, "rocm7-local")]
    assert texts == ["jax-rocm7-plugin=={V}.*"]


def test_the_table_says_what_the_installed_jax_declares() -> None:
    """Each accelerator extra of the jax installed here: the table's row installs what its own METADATA declares,
    each at a release the declared requirement allows (and the plugin's pjrt, which the plugin requires in turn)."""
    jax = distribution("jax")
    fields = {"Requires-Dist": list(jax.requires or [])}
    provided = jax.metadata.get_all("Provides-Extra") or []
    named = sorted({extra for extra in provided if derivation.JAX_EXTRA.match(extra)})
    assert named, "the jax installed here has no accelerator extra"
    for extra in named:
        implied = extras.implied(jax.version, {extra})
        declared = derivation._installed_by(fields, extra)
        assert {canonicalize_name(r.name) for r in declared} | {"jaxlib"} <= set(implied), extra
        for req in declared:
            assert req.specifier.contains(implied[canonicalize_name(req.name)]), (extra, str(req))
        assert all(name.endswith("-pjrt") for name in set(implied) - {r.name for r in declared} - {"jaxlib"}), extra


@pytest.mark.parametrize(
    ("requirement", "implied"),
    [
        ("jax[cuda12_pip]==0.4.20", {"jaxlib": "0.4.20+cuda12.cudnn89"}),
        ("jax[cuda]==0.4.20", {"jaxlib": "0.4.20+cuda11.cudnn86"}),  # `cuda` meant CUDA 11 then
        ("jax[cuda12-local]==0.4.29", {"jaxlib": "0.4.29+cuda12.cudnn91"}),
        # jax 0.4.37 was released alone: its extra allows plugin 0.4.36-0.4.37, and the index has only 0.4.36
        ("jax[cuda12]==0.4.37", {"jaxlib": "0.4.36", "jax-cuda12-plugin": "0.4.36", "jax-cuda12-pjrt": "0.4.36"}),
        ("jax[cuda13]==0.9.0", {"jaxlib": "0.9.0", "jax-cuda13-plugin": "0.9.0", "jax-cuda13-pjrt": "0.9.0"}),
        ("jax[rocm]==0.8.2", {"jaxlib": "0.8.2", "jax-rocm7-plugin": "0.8.2"}),  # ROCm 7's plugin from 0.8.2
        ("jax[rocm]==0.6.0", {"jaxlib": "0.6.0", "jax-rocm60-plugin": "0.6.0"}),
        ("jax[tpu]==0.10.1", {"jaxlib": "0.10.1", "libtpu": "0.0.41"}),  # libtpu==0.0.41.*: tpu-extra.toml
        ("jax[cuda12]==0.4.16", {"jaxlib": "0.4.16"}),  # no such extra then
    ],
)
def test_an_extra_implies_what_its_release_installs(requirement: str, implied: dict[str, str]) -> None:
    req = Requirement(requirement)
    (version,) = [s.version for s in req.specifier]
    assert extras.implied(version, set(req.extras)) == implied


def test_a_release_after_the_table_installs_what_the_newest_row_names() -> None:
    """An unpinned jax[cuda13] (version unknown): the names of what the newest release of the extra installs."""
    assert set(extras.implied("9999", {"cuda13"})) == {"jaxlib", "jax-cuda13-plugin", "jax-cuda13-pjrt"}


@pytest.mark.parametrize(
    ("requirement", "platform", "cuda", "builds"),
    [
        ("jax[cuda12]==0.9.0", "cuda", "12", {"jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt"}),
        ("jax[cuda]==0.4.20", "cuda", "11", {"jaxlib"}),  # the major of the single-package jaxlib's build
        ("jax[cuda12_pip]==0.4.23", "cuda", "12", {"jaxlib"}),
        ("jax[tpu]==0.10.1", "tpu", None, {"jaxlib"}),  # libtpu is installed, and is no build of jax's
        ("jax[rocm]==0.6.0", "rocm", None, {"jaxlib", "jax-rocm60-plugin"}),
        ("jax[cpu]==0.6.0", "cpu", None, {"jaxlib"}),
        ("jax[cpu,cuda12]==0.9.0", "cuda", "12", {"jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt"}),
        ("jax==0.9.0", None, None, set()),
    ],
)
def test_an_extra_says_the_platform_and_the_cuda_major(
    requirement: str, platform: str | None, cuda: str | None, builds: set[str]
) -> None:
    """The one reading of jax[EXTRA]==V that plan (the facts it states) and triage (a pasted pin) share."""
    req = Requirement(requirement)
    (version,) = [s.version for s in req.specifier]
    found = extras.inferred(version, req.extras)
    assert (found.platform, found.cuda_version, set(found.builds)) == (platform, cuda, builds)
    assert found.installs == extras.implied(version, set(req.extras))


def plan(*arguments: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    main(["plan", *arguments, *BESIDE_MISCOMPILES, "--format", "json"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def test_a_single_package_cuda_extra_gets_the_build_checks_of_an_installed_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """jax[cuda12_pip]==0.4.23 installs jaxlib 0.4.23+cuda12.cudnn89, built against cuBLAS 12.2: a cuBLAS 12.1 wheel
    beside it is refused and jax computes on the CPU (jax#19121), in a plan as in an installed stack."""
    report = plan("jax[cuda12_pip]==0.4.23", "nvidia-cublas-cu12==12.1.3.1", capsys=capsys)
    assert report["facts"]["packages"]["jaxlib"] == "0.4.23+cuda12.cudnn89"
    assert report["facts"]["jax"]["platform"] == "cuda" and report["facts"]["jax"]["cuda_version"] == "12"
    found = {f["id"]: f for f in report["findings"]}
    assert found["cuda-library-older-than-jaxlib-build"]["severity"] == "fail"
    report = plan("jax[cuda12_pip]==0.4.23", "nvidia-cublas-cu12==12.2.5.6", capsys=capsys)
    assert "cuda-library-older-than-jaxlib-build" not in {f["id"] for f in report["findings"]}


def test_jax_cuda_before_0426_plans_a_cuda11_build(capsys: pytest.CaptureFixture[str]) -> None:
    report = plan("jax[cuda]==0.4.20", capsys=capsys)
    assert report["facts"]["packages"]["jaxlib"] == "0.4.20+cuda11.cudnn86"
    assert report["facts"]["jax"]["cuda_version"] == "11"


def test_a_cuda13_wheel_outside_the_plugin_pin_warns_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    report = plan("jax[cuda13]==0.9.0", "nvidia-cusparse==12.5.0", capsys=capsys)
    (found,) = [f for f in report["findings"] if f["id"] == "nvidia-cusparse-outside-jax-pin"]
    assert found["severity"] == "warn"
    assert "nvidia-cusparse 12.5.0 is outside nvidia-cusparse>=12.6.2.49, which" in found["detail"]
    assert "jax-cuda13-plugin[with-cuda]==0.9.0 pins" in found["detail"]


def test_pip_chose_what_the_table_plans_wherever_it_could_install_the_extra() -> None:
    """derive/confirm/cuda_extra.py's measurement (pip's resolver on jax[EXTRA]==V), against today's table:
    each confirmed run's jaxlib, plugin and pjrt are the releases extras.implied plans, its nvidia wheels inside the
    pins of the plugin release it chose."""
    from derive.confirm import cuda_extra as confirmation

    measured = json.loads((ROOT / "envaudit/rules/tables/derived/cuda-extra-confirmed.json").read_text())
    assert measured["confirmed"] >= 20 and all(r["verdict"] != "contradicted" for r in measured["runs"])
    pins = confirmation.plugin_pins()
    for run in measured["runs"]:
        if run["verdict"] != "confirmed":
            continue
        picked = dict(item.split(" ") for item in run["pip_chose"].split(", "))
        planned = extras.implied(run["jax"], {run["extra"]})
        with_cuda = confirmation.with_cuda(run["extra"], run["jax"])
        assert planned and confirmation.verdict(planned, picked, pins, with_cuda) == [], run


def test_a_release_the_table_covers_without_the_extra_installs_no_plugin() -> None:
    """jax 0.6.0 has no cuda12_pip extra and 0.4.30 no cuda11_pip (pip installs jax alone, with a warning): only a
    release newer than the whole table takes the extra's newest row (review: both were modelled as plugins)."""
    assert extras.implied("0.6.0", {"cuda12_pip"}) == {"jaxlib": "0.6.0"}
    assert extras.implied("0.4.30", {"cuda11_pip"}) == {"jaxlib": "0.4.30"}


@pytest.mark.parametrize(
    ("requirement", "removed", "kept"),
    [
        ("jax[cuda12_pip]==0.4.20", "jax-cuda12-plugin", "jax[cuda12_pip]==0.4.20"),  # installs a +cuda jaxlib
        ("jax[cuda12]==0.6.0", "jax-cuda12-plugin", "jax==0.6.0"),
        ("jax[cuda]==0.4.34", "jax-cuda13-plugin", "jax[cuda]==0.4.34"),  # its plugin is the CUDA 12 one
        ("jax[cuda]==0.4.34", "jax-cuda12-plugin", "jax==0.4.34"),
        ("jax[cuda12]==0.6.0", "nvidia-cuda-runtime-cu12", "jax[cuda12]==0.6.0"),  # not what the extra names
    ],
)
def test_a_later_removal_drops_only_an_extra_that_would_reinstall_it(requirement: str, removed: str, kept: str) -> None:
    """Two fixes pasted in order: an extra that would install what the later one removes goes, others stay (review:
    the lexical rule dropped cuda12_pip's +cuda jaxlib with the plugin)."""
    combined = fixes.Fix(install=(requirement,)).then(fixes.Fix(uninstall=(removed,)), extras.implied)
    assert combined.install == (kept,)


def test_a_jax_pin_with_a_local_label_implies_no_range_and_raises_nothing() -> None:
    """Found by the requirements grammar fuzzer: `jax[cpu,cuda12]==12b2+cuda12.cudnn89` made the cuda12 extra's
    `<={V},>={V}` range an invalid requirement (a local label only goes with ==), an internal error. No release on an
    index has such a label: the extra implies nothing for it beyond jaxlib."""
    from envaudit.rules import extras

    assert "jax-cuda12-plugin" not in extras.implied("0.4.30+cuda12.cudnn89", {"cuda12"})
    assert extras.implied("0.4.30", {"cuda12"}).get("jax-cuda12-plugin") == "0.4.30"


@pytest.mark.parametrize(
    ("pin", "undefined", "written"),
    [
        # jax's CHANGELOG for 0.6.0: "The cuda12_pip extra for jax has been removed; use pip install jax[cuda12]"
        ("jax[cuda12_pip]==0.6.0", ["cuda12-pip"], "write jax[cuda12]==0.6.0 for jax[cuda12-pip]==0.6.0"),
        ("jax[cuda11_pip]==0.4.30", ["cuda11-pip"], ""),  # no CUDA 11 extra at 0.4.30: nothing to write instead
        ("jax[cuda12_pip]==0.5.3", [], ""),  # still defined (tables/cuda-extra.toml, from the release's METADATA)
        ("jax[tpu]==0.6.0", [], ""),  # an extra the table does not speak of: unknown, never undefined
        ("jax[cuda12_pip]==0.4.14", [], ""),  # a release before the table: unknown
    ],
)
def test_an_accelerator_extra_the_release_does_not_define_fails_the_plan(
    pin: str, undefined: list[str], written: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """pip and uv only warn about an extra a release does not define and install jax with the CPU jaxlib: the GPU
    stack the pin was written for does not exist (tests/fixtures/plan-unseen-3 case 35)."""
    version, extra = pin.split("==")[1], pin[pin.index("[") + 1 : pin.index("]")]
    assert extras.undefined(version, {extra}) == undefined
    found = {f["id"]: f for f in plan(pin, "--no-build", capsys=capsys)["findings"]}
    assert ("jax-extra-undefined" in found) == bool(undefined)
    if undefined:
        finding = found["jax-extra-undefined"]
        assert finding["severity"] == "fail" and written in (finding.get("todo") or "")
        assert extras.inferred(version, {extra}).platform is None  # the undefined extra names no platform


def test_pips_warning_about_an_extra_names_it_in_a_pasted_log() -> None:
    """jax#25856: `pip3 install jax[rocm]` with jax 0.4.31 ("WARNING: jax 0.4.31 does not provide the extra
    'rocm'"; the extra came in 0.5.0) left a CPU jax on a ROCm host: a failure. The same warning of another
    distribution is a warning: what the extra brings is missing."""
    from envaudit.commands.triage.triaged import triage

    result = triage(
        b"pip3 install jax[rocm]\nWARNING: jax 0.4.31 does not provide the extra 'rocm'\n[CpuDevice(id=0)]\n"
    )
    found = {f.id: f for e in result.environments for f in e.report.findings}
    assert (
        result.verdict == "fail" and "jax 0.4.31 does not define the extra rocm" in found["jax-extra-undefined"].detail
    )
    assert "0.5.0" in found["jax-extra-undefined"].detail  # the first release that defines it, from the table
    other = triage(b"jax 0.4.31\nWARNING: bbook-maker 1.2.1 does not provide the extra 'pdf'\n")
    dropped = {f.id: f for e in other.environments for f in e.report.findings}["jax-extra-undefined"]
    assert dropped.severity == "warn" and "bbook-maker 1.2.1: pdf" in dropped.detail


def test_a_dropped_extra_of_jax_that_is_no_accelerators_is_a_warning() -> None:
    """`jax[cuda12_pip,k8s]==0.4.25`: pip drops k8s (no such extra there) and installs the CUDA jaxlib; what is
    missing is kubernetes, not the GPU."""
    from envaudit.commands.triage.triaged import triage

    log = b"WARNING: jax 0.4.25 does not provide the extra 'k8s'\nSuccessfully installed jaxlib-0.4.25+cuda12.cudnn89\n"
    found = {f.id: f for e in triage(log).environments for f in e.report.findings}
    assert found["jax-extra-undefined"].severity == "warn" and "jax 0.4.25: k8s" in found["jax-extra-undefined"].detail
