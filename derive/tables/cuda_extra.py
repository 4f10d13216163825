"""Derive what jax's accelerator extras install, from the METADATA of each released wheel (the file pip reads):

- `plugin`: for each release of jax-cuda12-plugin and jax-cuda13-plugin, the nvidia-* wheels its CUDA extra pins
  (`with_cuda`, `with-cuda` from 0.4.30); for the plugin releases whose wheel has no such extra (0.4.22-0.4.29),
  the nvidia-* pins of jax's own `cudaNN` extra at the same release, which installed them beside the plugin then;
- `extra`: for each jax release and each of its CUDA and ROCm extras (cuda, cuda12, cuda12-pip, cuda12-local,
  cuda11-pip, ..., names normalised as pip compares them), what it installs of jaxlib and jax's own plugins:
  `jaxlib=={V}+cuda12.cudnn89` (the single-package CUDA jaxlib from jax's own index, to 0.4.29) or
  `jax-cuda12-plugin[with-cuda]=={V}` and the pjrt that plugin requires; a plugin requirement is written as the
  release pip picks from the index (jax 0.4.37's `<=0.4.37,>=0.4.36` installs plugin 0.4.36: there is no 0.4.37),
  and the release itself is written `{V}`, so that runs of releases share a row.

pip check does not read an extra's requirements: the `<wheel>-outside-jax-pin` checks read `plugin`, and a plan of
`jax[EXTRA]==V` models what `extra` says it installs (a `+cuda12` jaxlib gets the build checks an installed one
gets). Written to envaudit/rules/tables/cuda-extra.toml; each METADATA is ranged out of the remote wheel once and
cached, so a second run writes the same bytes.

usage: python -m derive.tables.cuda_extra [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from derive.sources import wheels
from derive.tables.declared import release_metadata
from envaudit.rules.extras import CUDA_EXTRA

ROOT = Path(__file__).resolve().parents[2]
TABLE = CUDA_EXTRA.path
PLUGINS = {"jax-cuda12-plugin": "cuda12", "jax-cuda13-plugin": "cuda13"}  # plugin -> jax's extra that installs it
PLUGIN_EXTRA = "with-cuda"
JAX_EXTRA = re.compile(r"^(cuda|rocm)")  # the accelerator extras a plan models (tpu: tpu_extra.py)


def _requirements(declared: list[str]) -> list[Requirement]:
    found = []
    for text in declared:
        try:
            found.append(Requirement(text))
        except InvalidRequirement:
            continue
    return found


def _under(req: Requirement, extra: str) -> bool:
    """Whether the requirement applies under that extra on Linux (pip normalises extra names: with_cuda is
    with-cuda)."""
    if req.marker is None:
        return False
    for spelling in {extra, extra.replace("-", "_")}:
        if req.marker.evaluate({"extra": spelling, "sys_platform": "linux", "platform_system": "Linux"}):
            return True
    return False


def _text(req: Requirement, release: str | None = None) -> str:
    """A requirement normalised (name, sorted extras and specifiers); the release itself written {V}."""
    extras = f"[{','.join(sorted(canonicalize_name(e) for e in req.extras))}]" if req.extras else ""
    specs = []
    for spec in sorted(req.specifier, key=str):
        public, plus, label = spec.version.partition("+")
        stem, star = (public[:-2], ".*") if public.endswith(".*") else (public, "")
        specs.append(f"{spec.operator}{'{V}' if stem == release else stem}{star}{plus}{label}")
    return f"{canonicalize_name(req.name)}{extras}{','.join(specs)}"


def nvidia_pins(declared: list[str], extra: str) -> list[str]:
    """The extra's requirements on nvidia-* wheels, normalised."""
    return sorted(
        _text(req)
        for req in _requirements(declared)
        if canonicalize_name(req.name).startswith("nvidia-") and _under(req, extra)
    )


def _extras(fields: dict[str, list[str]]) -> list[str]:
    return sorted({canonicalize_name(e) for e in fields.get("Provides-Extra", [])})


def plugin_rows(jax: dict[str, dict[str, list[str]]], cache: Path, offline: bool) -> list[dict[str, Any]]:
    """One row per plugin release with pins: the plugin's own CUDA extra, else jax's extra at that release."""
    rows = []
    for plugin, extra in PLUGINS.items():
        for version, fields in release_metadata(plugin, cache, offline).items():
            pins, source = nvidia_pins(fields.get("Requires-Dist", []), PLUGIN_EXTRA), f"{plugin}[{PLUGIN_EXTRA}]"
            if not pins and version in jax:
                pins, source = nvidia_pins(jax[version].get("Requires-Dist", []), extra), f"jax[{extra}]"
            if pins:
                rows.append({"plugin": plugin, "version": version, "from": source, "pins": pins})
    return sorted(rows, key=lambda r: (r["plugin"], Version(r["version"])))


def chosen(req: Requirement, released: list[str]) -> str | None:
    """The release pip installs for a requirement: the newest final release it allows."""
    allowed = [v for v in released if req.specifier.contains(v)]
    return max(allowed, key=Version) if allowed else None


def for_the_plan(project: str, cache: Path, offline: bool) -> set[str]:
    """The releases with a wheel for what a plan assumes unless told (CPython 3.11 on Linux x86_64): pip on that
    Python passes over one without (jax-rocm7-plugin 0.10.1.post1 has a cp312 wheel only; pip takes 0.10.1)."""
    data = wheels.project_json(project, cache, offline)
    return {
        version
        for version, files in data["releases"].items()
        if any(
            ("-cp311-" in f["filename"] or "-py3-none-" in f["filename"]) and "x86_64" in f["filename"] for f in files
        )
    }


def extra_rows(jax: dict[str, dict[str, list[str]]], cache: Path, offline: bool) -> list[dict[str, Any]]:
    """One row per jax release and accelerator extra: what it installs of jaxlib and jax's plugins, with what the
    plugin release pip picks requires of jax's own distributions in turn (its pjrt, at the same release)."""
    found = []
    for version, fields in jax.items():
        for extra in _extras(fields):
            if JAX_EXTRA.match(extra) and (reqs := _installed_by(fields, extra)):
                found.append((extra, version, reqs))
    plugins = {canonicalize_name(r.name) for _, _, reqs in found for r in reqs if r.name.endswith("-plugin")}
    metadata = {plugin: release_metadata(plugin, cache, offline) for plugin in sorted(plugins)}
    rows = []
    for extra, version, reqs in found:
        texts = set()
        for req in reqs:
            released = metadata.get(canonicalize_name(req.name), {})
            installable = for_the_plan(canonicalize_name(req.name), cache, True) if released else set()
            # a release without a CPython 3.11 wheel only where none has one (jax 0.11 on: Python 3.12 and newer)
            picked = chosen(req, [v for v in released if v in installable]) or chosen(req, list(released))
            if picked is None:  # jaxlib, or a plugin release the index does not have: as declared
                texts.add(_text(req, version))
                continue
            texts.add(_text(Requirement(f"{req.name}[{','.join(req.extras)}]=={picked}"), version))
            texts |= {_text(r, version) for r in _own(released[picked].get("Requires-Dist", []))}
        rows.append({"extra": extra, "version": version, "installs": sorted(texts)})
    return sorted(rows, key=lambda r: (r["extra"], Version(r["version"])))


def _own(declared: list[str]) -> list[Requirement]:
    """The unconditional requirements on jaxlib and jax's own distributions."""
    return [r for r in _requirements(declared) if r.marker is None and _jax_own(r)]


def _jax_own(req: Requirement) -> bool:
    return re.match(r"^jax(lib)?(-|$)", canonicalize_name(req.name)) is not None


def _installed_by(fields: dict[str, list[str]], extra: str) -> list[Requirement]:
    """The extra's requirements on jaxlib and jax's own distributions (jax-cuda12-plugin, jax-rocm60-plugin, ...)."""
    return [r for r in _requirements(fields.get("Requires-Dist", [])) if _jax_own(r) and _under(r, extra)]


def _grouped(rows: list[dict[str, Any]], key: str, same: tuple[str, ...]) -> list[dict[str, Any]]:
    """Runs of consecutive releases, within each value of key."""
    grouped: list[dict[str, Any]] = []
    for value in sorted({r[key] for r in rows}):
        grouped += wheels.runs([r for r in rows if r[key] == value], (key, *same))
    return grouped


def render(plugins: list[dict[str, Any]], extras: list[dict[str, Any]], read: str) -> str:
    versions = [v for row in extras for v in row["versions"]]
    lines = [
        "# What jax's accelerator extras install, read from the METADATA of each released wheel: DERIVED by",
        "# derive/tables/cuda_extra.py, do not edit by hand. [[plugin]]: the nvidia-* wheels a CUDA plugin release",
        "# pins (its with-cuda extra; before it had one, jax's cudaNN extra at the same release). [[extra]]: what",
        "# jax[EXTRA]==V installs of jaxlib and jax's plugins, {V} standing for V. Rows are runs of consecutive",
        "# releases that pin the same; a release no row lists is unknown (jax has wheels from 0.4.16).",
        f"source = \"{wheels.PYPI.format(name='jax')} and the CUDA plugins' (each release's wheel METADATA)\"",
        f'read = "{read}"',
        f'covers_from = "{min(versions, key=Version)}"',
        f'covers_to = "{max(versions, key=Version)}"',
    ]
    for row in plugins:
        lines += ["", "[[plugin]]", f'name = "{row["plugin"]}"', f'from = "{row["from"]}"']
        lines += [f"versions = {wheels.toml_list(row['versions'])}", f"pins = {wheels.toml_list(row['pins'])}"]
    for row in extras:
        lines += ["", "[[extra]]", f'name = "{row["extra"]}"', f"versions = {wheels.toml_list(row['versions'])}"]
        lines += [f"installs = {wheels.toml_list(row['installs'])}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    jax = release_metadata("jax", cache, options.offline)
    plugins = _grouped(plugin_rows(jax, cache, options.offline), "plugin", ("from", "pins"))
    extras = _grouped(extra_rows(jax, cache, options.offline), "extra", ("installs",))
    newest = wheels.newest_upload("jax", jax, cache)
    read = f"{newest}, {len(jax)} jax releases, {sum(len(r['versions']) for r in plugins)} plugin releases"
    wheels.write_table(options, render(plugins, extras, read), read, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
