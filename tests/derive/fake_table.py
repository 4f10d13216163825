"""A derivation as the refresh runs one, on a made-up project: a row per release of `fakeproj` (its JSON in the
cache), written to --output; each run leaves a mark in the cache, and FAKE_TABLE_FAIL makes it fail.

usage: python -m tests.derive.fake_table [--cache DIR] [--offline] [--output FILE]
"""

from __future__ import annotations

import os

from derive.sources import wheels
from envaudit.rules.table import TABLES


def main(argv: list[str] | None = None) -> int:
    options, cache, started = wheels.start_table(__doc__, TABLES / "fake.toml", argv)
    with (cache / "runs").open("a") as runs:
        runs.write("run\n")
    if os.environ.get("FAKE_TABLE_FAIL"):
        raise SystemExit("fakeproj: the index said no")
    releases = wheels.project_json("fakeproj", cache, options.offline)["releases"]
    lines = ["# a made-up table", 'source = "fakeproj"', 'read = "today"']
    for version in sorted(releases):
        files = ", ".join(f'"{f["filename"]}"' for f in releases[version])
        lines += ["", "[[release]]", 'package = "fakeproj"', f'versions = ["{version}"]', f"files = [{files}]"]
    wheels.write_table(options, "\n".join(lines) + "\n", "fakeproj", started)
    return 0
