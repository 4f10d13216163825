"""Package facts: versions without importing, what pip check would say, and shadowed duplicates."""

from __future__ import annotations

import sys
from pathlib import Path

from envaudit.collect._interpreter import minimum_jaxlib
from envaudit.collect.packages import Dist, get_packages, select, unsatisfied
from envaudit.model import scope
from envaudit.rules import api_removals


def d(name: str, version: str, *requires: str, location: str = "/site") -> Dist:
    return Dist(name, version, tuple(requires), f"{location}/{name}-{version}.dist-info")


def test_relevant_names_and_families() -> None:
    relevant = ["jax", "jaxlib", "jax-cuda12-plugin", "jax_cuda13_pjrt", "jax-rocm60-plugin", "libtpu"]
    relevant += ["nvidia-cudnn-cu12", "nvidia-cublas", "Neural_Tangents", "flax", "ml_dtypes", "tensorflow"]
    relevant += ["jaxtyping", "PennyLane"]  # libraries around jax that declare none (tables/derived/libraries.toml)
    for name in relevant:
        assert scope.is_relevant(name), name
    # wadler-lindig: jaxtyping's own requirement, a candidate whose release shows no jax interface
    for name in ("requests", "torch", "wadler-lindig", "nvidiafoo"):
        assert not scope.is_relevant(name), name


def test_every_library_the_derived_tables_speak_of_is_collected() -> None:
    """A table entry about a distribution outside the audited scope could never fire (its version is not read)."""
    for name in api_removals.removal_packages():
        assert scope.is_relevant(name), name


def test_select_normalizes_and_first_on_path_wins() -> None:
    found, dups = select([d("JAX", "0.4.25"), d("requests", "2.0"), d("jax", "0.4.30", location="/other")])
    assert found == {"jax": "0.4.25"}
    assert dups == [
        {
            "name": "jax",
            "versions": ["0.4.25", "0.4.30"],
            "locations": ["/site/JAX-0.4.25.dist-info", "/other/jax-0.4.30.dist-info"],
        }
    ]


def test_unsatisfied_is_what_pip_check_says() -> None:
    dists = [
        d("jax", "0.4.30", "jaxlib<=0.4.30,>=0.4.27", "numpy>=1.22", "scipy>=1.9; extra == 'scipy'"),
        d("jaxlib", "0.4.20"),
        d("numpy", "2.0.2"),
        d("neural-tangents", "0.6.5", "frozendict>=2.3"),
    ]
    problems = unsatisfied(dists)
    assert {"package": "jax", "requires": "jaxlib<=0.4.30,>=0.4.27", "installed": "0.4.20"} in problems
    assert {"package": "neural-tangents", "requires": "frozendict>=2.3", "installed": None} in problems
    assert len(problems) == 2  # satisfied numpy and the extra-only scipy are not problems


def test_local_labels_satisfy_as_pip_does() -> None:
    assert unsatisfied([d("jax", "0.2.19", "jaxlib>=0.1.69"), d("jaxlib", "0.1.70+cuda102")]) == []
    assert unsatisfied([d("neural-tangents", "0.3.9", "jax>=0.2.25"), d("jax", "0.2.19")]) != []


def test_minimum_jaxlib_of_old_jax() -> None:
    text = "_version = '0.2.19'\n_minimum_jaxlib_version = '0.1.69'\n"
    assert minimum_jaxlib(text) == ["jaxlib>=0.1.69"]
    assert minimum_jaxlib("nothing here") == []


def test_live_environment_has_jax_without_importing_it() -> None:
    before = "jax" in sys.modules
    versions, problems, dups, _, installers, _ = get_packages()
    assert "jax" in versions and "jaxlib" in versions and "numpy" in versions
    assert ("jax" in sys.modules) == before
    assert problems == [] and dups == []
    assert installers["jax"] in ("pip", "uv")  # the dev environment's installer wrote INSTALLER


def test_requirements_are_judged_for_the_audited_interpreter() -> None:
    """--python audits another Python: jax 0.4.30 needs numpy>=1.26 only on Python >= 3.12 (its metadata)."""
    from packaging.markers import default_environment

    from envaudit.collect import _interpreter
    from envaudit.collect.packages import check

    dists = [
        Dist("jax", "0.4.30", ('numpy>=1.26.0; python_version >= "3.12"',), "/a"),
        Dist("numpy", "1.24.4", (), "/a"),
    ]
    older, newer = (
        {**default_environment(), "python_version": "3.10"},
        {**default_environment(), "python_version": "3.12"},
    )
    assert check(dists, older)[0] == [] and [p["requires"] for p in check(dists, newer)[0]] == [
        'numpy>=1.26.0; python_version >= "3.12"'
    ]
    assert _interpreter.markers() == default_environment()  # stdlib only, the same answer as packaging's


def test_what_the_user_installed_by_name_is_told_from_what_came_with_it(tmp_path: Path) -> None:
    """pip and uv write REQUESTED in the dist-info of what was asked for by name: a fix keeps it where it can. The
    copy import finds decides, as for its version."""
    from importlib import metadata

    from envaudit.collect import _interpreter
    from envaudit.collect.packages import Dist, requested

    info = tmp_path / "flax-0.12.8.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flax\nVersion: 0.12.8\n")
    assert not _interpreter.requested(metadata.PathDistribution(info))
    (info / "REQUESTED").write_text("")
    assert _interpreter.requested(metadata.PathDistribution(info))
    dists = [
        Dist("flax", "0.12.8", (), "a", requested=True),
        Dist("optax", "0.2.8", (), "a"),
        Dist("Jax", "0.10.1", (), "a", requested=False),
        Dist("jax", "0.4.30", (), "b", requested=True),  # a copy import does not find
        Dist("requests", "2.0", (), "a", requested=True),  # not audited
    ]
    assert requested(dists) == ["flax"]
