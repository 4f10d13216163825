"""What `jax[EXTRA]==V` installs beside jax, as the release's own METADATA says (tables/cuda-extra.toml, derived by
derive/tables/cuda_extra.py): the single-package CUDA jaxlib (`jax[cuda12_pip]==0.4.20` installs
`jaxlib==0.4.20+cuda12.cudnn89` from jax's own index), or jaxlib with the CUDA or ROCm plugin and its pjrt. A plan
of the extra is modelled as what it installs, so that the build checks apply to it as to an installed stack.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypedDict

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from envaudit.model.scope import PLUGIN, TPU_PACKAGES, canonicalize_name
from envaudit.rules import tpu_pins
from envaudit.rules.table import Span, Table, span

# name: jax-cuda12-plugin or jax-cuda13-plugin; from: where the pins were read (the plugin's with-cuda extra, or
# jax's cudaNN one before the plugin had one); versions: consecutive plugin releases whose extra pins the same;
# pins: its requirements on nvidia-* wheels. The functional form: `from` is a Python keyword.
PluginRun = TypedDict("PluginRun", {"name": str, "from": str, "versions": list[str], "pins": list[str]})


class ExtraRun(TypedDict):
    name: str  # a jax extra, normalised as pip compares them: cuda12-pip, rocm
    versions: list[str]  # consecutive jax releases whose extra installs the same
    installs: list[str]  # its requirements on jaxlib and jax's plugins, the release itself written {V}


class CudaExtra(Span):  # cuda-extra.toml: what jax's accelerator extras install, derived from wheel METADATA
    plugin: list[PluginRun]
    extra: list[ExtraRun]


CUDA_EXTRA = Table("cuda-extra.toml", CudaExtra, jax=span)


@functools.cache
def _rows() -> dict[str, list[tuple[tuple[Version, ...], tuple[str, ...]]]]:
    """extra -> its runs: (the jax releases, what they install), oldest first."""
    found: dict[str, list[tuple[tuple[Version, ...], tuple[str, ...]]]] = {}
    for row in CUDA_EXTRA.load()["extra"]:
        found.setdefault(row["name"], []).append((tuple(map(Version, row["versions"])), tuple(row["installs"])))
    return found


@functools.cache
def _covers_to() -> Version:
    return Version(CUDA_EXTRA.load()["covers_to"])


def _installs(version: Version, extra: str) -> tuple[str, ...] | None:
    """The extra's requirements at that jax release; a release newer than the whole table: the extra's newest row
    (what it installed last, the safest guess of its names); None for a release the table covers that has no such
    extra (jax 0.6.0 has no cuda12_pip: pip installs jax alone), an older release, or an extra it does not list."""
    runs = _rows().get(extra)
    if not runs:
        return None
    for versions, installs in runs:
        if version in versions:
            return installs
    return runs[-1][1] if version > _covers_to() else None


ACCELERATOR = re.compile(r"^(?:cuda|rocm)")  # the extras the table speaks of (not cpu, tpu, k8s, ci, minimum-jaxlib)


def undefined(version: str, extras: Iterable[str]) -> list[str]:
    """The accelerator extras of `jax[EXTRAS]==version` that the release does not define (jax 0.6.0 has no
    cuda12_pip: pip and uv only warn and install jax alone): those the table speaks of, for a release it covers and
    lists; an extra of a release outside it, or one it does not speak of (tpu, cpu), is unknown, never undefined."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        return []
    known = {v for runs in _rows().values() for versions, _ in runs for v in versions}
    if not (Version(CUDA_EXTRA.load()["covers_from"]) <= parsed <= _covers_to()) or parsed not in known:
        return []
    named = sorted({canonicalize_name(e) for e in extras})
    return [e for e in named if ACCELERATOR.match(e) and _installs(parsed, e) is None]


def names() -> list[str]:
    """The extras the table speaks of, normalised as pip compares them (cuda12, cuda13-local, rocm7-local)."""
    return sorted(_rows())


def releases(extra: str) -> list[str]:
    """The jax releases the table says have this extra, oldest first: what a fix may pin it at."""
    return [str(v) for versions, _ in _rows().get(canonicalize_name(extra), []) for v in versions]


def _pick(text: str, version: str) -> tuple[str, str] | None:
    """(name, the version pip installs) for one of the table's requirements at a jax release: the one it pins
    (==, a `.*` pin by its prefix), else the top of its range (<=: pip takes the newest release within it)."""
    try:
        req = Requirement(text.replace("{V}", version))
    except InvalidRequirement:  # a release no index has (a local label, `0.4.30+x`): no range holds it
        return None
    for operator in ("==", "<="):
        pinned = [s.version.removesuffix(".*") for s in req.specifier if s.operator == operator]
        if pinned:
            return canonicalize_name(req.name), pinned[0]
    return None


def implied(version: str, extras: set[str]) -> dict[str, str]:
    """What jax[EXTRAS]==version installs beside jax: name -> version. jaxlib at the same release for any extra
    the table does not speak of (tpu, cpu, a release before jax had wheels): every extra of jax installs it."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        return {}
    found = {"jaxlib": version} if extras else {}
    if "tpu" in {canonicalize_name(e) for e in extras}:  # libtpu, which the tpu extra pins (tables/tpu-extra.toml)
        for text in tpu_pins.pins(version) or ():
            if (picked := _pick(text, version)) is not None:
                found[picked[0]] = picked[1]
    for extra in sorted(canonicalize_name(e) for e in extras):
        for text in _installs(parsed, extra) or ():
            if (picked := _pick(text, version)) is not None:
                found[picked[0]] = picked[1]
    return found


@dataclass(frozen=True)
class Inferred:
    """What `jax[EXTRAS]==V` says of the stack it makes: what it installs, the platform, the CUDA major."""

    installs: dict[str, str]  # name -> version: `implied`
    platform: str | None  # cuda, rocm or tpu where an extra names one, cpu where only `cpu` is named, else None
    cuda_version: str | None  # the CUDA major a CUDA extra names (cuda12), else its plugin's or jaxlib build's
    undefined: tuple[str, ...] = ()  # the extras named that the release does not define (`undefined`): no platform

    @property
    def builds(self) -> dict[str, str]:
        """jaxlib and jax's plugins among what it installs: the builds that name a platform (not libtpu, whose
        extra a pasted report's text may not have meant, nor the CUDA wheels, whose versions pip picks)."""
        return {n: v for n, v in self.installs.items() if n == "jaxlib" or PLUGIN.match(n)}


def inferred(version: str, extras: Iterable[str]) -> Inferred:
    """jax[cpu|cuda*|rocm*|tpu]==version: what it installs (`implied`, as its METADATA says), the platform an
    accelerator extra fixes, and the CUDA major of a CUDA extra: the one its name says, else the one its plugin or
    its single-package jaxlib build names (jax[cuda]==0.4.20 installs a CUDA 11 jaxlib). Where two accelerator
    extras are named, the last in sorted order gives the platform and the first CUDA one the major."""
    missing = tuple(undefined(version, extras))
    named = sorted({canonicalize_name(e) for e in extras} - set(missing))  # what pip installs, and says nothing of
    if not named:  # plain jax: installs nothing beside it, says nothing of the platform
        return Inferred({}, None, None, missing)
    from envaudit.rules.accessors import parse_local_label

    installs = implied(version, set(named))
    plugins = [m["major"] for name in installs if (m := PLUGIN.match(name)) and m["kind"] == "cuda"]
    label, _ = parse_local_label(installs.get("jaxlib", ""))  # a single-package jaxlib's +cuda11.cudnn86
    built = plugins[0] if plugins else label.text.split(".")[0] if label else None
    platform: str | None = "cpu" if "cpu" in named else None
    cuda_version: str | None = None
    for extra in named:
        if extra.startswith("cuda"):
            platform = "cuda"
            cuda_version = cuda_version or (match[1] if (match := re.match(r"^cuda(\d+)", extra)) else built)
        elif extra == "tpu" or extra.startswith("rocm"):
            platform = "tpu" if extra == "tpu" else "rocm"
    return Inferred(installs, platform, cuda_version, missing)


def of_stack(packages: Mapping[str, str]) -> Inferred:
    """What a stack's own packages say of its platform, however they were written (`jax[cuda12]==V`, or jax, jaxlib
    and jax-cuda12-plugin lines, as a lock resolves the extra): a CUDA or ROCm plugin at jaxlib's release, a
    single-package CUDA jaxlib (+cuda12), libtpu. The same stack is the same platform, from any input."""
    jaxlib = packages.get("jaxlib", "")
    plugins = [m for name, v in packages.items() if (m := PLUGIN.match(name)) and (not jaxlib or v == jaxlib)]
    cuda = sorted(m["major"] for m in plugins if m["kind"] == "cuda")
    if cuda or "+cuda" in jaxlib:  # a single-package build's CUDA is its label's, which accessors.cuda reads whole
        return Inferred({}, "cuda", cuda[-1] if cuda else None)
    if any(m["kind"] == "rocm" for m in plugins) or "+rocm" in jaxlib:
        return Inferred({}, "rocm", None)
    if any(name in packages for name in TPU_PACKAGES):
        return Inferred({}, "tpu", None)
    return Inferred({}, None, None)
