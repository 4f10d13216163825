"""The JSON format: the report exactly as schema `envaudit/report/v1` (model.Report.to_dict), stable key order.

Named json_format so that it never shadows the standard library's json module.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from envaudit.formats.style import PLAIN, Style


class Document(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def as_json(document: Document, *, style: Style = PLAIN) -> str:
    """A document (a report, a comparison, a triage) as its `to_dict`, indented, in a stable key order."""
    del style  # JSON is never coloured or wrapped
    return json.dumps(document.to_dict(), indent=2, default=str) + "\n"


render = as_json  # a report: schema envaudit/report/v1
