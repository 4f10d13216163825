"""The JSON document `envaudit triage --format json` writes (schema `envaudit/triage/v1`), declared as types.

`Triage.to_dict` builds it from the triage's values: each environment's facts used (`extract.Seen`, written by
`vars()`), its findings and evaluated facts as a report writes them (`model.FindingDocument`, `facts.FactsDocument`),
what the text did not say, the rules that could apply; where the reading stopped (`extract.Unread`). The types here
are that document's declaration, from which `docschema` generates its JSON Schema (`envaudit schema triage`); their
fields are documented by the same-named fields of the dataclasses they are written from. Nothing reads a triage
back, so its own objects are closed: a key written that is not declared here fails the tests that validate every
triage they render against this schema, instead of being published undescribed.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from envaudit.commands.triage.extract import Seen, Unread
from envaudit.commands.triage.reproduce import Reproduction
from envaudit.commands.triage.triaged import SCHEMA, Environment, Triage
from envaudit.model import schema as docschema
from envaudit.model.build import Measurement
from envaudit.model.facts import FactsDocument
from envaudit.model.report import FindingDocument, Verdict, schema_id  # Verdict: Triage.verdict, its reports' worst


class Possible(TypedDict):
    id: str  # the rule's id (`envaudit rules ID` shows it)
    title: str


class _ReproductionOptional(TypedDict, total=False):
    measured: Measurement  # the build's own words, where one ran


class ReproductionDocument(_ReproductionOptional):
    """The stack the environment states, built here and measured (reproduce.py)."""

    status: Literal["reproduced", "not_reproduced", "not_built"]
    reason: str


class _EnvironmentOptional(TypedDict, total=False):
    reproduction: ReproductionDocument  # where the environment states jax's version


class EnvironmentDocument(_EnvironmentOptional):
    """One environment the text shows, judged as a plan is."""

    facts: list[Seen]  # every fact used, with its line
    findings: list[FindingDocument]  # the known problems, as a report writes its findings
    missing: list[str]
    possible: list[Possible]
    evaluated: FactsDocument  # the facts evaluated: what the text says and nothing assumed


_Named = TypedDict("_Named", {"$schema": str}, total=False)  # `$schema` is no Python name


class _TriageOptional(_Named, total=False):
    unnamed: list[Seen]  # versions stated with no name found for them, where there are


class TriageDocument(_TriageOptional):
    """The environments a pasted bug report shows, each judged by the knowledge base."""

    schema: str
    verdict: Verdict
    truncated: bool
    unread: Unread | None
    environments: list[EnvironmentDocument]
    requirements: list[Seen]


TRIAGE = docschema.Shape(
    name=SCHEMA,
    root=TriageDocument,
    title=f"envaudit triage ({SCHEMA})",
    refined={
        (TriageDocument, "schema"): docschema.One(SCHEMA),
        (TriageDocument, "$schema"): docschema.One(schema_id(SCHEMA)),  # the `$id` of this schema
    },
    present=docschema.REPORT.present,  # the evaluated facts are a report's facts
    closed=frozenset({TriageDocument, EnvironmentDocument, Possible, Seen, Unread, ReproductionDocument}),
    documented_by={TriageDocument: Triage, EnvironmentDocument: Environment, ReproductionDocument: Reproduction},
)
