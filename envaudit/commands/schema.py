"""`envaudit schema [report|triage]`: the JSON Schema of a document envaudit writes, generated from its types."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Literal, cast, get_args

from envaudit.commands.options import Command
from envaudit.model.exitcodes import Exit

Document = Literal["report", "triage"]
SCHEMAS: tuple[Document, ...] = get_args(Document)


@dataclass(frozen=True)
class SchemaOptions:
    name: Document = "report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", choices=SCHEMAS, default="report", help="the document (default: report)")


def parse(parsed: argparse.Namespace) -> SchemaOptions:
    return SchemaOptions(cast(Document, parsed.name))


def run(o: SchemaOptions) -> int:
    from envaudit.model import schema

    if o.name == "triage":
        from envaudit.commands.triage.schema import TRIAGE as shape
    else:
        shape = schema.REPORT
    sys.stdout.write(schema.dumps(schema.generate(shape)))
    return Exit.OK


COMMAND = Command(
    "schema",
    "print the JSON Schema (draft 2020-12) of a JSON document envaudit writes",
    add_arguments,
    parse,
    run,
    description="Print the JSON Schema (draft 2020-12) of a JSON document envaudit writes, generated from the "
    "types that declare it: report (what --format json writes, and check reads) or triage (what "
    "triage --format json writes).",
)
