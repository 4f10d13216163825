"""CUDA libraries below the minimum jax accepts when its CUDA backend starts: jax refuses them and computes on the CPU.

From jax 0.4.26 jax's `_check_cuda_versions` compares the installed cuBLAS, cuSPARSE, cuPTI, the CUDA runtime (and,
for a single-package CUDA jaxlib, cuSOLVER and cuDNN) with fixed minimums rather than with the build; the pjrt
plugin runs it from jax-cuda12-pjrt 0.6.1 (0.4.30 to 0.6.0 define none). A library below its minimum does not fail
the import: jax raises "Unable to use CUDA because of the following issues with CUDA components: Outdated cuSPARSE
installation found." inside the backend's start, logs it, and computes on the CPU. Which release checks what, and
the number each nvidia-* wheel release reports, are data derived from the wheels (`tables/cuda-minimums.toml`);
this module applies them to the wheels the facts name. A wheel release the table does not list is unknown.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypedDict

from envaudit.model.facts import Facts
from envaudit.model.versions import release
from envaudit.rules import cuda_builds, fixing, platforms
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import CUDA_MINIMUMS, CUDA_MINIMUMS_BEFORE
from envaudit.rules.table import Provenance, Table


class CheckRun(TypedDict):
    code: str  # what runs _check_cuda_versions: "jax" (a single-package CUDA jaxlib) or a pjrt plugin
    versions: list[str]  # consecutive releases of it that check the same
    file: str  # the file of its wheel that holds the check
    line: int  # where its first release defines it (0: not defined)
    runs: bool  # whether the module calls it
    build: list[str]  # libraries compared only with the build's version (cuda-builds.toml; void from jax 0.4.26)
    minimums: dict[str, int]  # library -> the number below which jax refuses it


class LibraryNumbers(TypedDict):
    name: str  # jax's name of the library (cuBLAS)
    wheel: str  # the wheel that ships it
    header: str  # the header read
    define: str  # the define read
    values: dict[str, int]  # wheel release -> the number jax compares


class CudaMinimums(Provenance):  # cuda-minimums.toml: derived from the wheels of jax, its pjrt plugins, nvidia-*
    check: list[CheckRun]
    library: list[LibraryNumbers]


MINIMUMS = Table("cuda-minimums.toml", CudaMinimums, jax=lambda t: (v for row in t["check"] for v in row["versions"]))
# The pjrt plugin whose check compares the -cu12 wheels the table has numbers of. The CUDA 13 plugin loads the
# CUDA 13 wheels (nvidia/cu13), whose numbers (13.x) meet every minimum its check asks (CUDA 12.1-era numbers).
PJRT = "jax-cuda12-pjrt"


@functools.cache
def _checks() -> dict[tuple[str, tuple[int, ...]], CheckRun]:
    """(code, release numbers) -> its row, for every release the table lists."""
    return {(row["code"], _numbers(v)): row for row in MINIMUMS.load()["check"] for v in row["versions"]}


@functools.cache
def _libraries() -> dict[str, tuple[str, dict[tuple[int, ...], int], tuple[str, ...]]]:
    """jax's name of a library -> (its wheel, release numbers -> the number jax compares, releases oldest first)."""
    found = {}
    for row in MINIMUMS.load()["library"]:
        ordered = sorted(row["values"], key=_numbers)
        found[row["name"]] = (row["wheel"], {_numbers(v): n for v, n in row["values"].items()}, tuple(ordered))
    return found


def _numbers(version: str) -> tuple[int, ...]:
    """A release's numbers as the table's keys have them (versions.release; () for no version)."""
    return release(version) or ()


def _checker(facts: Facts) -> CheckRun | None:
    """The row of the code whose check runs when jax's CUDA backend starts: the CUDA 12 pjrt plugin jax loads (one
    of jaxlib's release: jax skips another), else jax's own for a single-package CUDA jaxlib; None where neither
    runs or the table lacks the release."""
    if PJRT in facts.packages:
        release = _numbers(facts.packages[PJRT])
        return _checks().get((PJRT, release)) if release == _numbers(facts.packages.get("jaxlib", "")) else None
    if cuda_builds.monolithic(facts) is not None:
        return _checks().get(("jax", _numbers(facts.packages.get("jax", ""))))
    return None


def _skipped(facts: Facts) -> bool:
    """Whether jax starts no CUDA check here: JAX_SKIP_CUDA_CONSTRAINTS_CHECK set (any non-empty value: the code
    tests os.getenv), or JAX_PLATFORMS naming no platform that is CUDA (as jax expands its aliases: `gpu` is one):
    jax does not start the CUDA backend at all."""
    return bool(facts.env.get("JAX_SKIP_CUDA_CONSTRAINTS_CHECK")) or platforms.without_cuda(facts)


def _below(facts: Facts, library: str) -> tuple[str, str, int, int, str] | None:
    """(wheel, installed, its number, the minimum, the code whose check asks it) where the installed wheel of that
    library is below the minimum the running check asks."""
    if (facts.origin == "live" and facts.jax.get("platform") in ("gpu", "cuda")) or _skipped(facts):
        return None  # jax runs on the GPU here (the check passed, whatever the wheels say), or runs no check
    row = _checker(facts)
    if row is None or not row["runs"] or library not in row["minimums"] or library not in _libraries():
        return None
    wheel, numbers, _ = _libraries()[library]
    installed = facts.packages.get(wheel, "")
    number = numbers.get(_numbers(installed))
    if number is None or number >= row["minimums"][library]:
        return None
    return wheel, installed, number, row["minimums"][library], row["code"]


def libraries() -> list[str]:
    """The libraries some release has a minimum for that a wheel release the table lists is below: one check each,
    so that a rule on one library (the CUDA runtime's) names its own in `explains`. cuPTI (every CUDA 12 wheel says
    API 18 or more) and cuSOLVER (11.4.2 or more) have minimums no wheel fails: no check."""
    lowest = {name: min(numbers.values()) for name, (_, numbers, _) in _libraries().items() if numbers}
    return sorted(
        {
            name
            for row in MINIMUMS.load()["check"]
            for name, minimum in row["minimums"].items()
            if lowest.get(name, minimum) < minimum
        }
    )


def check_id(library: str) -> str:
    """`cusparse-below-jax-minimum`, from the wheel's name (nvidia-cusparse-cu12)."""
    wheel = _libraries()[library][0]
    return f"{wheel.removeprefix('nvidia-').rsplit('-cu', 1)[0]}-below-jax-minimum"


def wheel_of(library: str) -> str:
    return _libraries()[library][0]


def below_minimum(library: str) -> Callable[[Facts], list[Occurrence]]:
    """The check of one library: below the minimum, fixed by the installed plugin's own pin on that wheel (so that
    the pin check asks nothing after it), else by the oldest wheel release that meets it; jax, jaxlib and the
    plugins held where they are."""

    def run(facts: Facts) -> list[Occurrence]:
        found = _below(facts, library)
        if found is None:
            return []
        wheel, installed, number, minimum, code = found
        _, numbers, ordered = _libraries()[library]
        enough = next(v for v in ordered if numbers[_numbers(v)] >= minimum)
        pins = cuda_builds.plugin_pin(facts, wheel) or [f"{wheel}>={enough}"]  # every plugin pin meets it
        said = (
            f"'Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()' with "
            f"'RuntimeError: Outdated {library} installation found.'"
            if code == PJRT
            else f"'CUDA backend failed to initialize: Unable to use CUDA because of the following issues with CUDA "
            f"components: Outdated {library} installation found.'"
        )
        detail = (
            f"{wheel} {installed} reports {library} {number}, below the minimum {minimum} that {code} "
            f"{facts.packages.get(code, '')}'s _check_cuda_versions asks: jax logs {said} when its CUDA backend "
            "starts, and computes on the CPU"
        )
        return [Occurrence(detail, fixing.install(facts, pins, hold=fixing.installed_jax(facts)))]

    return run


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
BELOW_MINIMUM: tuple[Check, ...] = tuple(
    Check(
        id=check_id(library),
        severity="fail",
        title=f"{library} is below the minimum jax's CUDA check accepts: jax refuses it and computes on the CPU",
        fix=f"install a {wheel_of(library)} release that meets it, jax and its plugins held",
        references=(CUDA_MINIMUMS, CUDA_MINIMUMS_BEFORE),
        run=below_minimum(library),
        # jax's own pin on the same wheel, and the GPU jax then leaves unused: one cause, one finding
        explains=(
            f"{wheel_of(library)}-outside-jax-pin",
            "gpu-present-jax-on-cpu",
            "cuda-backend-failed-jax-on-cpu",
        ),
    )
    for library in libraries()
)
