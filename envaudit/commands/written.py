"""A verb's document delivered: to standard output, or with --output to a file written atomically
(files/safewrite.py: no link followed, no file half-written, a user's file never replaced by a broken one) and one
line on stderr saying so, unless -q."""

from __future__ import annotations

import sys
from pathlib import Path

from envaudit.files import safewrite


def deliver(text: str, output: Path | None, *, quiet: bool, verdict: str, what: str = "report") -> None:
    """`text` to stdout, or to `output` with a line on stderr naming the verdict and the file (none with -q)."""
    if output is None:
        sys.stdout.write(text)
        return
    safewrite.write(output, text)
    if not quiet:
        print(f"envaudit: {verdict}: {what} written to {output}", file=sys.stderr)
