"""Every JSON document the suite makes is held to the schema `envaudit schema` publishes (tests/conftest.py).

Two ways in: each `Report.to_dict` and `Triage.to_dict` made in the test process (every `--format json`, the
Markdown report's JSON block, what `health` saves, a triage's JSON) is validated as the JSON text it becomes; and the
JSON documents a test's directory holds when it ends (what envaudit subprocesses wrote with `--output` or
`--prometheus-dir`) are validated too, except those envaudit's own reader refuses as well: a test writes those on
purpose, to see them refused. What is wrong is kept, and the test that made it fails at its teardown, so that a
verb's `except Exception` (exit 3) cannot swallow it. A document made in-process must also declare every key it
writes (`undeclared`): the report's objects are open, so the schema alone would accept a key no type describes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema

from envaudit.commands.compare.drift import Comparison
from envaudit.commands.compare.schema import COMPARE
from envaudit.commands.triage.schema import TRIAGE
from envaudit.commands.triage.triaged import Triage
from envaudit.model import schema as docschema
from envaudit.model.facts import ReportError
from envaudit.model.report import Report

SHAPES = {shape.name: shape for shape in (docschema.REPORT, TRIAGE, COMPARE)}
MAX_FILE = 8 << 20  # a report of 15,000 packages is about 1 MB
DEPTH = 3  # tmp_path/r.json, tmp_path/prom/envaudit-report.json, tmp_path/nodes/a/report.json
WRONG: list[tuple[str, bool]] = []  # what was found wrong in the test running now; whether envaudit refuses it too
# The tests that render, on purpose, a report no audit can make (a typed field holding what its type forbids, to
# see it cleaned): their reports are held to agree with envaudit's reader only (one it refuses is no schema's fault).
MADE_UP = {
    "tests/formats/test_formats.py::test_markdown_cleans_every_value_and_keeps_code_spans_closed": "hostile values",
}
CARRIED = {"FactsDocument"}  # facts carry the fields they do not declare (facts.py): not a writer's undeclared key


@functools.cache
def schema(name: str) -> dict[str, Any]:
    return docschema.generate(SHAPES[name])


@functools.cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema(name))
    return jsonschema.Draft202012Validator(schema(name))


def problem(document: object) -> str | None:
    """The first way a document does not match the schema its `schema` key names, as a line; None if it does."""
    name = document.get("schema") if isinstance(document, dict) else None
    if not isinstance(name, str) or name not in SHAPES:
        return f"names no published schema: {name!r}"
    error = jsonschema.exceptions.best_match(validator(name).iter_errors(document))
    if error is None:
        return None
    return f"{error.json_path}: {error.message[:300]}"


def undeclared(document: object, published: dict[str, Any]) -> list[str]:
    """The keys a writer put in the document's objects that their types do not declare (the schema's objects are
    open, so it accepts them undescribed); facts excepted, which carry what a newer envaudit wrote, unread."""
    found: list[str] = []
    todo: list[tuple[object, dict[str, Any], str]] = [(document, published, "$")]
    while todo:
        value, node, where = todo.pop()
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in CARRIED:
                continue
            node = published["$defs"][name]
        todo += [(value, part, where) for part in node.get("anyOf", ())]
        if isinstance(value, dict) and "properties" in node:
            found += [f"{where}.{key}" for key in value if key not in node["properties"]]
            todo += [(v, node["properties"][k], f"{where}.{k}") for k, v in value.items() if k in node["properties"]]
        elif isinstance(value, list) and "items" in node:
            todo += [(item, node["items"], f"{where}[{n}]") for n, item in enumerate(value)]
    return sorted(found)


def _as_written(document: dict[str, Any]) -> object:
    """The document as its JSON text reads back (json_format.as_json: tuples are arrays, the rest str())."""
    return json.loads(json.dumps(document, default=str))


def _checked(to_dict: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    @functools.wraps(to_dict)
    def checked(self: Any) -> dict[str, Any]:
        document = to_dict(self)
        written = _as_written(document)
        if wrong := problem(written):
            said = f"{type(self).__name__}.to_dict wrote a document its schema refuses: {wrong}"
            WRONG.append((said, _refused(written)))
        elif extra := undeclared(written, schema(str(document["schema"]))):
            said = f"{type(self).__name__}.to_dict wrote keys its types do not declare: {', '.join(extra)}"
            WRONG.append((said, False))
        return document

    return checked


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """Every report, triage and comparison made in this process, validated as it is made."""
    originals = (Report.to_dict, Triage.to_dict, Comparison.to_dict)
    Report.to_dict = _checked(Report.to_dict)  # type: ignore[method-assign, assignment]
    Triage.to_dict = _checked(Triage.to_dict)  # type: ignore[method-assign, assignment]
    Comparison.to_dict = _checked(Comparison.to_dict)  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        Report.to_dict, Triage.to_dict, Comparison.to_dict = originals  # type: ignore[method-assign]


def taken(test: str) -> list[str]:
    """What the test that just ran made wrong in this process (and forgets it for the next test)."""
    made_up = test.split("[")[0] in MADE_UP
    found = [said for said, refused in WRONG if not (made_up and refused)]
    WRONG.clear()
    return found


def _json_files(top: Path) -> Iterator[Path]:
    for here, dirs, files in os.walk(top):
        depth = len(Path(here).relative_to(top).parts)
        if depth >= DEPTH - 1:
            dirs.clear()
        for name in files:
            if name.endswith(".json"):
                yield Path(here, name)


def written(top: Path) -> list[str]:
    """What is wrong with the JSON documents under a test's directory that name one of envaudit's schemas."""
    wrong = []
    for path in _json_files(top):
        try:
            document = json.loads(_regular(path))
        except (OSError, ValueError, RecursionError):  # not a file envaudit wrote: a FIFO, a link, not JSON
            continue
        if not isinstance(document, dict) or document.get("schema") not in SHAPES:
            continue
        if (found := problem(document)) and not _refused(document):
            wrong.append(f"{path.name} holds a document its schema refuses: {found}")
    return wrong


def _regular(path: Path) -> bytes:
    """A regular file's bytes, never following a link nor waiting on a FIFO (tests make both, named *.json)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        found = os.fstat(file.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_FILE:
            raise OSError(f"{path} is not a regular file of at most {MAX_FILE} bytes")
        head = file.read(4096)
        if b'"envaudit/' not in head:
            raise ValueError(f"{path} names none of envaudit's schemas at its start")
        return head + file.read()


def _refused(document: object) -> bool:
    """Whether envaudit's own reader refuses it too (a test wrote it to see it refused). Only reports are read back."""
    if not isinstance(document, dict) or document.get("schema") != docschema.REPORT.name:
        return False
    try:
        Report.from_dict(document)
    except (ReportError, ValueError, TypeError, KeyError, OverflowError, RecursionError):
        return True
    return False
