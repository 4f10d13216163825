"""An extra the release asked for does not define: pip and uv only warn and install the release without it. For
jax's accelerator extras (`jax[cuda12_pip]==0.6.0`: the extra was removed in 0.6.0; `jax[rocm]==0.4.31`: it came
in 0.5.0) jax is installed with the CPU jaxlib, and the stack cannot use the accelerator it was written for: a
failure. A plan knows it from the extras each release defines, read from its METADATA (tables/cuda-extra.toml,
rules/extras.py); a pasted install log from pip's own warning, for any distribution (another's is a warning: what
the extra would have brought is missing, and what imports it fails).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from envaudit.model.facts import Facts
from envaudit.model.scope import canonicalize_name
from envaudit.rules import extras
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.signatures import Match, Signature


def undefined(facts: Facts) -> list[Occurrence]:
    missing = [str(e) for e in facts.jax.get("undefined_extras") or []]
    version = facts.packages.get("jax")
    if not missing or version is None:
        return []
    return [_jax(version, missing)]


def said(facts: Facts, matches: Sequence[Match]) -> Occurrence | None:
    """What pip's warning says: for jax, the finding a plan makes of the same extra (a failure); for another
    distribution, a warning naming what was dropped."""
    dropped: dict[tuple[str, str], list[str]] = {}
    for m in matches:
        values = dict(m.values)
        if values.get("any") and values.get("package") and values.get("version"):
            key = (canonicalize_name(values["package"]), values["version"])
            dropped.setdefault(key, []).append(canonicalize_name(values["any"]))
    if not dropped:
        return None
    # jax's accelerator extras (cuda12-pip, rocm): the CPU jaxlib; another extra of jax (k8s) is like any other's
    accelerators = {
        (n, v): [x for x in e if extras.ACCELERATOR.match(x)] for (n, v), e in dropped.items() if n == "jax"
    }
    if (jax := next(((v, e) for (_, v), e in accelerators.items() if e), None)) is not None:
        return _jax(*jax)
    listed = "; ".join(f"{n} {v}: {', '.join(e)}" for (n, v), e in dropped.items())
    return Occurrence(
        f"the installer dropped extras the releases do not define ({listed}): what they would have installed is "
        "missing, and what imports it fails",
        severity="warn",
        todo="ask for an extra the release defines (its documentation, or its METADATA's Provides-Extra), or the "
        "release that defines the one asked for",
    )


def _jax(version: str, missing: list[str]) -> Occurrence:
    missing = sorted(set(missing))
    ways = [
        f"{e}: jax defines it for {_span(found)}"
        if (found := extras.releases(e))
        else f"{e}: no jax release defines it"
        for e in missing
    ]
    defined = [e for e in extras.names() if version in extras.releases(e)]
    instead = f"; jax {version} defines {', '.join(defined)}" if defined else ""
    # the defined extra of the same accelerator and major (cuda12_pip -> cuda12), written where the pin is
    prefixes = {e: m[0] for e in missing if (m := MAJOR.match(e))}
    written = [f"jax[{p}]=={version} for jax[{e}]=={version}" for e, p in prefixes.items() if p in defined]
    return Occurrence(
        f"jax {version} does not define the extra{'s' if len(missing) > 1 else ''} {', '.join(missing)}: the "
        f"installer warns and installs jax with the CPU jaxlib ({'; '.join(ways)}{instead})",
        todo=f"write {'; '.join(written)} in the requirements" if written else "",
    )


MAJOR = re.compile(r"^(?:cuda\d+|rocm\d*)")  # an accelerator extra's platform and major: cuda12, rocm


def _span(releases: list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]} to {releases[-1]}"


JAX_EXTRA_UNDEFINED = Check(
    id="jax-extra-undefined",
    severity="fail",
    title="the release does not define the extra asked for: the installer drops it (for an accelerator extra of "
    "jax, jax runs on the CPU)",
    fix="ask for an extra the release defines (the finding names them), or a jax release that defines the one "
    "asked for",
    references=(
        "https://github.com/jax-ml/jax/blob/jax-v0.6.0/CHANGELOG.md#L33",  # cuda12_pip removed in 0.6.0
        "https://pypi.org/pypi/jax/json",
    ),
    run=undefined,
    said=said,
    signatures=(
        Signature(  # pip's warning, which goes on without the extra (resolvelib; the legacy resolver's says the same)
            "{package} {version} does not provide the extra '{any}'",
            "https://github.com/pypa/pip/blob/24.0/src/pip/_internal/resolution/resolvelib/candidates.py#L514",
            seen="https://github.com/jax-ml/jax/issues/25856",
        ),
    ),
)
