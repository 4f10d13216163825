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
from envaudit.rules.accessors import parse_local_label, release, version_or_none
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


def _row(rows: list[dict[str, Any]], key: str, version: str) -> dict[str, Any] | None:
    """The row whose range holds this version; None for no version or one that is not (packaging 22-24 raise
    for those inside `contains`)."""
    from packaging.specifiers import SpecifierSet

    public = version.split("+")[0]
    if version_or_none(public) is None:
        return None
    return next((row for row in rows if SpecifierSet(row[key]).contains(public, prereleases=True)), None)


def _refused(facts: Facts) -> list[tuple[str, str, str]]:
    """(wheel, installed, built) for each nvidia-* wheel older than the build, as the installed jax compares them
    (jax's code compares, jaxlib's build says against what)."""
    jaxlib = _monolithic(facts)
    if jaxlib is None or (facts.origin == "live" and facts.jax.get("platform") in ("gpu", "cuda")):
        return []  # jax runs on the GPU here: the check passed, whatever the wheels say
    table = load(BUILDS)
    compare = _row(table["compare"], "jax", facts.packages.get("jax", ""))
    build = _row(table["build"], "jaxlib", jaxlib)
    if compare is None or build is None:
        return []  # jax from 0.4.26 compares with fixed minimums (other rules); a release the table lacks: unknown
    found = []
    for wheel, count in compare["components"].items():
        if wheel not in build["built"]:
            continue  # this jaxlib cannot report the library's version, and jax asks only where it can
        installed, built = facts.packages.get(wheel), build["built"][wheel]
        numbers = release(installed) if installed else None
        wanted = tuple(int(n) for n in built.split("."))[:count]
        if numbers is not None and (numbers + (0,) * count)[:count] < wanted:
            found.append((wheel, installed or "", ".".join(map(str, wanted))))
    return found


def refused(facts: Facts) -> list[str]:
    """One line for all the refused libraries: they are one cause (the wheels moved back), with one fix."""
    found = _refused(facts)
    if not found:
        return []
    names = load(BUILDS)["names"]
    said = ", ".join(f"{wheel} {version} ({names[wheel]} older than the build's {built})"
                     for wheel, version, built in found)  # fmt: skip
    return [f"jaxlib {facts.packages['jaxlib']} under jax {facts.packages.get('jax')} refuses {said}: jax logs 'CUDA "
            f"backend failed to initialize: Found {names[found[0][0]]} version ..., but JAX was built against "
            "version ..., which is newer' and runs on the CPU"]  # fmt: skip


def refused_fix(facts: Facts, detail: str) -> str:
    """jax's own pins for those wheels (its cuda12_pip extra); jax, jaxlib and the other CUDA wheels held where they
    are, so that pip moves nothing that jaxlib was built against to make room (a newer torch would bring cuDNN 9,
    which this cuDNN 8.9 build cannot load): if nothing fits, pip says so and changes nothing."""
    build = _row(load(BUILDS)["build"], "jaxlib", facts.packages.get("jaxlib", ""))
    moved = [wheel for wheel, _, _ in _refused(facts)]
    if build is None or not moved:
        return ""
    held = [f"{name}=={version}" for name, version in sorted(facts.packages.items())
            if name.startswith("nvidia-") and name.endswith("-cu12") and name not in moved]  # fmt: skip
    pins = [f"{wheel}>={build['pins'][wheel]}" for wheel in moved]
    return fixes.pip_install(facts, pins, hold=[*fixes.installed_jax(facts), *held])
