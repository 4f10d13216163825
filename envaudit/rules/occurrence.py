"""What a code check returns: each occurrence of its problem, carrying its own words and its own fix.

A check computes the fix from the same values it found, where it found them, so nothing downstream reads a
sentence back to recover a package name or a version: the detail is for people, the fix for the shell.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envaudit.model.fixes import Fix
from envaudit.model.report import Severity


@dataclass(frozen=True)
class Occurrence:
    detail: str  # what was found, for people
    fix: Fix = field(default_factory=Fix)  # what fixes this occurrence here; empty where no command can (the check's
    # own words then say what to do, in the detail)
    severity: Severity | None = None  # where this occurrence is less (or more) than the check's own: its severity
    about: str = ""  # what this occurrence is about where a check has one finding for each (a distribution): its
    # finding is then `<check>-<about>`, which a cause names by "@<about>:error"
