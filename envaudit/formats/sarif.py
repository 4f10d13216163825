"""SARIF 2.1.0 (OASIS, https://docs.oasis-open.org/sarif/sarif/v2.1.0/): a report as a static analysis log, for
GitHub code scanning (`github/codeql-action/upload-sarif`).

One run of the tool `envaudit`. Its `rules` are one reporting descriptor per finding id (the finding's title as
its descriptions, its references as its help, the first one its `helpUri`, its severity the default level); each
finding is a `result` of its rule: `level` from the severity (fail `error`, warn `warning`, info `note`; SARIF
section 3.27.10), its message the finding's title, detail and fix as the text format says them, and where a plan
read its cause from an input file (`Finding.location`), a physical location: the file as the command line named it,
relative to the checkout (`%SRCROOT%`), and the requirement's line. GitHub shows only results with a location
(docs.github.com, "SARIF support for code scanning", `result` object: `locations[]`), so a plan of the repository's
files is what lands on a pull request; an audit's findings are in the log for other SARIF readers. A finding the
user ignores is a result with an external suppression and their reason (section 3.35); the run's invocation says
whether the audit completed (`executionSuccessful`), and its properties the verdict and the audited versions.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from envaudit.formats import summary
from envaudit.formats.style import PLAIN, Style
from envaudit.model.report import Finding, Location, Report

# the published schema's own id (oasis-tcs/sarif-spec sarif-2.1/schema/sarif-schema-2.1.0.json, errata 01)
SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
VERSION = "2.1.0"
INFORMATION_URI = "https://pypi.org/project/jax-envaudit/"
LEVEL = {"fail": "error", "warn": "warning", "info": "note"}
# GitHub's reportingDescriptor `properties.problem.severity` (error, warning or recommendation): how it ranks alerts
PROBLEM = {"fail": "error", "warn": "warning", "info": "recommendation"}
URL = re.compile(r"https?://[^\s<>\"{}|\\^`]+")
DESCRIPTION = 1000  # the most characters GitHub shows of a rule's fullDescription


def _rule(f: Finding) -> dict[str, Any]:
    title = f.title or f.id
    links = [ref for ref in f.references if URL.fullmatch(ref)]
    rule: dict[str, Any] = {
        "id": f.id,
        "name": f.id,
        "shortDescription": {"text": title},
        "fullDescription": {"text": title[:DESCRIPTION]},
        "help": {
            "text": "\n".join([title, *(f"See {ref}" for ref in f.references)]),
            "markdown": "\n".join([title, "", *(f"- <{ref}>" if ref in links else f"- {ref}" for ref in f.references)]),
        },
        "defaultConfiguration": {"level": LEVEL[f.severity]},
        "properties": {"tags": ["envaudit", f.source], "problem.severity": PROBLEM[f.severity]},
    }
    if links:
        rule["helpUri"] = links[0]
    return rule


def _message(f: Finding) -> str:
    parts = [f"{f.title or f.id}."]
    if f.detail:
        parts.append(f.detail)
    if f.fix:
        parts.append(f"Fix: {f.fix}")
    if f.caused_by:
        parts.append(f"(A consequence of {f.caused_by}: its fix fixes this too.)")
    return " ".join(parts)


def artifact(where: Location) -> dict[str, str]:
    """The file as a URI reference (RFC 3986: each character a path may not hold percent-encoded): a relative name
    against the checkout's root (`%SRCROOT%`, as GitHub's examples), an absolute one a file: URI."""
    path = where.file.replace("\\", "/")
    if path.startswith("/"):
        return {"uri": "file://" + quote(path)}
    return {"uri": quote(path), "uriBaseId": "%SRCROOT%"}


def _location(where: Location) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifact(where)}
    if where.line > 0:
        physical["region"] = {"startLine": where.line}
    return {"physicalLocation": physical}


def _result(f: Finding, index: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": f.id,
        "ruleIndex": index,
        "level": LEVEL[f.severity],
        "message": {"text": _message(f)},
    }
    if f.location is not None:
        result["locations"] = [_location(f.location)]
    if f.ignored is not None:
        result["suppressions"] = [{"kind": "external", "justification": f.ignored or "ignored by the user"}]
    return result


def document(report: Report) -> dict[str, Any]:
    """The SARIF log as a JSON value."""
    index: dict[str, int] = {}
    rules: list[dict[str, Any]] = []
    for f in report.findings:
        if f.id not in index:
            index[f.id] = len(rules)
            rules.append(_rule(f))
    driver: dict[str, Any] = {"name": "envaudit", "informationUri": INFORMATION_URI, "rules": rules}
    if report.envaudit_version:
        driver["version"] = report.envaudit_version
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "invocations": [{"executionSuccessful": report.complete}],
        "results": [_result(f, index[f.id]) for f in report.findings],
        "properties": {
            "verdict": report.verdict,
            "mode": report.mode,
            "audited": summary.clean(summary.packages_line(report.facts)),
        },
    }
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run]}


def render(report: Report, *, style: Style = PLAIN) -> str:
    del style  # a machine format
    return json.dumps(document(report), indent=2) + "\n"
