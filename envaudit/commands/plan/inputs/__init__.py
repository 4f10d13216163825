"""What `envaudit plan` reads: requirements files, pyproject.toml, uv.lock, pylock.toml and pip's installation report.

Each input is read once, bounded (`files.py`), into values (`values.py`); what it selects for the plan's target is
then evaluated for that target's markers (`markers.py`), and `gather.py` puts the inputs together: what each says is
installed, where each requirement line stands, and the one-line error for everything a plan cannot evaluate exactly.
This package's `__init__` holds `PlanError`, `Unresolved` and the names of the input files alone, so that `plan.py`,
which the command line loads, uses them without loading packaging or building the values' dataclasses (5 ms).
"""

from __future__ import annotations

import os
import re
from typing import Literal

from envaudit.model.exitcodes import BadInput

Kind = Literal["requirements", "pyproject", "uv.lock", "pylock", "pip-report"]
# PEP 751's names of a lock file: pylock.toml, or pylock.NAME.toml (https://packaging.python.org/en/latest/
# specifications/pylock-toml/#file-name: r"^pylock\.([^.]+\.)?toml$")
PYLOCK = re.compile(r"^pylock\.([^.]+\.)?toml$")


class PlanError(BadInput, ValueError):
    """A requirement, input file or flag that a plan cannot evaluate; the message is one line."""


class Unresolved(PlanError):
    """Inputs that hold no resolution of an audited stack: nothing audited in them, or requirements whose versions a
    resolver would have to choose (the message names the command that makes one). Read as they are, not malformed:
    `plan --skip-unresolved` (the pre-commit hook's) notes them and goes on."""


def kind(word: str) -> Kind | None:
    """The kind of input file a plan's argument names, by its name (a requirement string has no such name):
    pyproject.toml, uv.lock, a pylock.toml, a requirements *.txt."""
    if re.search(r"[\s=<>!~;@\[]", word):
        return None
    base = os.path.basename(word)
    if base == "pyproject.toml":
        return "pyproject"
    if base == "uv.lock":
        return "uv.lock"
    if PYLOCK.match(base):
        return "pylock"
    return "requirements" if base.endswith(".txt") and len(base) > 4 else None
