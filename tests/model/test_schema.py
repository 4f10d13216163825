"""`envaudit schema`: the JSON Schema (draft 2020-12) of the report and of triage's JSON, generated from their types.

What matters: the schema is valid draft 2020-12 and names itself; it is the types' (every declared field a property,
the required keys exactly the required ones, each field's comment its description), so a field added to a TypedDict
is in it with no other edit; it accepts what envaudit's own check (`typecheck.problem`) accepts and refuses what it
refuses; every saved report and triage in the fixtures is valid; and a document that is not fails the suite (the
plugin of tests/schemacheck.py, which validates every document the tests make).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, is_typeddict

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envaudit.cli import main
from envaudit.commands.compare.schema import COMPARE
from envaudit.commands.schema import SCHEMAS
from envaudit.commands.triage.schema import TRIAGE
from envaudit.commands.triage.triaged import TriageError, triage
from envaudit.model import facts, typecheck
from envaudit.model import report as model
from envaudit.model import schema as docschema
from envaudit.model.exitcodes import Exit
from envaudit.model.facts import ReportError
from envaudit.model.report import Report
from tests import schemacheck
from tests.conftest import FIXTURES, PYTHON, ROOT, sample_report

GOLDEN = ROOT / "tests" / "golden"
JSON_BLOCK = re.compile(r"^```json\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def printed(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["schema", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_each_schema_is_valid_draft_2020_12_and_names_its_document(capsys: pytest.CaptureFixture[str]) -> None:
    ids = set()
    for name in SCHEMAS:
        code, out, err = printed(capsys, name)
        schema = json.loads(out)
        assert code == Exit.OK and err == ""
        jsonschema.Draft202012Validator.check_schema(schema)  # raises on a schema draft 2020-12 refuses
        assert schema["$schema"] == jsonschema.Draft202012Validator.META_SCHEMA["$id"]
        assert schema["properties"]["schema"]["const"] == f"envaudit/{name}/v1"
        ids.add(schema["$id"])
    assert len(ids) == len(SCHEMAS)
    assert printed(capsys)[1] == printed(capsys, "report")[1]  # the report's is the default


def test_an_unknown_schema_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = printed(capsys, "nope")
    assert code == Exit.USAGE and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "'nope'" in err and all(name in err for name in SCHEMAS)


def test_help_says_what_each_schema_describes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = printed(capsys, "--help")
    assert code == Exit.OK
    assert "2020-12" in out and all(name in out for name in SCHEMAS)


def test_a_fresh_interpreter_prints_the_same_bytes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Sets (a TypedDict's required keys) iterate in a per-process order: nothing of it may reach the output."""
    here = printed(capsys, "triage")[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "4242"}
    argv = [PYTHON, "-m", "envaudit", "schema", "triage"]
    there = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert there.returncode == 0 and there.stdout == here


def _typeddicts(root: Any) -> dict[str, Any]:
    """Every TypedDict and dataclass a document's types reach, by name (walked here, not by the generator)."""
    found: dict[str, Any] = {}
    todo = [root]
    while todo:
        hint = todo.pop()
        if is_typeddict(hint) or (isinstance(hint, type) and hasattr(hint, "__dataclass_fields__")):
            if hint.__name__ in found:
                continue
            found[hint.__name__] = hint
            todo += list(typecheck.hints(hint).values())
        todo += [a for a in get_args(hint) if not isinstance(a, str)]
    return found


@pytest.mark.parametrize("shape", [docschema.REPORT, TRIAGE, COMPARE], ids=lambda s: s.name)
def test_every_declared_field_is_a_property_and_only_the_required_ones_are_required(shape: docschema.Shape) -> None:
    schema = docschema.generate(shape)
    reached = _typeddicts(shape.root) | {
        h.__name__: h for h in (*shape.refined.values(), *shape.written.values()) for h in _typeddicts(h).values()
    }
    assert reached.keys() <= schema["$defs"].keys() | {shape.root.__name__}
    for name, typed in reached.items():
        defined = schema if typed is shape.root else schema["$defs"][name]
        declared = set(typecheck.hints(typed))
        assert declared <= defined["properties"].keys(), name
        required = declared  # a dataclass written by vars(): every field
        if is_typeddict(typed):
            required = set(typed.__required_keys__) | set(shape.present.get(typed, ()))
        assert set(defined["required"]) == required, name
        assert defined["additionalProperties"] is (typed not in shape.closed), name


def test_a_report_is_open_and_a_facts_document_requires_the_keys_facts_from_dict_does() -> None:
    """typecheck.problem reads a report's objects open (a newer envaudit's field is carried, unread): so does the
    schema. Facts.from_dict requires FACT_KEYS present, null or not."""
    schema = docschema.generate(docschema.REPORT)
    assert all(d["additionalProperties"] is True for d in schema["$defs"].values())
    assert set(schema["$defs"]["FactsDocument"]["required"]) == set(facts.FACT_KEYS)
    validator = jsonschema.Draft202012Validator(schema)
    document = json.loads(json.dumps(sample_report().to_dict()))
    document["facts"]["jax"] = None  # present, null: the default
    document["facts"]["from_a_newer_envaudit"] = {"x": 1}
    assert validator.is_valid(document)
    assert Report.from_dict(document).facts.jax == facts.Facts().jax
    del document["facts"]["jax"]
    assert not validator.is_valid(document)
    with pytest.raises(facts.ReportError):
        Report.from_dict(document)


DOCUMENTED = '''
"""A module of documents."""
from __future__ import annotations
from dataclasses import dataclass
from typing import Literal, TypedDict

Colour = Literal["red", "blue"]


class _Base(TypedDict, total=False):
    inherited: int  # from the base class


class Thing(_Base, total=False):  # a thing, said on its class line
    # the comment lines just above a field
    # are its description, joined
    name: str
    colour: Colour  # a colour  # noqa: E501
    tag: str  # type: ignore[misc]
    hash_in_a_string: Literal["#not a comment"]

    size: int | None  # the size; None: unknown


@dataclass(frozen=True)
class Written:
    """Written by vars(): every field present."""

    thing: Thing
    count: int  # how many

    @property
    def total(self) -> int:
        """The total, as the writer computes it."""
        return self.count
'''


def _module(tmp_path: Path, source: str) -> types.ModuleType:
    path = tmp_path / "documented.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("documented_for_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_each_fields_comment_is_its_description_and_a_new_field_needs_no_edit(tmp_path: Path) -> None:
    module = _module(tmp_path, DOCUMENTED)
    try:
        schema = docschema.generate(docschema.Shape("documented/v1", module.Written, "test"))
        thing, written = schema["$defs"]["Thing"], schema
        said = {k: v.get("description") for k, v in thing["properties"].items()}
        assert said == {
            "inherited": "from the base class",
            "name": "the comment lines just above a field are its description, joined",
            "colour": "a colour",  # a tool's pragma is not documentation
            "tag": None,
            "hash_in_a_string": None,
            "size": "the size; None: unknown",
        }
        assert thing["description"] == "a thing, said on its class line"
        assert thing["properties"]["hash_in_a_string"] == {"enum": ["#not a comment", None]}
        assert thing["properties"]["size"]["type"] == ["integer", "null"]
        assert thing["required"] == []  # total=False: each may be missing or null
        assert written["description"] == "Written by vars(): every field present."
        assert written["required"] == ["count", "thing"]
        assert written["properties"]["count"] == {"description": "how many", "type": "integer"}
    finally:
        sys.modules.pop("documented_for_test", None)
        docschema._source.cache_clear()


def test_every_commented_field_of_the_facts_has_its_comment_as_description() -> None:
    """facts.py documents its fields by comments (on the line, or above it): each one is in the schema."""
    schema = docschema.generate(docschema.REPORT)
    classes = re.split(r"^class ", Path(facts.__file__).read_text(), flags=re.MULTILINE)[1:]
    commented = [
        (name, key)
        for text in classes
        if (name := re.match(r"\w+", text)[0]) in schema["$defs"]  # type: ignore[index]
        for key in re.findall(r"^    (\w+): [^#\n]*  # ", text, flags=re.MULTILINE)
    ]
    assert len(commented) > 30  # facts.py's comments were read
    assert [c for c in commented if not schema["$defs"][c[0]]["properties"][c[1]].get("description")] == []


def _read_as(typed: Any) -> Callable[[object], bool]:
    """Whether envaudit's own check accepts a document as this type (model._checked: never null itself)."""
    return lambda document: document is not None and typecheck.problem(document, typed, "x") is None


def _read_as_facts(document: object) -> bool:
    """Facts.from_dict: an object with FACT_KEYS present (null or not), then typecheck."""
    present = isinstance(document, dict) and all(k in document for k in facts.FACT_KEYS)
    return present and _read_as(facts.FactsDocument)(document)


# The documents envaudit's own check reads, and how it checks each (what the schema must agree with).
READ = (model.FindingDocument, model.ProbeDocument, model.DeviceAnswer, facts.GPU, facts.JaxFacts)
CHECKED: dict[str, Callable[[object], bool]] = {"FactsDocument": _read_as_facts} | {
    t.__name__: _read_as(t) for t in READ
}
WRONG = st.sampled_from([None, True, False, 0, 7, 2.5, "", "x", [], [1], {}, {"k": "v"}])


def _near(hint: Any) -> st.SearchStrategy[object]:
    """Mostly values of the type, sometimes a wrong one (JSON scalars, arrays, objects, null)."""
    return st.integers(0, 9).flatmap(lambda n: WRONG if n == 0 else _valid(hint))


def _valid(hint: Any) -> st.SearchStrategy[object]:
    kind, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return st.one_of(st.none(), st.integers(), st.text(max_size=3))
    if hint is type(None):
        return st.none()
    if kind in (Union, types.UnionType):
        return st.one_of([_valid(a) for a in args])
    if kind is Literal:
        return st.sampled_from(args)
    if is_typeddict(hint):
        declared = typecheck.hints(hint)
        must = set(hint.__required_keys__) | set(docschema.REPORT.present.get(hint, ()))
        body = st.fixed_dictionaries(
            {k: _near(v) for k, v in declared.items() if k in must},
            optional={k: _near(v) for k, v in declared.items() if k not in must},
        )
        extra = st.dictionaries(st.sampled_from(["unknown", "x_newer"]), st.integers(), max_size=1)
        lost = st.sampled_from([None] * 7 + sorted(must)) if must else st.none()  # a key it must have, missing
        return st.tuples(body, extra, lost).map(lambda t: {k: v for k, v in {**t[1], **t[0]}.items() if k != t[2]})
    if kind is dict:
        return st.dictionaries(st.text(max_size=3), _near(args[1]), max_size=2)
    if kind is list:
        return st.lists(_near(args[0]), max_size=2)
    # JSON Schema's "integer" also takes 2.0 (a number with no fractional part), which Python's json reads as a
    # float and typecheck refuses for an int: JSON cannot tell them apart, so neither strategy makes one
    return {
        str: st.text(max_size=3),
        bool: st.booleans(),
        int: st.integers(-(2**63), 2**63),
        float: st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-9, 9)),
    }[hint]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHECKED))
@settings(max_examples=50, deadline=None)  # ~15 ms each: the fast loop keeps it short
@given(data=st.data())
def test_the_schema_accepts_exactly_what_typecheck_accepts(name: str, data: st.DataObject) -> None:
    typed = {t.__name__: t for t in (facts.FactsDocument, *READ)}[name]
    document = data.draw(st.one_of(_valid(typed), WRONG.filter(lambda w: w is not None)))
    assert _validator(name).is_valid(document) is CHECKED[name](document), document


_VALIDATORS: dict[str, jsonschema.Draft202012Validator] = {}


def _validator(name: str) -> jsonschema.Draft202012Validator:
    """A validator of one definition of the report's schema."""
    if name not in _VALIDATORS:
        schema = docschema.generate(docschema.REPORT)
        _VALIDATORS[name] = jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": f"#/$defs/{name}"})
    return _VALIDATORS[name]


def _saved_documents() -> list[tuple[str, object]]:
    """Every JSON document of envaudit's in the fixtures and golden files: saved and replayed reports, and the JSON
    block of each golden Markdown report."""
    found: list[tuple[str, object]] = []
    for path in sorted([*FIXTURES.rglob("*.json"), *GOLDEN.glob("*.json")]):
        document = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(document, dict) and document.get("schema") in schemacheck.SHAPES:
            found.append((str(path.relative_to(ROOT)), document))
    for path in sorted(GOLDEN.glob("*.md")):
        blocks = JSON_BLOCK.findall(path.read_text(encoding="utf-8"))
        found += [(f"{path.relative_to(ROOT)} (JSON block)", json.loads(block)) for block in blocks]
    return found


def test_every_saved_report_in_the_fixtures_is_valid() -> None:
    saved = _saved_documents()
    assert len(saved) >= 4  # the replayed H200 report, the README's audit, the two golden Markdown reports
    wrong = {where: found for where, document in saved if (found := schemacheck.problem(document))}
    assert wrong == {}


@pytest.mark.slow
def test_every_triage_of_the_bug_report_fixtures_is_valid() -> None:
    texts = sorted(FIXTURES.glob("triage*/*.txt"))
    wrong, judged = {}, 0
    for path in texts:
        try:
            document = json.loads(json.dumps(triage(path.read_bytes()).to_dict()))
        except TriageError:  # a text with no environment: refused, nothing written
            continue
        judged += 1
        if found := schemacheck.problem(document):
            wrong[path.name] = found
    assert judged > 0.9 * len(texts) and wrong == {}


def _wrong_reports() -> list[tuple[str, Callable[[dict[str, Any]], None]]]:
    def at(path: str, value: object) -> Callable[[dict[str, Any]], None]:
        def change(document: dict[str, Any]) -> None:
            *parents, last = path.split(".")
            target: Any = document
            for part in parents:
                target = target[int(part)] if isinstance(target, list) else target[part]
            target[int(last) if isinstance(target, list) else last] = value

        return change

    def without(path: str) -> Callable[[dict[str, Any]], None]:
        def change(document: dict[str, Any]) -> None:
            *parents, last = path.split(".")
            target: Any = document
            for part in parents:
                target = target[int(part)] if isinstance(target, list) else target[part]
            del target[last]

        return change

    return [
        ("a severity no finding has", at("findings.0.severity", "fatal")),
        ("a finding without its id", without("findings.0.id")),
        ("a null required field", at("verdict", None)),
        ("gpus that are not a list", at("facts.nvidia.gpus", True)),
        ("a probe status no probe has", at("probes.0.status", "hung")),
        ("another schema", at("schema", "envaudit/report/v2")),
        ("facts without jax", without("facts.jax")),
        ("a null version in packages", at("facts.packages.jax", None)),
        ("a device id that is text", at("probes.0.devices", [{"id": "0", "kind": "cpu", "digest": "", "rel_err": 0}])),
        ("a boolean where a number goes", at("probes.0.duration_s", True)),
    ]


@pytest.mark.parametrize(("why", "change"), _wrong_reports(), ids=[w for w, _ in _wrong_reports()])
def test_a_wrong_report_is_refused_by_the_schema_and_by_envaudit(
    why: str, change: Callable[[dict[str, Any]], None]
) -> None:
    document = json.loads(json.dumps(sample_report().to_dict()))
    assert schemacheck.problem(document) is None
    wrong = copy.deepcopy(document)
    change(wrong)
    assert schemacheck.problem(wrong) is not None, why
    with pytest.raises(facts.ReportError):
        Report.from_dict(wrong)


def test_the_suite_fails_a_test_whose_report_its_schema_refuses() -> None:
    """The plugin (tests/conftest.py, tests/schemacheck.py) sees every report made in the process: a report whose
    finding has a severity no report may have is kept as wrong, and would fail this test at its teardown."""
    report = sample_report()
    broken = Report(facts=report.facts, findings=(model.Finding(model.Subject("rule", "x"), "fatal", "t"),))  # type: ignore[arg-type]
    before = len(schemacheck.WRONG)
    broken.to_dict()
    report.to_dict()
    kept = [said for said, _ in schemacheck.WRONG[before:]]
    del schemacheck.WRONG[before:]  # seen here: not this test's failure
    assert len(kept) == 1 and "severity" in kept[0] and "fatal" in kept[0]


def test_the_suite_fails_a_test_that_leaves_a_wrong_document_in_its_directory(tmp_path: Path) -> None:
    """What an envaudit subprocess wrote is read from the test's directory; a report envaudit itself refuses is a
    test's deliberate input and is left alone, a triage (never read back) is always held to its schema."""
    report = json.loads(json.dumps(sample_report().to_dict()))
    (tmp_path / "ok.json").write_text(json.dumps(report))
    (tmp_path / "refused.json").write_text(json.dumps({**report, "verdict": "maybe"}))
    document = triage(b"jax 0.4.25\njaxlib 0.4.25\n").to_dict()
    (tmp_path / "nodes").mkdir()
    (tmp_path / "nodes" / "triage.json").write_text(json.dumps({**document, "verdict": "maybe"}))
    found = schemacheck.written(tmp_path)
    (tmp_path / "nodes" / "triage.json").unlink()  # so that this test's own teardown finds nothing
    assert len(found) == 1 and found[0].startswith("triage.json") and "maybe" in found[0]


def test_a_key_written_but_not_declared_is_found() -> None:
    """The report's objects are open (a reader carries a newer field), so only this check says that a writer added
    a key its TypedDict does not declare, which the published schema would not describe."""
    schema = docschema.generate(docschema.REPORT)
    document = json.loads(json.dumps(sample_report().to_dict()))
    assert schemacheck.undeclared(document, schema) == []
    document["findings"][0]["severity_score"] = 3
    document["facts"]["jax"]["carried_from_a_newer_envaudit"] = 1  # facts carry what they do not declare
    assert schemacheck.undeclared(document, schema) == ["$.findings[0].severity_score"]


@pytest.mark.parametrize("shape", [docschema.REPORT, TRIAGE, COMPARE], ids=lambda s: s.name)
def test_a_document_s_schema_is_what_its_dollar_schema_names(
    capsys: pytest.CaptureFixture[str], shape: docschema.Shape
) -> None:
    """Each document envaudit writes names its schema's `$id` in `$schema`, and `envaudit schema` prints the schema
    by that id as by the document's name."""
    code, by_id, err = printed(capsys, shape.id)
    assert code == Exit.OK and err == ""
    assert by_id == printed(capsys, shape.name.split("/")[1])[1]
    schema = json.loads(by_id)
    assert schema["$id"] == shape.id
    assert schema["properties"]["$schema"]["enum"][0] == shape.id  # only its own id (or none, in an older report)


def test_every_json_document_names_its_schema_by_dollar_schema() -> None:
    """The report, a comparison and a triage as written: `$schema` first, the id `envaudit schema` takes."""
    from envaudit.commands.compare.drift import Comparison
    from envaudit.commands.triage.triaged import Triage

    written = [sample_report().to_dict(), Comparison(2, 1, 2).to_dict(), Triage((), False, None).to_dict()]
    for document, shape in zip(written, (docschema.REPORT, COMPARE, TRIAGE), strict=True):
        assert next(iter(document)) == "$schema" and document["$schema"] == shape.id
        assert jsonschema.Draft202012Validator(docschema.generate(shape)).is_valid(json.loads(json.dumps(document)))


def test_a_report_saved_before_dollar_schema_is_still_read_and_a_wrong_one_is_refused() -> None:
    document = json.loads(json.dumps(sample_report().to_dict()))
    older = {k: v for k, v in document.items() if k != "$schema"}
    assert Report.from_dict(older).to_dict() == sample_report().to_dict()
    with pytest.raises(ReportError, match=r"\$schema is 'urn:envaudit:triage:v1', expected 'urn:envaudit:report:v1'"):
        Report.from_dict(document | {"$schema": "urn:envaudit:triage:v1"})
