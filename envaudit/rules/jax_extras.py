"""An accelerator extra of jax that the release asked for does not define (`jax[cuda12_pip]==0.6.0`: the extra was
removed in 0.6.0). pip and uv only warn and install jax with the CPU jaxlib: the stack cannot use the GPU it was
written for. The extras each release defines are read from its METADATA (tables/cuda-extra.toml, rules/extras.py).
"""

from __future__ import annotations

import re

from envaudit.model.facts import Facts
from envaudit.rules import extras
from envaudit.rules.check import Check, Occurrence


def undefined(facts: Facts) -> list[Occurrence]:
    missing = [str(e) for e in facts.jax.get("undefined_extras") or []]
    version = facts.packages.get("jax")
    if not missing or version is None:
        return []
    ways = [
        f"{e}: jax defines it for {_span(found)}"
        if (found := extras.releases(e))
        else f"{e}: no jax release defines it"
        for e in missing
    ]
    defined = [e for e in extras.names() if version in extras.releases(e)]
    instead = f"; jax {version} defines {', '.join(defined)}" if defined else ""
    # the defined extra of the same accelerator and major (cuda12_pip -> cuda12), written where the pin is
    prefixes = {e: m[0] for e in missing if (m := ACCELERATOR.match(e))}
    written = [f"jax[{p}]=={version} for jax[{e}]=={version}" for e, p in prefixes.items() if p in defined]
    return [
        Occurrence(
            f"jax {version} does not define the extra{'s' if len(missing) > 1 else ''} {', '.join(missing)}: the "
            f"installer warns and installs jax with the CPU jaxlib ({'; '.join(ways)}{instead})",
            todo=f"write {'; '.join(written)} in the requirements" if written else "",
        )
    ]


ACCELERATOR = re.compile(r"^(?:cuda\d+|rocm\d*)")  # an accelerator extra's platform and major: cuda12, rocm


def _span(releases: list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]} to {releases[-1]}"


JAX_EXTRA_UNDEFINED = Check(
    id="jax-extra-undefined",
    severity="fail",
    title="jax's release does not define the accelerator extra asked for: the installer drops it and jax runs on "
    "the CPU",
    fix="ask for an extra the release defines (the finding names them), or a jax release that defines the one "
    "asked for",
    references=(
        "https://github.com/jax-ml/jax/blob/jax-v0.6.0/CHANGELOG.md#L33",  # cuda12_pip removed in 0.6.0
        "https://pypi.org/pypi/jax/json",
    ),
    run=undefined,
)
