"""`envaudit rules [ID]`: what envaudit knows, listed, or one rule or check shown in full."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from envaudit.commands.options import Command
from envaudit.model.exitcodes import Exit, UsageError


@dataclass(frozen=True)
class RulesOptions:
    id: str | None = None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?")


def parse(parsed: argparse.Namespace) -> RulesOptions:
    return RulesOptions(parsed.id)


def run(o: RulesOptions) -> int:
    from envaudit import rules as knowledge

    entries = knowledge.catalogue()
    if o.id is None:
        width = max(len(e.id) for e in entries)
        for e in entries:
            print(f"{e.id.ljust(width)}  {e.severity:<4}  {e.listed_as:<5}  {e.title}")
        return Exit.OK
    match = [e for e in entries if e.id == o.id]
    if not match:
        raise UsageError(f"no rule {o.id!r}; `envaudit rules` lists them")
    e = match[0]
    print(f"{e.id} ({e.severity}, {e.listed_as})\n  {e.title}")
    if e.symptom:
        print(f"  symptom: {e.symptom}")
    print(f"  fix: {e.fix}")
    if e.pins:
        print(f"  pins: {' '.join(e.pins)} (installed by the audited interpreter, with what they would break)")
    for ref in e.references:
        print(f"  see: {ref}")
    if e.notes:
        print(f"  notes: {e.notes}")
    return Exit.OK


COMMAND = Command("rules", "list the rules, or show one", add_arguments, parse, run)
