"""Fix commands that work in the environment audited: its own interpreter, its platform, its installed set.

A printed fix is a claim, and a generic one is often false: `pip install 'numpy<2'` beside ml_dtypes 0.6 (which
requires NumPy 2) leaves ml_dtypes broken; `pip install jax[cuda12]` on a machine without a GPU installs CUDA
wheels for nothing; a `pip` on PATH may belong to another environment. So a fix here is built from the facts:
- it runs pip as `<the audited interpreter> -m pip`, so it changes the environment that was audited;
- it drops every pin the installed set already satisfies (a fix never recommends what is installed);
- it moves, too, each installed package whose own requirement the pins would break (its `facts.requires`), below
  (or above) the version installed, so that pip finds one that fits instead of leaving it broken;
- jax's own packages are pinned for the platform: jax and jaxlib on a machine without an NVIDIA driver, the CUDA
  plugin of the installed major (or CUDA 12) where there is one;
- a fix that moves something beside jax holds what must not move (`hold`: the installed jax, jaxlib, plugins, the
  CUDA wheels a jaxlib was built with), named although met, so that pip fits the rest to them or changes nothing;
- a single-package CUDA jaxlib (`+cuda12`, 0.4.29 and before) comes from jax's own index, which the command names.
The result is one shell command and nothing else (no `# comment`: an interactive zsh, macOS's default, takes
it for arguments), so that pasting it into a shell runs exactly the fix; the finding's detail says why
(tests/realenv applies the printed text to copies of real broken environments and audits them again).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from envaudit.facts import Facts
from envaudit.scope import PLUGIN, canonicalize_name

# jax's index of its single-package CUDA jaxlibs (docs/installation.md at jax-v0.4.23: pip install --upgrade
# "jax[cuda12_pip]" -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html)
CUDA_RELEASES = "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"


def _parse(pin: str) -> tuple[str, str]:
    from packaging.requirements import Requirement

    req = Requirement(pin)
    return canonicalize_name(req.name), str(req.specifier)


def valid(pin: str) -> bool:
    from packaging.requirements import InvalidRequirement

    try:
        _parse(pin)
    except InvalidRequirement:
        return False
    return True


def satisfied(facts: Facts, pin: str) -> bool:
    """The installed set already meets this requirement (a name alone: it is installed). One with extras
    (`jax[cuda12]`) never is: the extras' packages are what it asks for."""
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    name, spec = _parse(pin)
    installed = facts.packages.get(name)
    extras = Requirement(pin).extras
    return not extras and installed is not None and SpecifierSet(spec).contains(installed, prereleases=True)


def _candidates(spec: str) -> list[str]:
    """Versions that stand for what a specifier allows: those it names, in both directions of each bound."""
    from packaging.specifiers import SpecifierSet

    named = [s.version.removesuffix(".*") for s in SpecifierSet(spec)]
    return named + [f"{v}.post0" for v in named] + [_below(v) for v in named]


def _below(version: str) -> str:
    """A version just below `version` that keeps its components: 2 -> 1.999, 0.6.0 -> 0.5.999."""
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:3]]
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] > 0:
            return ".".join(map(str, [*parts[:i], parts[i] - 1, *([999] * (len(parts) - i - 1 or 1))]))
    return "0"


def _fits(pin_spec: str, requirement_spec: str) -> bool:
    """Some version allowed by the pin is also allowed by the requirement (tested on the bounds both name)."""
    from packaging.specifiers import SpecifierSet

    pin, req = SpecifierSet(pin_spec), SpecifierSet(requirement_spec)
    return any(
        pin.contains(v, prereleases=True) and req.contains(v, prereleases=True)
        for v in _candidates(pin_spec) + _candidates(requirement_spec)
    )


def dependents(facts: Facts, pins: Sequence[str]) -> list[str]:
    """Pins for the installed packages that the given pins would break, each moved away from its installed version
    the way the pinned package moves (ml-dtypes 0.6.0 requires numpy>=2: 'numpy<2' adds 'ml-dtypes<0.6.0')."""
    from packaging.version import Version

    moving = dict(_parse(p) for p in pins)
    found = []
    for name, requires in sorted(facts.requires.items()):
        if name in moving or name not in facts.packages:
            continue
        for requirement in requires:
            target, spec = _parse(requirement)
            if target in moving and not _fits(moving[target], spec):
                installed = facts.packages.get(target, "0")
                down = all(Version(v) < Version(installed) for v in _candidates(moving[target]) if v != installed)
                found.append(f"{name}{'<' if down else '>'}{Version(facts.packages[name]).public}")  # no +local
                break
    return found


def python(facts: Facts) -> str:
    """The audited interpreter, quoted for a shell ("python" when the facts do not say)."""
    return shlex.quote(str(facts.python.get("executable") or "python"))


def pip_install(facts: Facts, pins: Sequence[str], *, installed_only: bool = False, hold: Sequence[str] = ()) -> str:
    """`<interpreter> -m pip install <pins not yet met> <packages they would break>` ("" when every pin is
    already met). `installed_only`: the pins constrain what is installed and add nothing (a rule's set that
    keeps neural-tangents importable pins flax only where flax is there). `hold`: installed packages to keep as
    they are, named although met, so that pip picks a release of the rest that fits them instead of moving them."""
    from packaging.requirements import InvalidRequirement
    from packaging.version import InvalidVersion

    try:
        needed = [
            p
            for p in dict.fromkeys(pins)
            if not satisfied(facts, p) and (not installed_only or _parse(p)[0] in facts.packages)
        ]
        needed += dependents(facts, needed)
    except (InvalidRequirement, InvalidVersion, ValueError):  # not versions (a hand-edited report): no command
        return ""
    if not needed:
        return ""
    needed += [p for p in hold if p not in needed]
    # a CUDA jaxlib of 0.4.29 and before (0.4.23+cuda12.cudnn89) is on jax's own index only, not on PyPI
    links = ["-f", CUDA_RELEASES] if any(re.match(r"jaxlib==[^+]+\+cuda", p) for p in needed) else []
    command = " ".join([python(facts), "-m", "pip", "install", *map(shlex.quote, needed), *links])
    return command


def jax_release(facts: Facts, version: str) -> list[str]:
    """Pins for jax, jaxlib and the GPU plugin at one release, for this platform."""
    plugin = sorted({m["major"] for name in facts.packages if (m := PLUGIN.match(name)) and m["kind"] == "cuda"})
    if plugin or facts.nvidia.get("status") == "ok":
        return [f"jax[cuda{plugin[-1] if plugin else '12'}]=={version}", f"jaxlib=={version}"]
    return [f"jax=={version}", f"jaxlib=={version}"]


def installed_jax(facts: Facts) -> list[str]:
    """The installed jax, jaxlib and plugins, each pinned at its version: what a library fix must not move."""
    return [
        f"{name}=={version}"
        for name, version in sorted(facts.packages.items())
        if name in ("jax", "jaxlib") or PLUGIN.match(name)
    ]
