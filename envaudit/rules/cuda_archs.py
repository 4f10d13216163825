"""A GPU that the installed (or planned) jax CUDA build carries no code for: its kernels cannot run there at all.

Every jax CUDA build ships its own GPU kernels (jaxlib's LU pivots, PRNG and sorting kernels, XLA's autotuning
buffer kernels) as cubins for some architectures and PTX for some. Which ones is data derived from the releases
(`tables/cuda-archs.toml`: the plugins' wheels, jaxlib's single-package builds from .bazelrc at their tags). The
CUDA rules are NVIDIA's: a cubin for X.y runs on a discrete GPU of capability X.z with z >= y, PTX for XY on any GPU
of capability XY or newer (compiled by the driver at load). On an integrated Tegra GPU (Jetson) no cubin but its own
runs: an sm_80 cubin does not run on Orin (8.7). Where nothing fits, jax imports and lists the GPU, then dies on
its first kernel: "Could not create RepeatBufferKernel: ... no kernel image is available for execution on the
device" (jax#22723, Jetson Orin with jax-cuda12-plugin 0.4.30; jax#40487 with 0.11.1), or a custom call fails
with the same words (jax#14546, Xavier, jaxlib's PRNG kernel). A release the table lacks is unknown: no finding.
"""

from __future__ import annotations

import functools
from typing import TypedDict

from envaudit.model import fixes
from envaudit.model.facts import Facts
from envaudit.model.versions import release, version_or_none
from envaudit.rules import accessors, cuda_builds, extras, fixing, platforms, wheels
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.table import Provenance, Table


class ArchBuild(TypedDict):
    package: str  # jaxlib (its single-package +cuda builds) or a CUDA plugin
    versions: list[str]  # consecutive releases that carry the same code
    sass: list[int]  # a cubin for each capability XY
    ptx: list[int]  # PTX for each capability XY
    read_from: str  # "wheel" (its fatbinaries) or ".bazelrc" (at its tag)


class CudaArchs(Provenance):  # cuda-archs.toml: derived from the plugins' wheels and .bazelrc at jaxlib's tags
    build: list[ArchBuild]


ARCHS = Table(
    "cuda-archs.toml",
    CudaArchs,
    jax=lambda t: (v for row in t["build"] if row["package"] != "jaxlib" for v in row["versions"]),
)
# Integrated (Tegra) GPUs: TX1/Nano 5.3, TX2 6.2, Xavier 7.2, Orin 8.7, Thor 10.1 (CUDA 12.x; 11.0 from CUDA 13).
# https://developer.nvidia.com/cuda-gpus lists them as Jetson; that a discrete GPU's cubin of the same major does
# not run on them: jax#14546 (sm_70 on Xavier), jax#22723 and jax#40487 (sm_80 on Orin), and jax adding sm_101
# (cuda_v12) and sm_110 (cuda_v13) to its builds for Thor at jax-v0.10.2 beside the sm_100 it had.
INTEGRATED = frozenset({53, 62, 72, 87, 101, 110})
PLUGINS = ("jax-cuda13-plugin", "jax-cuda12-plugin")


@functools.cache
def _builds() -> dict[tuple[str, tuple[int, ...]], ArchBuild]:
    """(package, release numbers) -> its row, for every release the table lists."""
    return {
        (row["package"], numbers): row
        for row in ARCHS.load()["build"]
        for version in row["versions"]
        if (numbers := release(version))
    }


def capability(text: str) -> int | None:
    """8.7 -> 87 (NVML's and jax's X.Y); None for what is not one."""
    major, _, minor = text.partition(".")
    return int(major) * 10 + int(minor) if major.isdigit() and minor.isdigit() and len(minor) == 1 else None


def runs(row: ArchBuild, cc: int) -> bool:
    """Whether a build carries code a GPU of capability `cc` (XY) can run: PTX at or below it, or a cubin of its own
    major at or below its minor (on an integrated GPU: exactly its own)."""
    if any(ptx <= cc for ptx in row["ptx"]):
        return True
    if cc in INTEGRATED:
        return cc in row["sass"]
    return any(sass // 10 == cc // 10 and sass <= cc for sass in row["sass"])


def _row(package: str, version: str) -> ArchBuild | None:
    """The table's row of a release as PyPI (or jax's index) published it: a final release, its local label aside;
    a dev, post or source build of the same numbers may carry other code (a Jetson build for sm_87): unknown."""
    parsed = version_or_none(version)
    if parsed is None or parsed.is_devrelease or parsed.is_prerelease or parsed.is_postrelease or parsed.epoch:
        return None
    return _builds().get((package, release(version) or ()))


def build(facts: Facts) -> tuple[str, str, ArchBuild] | None:
    """(package, version, its row) of the CUDA build jax loads: a CUDA plugin of jaxlib's release (CUDA 13's first,
    as jax tries it first), else a single-package CUDA jaxlib (+cudaNN label); None where none is, or unknown."""
    jaxlib = facts.packages.get("jaxlib", "")
    for plugin in PLUGINS:
        version = facts.packages.get(plugin, "")
        if version and release(version) == release(jaxlib):
            row = _row(plugin, version)
            return (plugin, version, row) if row is not None else None
    if cuda_builds.monolithic(facts, ("11", "12")) is None:
        return None
    row = _row("jaxlib", jaxlib)
    return ("jaxlib", jaxlib, row) if row is not None else None


def _gpus(facts: Facts) -> list[tuple[str, int]]:
    """(how to name it, capability) of each GPU the facts name, NVML's and jax's, once each."""
    named = [(g.get("name") or "GPU", g.get("compute_capability")) for g in facts.nvidia.get("gpus") or []]
    named += [(d.get("device_kind") or "GPU", d.get("compute_capability")) for d in facts.jax.get("devices") or []]
    found: dict[tuple[str, int], None] = {}
    for name, text in named:
        cc = capability(str(text or ""))
        if cc is not None:
            found[(f"{name} (compute capability {cc // 10}.{cc % 10})", cc)] = None
    return list(found)


def targets(row: ArchBuild) -> str:
    sass = ", ".join(f"sm_{a}" for a in row["sass"]) or "no cubin"
    ptx = ", ".join(f"compute_{a}" for a in row["ptx"]) or "none"
    return f"cubins for {sass} and PTX for {ptx}"


def _fix(facts: Facts, ccs: list[int]) -> tuple[str, fixes.Fix]:
    """The newest jax release whose CUDA extra installs a plugin with code for every GPU here (jax[cuda13] before
    jax[cuda12], as the newest CUDA is jax's default) and whose jaxlib has a wheel for this Python where the tables
    can say; none where no release does."""
    for plugin in PLUGINS:
        extra = plugin.removeprefix("jax-").removesuffix("-plugin")
        fitting = [
            pin
            for version in reversed(extras.releases(extra))
            if (row := _row(plugin, version)) is not None and all(runs(row, cc) for cc in ccs)
            if wheels.installs_here(facts, [pin := f"jax[{extra}]=={version}"]) is not False
        ]
        if fitting:
            return fitting[0], fixing.install(facts, [fitting[0]])
    return "", fixes.Fix()


def _ran_on_the_gpu(facts: Facts) -> bool:
    """Whether jax computed on the GPU here (its first computation, on the CUDA backend): the build's code ran."""
    return accessors.jax_computed(facts) and facts.jax.get("platform") in ("gpu", "cuda")


def missing(facts: Facts) -> list[Occurrence]:
    """One occurrence where some GPU here runs none of the code the CUDA build jax loads carries."""
    found = build(facts)
    if found is None or platforms.without_cuda(facts) or _ran_on_the_gpu(facts):
        return []  # no build known, no CUDA backend started, or jax computed on the GPU here: its code ran
    package, version, row = found
    unfit = [(name, cc) for name, cc in _gpus(facts) if not runs(row, cc)]
    if not unfit:
        return []
    pin, fix = _fix(facts, [cc for _, cc in _gpus(facts)])
    named = "; ".join(name for name, _ in unfit)
    detail = (
        f"{named}: {package} {version} carries {targets(row)} ({row['read_from']}), none of which this GPU can run,"
        " so jax lists it and dies on its first kernel with 'no kernel image is available for execution on the "
        "device'"
        + (
            f"; {pin} is the newest release with code for every GPU here"
            if pin
            else "; no jax CUDA plugin on PyPI carries code for it: compute on the CPU, or build jaxlib and its plugin"
            " from source for this GPU (build/build.py --cuda_compute_capabilities=sm_XY)"
        )
    )
    return [Occurrence(detail, fix)]


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
GPU_ARCHITECTURE_NOT_IN_JAX_BUILD = Check(
    id="gpu-architecture-not-in-jax-build",
    severity="fail",
    title="a GPU here that the jax CUDA build carries no code for: jax lists it and dies on its first kernel",
    fix="install the jax CUDA release the detail names, built with code for every GPU here (or compute on the "
    "CPU where none is)",
    references=(
        "https://github.com/jax-ml/jax/blob/jax-v0.10.2/.bazelrc#L195",  # the capabilities of each CUDA build
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility",
        "https://threedots.ovh/blog/2022/04/cuda-on-nvidia-jetson-just-not-the-same/",  # Tegra's exception
        "https://github.com/jax-ml/jax/issues/22723",
        "https://github.com/jax-ml/jax/issues/40487",
        "https://github.com/jax-ml/jax/issues/14546",
    ),
    run=missing,
    # jax dies on its first kernel (the child's computation, the probes); the install guide's rules on the same
    # GPUs say what this computes, without the release that has the code: one cause, this fix
    explains=("jax-broken", "jax:*", "cuda13-compute-capability-below-75", "cuda12-kepler-gpu"),
)
