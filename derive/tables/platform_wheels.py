"""Derive which platforms each release of jaxlib and of jax's CUDA plugins has a wheel for: the platform tags of the
files PyPI lists for each final release (`manylinux2014_x86_64`, `macosx_11_0_arm64`, `win_amd64`...), grouped into
the families pip installs on (linux-x86_64, linux-aarch64, macos-arm64, macos-x86_64, windows-amd64), in runs of
consecutive releases with the same families, written to envaudit/rules/tables/platform-wheels.toml.

jaxlib and the plugins are compiled: pip installs a release only where it has a wheel for the platform, so a plan
for native Windows with jax[cuda12], or for an Intel Mac with a jaxlib released after the last x86_64 macOS wheel,
cannot install (check `no-wheel-for-platform`). Only the index's file list is read (no wheel is downloaded), from
the cached PyPI JSON, so a second run writes the same bytes.

usage: python -m derive.tables.platform_wheels [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from derive.sources import wheels
from envaudit.rules.platform_wheels import PLATFORM_WHEELS

TABLE = PLATFORM_WHEELS.path
PROJECTS = ("jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin")


def family(platform_tag: str) -> list[str]:
    """The platform families a wheel's platform tag installs on ([] for one pip installs jax on nowhere we audit)."""
    if platform_tag.startswith(("manylinux", "musllinux", "linux")):
        machine = "x86_64" if platform_tag.endswith("x86_64") else "aarch64" if platform_tag.endswith("aarch64") else ""
        return [f"linux-{machine}"] if machine else []
    if platform_tag.startswith("macosx"):
        if platform_tag.endswith("universal2"):
            return ["macos-arm64", "macos-x86_64"]
        return (
            ["macos-arm64"] if platform_tag.endswith("arm64") else ["macos-x86_64"] if "x86_64" in platform_tag else []
        )
    if platform_tag == "win_amd64":
        return ["windows-amd64"]
    return []


def platforms(files: list[dict[str, Any]]) -> list[str]:
    """The families a release's wheels install on."""
    found: set[str] = set()
    for file in files:
        try:
            _, _, _, tags = parse_wheel_filename(file["filename"])
        except InvalidWheelFilename:
            continue  # an sdist: pip would build it, which these projects cannot do outside their own build
        found.update(name for tag in tags for name in family(tag.platform))
    return sorted(found)


def releases(project: str, cache: Any, offline: bool) -> list[dict[str, Any]]:
    data = wheels.project_json(project, cache, offline)
    rows = [
        {"version": version, "platforms": platforms(files)}
        for version, files in data["releases"].items()
        if wheels.final(version) is not None and files
    ]
    return sorted((r for r in rows if r["platforms"]), key=lambda r: Version(r["version"]))


def render(by_project: dict[str, list[dict[str, Any]]], read: str) -> str:
    newest = ", ".join(
        f"{wheels.toml_string(p)} = {wheels.toml_string(rows[-1]['versions'][-1])}" for p, rows in by_project.items()
    )
    lines = [
        "# The platforms each release of jaxlib and of jax's CUDA plugins has a wheel for (pip installs these compiled",
        "# releases nowhere else): DERIVED by derive/tables/platform_wheels.py from the files PyPI lists for each",
        "# final release, do not edit by hand. `platforms`: linux-x86_64, linux-aarch64, macos-arm64, macos-x86_64,",
        "# windows-amd64. Rows are runs of consecutive releases with the same platforms; a release the table lacks",
        "# (a pre-release, or one newer than the table) is unknown.",
        f'source = "{wheels.PYPI.format(name="NAME")} for {", ".join(PROJECTS)} (each release\'s file names)"',
        f'read = "{read}"',
        f"newest = {{ {newest} }}",
    ]
    for project, rows in by_project.items():
        for row in rows:
            lines += ["", "[[release]]", f"package = {wheels.toml_string(project)}"]
            lines += [f"versions = {wheels.toml_list(row['versions'])}"]
            lines += [f"platforms = {wheels.toml_list(row['platforms'])}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLE, argv)
    by_project = {project: releases(project, cache, options.offline) for project in PROJECTS}
    counted = sum(len(rows) for rows in by_project.values())
    dates = [wheels.newest_upload(p, [r["version"] for r in rows], cache) for p, rows in by_project.items()]
    read = f"{max(dates)}, {counted} releases of {len(PROJECTS)} projects"
    grouped = {project: wheels.runs(rows, ("platforms",)) for project, rows in by_project.items()}
    wheels.write_table(options, render(grouped, read), read, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
