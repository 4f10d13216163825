"""The JSON document `envaudit compare --format json` writes (schema `envaudit/compare/v1`), declared as types.

`Comparison.to_dict` writes it; these types are its declaration, from which `model/schema.py` generates its JSON
Schema (`envaudit schema compare`), their fields documented by the same-named fields of the dataclasses it is written
from. Nothing reads a comparison back, so its objects are closed: a key written that is not declared here fails the
tests that validate every comparison they make (tests/schemacheck.py).
"""

from __future__ import annotations

from typing import Literal, TypedDict

from envaudit.commands.compare.drift import SCHEMA, Comparison, Drift
from envaudit.model import schema as docschema
from envaudit.model.report import schema_id


class DriftDocument(TypedDict):
    """One node's drift from its peers: the facts that differ from the majority's, or its probes' answers."""

    node: str
    kind: Literal["environment", "probe"]
    details: list[str]


_Named = TypedDict("_Named", {"$schema": str}, total=False)  # `$schema` is no Python name


class CompareDocument(_Named):
    """Drift across the nodes of a fleet, from their saved reports."""

    schema: str
    nodes: int
    environments: int  # the distinct environment fingerprints among the nodes
    majority_size: int  # the nodes of the largest group of identical software
    drift: list[DriftDocument]
    duplicates: list[str]
    skipped: list[str]


COMPARE = docschema.Shape(
    name=SCHEMA,
    root=CompareDocument,
    title=f"envaudit compare ({SCHEMA})",
    refined={
        (CompareDocument, "schema"): docschema.One(SCHEMA),
        (CompareDocument, "$schema"): docschema.One(schema_id(SCHEMA)),  # the `$id` of this schema
    },
    closed=frozenset({CompareDocument, DriftDocument}),
    documented_by={CompareDocument: Comparison, DriftDocument: Drift},
)
