"""The published schemas of the standard formats envaudit writes (SARIF 2.1.0, CycloneDX 1.6), vendored unchanged
under tests/fixtures/schemas/ (their sources and versions in its README), as validators.

Every `$ref` resolves among the vendored files (a registry of them, and no retrieval: a reference to anything else
is an error, never a download), and formats are checked (`uri`, `date-time`: jsonschema's format-nongpl extra), so
a document that only looks right is refused.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import referencing
import referencing.jsonschema

HERE = Path(__file__).resolve().parent.parent / "fixtures" / "schemas"


def load(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((HERE / name).read_text(encoding="utf-8"))
    return found


@functools.cache
def sarif() -> jsonschema.protocols.Validator:
    schema = load("sarif-schema-2.1.0.json")  # draft-04, its refs all within itself
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


@functools.cache
def cyclonedx() -> jsonschema.protocols.Validator:
    """bom-1.6 (draft-07), with the spdx and jsf schemas it references by relative URI under their own `$id`s."""
    bom = load("bom-1.6.schema.json")
    resources = [
        (schema["$id"], referencing.Resource.from_contents(schema, referencing.jsonschema.DRAFT7))
        for schema in (bom, load("spdx.schema.json"), load("jsf-0.82.schema.json"))
    ]
    jsonschema.Draft7Validator.check_schema(bom)
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(resources)
    return jsonschema.Draft7Validator(bom, registry=registry, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def problems(validator: jsonschema.protocols.Validator, document: Any) -> list[str]:
    """Every way the document breaks the schema, one line each ([] when it is valid)."""
    return [f"{e.json_path}: {e.message[:300]}" for e in validator.iter_errors(document)]
