"""A report as it may be pasted in public (Markdown, unless `--show-host`): no host name, no home directory, no path
of the audited environment.

Every string of the report is rewritten the same way: the audited environment's prefix (`facts.python.prefix`)
becomes `<env>`, a home directory (`/home/NAME`, `/Users/NAME`, `/root`, and wherever the audited user's home is:
`facts.python.home`, `/scratch/users/NAME` on a cluster) `~`, and the host name is dropped from the
report's `host` and from jax's `platform.uname()` line in `jax.print_environment_info()` (elsewhere a short host
name could be part of any word, so it is not searched for). System paths (`/usr/local/cuda-12.4`) stay: they say
which toolkit was found, and name no one.
"""

from __future__ import annotations

import re
from typing import Any

from envaudit.model.report import JSONDict, Report

HOME = re.compile(r"(?<![\w.-])(?:/home/[^/\s'\"]+|/Users/[^/\s'\"]+|/root)(?=/|\b|$)")
UNAME_NODE = re.compile(r"node='[^']*'")
ENV = "<env>"


def _paths(text: str, prefix: str, home: str = "") -> str:
    if prefix and len(prefix) > 1:
        text = re.sub(rf"(?<![\w.-]){re.escape(prefix)}(?=/|\b|$)", ENV, text)
    if home and len(home) > 1 and home != "/":
        text = re.sub(rf"(?<![\w.-]){re.escape(home.rstrip('/'))}(?=/|\b|$)", "~", text)
    return UNAME_NODE.sub("node='<host>'", HOME.sub("~", text))


def _walk(value: Any, prefix: str, home: str) -> Any:
    if isinstance(value, str):
        return _paths(value, prefix, home)
    if isinstance(value, dict):
        return {_paths(k, prefix, home) if isinstance(k, str) else k: _walk(v, prefix, home) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, prefix, home) for v in value]
    return value


def document(report: Report) -> JSONDict:
    """The report's JSON document, as it may be shared."""
    prefix, home = str(report.facts.python.get("prefix") or ""), str(report.facts.python.get("home") or "")
    shared: JSONDict = _walk(report.to_dict(), prefix, home)
    shared["host"] = {}
    return shared


def text(report: Report, value: object) -> str:
    """One value of the report, as it may be shared."""
    python = report.facts.python
    return _paths(str(value), str(python.get("prefix") or ""), str(python.get("home") or ""))
