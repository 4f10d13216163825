"""Derive the source excerpt of each error signature, and of each line jax's messages table cites (where jax says a
message, `at`: envaudit/rules/tables/derived/jax-messages.toml): the lines its `source` URL names, read from a git
mirror of that repository at that tag or commit, written to tests/fixtures/signatures/sources.toml with their
provenance (an excerpt the file already holds is kept where no mirror of its repository is given: its tag or commit
is fixed). The tests check each signature's text against its excerpt (tests/rules/test_signatures.py), and each
message of the table against its line (tests/rules/test_jax_messages.py), so a text is the source's, not a
recollection of it.

A source URL is https://github.com/OWNER/REPO/blob/REF/PATH#LN. The mirrors are bare git directories, one per
repository, given as OWNER/REPO=GIT_DIR (XLA's commits may be read from a fork that shares its history). A source
with no mirror given, or no line, is listed as not derived, with the reason.

usage: python -m scripts.signature_sources OWNER/REPO=GIT_DIR [...]
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from datetime import date
from pathlib import Path

from envaudit.rules.jax_messages import MESSAGES
from envaudit.rules.registry import registry

ROOT = Path(__file__).resolve().parent.parent

OUT = ROOT / "tests" / "fixtures" / "signatures" / "sources.toml"
URL = re.compile(r"^https://github\.com/([^/]+/[^/]+)/blob/([^/]+)/(.+?)(?:#L(\d+))?$")
SPAN = 12  # lines read from the one named: a message's literal spans a few


def excerpt(git_dir: str, ref: str, path: str, line: int) -> str:
    shown = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{ref}:{path}"], capture_output=True, text=True, check=True
    )
    return "\n".join(shown.stdout.splitlines()[line - 1 : line - 1 + SPAN])


def _derived_before() -> dict[str, str]:
    """The excerpts the file holds, by URL: kept for a repository no mirror is given for this time (XLA's is over
    the mirror tool's size limit)."""
    if not OUT.exists():
        return {}
    return {s["url"]: s["excerpt"] for s in tomllib.loads(OUT.read_text(encoding="utf-8")).get("source", [])}


def quoted(text: str) -> str:
    """A TOML basic string of the text."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def main(argv: list[str]) -> int:
    mirrors = dict(arg.split("=", 1) for arg in argv)
    out = [
        "# Each error signature's source, as its repository holds it at the tag or commit its URL names: the lines",
        "# from the one named (scripts/signature_sources.py, from git mirrors; do not edit by hand).",
        f"# derived {date.today().isoformat()}",
        "",
    ]
    missing = []
    before = _derived_before()
    cited = {c.signature.source for c in registry().signatures.compiled} | {m["at"] for m in MESSAGES.load()["message"]}
    for url in sorted(cited):
        found = URL.match(url)
        if found is not None and found[4] is not None and found[1] in mirrors:
            lines = excerpt(mirrors[found[1]], found[2], found[3], int(found[4]))
        elif url in before:  # a tag or commit does not change: what a mirror gave before still holds
            lines = before[url]
        else:
            missing.append(url)
            continue
        out += ["[[source]]", f"url = {quoted(url)}", f"excerpt = {quoted(lines)}", ""]
    out += ["# not derived (no mirror of the repository here, or no line in the URL):"]
    out += [f"# {url}" for url in missing]
    OUT.write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"{OUT.relative_to(ROOT)}: {len(out)} lines; not derived: {len(missing)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
