"""Findings the user chose to ignore (`--ignore RULE[:REASON]`, `[tool.envaudit.ignore]`): shown, never counted.

An ignored rule's finding stays in the report, marked with the user's reason, and so does every finding it causes
(one root cause, one decision: ignoring the TF32 warning ignores the default-precision errors it explains). An
ignored finding counts toward no verdict, exit code or node line, and the plan fixes none of them: the states the
plan judges are marked the same way, so a step is never taken for what the user ignores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from envaudit.model.report import Finding

Ignores = Mapping[str, str]  # rule or check id -> the user's reason ("" if none)


def mark(findings: Iterable[Finding], ignore: Ignores) -> list[Finding]:
    """The findings, those of an ignored rule and those it causes marked with its reason (in their order)."""
    found = list(findings)
    if not ignore:
        return found
    return [_marked(f, ignore) for f in found]


def _marked(finding: Finding, ignore: Ignores) -> Finding:
    for rule in (finding.id, finding.caused_by):
        if rule and rule in ignore:
            return replace(finding, ignored=ignore[rule])
    return finding


def counted(findings: Iterable[Finding], ignore: Ignores) -> list[Finding]:
    """The findings that count: none of an ignored rule, none it causes."""
    return [f for f in mark(findings, ignore) if f.counts]
