"""Seam for the known-answer probes (issue: probes). Until they land the audit runs none.

`runner_from_args` returns the callable the audit uses to run probes for a set of facts, or None.
"""

from __future__ import annotations

import argparse

from envaudit.audit import ProbeRunner


def runner_from_args(args: argparse.Namespace) -> ProbeRunner | None:
    del args
    return None
