"""Every table envaudit reads about releases, one `Derivation` line each: what writes it, what it reads, what it is
keyed on, how it is confirmed, and which derivations must run before it. `python -m derive refresh` walks this list
in order; tests/derive/test_registry.py holds it whole (every `Table(...)` of envaudit.rules has exactly one line,
derived or read by hand with its reason).

`reads` says what a derivation reads, for people: `pypi:NAME` (the project's release files, from PyPI's JSON),
`pypi-libraries` (every library of tables/derived/libraries.toml, and jax), `git:jax-ml/jax` (the tags of a bare
mirror), `table:PATH` (another table, relative to envaudit/rules/tables/). The refresh does not trust the list: it
records the PyPI projects each derivation actually read (derive.sources.wheels.project_json) and fingerprints
those, with the derivation's code and the tables it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envaudit.rules import knowledge
from envaudit.rules.table import Table


@dataclass(frozen=True)
class Derivation:
    table: str  # the file under envaudit/rules/tables/ (tables/derived/... for a derivation's own inputs)
    module: str  # the derive module whose main(argv) writes it ("" where by_hand)
    reads: tuple[str, ...]  # its sources, as the refresh fingerprints them
    keyed: str  # what a row is keyed on
    confirmed: str  # the derive.confirm module that measures a sample of it, or why none does
    after: tuple[str, ...] = ()  # tables whose derivation must run first (it reads them)
    by_hand: str = ""  # why this table is read by hand, where it is
    extra_args: tuple[str, ...] = ()  # what its main takes beyond --cache, --offline and --output ("{jax_git}")


JAX_PYPI = ("pypi:jax", "pypi:jaxlib")
PLUGINS = ("pypi:jax-cuda12-plugin", "pypi:jax-cuda13-plugin")

DERIVATIONS: tuple[Derivation, ...] = (
    Derivation(
        "derived/libraries.toml",
        "derive.tables.libraries",
        ("file:derive/tables/library_candidates.toml", "pypi:each candidate"),
        "library (distribution name)",
        "none: a list of what has a jax interface, read from each newest release (its Requires-Dist, its wheel's"
        " entry points and Python files)",
    ),
    Derivation(
        "derived/entry-points.toml",
        "derive.tables.entry_points",
        ("table:derived/libraries.toml", "pypi-libraries"),
        "library",
        "derive.confirm.calls (each entry point called in a built environment)",
        after=("derived/libraries.toml",),
    ),
    Derivation(
        "derived/readme-calls.toml",
        "derive.tables.readme_calls",
        ("table:derived/libraries.toml", "pypi-libraries", "pypi:jax", "file:probes/calls/_readme.py"),
        "library",
        "the derivation itself: a block is kept only where it ran, built with uv from the index (tests/realenv/"
        "test_readme_calls.py builds one beside a jax it fails with)",
        after=("derived/libraries.toml",),
    ),
    Derivation(
        "api-removals.toml",
        "derive.tables.api_removals",
        ("pypi-libraries", "table:derived/libraries.toml", "table:derived/entry-points.toml"),
        "library release x jax release",
        "derive.confirm.api_removals (a boundary per library installed on both sides and imported)",
        after=("derived/libraries.toml", "derived/entry-points.toml"),
    ),
    Derivation(
        "derived/jax-names.toml",
        "derive.tables.jax_names",
        JAX_PYPI,
        "public jax module",
        "none: read from jax's own files; a name the imports probe reads as missing is measured in the live jax"
        " first (probes/calls/_uses.py), this only says whether any release ever had it",
    ),
    Derivation(
        "jax-requires.toml",
        "derive.tables.jax_requires",
        JAX_PYPI,
        "jax release",
        "derive.confirm.declared (pip's resolver refuses what a release declares it refuses)",
    ),
    Derivation(
        "jax-minimum-jaxlib.toml",
        "derive.tables.jax_minimum_jaxlib",
        ("pypi:jax",),
        "jax release",
        "tests/realenv (a jax beside an older jaxlib built and imported: RuntimeError)",
    ),
    Derivation(
        "jax-env.toml",
        "derive.tables.jax_env",
        ("pypi:jax",),
        "jax release",
        "tests/rules/test_jax_env.py (the refused values imported with the installed jax)",
    ),
    Derivation(
        "jaxlib-wheels.toml",
        "derive.tables.jaxlib_wheels",
        ("pypi:jaxlib",),
        "Python x jaxlib release",
        "none: PyPI's own file list is the record",
    ),
    Derivation(
        "platform-wheels.toml",
        "derive.tables.platform_wheels",
        ("pypi:jaxlib", *PLUGINS),
        "package x release",
        "none: PyPI's own file list is the record",
    ),
    Derivation(
        "tpu-extra.toml",
        "derive.tables.tpu_extra",
        ("pypi:jax",),
        "jax release",
        "derive.confirm.tpu_extra (pip's resolver on jax[tpu]==V)",
    ),
    Derivation(
        "cuda-extra.toml",
        "derive.tables.cuda_extra",
        ("pypi:jax", *PLUGINS),
        "jax release, plugin release",
        "derive.confirm.cuda_extra (pip's resolver on jax[EXTRA]==V)",
    ),
    Derivation(
        "cuda-minimums.toml",
        "derive.tables.cuda_minimums",
        ("pypi:jax", "pypi:jax-cuda12-pjrt", "pypi:jax-cuda13-pjrt", "pypi:nvidia-*-cu12"),
        "jax or pjrt release; CUDA library wheel release",
        "tests/rules/test_cuda_minimums.py (a sample re-derived from the real wheels)",
    ),
    Derivation(
        "cuda-archs.toml",
        "derive.tables.cuda_archs",
        (*PLUGINS, "git:jax-ml/jax"),
        "plugin or jaxlib release",
        "the derivation itself: .bazelrc at each plugin tag against its wheel's fatbinaries, aarch64 and pjrt wheels",
        extra_args=("--jax-git", "{jax_git}"),
    ),
    Derivation(
        "derived/jax-messages.toml",
        "derive.tables.jax_messages",
        ("git:jax-ml/jax",),
        "message text (its first and last jax release tag)",
        "tests/rules/test_jax_messages.py (each row's words against its source at its tag, scripts/signature_sources"
        ".py; real reports' messages read as their category)",
        extra_args=("--jax-git", "{jax_git}"),
    ),
    Derivation(
        "cuda-builds.toml",
        "",
        ("git:jax-ml/jax",),
        "jaxlib release (single-package CUDA builds)",
        "jax#19121 and jax#18027 (the build versions users saw refused)",
        by_hand="a closed history: the single-package CUDA jaxlibs 0.4.17-0.4.25, served by jax's own index (not "
        "PyPI), whose build versions are read from CHANGELOG.md and versions.cc at their tags; from jax 0.4.26 the "
        "comparison is cuda-minimums.toml's, derived",
    ),
    Derivation(
        "rocm-plugins.toml",
        "",
        ("https://github.com/ROCm/ROCm (docs/compatibility/ml-compatibility/jax-compatibility.rst)",),
        "ROCm plugin release",
        "none: AMD's table is its own record of what it tested",
        by_hand="AMD's compatibility table is prose in its documentation (one row so far), not a release's metadata; "
        "the plugins' METADATA pins only jaxlib's own release",
    ),
    Derivation(
        "declared-requires.toml",
        "derive.tables.declared",
        (
            "pypi:audited (envaudit.model.scope's, less jax and jaxlib)",
            "pypi-libraries",
            "table:derived/libraries.toml",
        ),
        "library release",
        "derive.confirm.declared (pip's resolver on each library's newest bound)",
        after=("derived/libraries.toml",),
    ),
    Derivation(
        "numpy-builds.toml",
        "derive.tables.numpy_builds",
        ("pypi:numpy", "pypi:ml-dtypes", "pypi:scipy"),
        "compiled library release",
        "derive.confirm.numpy_builds (the first release built against NumPy 1 imported beside NumPy 2)",
    ),
    Derivation(
        "coverage.toml",
        "derive.tables.coverage",
        ("table:every table keyed on jax", "pypi:jax"),
        "table",
        "tests/derive/test_coverage.py (every open table reaches the same release)",
        after=(
            "api-removals.toml",
            "jax-requires.toml",
            "jax-minimum-jaxlib.toml",
            "jax-env.toml",
            "jaxlib-wheels.toml",
            "platform-wheels.toml",
            "tpu-extra.toml",
            "cuda-extra.toml",
            "cuda-minimums.toml",
            "cuda-archs.toml",
        ),
    ),
)


def declared_tables() -> dict[str, Table[Any]]:
    """Every `Table(...)` declared by a module of envaudit.rules, by its file's name: what the registry must cover."""
    return knowledge.tables()


def ordered(chosen: set[str] | None = None, derivations: Sequence[Derivation] | None = None) -> list[Derivation]:
    """The derivations (the registry's, or those given; all, or those chosen: they alone, reading the tables as
    they are) in an order where each runs after those it reads: the given order, checked."""
    done: list[Derivation] = []
    for d in DERIVATIONS if derivations is None else derivations:
        missing = [a for a in d.after if a not in {e.table for e in done}]
        if missing:
            raise ValueError(f"{d.table} is listed before {', '.join(missing)}, which it reads")
        done.append(d)
    return [d for d in done if chosen is None or d.table in chosen]
