"""A ROCm plugin is judged by AMD's own compatibility table (tables/rocm-plugins.toml), not by the exact-release
rule of jax's CUDA plugins: AMD releases its plugins on its own cycle (jax-ml/jax#26975)."""

from __future__ import annotations

import pytest

from envaudit.model.facts import Facts
from envaudit.rules import checks, rocm_plugins


def mismatched(packages: dict[str, str]) -> list[str]:
    return [o.detail for o in checks.plugins(Facts(packages=packages))]


@pytest.mark.parametrize(
    ("plugin", "jaxlib", "expected"),
    [
        ("0.6.0", "0.6.2", True),  # AMD's row: plugin 0.6.0 with jax/jaxlib 0.6.2 and 0.6.0
        ("0.9.1.post1", "0.9.1", True),  # a post-release rebuild of jaxlib's own (jax-ml/jax#35852)
        ("0.6.0", "0.6.1", None),  # the same minor, no row: unknown
        ("0.5.0", "0.7.1", False),  # another minor, no row
    ],
)
def test_amds_table_decides_a_rocm_plugins_jaxlib(plugin: str, jaxlib: str, expected: bool | None) -> None:
    assert rocm_plugins.compatible(plugin, jaxlib) is expected


def test_a_rocm_plugin_amd_lists_is_no_mismatch_where_a_cuda_plugin_of_that_release_is() -> None:
    assert mismatched({"jaxlib": "0.6.2", "jax-rocm7-plugin": "0.6.0", "jax-rocm7-pjrt": "0.6.0"}) == []
    assert mismatched({"jaxlib": "0.6.2", "jax-cuda12-plugin": "0.6.0", "jax-cuda12-pjrt": "0.6.2"})
    assert mismatched({"jaxlib": "0.7.1", "jax-rocm7-plugin": "0.5.0", "jax-rocm7-pjrt": "0.5.0"})
