"""`envaudit [audit]`: collect -> evaluate -> probe, and the report written (commands/_shared.py runs it, as it
does for the other verbs that audit or write a report)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from envaudit.commands import options
from envaudit.commands._shared import audited, emit, known_devices
from envaudit.commands.options import Command, Judging, Output, Probing


@dataclass(frozen=True)
class AuditOptions:
    quick: bool = False
    probing: Probing = field(default_factory=Probing)
    output: Output = field(default_factory=Output)
    judging: Judging = field(default_factory=Judging)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="no probes, no jax import: facts and rules only")
    options.add_probing(p)
    options.add_output(p)


def parse(parsed: argparse.Namespace) -> AuditOptions:
    return AuditOptions(
        quick=parsed.quick,
        probing=options.probing(parsed),
        output=options.output(parsed),
        judging=options.judging(parsed),
    )


def run(o: AuditOptions) -> int:
    report = audited(o.probing, o.output.quiet, o.judging, quick=o.quick)
    return emit(known_devices(report, o.probing), o.output, o.judging)


COMMAND = Command(
    "audit",
    "collect facts, evaluate rules, run probes (the default)",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit", "audit this environment: facts, rules and probes (`audit` is the default verb)"),
        ("envaudit --quick -f json -o report.json", "facts and rules only (no jax import), the JSON report to a file"),
        ("envaudit --python ~/envs/ntk/bin/python -v", "another interpreter's environment, every detail shown"),
    ),
)
