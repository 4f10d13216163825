"""Whether a ROCm plugin (or its PJRT package) works with the installed jaxlib, as AMD's own compatibility table says
(tables/rocm-plugins.toml, read by hand: its head says from where). AMD releases its plugins on its own cycle, so the
exact-release rule of jax's CUDA plugins does not hold for them."""

from __future__ import annotations

from typing import TypedDict

from envaudit.model.versions import release
from envaudit.rules.table import Provenance, Table


class Plugin(TypedDict):
    version: str  # the plugin's and its PJRT's release
    jaxlib: list[str]  # the jax/jaxlib releases AMD lists for it
    rocm: list[str]  # the ROCm releases it is built for


class RocmPlugins(Provenance):  # rocm-plugins.toml
    plugin: list[Plugin]


ROCM_PLUGINS = Table("rocm-plugins.toml", RocmPlugins)


def compatible(plugin: str, jaxlib: str) -> bool | None:
    """True where AMD lists the pair, or the plugin is of jaxlib's release (a post-release rebuild too); False where
    it is of another minor release and no row lists the pair; None (unknown) for another patch of the same minor
    that no row lists."""
    ours, theirs = _parts(plugin), _parts(jaxlib)
    if ours[:3] == theirs[:3]:
        return True
    for row in ROCM_PLUGINS.load()["plugin"]:
        if _parts(row["version"]) == ours[:3] and any(_parts(j) == theirs[:3] for j in row["jaxlib"]):
            return True
    return None if ours[:2] == theirs[:2] else False


def _parts(version: str) -> tuple[int, ...]:
    return release(version) or ()
