"""The JSON format: the report exactly as schema `envaudit/report/v1` (model.Report.to_dict), stable key order.

Named json_format so that it never shadows the standard library's json module.
"""

from __future__ import annotations

import json

from envaudit.model import Report


def render(report: Report, *, color: bool = False) -> str:
    del color  # JSON is never coloured
    return json.dumps(report.to_dict(), indent=2, default=str) + "\n"
