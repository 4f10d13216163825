"""conda's inputs: an environment.yml (what `conda env create -f` installs), and what conda says an environment holds
(`conda list --export`, `conda list --explicit`, `conda list --json`).

A conda spec is a MatchSpec, read as conda 26 reads one (conda/models/match_spec.py, `_parse_spec_str`): a `#`
comment and a `CHANNEL::` prefix stripped, then `NAME VERSION BUILD` or `NAME=VERSION=BUILD`. Its version is exact
where conda matches one release: `==V`, `=V=BUILD`, `V BUILD`, a bare `V`; `=V` alone is fuzzy (`_sanitize_version_str`:
"=1.2.3" -> "1.2.3*", every release that starts so), and so are `*`, a range or no version: such a spec is a
requirement that is not pinned, which a plan reads only with a resolution (`conda env export`, `conda list
--export`). The `pip:` list of an environment.yml holds pip's requirement lines, which pip installs after conda's.

`conda list --export` writes `# platform: SUBDIR` then one `NAME=VERSION=BUILD` line per package (conda/cli/
main_list.py, `print_explicit`'s sibling `list_packages(..., format="export")`), `--explicit` an `@EXPLICIT` line then
each package's URL (its file name `NAME-VERSION-BUILD.conda` or `.tar.bz2`), `--json` an array of objects with
`name`, `version`, `build_string`, `channel` (pip's packages as channel `pypi`).

A conda package's name is the distribution's on conda-forge for the jax stack (jax, jaxlib, numpy, flax, optax); its
build string says what it was built for: conda-forge's jaxlib is one package per CUDA build (`cuda120py311h..._202`
is CUDA 12.0, `cpu_py311h..._1` the CPU: the file names of tests/fixtures/inputs-round3), which `accelerator` reads.
What conda installs comes from a conda channel, not the package index, so a plan of it is not built from the index.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from envaudit.commands.plan.inputs import PlanError, files
from envaudit.commands.plan.inputs.values import Declared, Resolved, Source
from envaudit.model.scope import canonicalize_name
from envaudit.model.typecheck import problem

NAME = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.+-]*)\s*(.*)$")  # conda's _NAME_VERSION_RE, roughly
OPERATOR = re.compile(r"[<>!~,|]")
# conda-forge's jaxlib build strings: cuda{major}{minor}py{py}h{hash}_{n}, cpu_py{py}h{hash}_{n}; newer builds name
# the CUDA major and minor the same way (cuda126py312...)
CUDA_BUILD = re.compile(r"^cuda(\d{2,3})(?=py|_|$)")
ARCHIVE = re.compile(r"^(?P<name>.+)-(?P<version>[^-]+)-(?P<build>[^-]+)\.(conda|tar\.bz2)$")
EXPORT_HEADER = re.compile(r"^# platform: \S+\s*$|^@EXPLICIT\s*$", re.M)


@dataclass(frozen=True)
class Spec:
    name: str  # canonical
    specifier: str  # PEP 440 form of its version: "==0.4.30", "==0.4.*" (fuzzy), ">=0.4" or ""
    build: str = ""


def spec(text: str, source: Source) -> Spec:
    """A MatchSpec's name, version (as a PEP 440 specifier) and build."""
    text = text.split("#", 1)[0].strip()
    if "::" in text:
        text = text.split("::", 1)[1]
    if "[" in text or "(" in text:
        raise PlanError(f"{source}: a conda spec with brackets, which a plan does not read: write NAME=VERSION=BUILD")
    found = NAME.match(text)
    if found is None:
        raise PlanError(f"{source}: not a conda package spec")
    name, rest = found[1], found[2].strip()
    if not rest:
        return Spec(canonicalize_name(name), "")
    if rest.startswith("=") and not rest.startswith("=="):
        parts = rest[1:].split("=", 1)
    elif rest.startswith("=="):
        parts = [rest]
    else:
        parts = (
            rest.replace("=", " ", 1).split(None, 1) if not OPERATOR.search(rest.split()[0]) else rest.split(None, 1)
        )
    version = parts[0].strip()
    build = parts[1].strip() if len(parts) > 1 else ""
    fuzzy = rest.startswith("=") and not rest.startswith("==") and not build
    return Spec(canonicalize_name(name), _specifier(version, fuzzy), build)


def _specifier(version: str, fuzzy: bool) -> str:
    if version in ("", "*"):
        return ""
    if version.startswith("=="):
        return version
    if OPERATOR.search(version) or version[0] in "<>=!~":
        return version
    if version.endswith("*"):
        return f"=={version.rstrip('.*')}.*"
    return f"=={version}.*" if fuzzy else f"=={version}"


def accelerator(build: str) -> tuple[str, str] | None:
    """What a conda-forge jaxlib build string says of its platform: ("cuda", "12.0"), ("cpu", ""), or None."""
    if found := CUDA_BUILD.match(build):
        digits = found[1]
        return "cuda", f"{digits[:-1]}.{digits[-1]}"
    if build.startswith("cuda"):
        return "cuda", ""
    return ("cpu", "") if build.startswith("cpu") else None


class EnvironmentDocument(TypedDict, total=False):
    name: str
    channels: list[str]
    dependencies: list[object]


@dataclass(frozen=True)
class Environment:
    path: str
    conda: tuple[tuple[str, Source], ...] = ()  # each conda spec as written, with where
    pip: tuple[tuple[str, Source], ...] = ()  # each line of its pip: list
    options: tuple[str, ...] = field(default=())  # pip option lines that take distributions from elsewhere


def load_environment(path: str) -> Environment:
    document = files.read_yaml(path, "a conda environment file")
    if not isinstance(document, dict):
        raise PlanError(f"{path} must be a YAML mapping (conda's environment file: name, channels, dependencies)")
    if found := problem(document, EnvironmentDocument, path):
        raise PlanError(found.replace("JSON object", "mapping").replace("JSON array", "list"))
    conda: list[tuple[str, Source]] = []
    pip: list[tuple[str, Source]] = []
    options: list[str] = []
    for i, item in enumerate(document.get("dependencies") or (), start=1):
        where = Source(path, section=f"dependencies item {i}")
        if isinstance(item, str):
            conda.append((item, where))
        elif isinstance(item, dict) and list(item) == ["pip"] and isinstance(item["pip"], list):
            for j, line in enumerate(item["pip"], start=1):
                here = Source(path, section=f"dependencies pip item {j}")
                if not isinstance(line, str):
                    raise PlanError(f"{here}: a pip requirement must be a string")
                if line.startswith(("-r", "--requirement", "-c", "--constraint")):
                    raise PlanError(f"{here}: it includes a file; plan that file beside it (envaudit plan -r FILE)")
                if line.startswith(("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--no-index")):
                    options.append(f"{here}: {line.split()[0].split('=')[0]}")
                elif not line.startswith("-") or line.startswith(("-e", "--editable")):
                    pip.append((line, here))
        elif isinstance(item, (int, float)):  # `- 3.11` is YAML's number, not a spec conda reads
            raise PlanError(f"{where}: a number, not a conda package spec (quote it)")
        else:
            raise PlanError(f"{where}: neither a conda spec nor a pip: list")
    return Environment(path, tuple(conda), tuple(pip), tuple(options))


def declared(environment: Environment) -> list[Declared]:
    """The environment's conda specs, as requirements: each one's version as a PEP 440 specifier, its build."""
    found = []
    for text, where in environment.conda:
        read = spec(text, where)
        found.append(Declared(read.name, text, where, read.specifier, build=read.build))
    return found


def python(environment: Environment) -> str:
    """The Python its `python` spec asks for, as a requires-python specifier ("" where it names none)."""
    for text, where in environment.conda:
        read = spec(text, where)
        if read.name == "python" and read.specifier:
            major_minor = ".".join(read.specifier.lstrip("=<>!~").rstrip(".*").split(".")[:2])
            return f"=={major_minor}.*" if read.specifier.startswith("==") else read.specifier
    return ""


def is_export(text: str) -> bool:
    """Whether a .txt file is conda's (`conda list --export` or `--explicit`) rather than pip's requirements."""
    head = "\n".join(text.splitlines()[:8])
    return EXPORT_HEADER.search(head) is not None


def load_export(path: str, text: str) -> Resolved:
    """`conda list --export` (NAME=VERSION=BUILD lines) or `--explicit` (URLs after @EXPLICIT)."""
    versions: dict[str, str] = {}
    builds: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith(("#", "@")):
            continue
        if "://" in line or line.startswith("file:"):
            found = ARCHIVE.match(line.split("#", 1)[0].rsplit("/", 1)[-1])
            if found is None:
                raise PlanError(f"{path} line {number}: not a conda package's URL (NAME-VERSION-BUILD.conda)")
            name, version, build = found["name"], found["version"], found["build"]
        else:
            parts = line.split("=")
            if len(parts) != 3 or not all(parts):
                raise PlanError(f"{path} line {number}: not NAME=VERSION=BUILD, as `conda list --export` writes")
            name, version, build = parts
        _add(versions, builds, lines, canonicalize_name(name), version, build, number, path)
    return _resolved(path, versions, builds, lines, "conda")


class CondaListItem(TypedDict, total=False):
    name: str
    version: str
    build_string: str
    channel: str


def load_json(path: str, document: list[object]) -> Resolved:
    """`conda list --json`: each package's name, version, build and channel (`pypi` for what pip installed)."""
    if found := problem(document, list[CondaListItem], path):
        raise PlanError(found)
    versions: dict[str, str] = {}
    builds: dict[str, str] = {}
    from_pip: set[str] = set()
    for i, item in enumerate(document):
        if not isinstance(item, dict) or not item.get("name") or not item.get("version"):
            raise PlanError(f"{path} item {i + 1}: a package needs its name and version (`conda list --json`)")
        name = canonicalize_name(str(item["name"]))
        _add(versions, builds, {}, name, str(item["version"]), str(item.get("build_string") or ""), 0, path)
        if item.get("channel") == "pypi":
            from_pip.add(name)
    resolved = _resolved(path, versions, builds, {}, "conda")
    elsewhere = {n: w for n, w in resolved.elsewhere.items() if n not in from_pip}
    return Resolved(resolved.versions, resolved.source, "", builds=resolved.builds, elsewhere=elsewhere)


def _add(
    versions: dict[str, str],
    builds: dict[str, str],
    lines: dict[str, int],
    name: str,
    version: str,
    build: str,
    number: int,
    path: str,
) -> None:
    if name in versions and versions[name] != version:
        raise PlanError(f"{path}: {name} twice, {versions[name]} and {version}")
    versions[name], builds[name] = version, build
    if number:
        lines[name] = number


def _resolved(
    path: str, versions: dict[str, str], builds: dict[str, str], lines: dict[str, int], channel: str
) -> Resolved:
    return Resolved(
        versions,
        Source(path),
        "",
        lines=lines,
        builds={n: b for n, b in builds.items() if b},
        elsewhere={n: f"a {channel} channel" for n in versions},
    )


def selected_python(versions: Iterable[tuple[str, str]]) -> str:
    """The Python a resolution installs (its `python` package), as a requires-python specifier, or ""."""
    for name, version in versions:
        if name == "python" and version:
            return f"=={'.'.join(version.split('.')[:2])}.*"
    return ""
