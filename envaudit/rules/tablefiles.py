"""What each release table holds, declared as types, and its loading: a table is read once and checked against its
shape (`typecheck`, as a facts document, a rule file and a report are), closed, so a misspelt or missing key in a
table read from upstream sources is an error when it loads, not a rule that silently says nothing.

Every table says where it was read from (`source`) and when (`read`); one that covers a span of releases says which
(`covers_from`, `covers_to`). One place to add a table: its TOML in `tables/` and its shape in SHAPES.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any, TypedDict

from envaudit.model import typecheck

TABLES = Path(__file__).with_name("tables")


class TableError(ValueError):
    """A table file that does not have its declared shape; names the file and the first wrong part."""


class _Provenance(TypedDict):
    source: str  # where the table was read from (the upstream files, at which tags)
    read: str  # when, and how


class _Span(_Provenance):
    covers_from: str  # the first release it speaks of
    covers_to: str  # the last


class MinimumJaxlib(_Provenance):  # jax-minimum-jaxlib.toml: _minimum_jaxlib_version at each jax tag
    older_message: str
    newer_message: str
    newer_check_since: str
    minimum_jaxlib: dict[str, str]  # jax release -> the oldest jaxlib it imports with


class Declared(TypedDict):
    python: str
    jax: list[str]
    jaxlib: list[str]


class JaxRequires(_Provenance):  # jax-requires.toml: what each jax and jaxlib release declares it needs
    release: dict[str, Declared]


class DeclaredRun(TypedDict):
    package: str
    versions: list[str]  # consecutive releases that declare the same
    python: str  # their Requires-Python ("" where none)
    requires: list[str]  # their Requires-Dist on audited packages, markers kept, extras' left out


class DeclaredRequires(_Provenance):  # declared-requires.toml: derived from each release's wheel METADATA
    release: list[DeclaredRun]


class NumpyBuild(TypedDict):
    package: str
    versions: list[str]  # consecutive releases built against NumPy 1 on the same Pythons
    pythons: list[str]  # the Pythons whose wheels were
    wheels: list[str]  # the Pythons the releases have a CPython wheel for
    fixed: str  # the first later release built against NumPy 2 for every Python ("" where none is)
    evidence: str


class NumpyBuilds(_Provenance):  # numpy-builds.toml: derived from each release's sdist
    build: list[NumpyBuild]


class _WheelsOptional(TypedDict, total=False):
    yanked: list[str]


class JaxlibWheels(_Span, _WheelsOptional):  # jaxlib-wheels.toml: the Pythons each jaxlib has a wheel for
    versions: dict[str, list[str]]  # Python -> jaxlib releases


class _UseOptional(TypedDict, total=False):
    fixed: str  # the first release of the library without the use
    functions: list[str]  # a call-time use: the public functions that reach it (read at the library's tag)
    standard_path: str  # the everyday call that reaches it too (flax.linen.Module.init), where one does
    module: str  # an import-time use that only the import of this module runs (`import PACKAGE` does not reach it)


class Use(_UseOptional):
    package: str
    versions: list[str]  # specifiers of the library releases with the use
    jax: str  # specifier of the jax releases without the API
    api: str
    kind: str  # "import" or "first call"
    evidence: str  # file:line at the library's tag


class ApiRemovals(_Provenance):  # api-removals.toml
    use: list[Use]


class BoolVariables(TypedDict):
    variables: list[str]
    true: list[str]
    false: list[str]
    message: str


class EnumVariable(TypedDict):
    flag: str
    message: str
    legacy: list[str]
    since: dict[str, list[str]]  # jax release -> values accepted from it


class JaxEnv(_Span):  # jax-env.toml: the values jax's config.py accepts
    bool: BoolVariables
    enum: dict[str, EnumVariable]


# name: jax-cuda12-plugin or jax-cuda13-plugin; from: where the pins were read (the plugin's with-cuda extra, or
# jax's cudaNN one before the plugin had one); versions: consecutive plugin releases whose extra pins the same;
# pins: its requirements on nvidia-* wheels. The functional form: `from` is a Python keyword.
PluginRun = TypedDict("PluginRun", {"name": str, "from": str, "versions": list[str], "pins": list[str]})


class ExtraRun(TypedDict):
    name: str  # a jax extra, normalised as pip compares them: cuda12-pip, rocm
    versions: list[str]  # consecutive jax releases whose extra installs the same
    installs: list[str]  # its requirements on jaxlib and jax's plugins, the release itself written {V}


class CudaExtra(_Span):  # cuda-extra.toml: what jax's accelerator extras install, derived from wheel METADATA
    plugin: list[PluginRun]
    extra: list[ExtraRun]


class PinRun(TypedDict):
    versions: list[str]  # consecutive jax releases whose extra pins the same
    pins: list[str]  # its requirements on the named wheels


class TpuExtra(_Span):  # tpu-extra.toml: what jax[tpu]==V pins, derived from each jax wheel's METADATA
    release: list[PinRun]


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


class CudaBuilds(_Provenance):  # cuda-builds.toml
    names: dict[str, str]  # wheel -> the library's name in jax's message
    compare: list[Compare]
    build: list[Build]


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


class CudaMinimums(_Provenance):  # cuda-minimums.toml: derived from the wheels of jax, its pjrt plugins, nvidia-*
    check: list[CheckRun]
    library: list[LibraryNumbers]


class ArchBuild(TypedDict):
    package: str  # jaxlib (its single-package +cuda builds) or a CUDA plugin
    versions: list[str]  # consecutive releases that carry the same code
    sass: list[int]  # a cubin for each capability XY
    ptx: list[int]  # PTX for each capability XY
    read_from: str  # "wheel" (its fatbinaries) or ".bazelrc" (at its tag)


class CudaArchs(_Provenance):  # cuda-archs.toml: derived from the plugins' wheels and .bazelrc at jaxlib's tags
    build: list[ArchBuild]


SHAPES: dict[str, Any] = {
    "jax-minimum-jaxlib.toml": MinimumJaxlib,
    "jax-requires.toml": JaxRequires,
    "declared-requires.toml": DeclaredRequires,
    "numpy-builds.toml": NumpyBuilds,
    "jaxlib-wheels.toml": JaxlibWheels,
    "api-removals.toml": ApiRemovals,
    "jax-env.toml": JaxEnv,
    "cuda-extra.toml": CudaExtra,
    "cuda-minimums.toml": CudaMinimums,
    "cuda-archs.toml": CudaArchs,
    "cuda-builds.toml": CudaBuilds,
    "tpu-extra.toml": TpuExtra,
}


@functools.cache
def load(path: Path) -> dict[str, Any]:
    """A table of tables/, checked against its shape in SHAPES (a file without one is an error too)."""
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    shape = SHAPES.get(path.name)
    if shape is None:
        raise TableError(f"{path.name}: no shape is declared for it in rules/tablefiles.py")
    if wrong := typecheck.problem(data, shape, path.name, closed=True):
        raise TableError(wrong)
    return data
