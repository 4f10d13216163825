"""The environment a plan's markers are evaluated for: its Python, and Linux x86_64 CPython unless a pip report says.

A requirement's or a lock entry's marker (`numpy==2.0.2; python_version >= "3.10"`, uv's and pylock's
`python_full_version < '3.12'`, `sys_platform == 'win32'`) is a PEP 508 expression over the environment's marker
variables (https://packaging.python.org/en/latest/specifications/dependency-specifiers/#environment-markers). A plan
is of the environment it will run in: its Python is `--python`, or the `environment` a pip report records (pip
evaluated the resolution's markers for it); its platform is Linux x86_64 CPython, the platform jax's GPU wheels and
envaudit's wheel table (rules/tables/jaxlib-wheels.toml) are of, unless a pip report records another. What no
input says stays empty (`platform_release`, `platform_version`), so a marker on it does not hold. Where no Python is
given, `gather` evaluates each of `PYTHONS` and requires them to agree on every audited distribution.
"""

from __future__ import annotations

import functools

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envaudit.commands.plan.inputs import PlanError
from envaudit.commands.plan.inputs.values import Source
from envaudit.model.markerenv import LINUX_X86_64 as LINUX_X86_64
from envaudit.model.markerenv import PYTHON_KEYS as PYTHON_KEYS
from envaudit.model.markerenv import PYTHONS as PYTHONS
from envaudit.model.markerenv import Target as Target
from envaudit.model.markerenv import target as target


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Marker:
    return Marker(text)


def holds(
    text: str,
    target: Target,
    where: Source,
    *,
    extras: frozenset[str] = frozenset(),
    groups: frozenset[str] | None = None,
) -> bool:
    """Whether a marker holds for the plan's target. `groups` (a set, maybe empty): a pylock.toml marker, whose
    `extras` and `dependency_groups` are the selected sets (PEP 751); otherwise `extra` is "", as for a
    requirement installed for itself."""
    try:
        marker = _parsed(text)
    except InvalidMarker as exc:
        raise PlanError(f"{where}: invalid marker {text!r}: {str(exc).splitlines()[0]}") from None
    environment: dict[str, str | frozenset[str]] = {**target.environment(), "extra": ""}
    try:
        if groups is None:
            return marker.evaluate(environment)
        del environment["extra"]  # not a lock file's variable: its sets are
        environment |= {"extras": extras, "dependency_groups": groups}
        return marker.evaluate(environment, context="lock_file")
    except TypeError:  # packaging before 25 evaluates no set-valued marker
        raise PlanError(f"{where}: evaluating the marker {text!r} needs packaging >= 25") from None
    except (UndefinedComparison, UndefinedEnvironmentName) as exc:
        raise PlanError(f"{where}: cannot evaluate the marker {text!r}: {exc}") from None


def allows(spec: str, python: str, where: Source) -> bool:
    """Whether a requires-python specifier admits this Python (3.11: some 3.11.x, tried at both ends, since a
    specifier's bounds make an interval)."""
    try:
        specifier = SpecifierSet(spec)
    except InvalidSpecifier:
        raise PlanError(f"{where}: requires-python {spec!r} is not a version specifier") from None
    versions = [python] if python.count(".") >= 2 else [f"{python}.0", f"{python}.999"]
    return any(specifier.contains(v, prereleases=True) for v in versions)
