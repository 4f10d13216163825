"""`envaudit rules [ID]`: what envaudit knows, listed, or one rule or check shown in full."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from envaudit.commands import options
from envaudit.commands.options import Command
from envaudit.model.exitcodes import Exit, UsageError


@dataclass(frozen=True)
class RulesOptions:
    id: str | None = None
    format: options.ListFormat = "text"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?")
    options.add_list_format(p)


def parse(parsed: argparse.Namespace) -> RulesOptions:
    return RulesOptions(parsed.id, options.list_format(parsed))


def _document(e: object) -> dict[str, object]:
    """A catalogue entry as JSON: its values, as `rules` prints them."""
    from dataclasses import asdict, is_dataclass

    assert is_dataclass(e) and not isinstance(e, type)
    found = asdict(e)
    return {**found, "listed_as": getattr(e, "listed_as", found.get("kind"))}


def run(o: RulesOptions) -> int:
    from envaudit import rules as knowledge

    entries = knowledge.catalogue()
    if o.format == "json":
        chosen = [e for e in entries if o.id is None or e.id == o.id]
        if not chosen:
            raise UsageError(f"no rule {o.id!r}; `envaudit rules` lists them")
        print(json.dumps([_document(e) for e in chosen] if o.id is None else _document(chosen[0]), indent=2))
        return Exit.OK
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
