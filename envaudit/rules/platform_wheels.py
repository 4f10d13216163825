"""Which platforms each release of jaxlib and of jax's CUDA plugins has a wheel for (`platform-wheels.toml`, DERIVED
by `python -m derive.tables.platform_wheels` from PyPI's file lists): a plan, or a pasted report, that asks for a
release on a platform it has no wheel for cannot be installed there (jax[cuda12] on native Windows, a jaxlib newer
than the last Intel-Mac wheel). A live audit describes what is installed, so only a plan or a report can have it.
"""

from __future__ import annotations

from typing import TypedDict

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.versions import public
from envaudit.rules import fixing
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.releases import is_release, listed, numbers
from envaudit.rules.table import Provenance, Table


class PlatformRun(TypedDict):
    package: str  # jaxlib, jax-cuda12-plugin, jax-cuda13-plugin
    versions: list[str]  # consecutive releases with wheels for the same platforms
    platforms: list[str]  # linux-x86_64, linux-aarch64, macos-arm64, macos-x86_64, windows-amd64


class PlatformWheels(Provenance):
    newest: dict[str, str]  # package -> the newest release the table read
    release: list[PlatformRun]


PLATFORM_WHEELS = Table(
    "platform-wheels.toml",
    PlatformWheels,
    jax=lambda t: (v for row in t["release"] if row["package"] == "jaxlib" for v in row["versions"]),
)
SYSTEMS = {"linux": "linux", "darwin": "macos", "windows": "windows"}
MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "arm64"}


def family(facts: Facts) -> str | None:
    """The platform family the facts' system and machine install on (None where they do not say)."""
    system = SYSTEMS.get(str(facts.platform.get("system") or "").lower())
    machine = MACHINES.get(str(facts.platform.get("machine") or "").lower())
    if system is None or machine is None:
        return None
    if system == "linux" and machine == "arm64":
        machine = "aarch64"  # Linux calls it aarch64; some reports write arm64
    if system == "windows" and machine == "x86_64":
        return "windows-amd64"
    return f"{system}-{machine}"


def platforms_of(package: str, version: str) -> list[str] | None:
    """The platforms a release has wheels for, or None where the table does not list it."""
    found = next(
        (r for r in PLATFORM_WHEELS.load()["release"] if r["package"] == package and listed(version, r["versions"])),
        None,
    )
    return None if found is None else found["platforms"]


def newest_for(package: str, where: str) -> str | None:
    """The newest release of a package with a wheel for this platform (None: none has one)."""
    found = [
        v
        for r in PLATFORM_WHEELS.load()["release"]
        if r["package"] == package and where in r["platforms"]
        for v in r["versions"]
    ]
    return max(found, key=numbers) if found else None


def missing(facts: Facts) -> list[Occurrence]:
    """Each planned jaxlib or CUDA plugin release without a wheel for the plan's platform."""
    where = family(facts)
    if facts.origin not in ("plan", "triage") or where is None:
        return []
    found = []
    for package in ("jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin"):
        version = public(facts.packages.get(package, ""))
        if not is_release(version) or (platforms := platforms_of(package, version)) is None or where in platforms:
            continue
        said = f"{package} {version} has no wheel for {where} (its wheels: {', '.join(platforms)})"
        found.append(Occurrence(said, _fix(facts, package, where)))
    return found


def _fix(facts: Facts, package: str, where: str) -> Fix:
    """jaxlib: the newest release with a wheel here, jax with it; a CUDA plugin has none off Linux: no command."""
    newest = newest_for(package, where)
    if package != "jaxlib" or newest is None:
        return Fix()
    return fixing.install(facts, [f"jax=={newest}", f"jaxlib=={newest}"])


NO_WHEEL_FOR_PLATFORM = Check(
    id="no-wheel-for-platform",
    severity="fail",
    title="a planned jaxlib or jax CUDA plugin has no wheel for the platform it would run on: pip cannot install it",
    fix="the jaxlib release the detail names; for CUDA, a Linux machine (on Windows, WSL2), else jax on the CPU",
    references=(
        "https://docs.jax.dev/en/latest/installation.html#supported-platforms",
        "https://pypi.org/project/jaxlib/#files",
    ),
    run=missing,
)
