"""CUDA libraries older than the ones a single-package CUDA jaxlib was built against: jax refuses them, silently.

jaxlib 0.4.17-0.4.25 shipped for CUDA 12 as one package (`jaxlib==0.4.23+cuda12.cudnn89`, installed by
`jax[cuda12_pip]`), and its jax compared each loaded CUDA library with the version the build used. An older one
does not fail the import: jax logs "CUDA backend failed to initialize: Found cuBLAS version 120103, but JAX was
built against version 120205, which is newer" and computes on the CPU. pip never sees it, because the pins live in
an extra (`pip check` ignores extras), and a later install that pins older CUDA wheels (another framework built for
CUDA 12.1) moves them back under jax. The build versions and how each release compares are data
(`tables/cuda-builds.toml`, read at the tags); this module applies them to the nvidia-* wheels the facts name.
"""

from __future__ import annotations

from typing import Any

from envaudit import fixes
from envaudit.facts import Facts
from envaudit.rules.accessors import parse_local_label, release
from envaudit.rules.tables import TABLES, load

BUILDS = TABLES / "cuda-builds.toml"


def _monolithic(facts: Facts) -> str | None:
    """The installed jaxlib, when it is a single-package CUDA 12 build whose own backend factory runs the check: a
    CUDA plugin beside it replaces that factory (and checked nothing before jax 0.6.1)."""
    jaxlib = facts.packages.get("jaxlib", "")
    cuda, _ = parse_local_label(jaxlib)
    if cuda is None or cuda.text.split(".")[0] != "12" or any(n.startswith("jax-cuda") for n in facts.packages):
        return None
    return jaxlib


def _refused(facts: Facts) -> list[tuple[dict[str, Any], str]]:
    """(library entry, installed version) for each nvidia-* wheel older than the build, as the check compares."""
    from packaging.specifiers import SpecifierSet

    jaxlib = _monolithic(facts)
    if jaxlib is None or (facts.origin == "live" and facts.jax.get("platform") in ("gpu", "cuda")):
        return []  # jax runs on the GPU here: the check passed, whatever the wheels say
    public = jaxlib.split("+")[0]
    found = []
    for build in load(BUILDS)["build"]:
        if not SpecifierSet(build["jaxlib"]).contains(public):
            continue
        for lib in build["libraries"]:
            installed = facts.packages.get(lib["wheel"])
            if "only" in lib and not SpecifierSet(lib["only"]).contains(public):
                continue
            numbers = release(installed) if installed else None
            built = tuple(int(n) for n in lib["built"].split("."))
            if numbers is not None and (numbers + (0,) * len(built))[: len(built)] < built:
                found.append((lib, installed or ""))
    return found


def refused(facts: Facts) -> list[str]:
    """One line for all the refused libraries: they are one cause (the wheels moved back), with one fix."""
    found = _refused(facts)
    if not found:
        return []
    said = ", ".join(f"{lib['wheel']} {version} ({lib['name']} older than the build's {lib['built']})"
                     for lib, version in found)  # fmt: skip
    jaxlib = facts.packages["jaxlib"]
    return [f"jaxlib {jaxlib} refuses {said}: jax logs 'CUDA backend failed to initialize: Found {found[0][0]['name']}"
            f" version ..., but JAX was built against version ..., which is newer' and runs on the CPU"]  # fmt: skip


def refused_fix(facts: Facts, detail: str) -> str:
    """jax's own pins for those wheels (its cuda12_pip extra), jax and jaxlib held where they are."""
    pins = [f"{lib['wheel']}>={lib['pin']}" for lib, _ in _refused(facts)]
    return fixes.pip_install(facts, pins, hold=fixes.installed_jax(facts))
