"""CUDA wheels that do not fit the jaxlib or plugin installed: older than a build's, or outside jax's own pins.

jaxlib 0.4.17-0.4.25 shipped for CUDA 12 and CUDA 11.8 as one package (`jaxlib==0.4.23+cuda12.cudnn89`, installed by
`jax[cuda12_pip]`), and its jax compared each loaded CUDA library with the version the build used. An older one
does not fail the import: jax logs "CUDA backend failed to initialize: Found cuBLAS version 120103, but JAX was
built against version 120205, which is newer" and computes on the CPU. Later, jax's CUDA plugin pins its CUDA wheels
in an extra (`jax-cuda12-plugin[with-cuda]`). pip never sees either, because `pip check` ignores extras, and a later
install that pins other CUDA wheels (another framework built for CUDA 12.1) moves them under jax. The build
versions and how each release compares are data read at the tags (`tables/cuda-builds.toml`), the extras' pins
data derived from the wheels' METADATA (`tables/cuda-extra.toml`); this module applies them to the nvidia-* wheels
the facts name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypedDict, TypeVar

from envaudit.model import fixes
from envaudit.model.facts import Facts
from envaudit.model.versions import public, release, version_or_none
from envaudit.rules import fixing
from envaudit.rules.accessors import parse_local_label
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.extras import CUDA_EXTRA
from envaudit.rules.references import CUDA_CHECK, CUDA_PINS, XLA_0419, XLA_AT_JAX
from envaudit.rules.signatures import Signature
from envaudit.rules.table import Provenance, Table

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet


class Compare(TypedDict):
    jax: str  # specifier of the jax releases that compare this way
    evidence: str
    components: dict[str, int]  # wheel -> how many version components are compared


class Build(TypedDict):
    jaxlib: str
    cuda: str
    evidence: str
    built: dict[str, str]  # wheel -> the version the build used
    pins: dict[str, str]  # wheel -> jax's cuda12_pip / cuda11_pip pin


class CudaBuilds(Provenance):  # cuda-builds.toml
    names: dict[str, str]  # wheel -> the library's name in jax's message
    compare: list[Compare]
    build: list[Build]


def _jaxlibs(table: CudaBuilds) -> list[str]:
    """The jaxlib releases the build rows name (their specifiers' versions)."""
    from packaging.specifiers import SpecifierSet

    return [s.version for b in table["build"] for s in SpecifierSet(b["jaxlib"])]


BUILDS = Table(
    "cuda-builds.toml",
    CudaBuilds,
    jax=_jaxlibs,
    closed="from jax 0.4.26 jax compares the CUDA libraries with fixed minimums (cuda-minimums.toml), not the build's",
)
Row = TypeVar("Row", Build, Compare)


def monolithic(facts: Facts, majors: tuple[str, ...] = ("12",)) -> str | None:
    """The installed jaxlib, when it is a single-package CUDA build of one of these majors whose own backend factory
    runs the check: a CUDA plugin beside it replaces that factory (and checked nothing before jax 0.6.1)."""
    jaxlib = facts.packages.get("jaxlib", "")
    if _major(jaxlib) not in majors or any(n.startswith("jax-cuda") for n in facts.packages):
        return None  # no +cuda label ("" is no major), another major, or a plugin beside it
    return jaxlib


def _major(jaxlib: str) -> str:
    """The CUDA major of a single-package CUDA jaxlib's label (`0.4.23+cuda11.cudnn86`: "11"); "" for none."""
    cuda, _ = parse_local_label(jaxlib)
    return cuda.text.split(".")[0] if cuda is not None else ""


def _build(jaxlib: str) -> Build | None:
    """The table's build row of a single-package CUDA jaxlib: its release and its CUDA major."""
    major = _major(jaxlib)
    return _row([r for r in BUILDS.load()["build"] if r["cuda"].split(".")[0] == major], lambda r: r["jaxlib"], jaxlib)


def _row(rows: Sequence[Row], key: Callable[[Row], str], version: str) -> Row | None:
    """The row whose range holds this version; None for no version or one that is not (packaging 22-24 raise
    for those inside `contains`)."""
    bare = public(version)
    if version_or_none(bare) is None:
        return None
    return next((row for row in rows if _range(key(row)).contains(bare, prereleases=True)), None)


@functools.cache
def _range(text: str) -> SpecifierSet:
    """A table row's range, parsed once (every check of a wheel looks its row up again)."""
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(text)


def _refused(facts: Facts) -> list[tuple[str, str, str]]:
    """(wheel, installed, built) for each nvidia-* wheel older than the build, as the installed jax compares them
    (jax's code compares, jaxlib's build says against what)."""
    jaxlib = monolithic(facts, ("11", "12"))
    if jaxlib is None or (facts.origin == "live" and facts.jax.get("platform") in ("gpu", "cuda")):
        return []  # jax runs on the GPU here: the check passed, whatever the wheels say
    compare = _row(BUILDS.load()["compare"], lambda r: r["jax"], facts.packages.get("jax", ""))
    build = _build(jaxlib)
    if compare is None or build is None:
        return []  # jax from 0.4.26 compares with fixed minimums (other rules); a release the table lacks: unknown
    found = []
    for wheel, count in compare["components"].items():
        if wheel not in build["built"]:
            continue  # this jaxlib cannot report the library's version, and jax asks only where it can
        installed, built = facts.packages.get(wheel), build["built"][wheel]
        have = release(installed) if installed else None
        wanted = tuple(int(n) for n in built.split("."))[:count]
        if have is not None and (have + (0,) * count)[:count] < wanted:
            found.append((wheel, installed or "", ".".join(map(str, wanted))))
    return found


def refused(facts: Facts) -> list[Occurrence]:
    """One line for all the refused libraries: they are one cause (the wheels moved back), with one fix."""
    found = _refused(facts)
    if not found:
        return []
    names = BUILDS.load()["names"]
    said = ", ".join(
        f"{wheel} {version} ({names[wheel]} older than the build's {built})" for wheel, version, built in found
    )
    detail = (
        f"jaxlib {facts.packages['jaxlib']} under jax {facts.packages.get('jax')} refuses {said}: jax logs 'CUDA "
        f"backend failed to initialize: Found {names[found[0][0]]} version ..., but JAX was built against "
        "version ..., which is newer' and runs on the CPU"
    )
    return [Occurrence(detail, _refused_fix(facts, [wheel for wheel, _, _ in found]))]


def _refused_fix(facts: Facts, moved: list[str]) -> fixes.Fix:
    """jax's own pins for those wheels (its cuda12_pip extra); jax, jaxlib and the other CUDA wheels held where they
    are, so that pip moves nothing that jaxlib was built against to make room (a newer torch would bring cuDNN 9,
    which this cuDNN 8.9 build cannot load): if nothing fits, pip says so and changes nothing."""
    jaxlib = facts.packages.get("jaxlib", "")
    build = _build(jaxlib)
    if build is None or not moved:
        return fixes.Fix()
    held = [
        f"{name}=={version}"
        for name, version in sorted(facts.packages.items())
        if name.startswith("nvidia-") and name.endswith(f"-cu{_major(jaxlib)}") and name not in moved
    ]
    pins = [f"{wheel}>={build['pins'][wheel]}" for wheel in moved]
    return fixing.install(facts, pins, hold=[*fixing.installed_jax(facts), *held])


PLUGINS = ("jax-cuda12-plugin", "jax-cuda13-plugin")


@functools.cache
def _plugin_pins() -> dict[tuple[str, tuple[int, ...]], tuple[str, tuple[tuple[str, SpecifierSet], ...]]]:
    """(plugin, release numbers) -> (where the pins were read, the pins parsed), for every release the table lists:
    parsed once (parsing rows and pins anew took 4.9 ms of a 6.4 ms evaluation of the whole knowledge base)."""
    from packaging.requirements import Requirement

    return {
        (row["name"], numbers): (row["from"], tuple((r.name, r.specifier) for r in map(Requirement, row["pins"])))
        for row in CUDA_EXTRA.load()["plugin"]
        for version in row["versions"]
        if (numbers := release(version))
    }


def _pins_in_use(facts: Facts) -> list[tuple[str, tuple[tuple[str, SpecifierSet], ...]]]:
    """(where its pins were read, its pins) for each installed CUDA plugin jax uses whose release the table lists:
    not a nightly (its pins differ), nor a plugin of another release than jaxlib (plugin-jaxlib-mismatch says so)."""
    found = []
    for plugin in PLUGINS:
        version = facts.packages.get(plugin, "")
        parsed = version_or_none(version)
        if parsed is None or parsed.is_prerelease or parsed.is_devrelease or parsed.epoch:
            continue
        if release(version) != release(facts.packages.get("jaxlib", "")):
            continue
        source, pins = _plugin_pins().get((plugin, release(version) or ()), ("", ()))
        found.append((f"{source}=={version}", pins))
    return found


def _outside(facts: Facts) -> list[tuple[str, str, str, str]]:
    """(wheel, installed, specifier, where the pin was read) for each installed nvidia-* wheel that an installed
    CUDA plugin's extra pins and that the installed version does not meet."""
    found = []
    for source, pins in _pins_in_use(facts):
        for name, specifier in pins:
            installed = facts.packages.get(name, "")
            if specifier and version_or_none(installed) and not specifier.contains(installed, prereleases=True):
                found.append((name, installed, str(specifier), source))
    return found


def plugin_pin(facts: Facts, wheel: str) -> list[str]:
    """The installed CUDA plugin's pin on that wheel, as a requirement ([] where it pins none): what a fix that
    moves the wheel must also meet, or the pin check asks for another move after it."""
    return [f"{name}{spec}" for _, pins in _pins_in_use(facts) for name, spec in pins if name == wheel and spec]


def pinned_wheels() -> list[str]:
    """The wheels the table pins to versions: each gets its own check, so that a rule on one wheel folds only that
    one (nvidia-nvvm, pinned by name only, cannot be outside its pin)."""
    return sorted({name for _, pins in _plugin_pins().values() for name, specifier in pins if specifier})


def outside_pin(wheel: str) -> Callable[[Facts], list[Occurrence]]:
    """The check of one wheel: outside the installed plugin's pin for it, fixed by moving it to the pin with jax,
    jaxlib and the plugins held where they are."""

    def run(facts: Facts) -> list[Occurrence]:
        return [
            Occurrence(
                f"{name} {installed} is outside {name}{spec}, which {source} pins (pip check does not read an "
                "extra's pins)",
                fixing.install(facts, [f"{name}{spec}"], hold=fixing.installed_jax(facts)),
            )
            for name, installed, spec, source in _outside(facts)
            if name == wheel
        ]

    return run


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
CUDA_LIBRARY_OLDER_THAN_JAXLIB_BUILD = Check(
    id="cuda-library-older-than-jaxlib-build",
    severity="fail",
    title=(
        "a CUDA library is older than the one this jaxlib was built against: jax refuses it and computes on the CPU"
    ),
    fix="install the CUDA wheels jax's CUDA extra pins for the build (cuda12_pip, cuda11_pip)",
    references=(CUDA_CHECK, "https://github.com/jax-ml/jax/issues/19121"),
    run=refused,
    explains=("gpu-present-jax-on-cpu", "cuda-backend-failed-jax-on-cpu"),
    signatures=(
        Signature(
            "Loaded runtime CuDNN library: {cudnn} but source was compiled with: {built}.  CuDNN library needs "
            "to have matching major version and equal or higher minor version.",
            XLA_AT_JAX.format(XLA_0419, "stream_executor/cuda/cuda_dnn.cc", 440),
        ),
        Signature(
            "Loaded runtime CuDNN library: {cudnn} but source was compiled with: {built}.  CuDNN library major "
            "and minor version needs to match or have higher minor version",
            "https://github.com/tensorflow/tensorflow/blob/011a5fda98834803bc103084d86335f9645a473a/"
            "tensorflow/stream_executor/cuda/cuda_dnn.cc",  # TensorFlow's, before XLA's own
        ),
        Signature(
            "Found {name} version {number}, but JAX was built against version {number}, which is newer.",
            "https://github.com/jax-ml/jax/blob/jax-v0.4.17/jax/_src/xla_bridge.py#L198",  # to jax-v0.4.25
        ),
        Signature(
            "Outdated {name} installation found.\nVersion JAX was built against: {number}\n"
            "Minimum supported: {number}\nInstalled version: {number}",
            "https://github.com/jax-ml/jax/blob/jax-v0.4.26/jax/_src/xla_bridge.py#L293",  # jax_plugins/cuda
            # /__init__.py from jax-v0.6.1 (#L106), unchanged to jax-v0.11.0
        ),
    ),
)
OUTSIDE_PIN: tuple[Check, ...] = tuple(
    Check(
        id=f"{wheel}-outside-jax-pin",
        severity="warn",
        title=f"{wheel} is outside the version jax's CUDA plugin pins for it",
        fix="install the version the plugin's CUDA extra pins",
        references=(CUDA_PINS,),
        run=outside_pin(wheel),
    )
    for wheel in pinned_wheels()
)
