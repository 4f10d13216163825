"""Derive which GPU architectures each jax CUDA build carries code for, written to
envaudit/rules/tables/cuda-archs.toml.

A CUDA plugin (jax-cuda12-plugin, jax-cuda13-plugin) is read from its released wheel: every fatbinary in its
shared objects lists the machine code (a cubin for one sm_XY) and the PTX (for one compute_XY) it holds. jaxlib's
single-package CUDA builds (jaxlib==V+cuda12.cudnn89 ...) were served by jax's own index, not PyPI: they are read
from the setting their wheels were built with, the CUDA compute capabilities in .bazelrc at the release's tag
(jaxlib-vV, up to the last release whose extras install one), in a bare git mirror of github.com/jax-ml/jax given
with --jax-git. From jaxlib 0.3.10 build/build.py leaves the list to .bazelrc ("which is used for wheel builds");
older tags let build.py's own default override it, and are not read. Where a plugin release has a tag, the script
compares its tag's .bazelrc with its wheel and prints the comparison: the wheel is the measurement that confirms
the reading; so are the aarch64 wheel of each plugin's newest release against its x86_64 one, and three pjrt wheels
(XLA, whose own kernels, such as the autotuner's RepeatBufferKernel, are built with the same setting).

The fatbinary layout read here (magic 0xBA55ED50, then entries of kind 1 = PTX, 2 = ELF cubin, each naming its
architecture as XY) is the one cuobjdump lists; nothing is executed. Each wheel is downloaded once and only its
result is kept in the cache (derived/cuda-archs/), so a second run writes the same bytes.

usage: python -m derive.tables.cuda_archs --jax-git DIR [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import hashlib
import io
import re
import struct
import subprocess
import tomllib
import urllib.request
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from packaging.version import Version

from derive.sources import wheels
from derive.tables.cuda_minimums import released as released
from envaudit.model.scope import PLUGIN
from envaudit.rules.cuda_archs import ARCHS
from envaudit.rules.extras import CUDA_EXTRA

ROOT = Path(__file__).resolve().parents[2]
TABLE = ARCHS.path
PLUGINS = ("jax-cuda12-plugin", "jax-cuda13-plugin")
FIRST_JAXLIB = Version("0.3.10")  # build.py's own default overrides .bazelrc before it
EXTRAS = CUDA_EXTRA.path
MAGIC = b"\x50\xed\x55\xba"  # 0xBA55ED50, little-endian
KINDS = {1: "ptx", 2: "sass"}
# `--repo_env HERMETIC_CUDA_COMPUTE_CAPABILITIES="sm_50,..."` (from 0.4.32), `--action_env
# TF_CUDA_COMPUTE_CAPABILITIES="..."` before; under `build:cuda`, or `build:cuda_v12` / `common:cuda_v13` from 0.7.2
SETTING = re.compile(
    r"^(?:build|common):(cuda(?:_v\d+)?)\s+--(?:action|repo)_env[\s=]+(?:TF|HERMETIC)_CUDA_COMPUTE_CAPABILITIES="
    r"\"?([^\"\s]+)\"?",
    re.M,
)


def fatbin_targets(data: bytes) -> dict[str, set[int]]:
    """The architectures the fatbinaries inside a shared object carry code for: {"sass": {50, ...}, "ptx": {...}}."""
    found: dict[str, set[int]] = {"sass": set(), "ptx": set()}
    start = data.find(MAGIC)
    while start >= 0 and start + 16 <= len(data):
        _, header, size = struct.unpack_from("<HHQ", data, start + 4)
        entry, end = start + header, min(start + header + size, len(data))
        while entry + 32 <= end:
            kind, _, entry_header, entry_size = struct.unpack_from("<HHIQ", data, entry)
            (arch,) = struct.unpack_from("<I", data, entry + 28)
            if kind in KINDS and 10 <= arch < 1000:
                found[KINDS[kind]].add(arch)
            if entry_header == 0:
                break
            entry += entry_header + entry_size
        start = data.find(MAGIC, start + 4)
    return found


def wheel_targets(wheel: dict[str, Any], cache: Path, offline: bool) -> dict[str, list[int]]:
    """The union of the targets of every shared object in a released wheel, computed once and kept in the cache."""
    path = cache / "derived" / "cuda-archs" / f"{wheel['filename']}.json"
    if path.exists():
        kept: dict[str, list[int]] = wheels.load_json(path)
        return kept
    if offline:
        raise SystemExit(f"{wheel['filename']}: not read yet (run once without --offline)")
    with urllib.request.urlopen(wheel["url"], timeout=300) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != wheel["digests"]["sha256"]:
        raise SystemExit(f"{wheel['filename']}: its sha256 is not the one PyPI lists")
    union: dict[str, set[int]] = {"sass": set(), "ptx": set()}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            if ".so" in name.rsplit("/", 1)[-1]:
                for kind, archs in fatbin_targets(archive.read(name)).items():
                    union[kind] |= archs
    result = {kind: sorted(archs) for kind, archs in union.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    wheels.dump_json(path, result)
    return result


def plugin_rows(cache: Path, offline: bool) -> list[dict[str, Any]]:
    """Each final plugin release with a Linux x86_64 wheel on PyPI, oldest first, with what its wheel carries."""
    rows = []
    for plugin in PLUGINS:
        by_version = released(plugin, cache, offline)
        targets = wheels.parallel(lambda wheel: wheel_targets(wheel, cache, offline), list(by_version.values()))
        for version, found in zip(by_version, targets, strict=True):
            if found["sass"] or found["ptx"]:
                rows.append({"package": plugin, "version": version, **found})
    return sorted(rows, key=lambda r: (r["package"], Version(r["version"])))


def aarch64_agrees(plugin: str, version: str, cache: Path, offline: bool) -> bool | None:
    """Whether the release's Linux aarch64 wheel (a Jetson's, a Grace host's) carries what its x86_64 one does; None
    where it has none."""
    data = wheels.project_json(plugin, cache, True)
    files = sorted((f for f in data["releases"][version] if "aarch64" in f["filename"]), key=lambda f: f["filename"])
    if not files:
        return None
    wheel = {**files[0], "url": urljoin(wheels.PYPI.format(name=plugin), files[0]["url"])}
    x86 = released(plugin, cache, True)[version]
    return wheel_targets(wheel, cache, offline) == wheel_targets(x86, cache, offline)


def pjrt_sample(plugins: list[dict[str, Any]], cache: Path, offline: bool) -> list[tuple[dict[str, Any], Any]]:
    """(plugin row, its pjrt wheel) for the oldest and newest cuda12 and the newest cuda13 release that has a pjrt
    wheel (100-200 MB each: XLA itself, with its own kernels)."""
    picked = []
    for plugin, ends in (("jax-cuda12-plugin", (0, -1)), ("jax-cuda13-plugin", (-1,))):
        pjrt = released(plugin.replace("-plugin", "-pjrt"), cache, offline)
        rows = [r for r in plugins if r["package"] == plugin and r["version"] in pjrt]
        picked += [(rows[end], pjrt[rows[end]["version"]]) for end in ends if rows]
    return picked


def pjrt_agrees(row: dict[str, Any], wheel: dict[str, Any], cache: Path, offline: bool) -> bool:
    """Whether the pjrt wheel of the plugin's release carries the plugin's targets."""
    return wheel_targets(wheel, cache, offline) == {"sass": row["sass"], "ptx": row["ptx"]}


def setting(text: str, config: str) -> dict[str, list[int]] | None:
    """The targets a .bazelrc's CUDA config builds for: sm_XY is a cubin only, compute_XY a cubin and PTX
    (XLA's and TensorFlow's cuda_configure: "'compute_xy' refers to both PTX and SASS, 'sm_xy' refers to SASS
    only"); a list of bare X.Y values is a cubin for each and PTX for the highest only."""
    values = dict(SETTING.findall(text))
    listed = values.get(config) or values.get("cuda")  # one setting for every CUDA major before 0.7.2
    if listed is None:
        return None
    items = listed.split(",")
    if all(re.fullmatch(r"\d+\.\d+", i) for i in items):
        numbers = sorted(int(i.replace(".", "")) for i in items)
        return {"sass": numbers, "ptx": numbers[-1:]}
    sass = sorted({int(i.split("_")[1]) for i in items})
    return {"sass": sass, "ptx": sorted(int(i.split("_")[1]) for i in items if i.startswith("compute_"))}


def bazelrc(git: Path, tag: str) -> str | None:
    shown = subprocess.run(
        ["git", f"--git-dir={git}", "show", f"{tag}:.bazelrc"], capture_output=True, text=True, check=False
    )
    return shown.stdout if shown.returncode == 0 else None


def last_single_package() -> Version:
    """The newest jax release whose extras install a single-package CUDA jaxlib (`jaxlib==V+cuda12.cudnn91`), from
    the table cuda_extra.py derives from jax's wheels: after it jax's CUDA support is the plugins only."""
    with EXTRAS.open("rb") as handle:
        rows = tomllib.load(handle)["extra"]
    return max(Version(v) for row in rows if any("+cuda" in i for i in row["installs"]) for v in row["versions"])


def jaxlib_rows(git: Path) -> list[dict[str, Any]]:
    """Each jaxlib release tag (jaxlib-vV) from FIRST_JAXLIB to the last single-package CUDA build, with what its
    .bazelrc's `build:cuda` builds for (the tags, not PyPI: the +cuda wheels were served by jax's own index)."""
    listed = subprocess.run(
        ["git", f"--git-dir={git}", "tag", "--list", "jaxlib-v*"], capture_output=True, text=True, check=True
    )
    last, rows = last_single_package(), []
    for tag in listed.stdout.split():
        version = tag.removeprefix("jaxlib-v")
        if wheels.final(version) is None or not FIRST_JAXLIB <= Version(version) <= last:
            continue
        text = bazelrc(git, tag)
        found = setting(text, "cuda") if text is not None else None
        if found is not None:
            rows.append({"package": "jaxlib", "version": version, **found})
    return sorted(rows, key=lambda r: Version(r["version"]))


def compared(git: Path, plugins: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each plugin release whose jax-vV tag the mirror has: its tag's .bazelrc reading against its wheel's."""
    found = []
    for row in plugins:
        text = bazelrc(git, f"jax-v{row['version']}")
        if text is None:
            continue
        named = PLUGIN.match(row["package"])
        if named is None:
            continue
        config = f"cuda_v{named['major']}"
        said = setting(text, config)
        wheel = {"sass": row["sass"], "ptx": row["ptx"]}
        found.append({"package": row["package"], "version": row["version"], "bazelrc": said, "wheel": wheel})
    return found


def render(rows: list[dict[str, Any]], read: str) -> str:
    lines = [
        "# The GPU architectures each jax CUDA build carries code for: DERIVED by derive/tables/cuda_archs.py, do",
        "# not edit by hand. `sass`: a cubin for compute capability X.Y (XY); `ptx`: PTX for it, which the driver",
        "# compiles for any GPU of that capability or newer. The plugins are read from the fatbinaries in their",
        "# wheels; jaxlib's single-package CUDA builds (+cudaNN labels, from jax's own index) from the CUDA compute",
        "# capabilities in .bazelrc at their tag (jaxlib-vV). A release the table lacks is unknown.",
        'source = "the Linux x86_64 wheels on https://pypi.org/ of jax-cuda12-plugin and jax-cuda13-plugin; '
        '.bazelrc at the tags of https://github.com/jax-ml/jax"',
        f'read = "{read}"',
    ]
    for row in rows:
        lines += ["", "[[build]]", f'package = "{row["package"]}"', f"versions = {wheels.toml_list(row['versions'])}"]
        lines += [f"sass = [{', '.join(map(str, row['sass']))}]", f"ptx = [{', '.join(map(str, row['ptx']))}]"]
        lines += [f'read_from = "{row["read_from"]}"']
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.jax_git_options(__doc__, TABLE, argv)
    plugins = plugin_rows(cache, options.offline)
    jaxlibs = jaxlib_rows(options.jax_git)
    for row in plugins:
        row["read_from"] = "wheel"
    for row in jaxlibs:
        row["read_from"] = ".bazelrc"
    grouped = [
        *wheels.runs(jaxlibs, ("package", "sass", "ptx", "read_from")),
        *wheels.runs(plugins, ("package", "sass", "ptx", "read_from")),
    ]
    checked = compared(options.jax_git, plugins)
    agree = sum(c["bazelrc"] == c["wheel"] for c in checked)
    for c in checked:
        if c["bazelrc"] != c["wheel"]:
            print(f"{c['package']} {c['version']}: .bazelrc says {c['bazelrc']}, the wheel carries {c['wheel']}")
    print(f".bazelrc at the tag against the wheel: {agree} of {len(checked)} plugin releases agree")
    pjrt = [
        pjrt_agrees(row, wheel, cache, options.offline) for row, wheel in pjrt_sample(plugins, cache, options.offline)
    ]
    print(f"the pjrt wheel (XLA's own kernels) carries what the plugin does: {pjrt}")
    newest = [(p, max((r["version"] for r in plugins if r["package"] == p), key=Version)) for p in PLUGINS]
    arm = [aarch64_agrees(p, v, cache, options.offline) for p, v in newest]
    print(f"the aarch64 wheel carries what the x86_64 one does: {dict(zip(newest, arm, strict=True))}")
    read = (
        f"{len(plugins)} plugin wheels, {len(jaxlibs)} jaxlib tags; .bazelrc agrees with the wheel for {agree} of "
        f"{len(checked)} plugin releases with a tag, the aarch64 wheel with the x86_64 one for "
        f"{sum(a is True for a in arm)} of {len(newest)} newest releases, the pjrt wheel with the plugin for "
        f"{sum(pjrt)} of {len(pjrt)} (the oldest and newest cuda12, the newest cuda13)"
    )
    wheels.write_table(options, render(grouped, read), read, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
