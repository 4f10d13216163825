"""The JSON Schema (draft 2020-12) of a JSON document envaudit writes, generated from the types that declare it.

A document is declared once, as types: the facts' TypedDicts (`facts.py`), the report's (`model.py`), triage's
(`triage/schema.py`). `typecheck.problem` checks a loaded document against them; this module writes the same
annotations as a JSON Schema, so that a field added to a TypedDict is in `envaudit schema` with no other edit, with
its documentation: the comment on its line, or the comment lines just above it (as facts.py writes them), read from
the module's source. The annotations are read as `typecheck.problem` reads them: a TypedDict is an object whose
`__required_keys__` must be present and not null and whose other keys may be missing or null; a list's items and a
dict's values are never null unless their type says `| None` (or is Any); Literal is an enum; float takes any JSON
number and int any integer, never a boolean. A dataclass (triage's `Seen`, written by `vars()`) is an object with
every field present, null where its type allows it.

What the types do not say of a document is its `Shape`: the annotation a field is really checked against (a
report's `facts` are typed `dict[str, Any]` and checked by `Facts.from_dict`), a key written but never read back,
a key that must be present although its TypedDict is total=False, the one value a key takes, the objects where an
unknown key is an error, and the class whose field comments document a TypedDict's fields. The output is
deterministic: keys sorted, `required` sorted, enums in their declaration order.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import io
import json
import re
import sys
import tokenize
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, Union, get_args, get_origin, is_typeddict

from envaudit.model import fixes, typecheck
from envaudit.model.build import BuildDocument
from envaudit.model.facts import FACT_KEYS, FactsDocument
from envaudit.model.report import SCHEMA, FindingDocument, ProbeDocument, ReportDocument, schema_id

# https://json-schema.org/draft/2020-12/json-schema-core: "$schema" names the dialect by this URI (section 8.1.1);
# "$id" is an absolute URI without a fragment (section 8.2.1): envaudit has no web address, so a URN of the
# document's own schema name.
DIALECT = "https://json-schema.org/draft/2020-12/schema"
PRAGMA = re.compile(r"(?:^|\s*#)\s*(?:type:|noqa\b|pragma:|fmt:|pyright:|mypy:)")  # for tools, not documentation

JSONSchema = dict[str, Any]


@dataclass(frozen=True)
class One:
    """The one value a key takes (a report's `schema`): a `const`."""

    value: str


@dataclass(frozen=True)
class Shape:
    """A published document: its root type and what its types do not say (see the module's docstring)."""

    name: str  # the document's schema name, "envaudit/report/v1": its `$id` is made from it
    root: Any  # a TypedDict
    title: str
    refined: Mapping[tuple[Any, str], Any] = field(default_factory=dict)  # (type, declared key) -> checked against
    written: Mapping[tuple[Any, str], Any] = field(default_factory=dict)  # (type, undeclared key) -> what it holds
    present: Mapping[Any, tuple[str, ...]] = field(default_factory=dict)  # type -> optional keys that must be there
    closed: frozenset[Any] = frozenset()  # objects where a key their type does not declare is an error
    documented_by: Mapping[Any, Any] = field(default_factory=dict)  # type -> class whose same-named fields say more

    @property
    def id(self) -> str:
        return schema_id(self.name)


class StepDocument(TypedDict):
    finding: str
    fix: str


class HeldDocument(TypedDict):
    library: str  # the library no release of which works with a newer jax
    jax: str  # the release jax is held at for it


class _PlanOptional(TypedDict, total=False):
    declined: list[str]  # from envaudit 0.2.0: the warnings whose fix the plan leaves out (it moves a package down)
    held: list[HeldDocument]  # from envaudit 0.2.0: jax held back for a library, the other ways said beside
    kept: list[str]  # the distributions kept where they are (--keep) that a way out of what is left would move
    proof: str  # proven: the state its command leaves was built and ran here; unproven: not (yet), or it did not


class PlanDocument(_PlanOptional):
    """The report's fixes as one plan, as `Report.to_dict` writes it; computed, never read back (`check` plans
    again), so no reader checks it."""

    fix: str
    steps: list[StepDocument]
    remaining: list[str]
    loop: bool


REPORT = Shape(
    name=SCHEMA,
    root=ReportDocument,
    title=f"envaudit report ({SCHEMA})",
    refined={
        (ReportDocument, "schema"): One(SCHEMA),  # Report.from_dict refuses any other value
        (ReportDocument, "$schema"): One(schema_id(SCHEMA)),  # the `$id` of this schema; absent in older reports
        (ReportDocument, "facts"): FactsDocument,  # checked by Facts.from_dict
        (ReportDocument, "findings"): list[FindingDocument],  # each by Finding.from_dict
        (ReportDocument, "probes"): list[ProbeDocument],  # each by ProbeResult.from_dict
    },
    written={(ReportDocument, "plan"): PlanDocument, (ReportDocument, "build"): BuildDocument},
    present={FactsDocument: FACT_KEYS},  # Facts.from_dict requires them present (null: the default)
    documented_by={PlanDocument: fixes.Plan, StepDocument: fixes.Step},
)


def generate(shape: Shape) -> JSONSchema:
    """The JSON Schema of a document."""
    builder = _Builder(shape)
    root = builder.object(shape.root)
    return {
        "$schema": DIALECT,
        "$id": shape.id,
        "title": shape.title,
        **root,
        "$defs": {name: builder.defs[name] for name in sorted(builder.defs)},
    }


def dumps(schema: JSONSchema) -> str:
    """A schema as the text `envaudit schema` prints: indented, keys sorted, the same bytes on every run."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


class _Builder:
    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.defs: dict[str, JSONSchema] = {}
        self.names: dict[Any, str] = {}

    def of(self, hint: Any) -> JSONSchema:
        """The schema of one annotation, as `typecheck.problem` reads it."""
        kind, args = get_origin(hint), get_args(hint)
        if hint is Any:
            return {}
        if hint is type(None):
            return {"type": "null"}
        if isinstance(hint, One):
            return {"const": hint.value}
        if kind in (Union, types.UnionType):
            return _union([self.of(arg) for arg in args])
        if kind is Literal:
            values = list(dict.fromkeys(args))
            return {"const": values[0]} if len(values) == 1 else {"enum": values}
        if is_typeddict(hint) or (dataclasses.is_dataclass(hint) and isinstance(hint, type)):
            return {"$ref": f"#/$defs/{self.define(hint)}"}
        if kind is dict:
            return {"type": "object"} | ({} if args[1] is Any else {"additionalProperties": self.of(args[1])})
        if kind is list:
            return {"type": "array"} | ({} if args[0] is Any else {"items": self.of(args[0])})
        if hint in typecheck.JSON_NAMES:
            return {"type": typecheck.JSON_NAMES[hint]}
        raise TypeError(f"no JSON Schema for the annotation {hint!r}")

    def define(self, typed: Any) -> str:
        """The name of an object type's entry in `$defs` (its class name; qualified by its module if taken)."""
        if typed in self.names:
            return self.names[typed]
        name: str = typed.__name__
        if name in self.defs:
            name = f"{typed.__module__}.{typed.__qualname__}"
        self.names[typed], self.defs[name] = name, {}  # reserved first: a type may contain itself
        self.defs[name] = self.object(typed)
        return name

    def object(self, typed: Any) -> JSONSchema:
        declared = dict(typecheck.hints(typed))
        if is_typeddict(typed):
            required = set(typed.__required_keys__)  # present and not null; the others may be missing or null
        else:
            names = {f.name for f in dataclasses.fields(typed)}
            declared = {k: v for k, v in declared.items() if k in names}
            required = set(declared)  # vars() writes every field; null where its type allows it
        for (owner, key), hint in self.shape.refined.items():
            if owner is typed:
                if key not in declared:
                    raise TypeError(f"{typed.__name__} declares no key {key!r} to refine")
                declared[key] = hint
        for (owner, key), hint in self.shape.written.items():
            if owner is typed:
                declared.setdefault(key, hint)
        present = required | set(self.shape.present.get(typed, ()))
        doc, field_docs = documentation(typed)
        if (other := self.shape.documented_by.get(typed)) is not None:
            field_docs = documentation(other)[1] | field_docs
        properties = {}
        for key, hint in declared.items():
            schema = self.of(hint)
            if key not in required and not _takes_null(schema):
                schema = _or_null(schema)
            properties[key] = ({"description": field_docs[key]} if key in field_docs else {}) | schema
        return (
            ({"description": doc} if doc else {})
            | {"type": "object", "properties": properties, "required": sorted(present)}
            | {"additionalProperties": typed not in self.shape.closed}
        )


def _union(parts: list[JSONSchema]) -> JSONSchema:
    """X | Y: one `type` list where every part is a bare type, else anyOf."""
    if all(set(p) == {"type"} for p in parts):
        names = list(
            dict.fromkeys(n for p in parts for n in ([p["type"]] if isinstance(p["type"], str) else p["type"]))
        )
        return {"type": names[0] if len(names) == 1 else names}
    return {"anyOf": parts}


def _takes_null(schema: JSONSchema) -> bool:
    kind = schema.get("type")
    return (
        not schema
        or kind == "null"
        or (isinstance(kind, list) and "null" in kind)
        or None in schema.get("enum", ())
        or ("const" in schema and schema["const"] is None)
        or any(_takes_null(p) for p in schema.get("anyOf", ()))
    )


def _or_null(schema: JSONSchema) -> JSONSchema:
    """The schema, or null: what an optional field of a TypedDict may also be."""
    if isinstance(kind := schema.get("type"), str):
        return schema | {"type": [kind, "null"]}
    if isinstance(kind, list):
        return schema | {"type": [*kind, "null"]}
    if "enum" in schema:
        return schema | {"enum": [*schema["enum"], None]}
    if "const" in schema:
        return {"enum": [schema["const"], None]}
    if "anyOf" in schema:
        return schema | {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


@dataclass(frozen=True)
class _Source:
    tree: ast.Module
    comments: dict[int, str]  # line -> the comment on it (its text after "#")
    alone: frozenset[int]  # the lines that hold a comment and nothing else


@functools.cache
def _source(module_name: str) -> _Source | None:
    """A module's syntax tree and comments; None where its source is not there to read (then nothing is said)."""
    try:
        text = inspect.getsource(sys.modules[module_name])
    except (KeyError, OSError, TypeError):
        return None
    comments, alone = {}, set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            said = PRAGMA.split(token.string.lstrip("#").strip())[0]  # a pragma after the words is cut
            if said:
                comments[token.start[0]] = said
            if not token.line[: token.start[1]].strip():
                alone.add(token.start[0])
    return _Source(ast.parse(text), comments, frozenset(alone))


def documentation(typed: Any) -> tuple[str, dict[str, str]]:
    """A class's description (its docstring, else the comment on its `class` line) and each field's (the comment
    lines just above it, then the comment on its own lines); a TypedDict's base classes' fields included."""
    source = _source(typed.__module__)
    body = source.tree.body if source is not None else []
    node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == typed.__qualname__), None)
    if source is None or node is None:
        return "", {}
    fields: dict[str, str] = {}
    module = sys.modules[typed.__module__]
    for base in node.bases:  # a TypedDict's inherited keys are declared in its bases, in the same module
        if isinstance(base, ast.Name) and is_typeddict(found := getattr(module, base.id, None)):
            fields |= documentation(found)[1]
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            if said := _said(source, statement.lineno, statement.end_lineno or statement.lineno):
                fields[statement.target.id] = said
        elif isinstance(statement, ast.FunctionDef) and _is_property(statement) and ast.get_docstring(statement):
            fields[statement.name] = " ".join((ast.get_docstring(statement) or "").split())
    header = range(node.lineno, node.body[0].lineno)
    on_header = [source.comments[n] for n in header if n in source.comments and n not in source.alone]
    doc = ast.get_docstring(node) or " ".join(on_header)
    return " ".join(doc.split()), fields


def _is_property(function: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in function.decorator_list)


def _said(source: _Source, first: int, last: int) -> str:
    """The comment lines just above a statement, then the comments on its own lines, as one sentence."""
    above: list[str] = []
    line = first - 1
    while line in source.alone:
        above.insert(0, source.comments.get(line, ""))
        line -= 1
    own = [source.comments[n] for n in range(first, last + 1) if n in source.comments and n not in source.alone]
    return " ".join(" ".join(filter(None, [*above, *own])).split())
