"""envaudit's own reports, pasted into a bug report: read as the audited facts they carry, never as their fixes.

A JSON report is the report itself; a Markdown report carries it whole (its `<details>` block; where a paste cut
it, its component table still says the facts); a text report says its facts in its Environment block (python,
platform, packages), each line as the text format writes it. The fix
commands a report shows name the versions it would install, which are not the environment's: reading the report's
own facts is what keeps them out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from envaudit.model.facts import Facts, PlatformFacts, PythonFacts, ReportError
from envaudit.model.report import Report

SCHEMA_LINE = re.compile(r'"schema"\s*:\s*"envaudit/report/v\d+"')
JSON_BLOCK = re.compile(r"^\s*```json\s*$")
# The text format's header line: version, host, time, mode (reports before 0.3 added the verdict to it).
TEXT_HEADER = re.compile(r"^envaudit \d+\.\d+\.\d+\S* \| .* \| [a-z]+( \| verdict: [A-Z]+)?$")
MARKDOWN_HEADER = re.compile(r"^#{1,6} envaudit report: ")
TABLE_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*$")
MAX_JSON_LINES = 20_000  # a report's JSON is a few hundred lines; one parse of at most this many
MAX_BLOCK = 400  # lines of a report's header block read: its facts come first
TEXT_FACT = re.compile(r"^  (python|platform|packages)  +(\S.*)$")
CONTINUED = re.compile(r"^ {4,}\S")
PACKAGE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*) (\S+)$")


@dataclass(frozen=True)
class Own:
    """A report envaudit wrote, found in a text: the report (JSON and Markdown: whole; text: its facts only) and
    the line it starts on."""

    report: Report
    line: int


def read(text_lines: list[str]) -> Own | None:
    """The first report envaudit wrote in these lines, or None (then the text is read as any other). Each way in is
    tried once, so a text of a million schema lines costs one parse: the JSON document holding the first schema
    line (a JSON report, or the Markdown one's block); the component table of a Markdown report whose JSON was cut;
    the Environment block of a text report, if it states a package or the Python."""
    schema = next((n for n, line in enumerate(text_lines) if SCHEMA_LINE.search(line)), None)
    if schema is not None:
        start = _json_start(text_lines, schema)
        if (report := _json(text_lines, start)) is not None:
            return Own(report, start + 1)
    for number, line in enumerate(text_lines):
        header = MARKDOWN_HEADER.match(line) or TEXT_HEADER.match(line)
        if header is None:
            continue
        reader = _markdown_facts if header.re is MARKDOWN_HEADER else _text_facts
        facts = reader(text_lines[number + 1 : number + 1 + MAX_BLOCK])
        if facts.packages or facts.python:
            return Own(Report(facts=facts, mode="audit"), number + 1)
        return None
    return None


def _json_start(text_lines: list[str], schema: int) -> int:
    """Where the JSON document holding the schema line starts: the first line of the text, or a Markdown block's."""
    for number in range(schema, -1, -1):
        if JSON_BLOCK.match(text_lines[number]):
            return number + 1
        if text_lines[number].startswith("{"):
            return number
    return 0


def _json(text_lines: list[str], start: int) -> Report | None:
    body = []
    for line in text_lines[start : start + MAX_JSON_LINES]:
        if line.strip() == "```":
            break
        body.append(line)
    try:
        return Report.from_dict(json.loads("\n".join(body)))
    except (ValueError, RecursionError, ReportError):
        return None


def _text_facts(text_lines: list[str]) -> Facts:
    """The facts a text report's Environment block states (it ends at the first line that is not one)."""
    said: dict[str, str] = {}
    last = None
    for line in text_lines:
        if match := TEXT_FACT.match(line):
            last, said[match[1]] = match[1], match[2]
        elif last and CONTINUED.match(line):  # the text format wraps a long value under its start
            said[last] += " " + line.strip()
        elif said and not line.startswith("  "):
            break
        else:
            last = None
    packages = {m[1]: m[2] for p in said.get("packages", "").split(", ") if (m := PACKAGE.match(p.strip()))}
    return _facts(packages, said.get("python", ""), said.get("platform", ""))


def _markdown_facts(text_lines: list[str]) -> Facts:
    """The facts a Markdown report's component table states (its rows before its findings): python, platform, and
    a row per package; never its fix commands."""
    rows: dict[str, str] = {}
    for line in text_lines:
        if line.startswith("#"):
            break
        if (row := TABLE_ROW.match(line)) and not set(row[1]) <= {"-", ":", " "}:
            rows[row[1]] = row[2]
    labels = {"component", "python", "platform", "jax (as imported)", "NVIDIA"}
    packages = {n: v.split(" ")[0] for n, v in rows.items() if n not in labels and PACKAGE.match(f"{n} {v}")}
    return _facts(packages, rows.get("python", ""), rows.get("platform", ""))


def _facts(packages: dict[str, str], python: str, platform: str) -> Facts:
    """A report's facts from what its python and platform lines begin with ("3.11.7 (CPython...)", "Linux x86_64")."""
    version, system = python.split(" ")[0], platform.split(" ")[0]
    return Facts(
        packages=packages,
        python=PythonFacts(version=version) if version else PythonFacts(),
        platform=PlatformFacts(system=system) if system else PlatformFacts(),
        origin="triage",
    )
