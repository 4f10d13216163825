"""Rewrite the golden renderings (tests/golden/), the documentation's table of rules and, with --readme, the README's
sample audit.

python -m scripts.golden            # after a deliberate format change; review the diff
python -m scripts.golden --readme   # also: a real audit here, kept as tests/golden/readme-audit.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from envaudit.formats import render
from envaudit.model.report import Report
from tests import docs
from tests.golden import FORMATS, README_REPORT, REPORTS, SAMPLE_STYLE, path, readme_sample

ROOT = Path(__file__).resolve().parent.parent


TABLE_HEAD = "| id | severity | kind | title |\n|---|---|---|---|\n"


def rules_page() -> Path:
    """The page of the documentation that holds the table of rules (docs/rules.md), wherever it now is."""
    (page,) = [p for p in docs.pages() if TABLE_HEAD in docs.text(p)]
    return page


def rules_table(page: str) -> str:
    """The page's table of rules and checks, from the catalogue (tests/rules/test_data.py holds them equal)."""
    from envaudit import rules
    from envaudit.rules.api_removals import FAMILY

    entries = rules.catalogue()
    family = [e for e in entries if e.id.startswith(FAMILY)]  # a check per library: one row (`envaudit rules`)
    lines = []
    for e in entries:
        if not e.id.startswith(FAMILY):
            lines.append(f"| `{e.id}` | {e.severity} | {e.listed_as} | {e.title} |")
        elif e is family[0]:
            lines.append(
                f"| `{FAMILY}<library>` | {e.severity} | {e.listed_as} | a library uses a jax API that the installed "
                f"jax does not have: one check for each of the {len(family)} libraries of api-removals.toml "
                "(`envaudit rules` lists them; a warning where only functions off the everyday path call it) |"
            )
    rows = "\n".join(lines)
    start = page.index(TABLE_HEAD) + len(TABLE_HEAD)
    end = page.find("\n\n", start)
    return page[:start] + rows + (page[end:] if end >= 0 else "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", action="store_true", help="run a real audit for the README's sample too")
    args = parser.parse_args()
    for name, build in REPORTS.items():
        report = build()
        for suffix, fmt in FORMATS.items():
            path(name, suffix).write_text(render(report, fmt), encoding="utf-8")
    if args.readme:
        done = subprocess.run(
            [sys.executable, "-m", "envaudit", "--format", "json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        # a committed file names no machine path: this checkout and the home directory become placeholders
        raw = done.stdout.replace(str(ROOT), "/home/me/project").replace(str(Path.home()), "/home/me")
        data = json.loads(raw)
        data["host"] = {"hostname": "node01"}
        README_REPORT.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    rules = rules_page()
    rules.write_text(rules_table(docs.text(rules)), encoding="utf-8")
    readme = docs.text(docs.README)
    start, end = readme_sample(readme)
    report = Report.from_dict(json.loads(README_REPORT.read_text(encoding="utf-8")))
    docs.README.write_text(readme[:start] + render(report, "text", style=SAMPLE_STYLE) + readme[end:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
