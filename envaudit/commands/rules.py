"""`envaudit rules [ID]`: what envaudit knows, listed, or one rule or check shown in full; `--tables`: the release
tables, each with how far it reaches, and where the knowledge as a whole stops."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envaudit.commands import options, terminal
from envaudit.commands.options import Command
from envaudit.formats.style import hanging, row
from envaudit.model.exitcodes import SHOWING, Exit, UsageError

if TYPE_CHECKING:
    from envaudit.rules import Entry


@dataclass(frozen=True)
class RulesOptions:
    id: str | None = None
    format: options.ListFormat = "text"
    tables: bool = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?", metavar="ID", help="a rule's or check's id: that one shown in full")
    p.add_argument("--tables", action="store_true", help="the release tables and the jax releases each covers")
    options.add_list_format(p)


def parse(parsed: argparse.Namespace) -> RulesOptions:
    if parsed.tables and parsed.id:
        raise UsageError("rules --tables takes no rule id")
    return RulesOptions(parsed.id, options.list_format(parsed), parsed.tables)


def _tables(o: RulesOptions) -> int:
    """Each table: its file, the newest jax release it speaks of (where it is keyed on jax), when and how it was read;
    first, where the knowledge as a whole stops."""
    from envaudit.rules import knowledge

    rows = []
    for name, table in sorted(knowledge.tables().items()):
        data = table.load()
        rows.append({"table": name, "jax_to": table.newest_jax() or "", "closed": table.closed, "read": data["read"]})
    coverage = knowledge.COVERAGE.load()
    if o.format == "json":
        document = {"jax": coverage["jax"], "released": coverage["released"], "tables": rows}
        print(json.dumps(document, indent=2))
        return Exit.OK
    width = terminal.width(sys.stdout)
    lines = hanging(f"knowledge as of {knowledge.as_of()}: a jax past it is unknown, never OK", width)
    column = max(len(r["table"]) for r in rows)
    for r in rows:
        reach = f"to jax {r['jax_to']}" if r["jax_to"] else "by library release"
        said = f"read {r['read']}" + (f" (closed: {r['closed']})" if r["closed"] else "")
        lines += row(f"{r['table'].ljust(column)}  {reach:<18}  ", said, width)
    print("\n".join(lines))
    return Exit.OK


def _document(e: object) -> dict[str, object]:
    """A catalogue entry as JSON: its values, as `rules` prints them."""
    from dataclasses import asdict, is_dataclass

    assert is_dataclass(e) and not isinstance(e, type)
    found = asdict(e)
    return {**found, "listed_as": getattr(e, "listed_as", found.get("kind"))}


def run(o: RulesOptions) -> int:
    if o.tables:
        return _tables(o)
    from envaudit import rules as knowledge

    entries = knowledge.catalogue()
    if o.format == "json":
        chosen = [e for e in entries if o.id is None or e.id == o.id]
        if not chosen:
            raise UsageError(f"no rule {o.id!r}; `envaudit rules` lists them")
        print(json.dumps([_document(e) for e in chosen] if o.id is None else _document(chosen[0]), indent=2))
        return Exit.OK
    width = terminal.width(sys.stdout)  # wrapped as the report is: at whitespace, under a hanging indent
    if o.id is None:
        column = max(len(e.id) for e in entries)
        lines = [line for e in entries for line in row(_columns(e, column), e.title, width)]
        print("\n".join(lines))
        return Exit.OK
    match = [e for e in entries if e.id == o.id]
    if not match:
        raise UsageError(f"no rule {o.id!r}; `envaudit rules` lists them")
    e = match[0]
    lines = [f"{e.id} ({e.severity}, {e.listed_as})", *hanging(e.title, width, "  ", "  ")]
    if e.symptom:
        lines += hanging(e.symptom, width, "  symptom: ", "    ")
    lines += hanging(e.fix, width, "  fix: ", "    ")
    if e.pins:
        said = f"{' '.join(e.pins)} (installed by the audited interpreter, with what they would break)"
        lines += hanging(said, width, "  pins: ", "    ")
    lines += [f"  see: {ref}" for ref in e.references]  # a URL whole, to be opened
    if e.notes:
        lines += hanging(e.notes, width, "  notes: ", "    ")
    print("\n".join(lines))
    return Exit.OK


def _columns(e: Entry, column: int) -> str:
    """A catalogue entry's columns in the list: its id (padded to `column`), severity and kind."""
    return f"{e.id.ljust(column)}  {e.severity:<4}  {e.listed_as:<5}  "


COMMAND = Command(
    "rules",
    "list the rules, or show one",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit rules", "every rule and check: id, severity, kind and title"),
        ("envaudit rules numpy2-with-jaxlib-before-0426", "one rule: its fix, pins, references and notes"),
        ("envaudit rules --tables", "the release tables and how far each reaches"),
    ),
    exits=SHOWING,
    exit_words=((Exit.OK, "printed"),),
)
