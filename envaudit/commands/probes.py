"""`envaudit probes [NAME] [--script]`: the probes listed, one shown, or one printed as a standalone program."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from envaudit.commands import options, terminal
from envaudit.commands.options import Command
from envaudit.files import probefiles
from envaudit.formats.style import hanging, row
from envaudit.model.exitcodes import SHOWING, Exit, UsageError


@dataclass(frozen=True)
class ProbesOptions:
    name: str | None = None
    script: bool = False
    format: options.ListFormat = "text"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name", nargs="?", metavar="NAME", help="a probe's name: that one shown (or, with --script, printed)"
    )
    p.add_argument("--script", action="store_true", help="print the probe as a program runnable with plain python")
    options.add_list_format(p)


def parse(parsed: argparse.Namespace) -> ProbesOptions:
    return ProbesOptions(parsed.name, parsed.script, options.list_format(parsed))


def run(o: ProbesOptions) -> int:
    known = probefiles.available()
    if o.format == "json" and not o.script:
        if o.name is not None and o.name not in known:
            raise UsageError(f"no probe {o.name!r}; `envaudit probes` lists them")
        chosen = {n: p for n, p in known.items() if o.name is None or n == o.name}
        found = [{"name": n, "summary": probefiles.summary(p), "file": str(p)} for n, p in chosen.items()]
        print(json.dumps(found if o.name is None else found[0], indent=2))
        return Exit.OK
    width = terminal.width(sys.stdout)  # wrapped as the report is: at whitespace, under a hanging indent
    if o.name is None:
        column = max(map(len, known)) + 1
        print("\n".join(line for n, p in known.items() for line in row(n.ljust(column), probefiles.summary(p), width)))
        return Exit.OK
    if o.name not in known:
        raise UsageError(f"no probe {o.name!r}; `envaudit probes` lists them")
    path = known[o.name]
    if o.script:  # a program, as it is
        print(probefiles.script(path))
        return Exit.OK
    print("\n".join([*hanging(probefiles.summary(path), width, f"{o.name}: ", "  "), f"  file: {path}"]))
    return Exit.OK


COMMAND = Command(
    "probes",
    "list the probes; NAME --script prints a standalone repro program",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit probes", "every probe and what it measures"),
        ("envaudit probes ntk --script > ntk_repro.py", "one probe as a program plain python runs, to attach to a bug"),
    ),
    exits=SHOWING,
    exit_words=((Exit.OK, "printed"),),
)
