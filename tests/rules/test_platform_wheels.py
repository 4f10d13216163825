"""The platforms jaxlib and the CUDA plugins have wheels for (platform-wheels.toml, derived from PyPI's file lists):
a plan on a platform a release has no wheel for fails, with the release to move to where one exists; a platform or
a release the table does not know is no finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from derive.tables import platform_wheels as derivation
from envaudit.cli import main
from envaudit.rules import platform_wheels
from tests.conftest import derive_cache

TABLE = platform_wheels.PLATFORM_WHEELS.load()


def planned(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, dict[str, str]]:
    main(["plan", *argv, "--format", "json"])
    return {f["id"]: f for f in json.loads(capsys.readouterr().out)["findings"]}


@pytest.mark.parametrize(
    ("tag", "families"),
    [
        ("manylinux2014_x86_64", ["linux-x86_64"]),
        ("manylinux_2_27_aarch64", ["linux-aarch64"]),
        ("macosx_11_0_arm64", ["macos-arm64"]),
        ("macosx_10_14_x86_64", ["macos-x86_64"]),
        ("macosx_10_9_universal2", ["macos-arm64", "macos-x86_64"]),
        ("win_amd64", ["windows-amd64"]),
        ("win32", []),
    ],
)
def test_a_wheels_platform_tag_is_the_family_pip_installs_it_on(tag: str, families: list[str]) -> None:
    assert derivation.family(tag) == families


def test_no_cuda_plugin_has_a_wheel_off_linux_and_jaxlib_has_windows_wheels() -> None:
    plugins = [r for r in TABLE["release"] if r["package"] != "jaxlib"]
    assert plugins and all(p.startswith("linux-") for r in plugins for p in r["platforms"])
    assert all("windows-amd64" in r["platforms"] for r in TABLE["release"] if r["package"] == "jaxlib")


def test_jax_for_cuda_on_native_windows_cannot_install(capsys: pytest.CaptureFixture[str]) -> None:
    """The triage set's case: `pip install jax[cuda12]` on Windows. The plugin has no Windows wheel: no command
    fixes it there (the fix says WSL2 or the CPU)."""
    found = planned(capsys, "jax[cuda12]==0.4.30", "--os", "Windows", "--machine", "AMD64")
    failed = (
        found["no-wheel-for-platform-jax-cuda12-plugin"]
        if "no-wheel-for-platform-jax-cuda12-plugin" in found
        else found["no-wheel-for-platform"]
    )
    assert failed["severity"] == "fail" and "windows-amd64" in failed["detail"] and not failed["fix"]
    assert "no-wheel-for-platform" not in planned(capsys, "jax[cuda12]==0.4.30", "--os", "Linux", "--machine", "x86_64")


def test_a_jaxlib_newer_than_the_last_intel_mac_wheel_moves_to_it(capsys: pytest.CaptureFixture[str]) -> None:
    last = platform_wheels.newest_for("jaxlib", "macos-x86_64")
    assert last is not None
    found = planned(capsys, "jax==0.5.0", "jaxlib==0.5.0", "--os", "Darwin", "--machine", "x86_64")
    assert found["no-wheel-for-platform"]["fix"].endswith(f"in the plan's arguments: jax=={last}, jaxlib=={last}")
    assert "no-wheel-for-platform" not in planned(
        capsys, "jax==0.5.0", "jaxlib==0.5.0", "--os", "Darwin", "--machine", "arm64"
    )


def test_a_release_or_platform_the_table_does_not_know_is_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert platform_wheels.platforms_of("jaxlib", "0.4.14") is None  # deleted from PyPI: the table cannot say
    assert "no-wheel-for-platform" not in planned(capsys, "jax==0.5.0", "jaxlib==0.5.0", "--os", "SunOS")


@pytest.mark.realenv
def test_the_table_is_rederived_from_the_index_as_committed(tmp_path: Path) -> None:
    out = tmp_path / "platform-wheels.toml"
    assert derivation.main(["--cache", str(derive_cache(tmp_path)), "--output", str(out)]) == 0
    assert platform_wheels.PLATFORM_WHEELS.read(out)["release"] == TABLE["release"]
