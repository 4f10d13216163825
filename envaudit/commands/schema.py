"""`envaudit schema [report|triage|compare]`: the JSON Schema of a document envaudit writes, generated from its types.

A document names its schema by `$schema`, the schema's `$id` (`urn:envaudit:report:v1`), which this verb takes as
well as the document's name, so that what a document says is enough to print its schema.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Literal, cast, get_args

from envaudit.commands.options import Command
from envaudit.model.exitcodes import SHOWING, Exit
from envaudit.model.report import schema_id

Document = Literal["report", "triage", "compare"]
SCHEMAS: tuple[Document, ...] = get_args(Document)
IDS = {schema_id(f"envaudit/{name}/v1"): name for name in SCHEMAS}  # each schema's $id, as documents name it


@dataclass(frozen=True)
class SchemaOptions:
    name: Document = "report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name",
        nargs="?",
        choices=[*SCHEMAS, *IDS],
        default="report",
        metavar="{" + ",".join(SCHEMAS) + "}",
        help="the document, or its schema's $id as a document's $schema names it (default: report)",
    )


def parse(parsed: argparse.Namespace) -> SchemaOptions:
    return SchemaOptions(cast(Document, IDS.get(parsed.name, parsed.name)))


def run(o: SchemaOptions) -> int:
    from envaudit.model import schema

    if o.name == "triage":
        from envaudit.commands.triage.schema import TRIAGE as shape
    elif o.name == "compare":
        from envaudit.commands.compare.schema import COMPARE as shape
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
    examples=(
        ("envaudit schema > report.schema.json", "the schema of the report `-f json` writes"),
        ("envaudit schema triage", "the schema of what `triage -f json` writes"),
    ),
    exits=SHOWING,
    exit_words=((Exit.OK, "printed"),),
    description="Print the JSON Schema (draft 2020-12) of a JSON document envaudit writes, generated from the "
    "types that declare it: report (what --format json writes, and check reads), triage (what triage --format json "
    "writes) or compare (what compare --format json writes). Each document names its schema's $id in its $schema "
    "(urn:envaudit:report:v1), which this command takes too.",
)
