"""Fixes built from the facts: what to install, hold, reinstall, remove, unset or export in this environment, as
values (`model/fixes.Fix`) for its own installer (`model/fixes.target`). The values and their rendering are the
model's; deciding which fix these facts need is here, beside the rules that ask for it.

- a fix drops every pin the installed set already satisfies (a fix never recommends what is installed);
- it moves, too, each installed package whose own requirement the pins would break (its `facts.requires`), below
  (or above) the version installed, so that the installer finds one that fits instead of leaving it broken;
- jax's own packages are pinned for the platform (`jax_release`): jax and jaxlib on a machine without an NVIDIA
  driver, the CUDA plugin of the installed major (or CUDA 12) where there is one, jax's tpu extra on a TPU host;
- a fix that moves something beside jax holds what must not move (`installed_jax`), named although met.
"""

from __future__ import annotations

from collections.abc import Sequence

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix, candidates, parse, stashes, target
from envaudit.model.scope import PLUGIN, TPU_PACKAGES


def satisfied(facts: Facts, pin: str) -> bool:
    """The installed set already meets this requirement (a name alone: it is installed). One with extras
    (`jax[cuda12]`) never is: the extras' packages are what it asks for."""
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    name, spec = parse(pin)
    installed = facts.packages.get(name)
    extras = Requirement(pin).extras
    return not extras and installed is not None and SpecifierSet(spec).contains(installed, prereleases=True)


def _fits(pin_spec: str, requirement_spec: str) -> bool:
    """Some version allowed by the pin is also allowed by the requirement (tested on the bounds both name)."""
    from packaging.specifiers import SpecifierSet

    pin, req = SpecifierSet(pin_spec), SpecifierSet(requirement_spec)
    named = candidates(pin_spec) + candidates(requirement_spec)
    return any(
        pin.contains(v, prereleases=True) and req.contains(v, prereleases=True) for v in [*named, *map(_above, named)]
    )


def _above(version: str) -> str:
    """A version just above `version` that `>version` allows (PEP 440's `>` excludes its post-releases, the
    candidates' stand-in above a bound): 0.11.7 -> 0.11.7.1. Without it `equinox>0.11.7` fitted no requirement, and
    every library requiring `equinox>=0.11.2` was moved up with it (diffrax, lineax, optimistix: a plan uv refused
    beside the installed jax)."""
    from packaging.version import Version

    return f"{Version(version).base_version}.1"


def dependents(facts: Facts, pins: Sequence[str]) -> list[str]:
    """Pins for the installed packages that the given pins would break, each moved away from its installed version
    the way the pinned package moves (ml-dtypes 0.6.0 requires numpy>=2: 'numpy<2' adds 'ml-dtypes<0.6.0')."""
    from packaging.version import Version

    moving = dict(parse(p) for p in pins)
    found = []
    for name, requires in sorted(facts.requires.items()):
        if name in moving or name not in facts.packages:
            continue
        for requirement in requires:
            target, spec = parse(requirement)
            if target in moving and not _fits(moving[target], spec):
                installed = facts.packages.get(target, "0")
                down = all(Version(v) < Version(installed) for v in candidates(moving[target]) if v != installed)
                found.append(f"{name}{'<' if down else '>'}{Version(facts.packages[name]).public}")  # no +local
                break
    return found


def pixi_managed(facts: Facts, names: Sequence[str]) -> bool:
    """Whether a fix would move a conda package of a pixi environment: pixi re-syncs the environment to its lock
    file (and conda may not be installed), so no command run into it lasts; pixi.toml is where such a change goes."""
    tools = facts.installers
    return facts.python.get("environment") == "pixi" and any(tools.get(parse(n)[0]) == "conda" for n in names)


def install(facts: Facts, pins: Sequence[str], *, installed_only: bool = False, hold: Sequence[str] = ()) -> Fix:
    """The pins not yet met and the packages they would break, for this environment's installer (an empty fix when
    every pin is already met). `installed_only`: the pins constrain what is installed and add nothing (a rule's
    set that keeps neural-tangents importable pins flax only where flax is there). `hold`: installed packages to
    keep as they are, named although met, so that the installer picks a release of the rest that fits them."""
    from packaging.requirements import InvalidRequirement
    from packaging.version import InvalidVersion

    try:
        needed = [
            p
            for p in dict.fromkeys(pins)
            if not satisfied(facts, p) and (not installed_only or parse(p)[0] in facts.packages)
        ]
        needed += dependents(facts, needed)
    except (InvalidRequirement, InvalidVersion, ValueError):  # not versions (a hand-edited report): no command
        return Fix()
    if not needed or pixi_managed(facts, needed):
        return Fix()
    return Fix(install=tuple(needed), hold=tuple(p for p in hold if p not in needed), target=target(facts))


def delete(facts: Facts, paths: Sequence[str]) -> Fix:
    """These paths inside the audited environment deleted (what no installer removes); those outside left out."""
    found = stashes(str(facts.python.get("prefix") or ""), paths)
    return Fix(delete=found, target=target(facts)) if found else Fix()


def reinstall(facts: Facts, pins: Sequence[str]) -> Fix:
    """These exact releases installed again as they are (a truncated library), nothing else moved."""
    return Fix(reinstall=tuple(pins), target=target(facts))


def uninstall(facts: Facts, names: Sequence[str]) -> Fix:
    """These installed distributions removed (those not installed left out)."""
    if pixi_managed(facts, names):
        return Fix()
    return Fix(uninstall=tuple(n for n in names if n in facts.packages), target=target(facts))


def unset(facts: Facts, *names: str) -> Fix:
    return Fix(unset=names, target=target(facts))


def export(facts: Facts, name: str, value: str) -> Fix:
    return Fix(export=((name, value),), target=target(facts))


def with_flag(flags: str, entry: str) -> str:
    """XLA_FLAGS with one more entry (`--name=item`): an item added to the value of a flag already set, as a
    comma-separated list (`--xla_disable_hlo_passes=a,b`: a second entry of the same flag would replace the first)."""
    name, _, item = entry.partition("=")
    tokens = flags.split()
    for i, token in enumerate(tokens):
        flag, _, value = token.partition("=")
        if flag == name:
            if item in value.split(","):
                return flags
            tokens[i] = f"{flag}={value},{item}" if value and item else entry
            return " ".join(tokens)
    return " ".join([*tokens, entry])


def jax_release(facts: Facts, version: str) -> list[str]:
    """Pins for jax, jaxlib and the GPU plugin at one release, for this platform; on a TPU host through jax's tpu
    extra, which moves libtpu to the build released with that jax (tables/tpu-extra.toml)."""
    if any(name in facts.packages for name in TPU_PACKAGES):
        return [f"jax[tpu]=={version}", f"jaxlib=={version}"]
    plugin = sorted({m["major"] for name in facts.packages if (m := PLUGIN.match(name)) and m["kind"] == "cuda"})
    if (plugin or facts.nvidia.get("status") == "ok") and facts.nvidia.get("status") != "absent":
        return [f"jax[cuda{plugin[-1] if plugin else '12'}]=={version}", f"jaxlib=={version}"]
    return [f"jax=={version}", f"jaxlib=={version}"]


def installed_jax(facts: Facts) -> list[str]:
    """The installed jax, jaxlib and plugins, each pinned at its version: what a library fix must not move."""
    return [
        f"{name}=={version}"
        for name, version in sorted(facts.packages.items())
        if name in ("jax", "jaxlib") or PLUGIN.match(name)
    ]
