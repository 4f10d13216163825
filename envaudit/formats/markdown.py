"""Markdown for pasting into a GitHub issue: a verdict line, a versions table, findings, and the full facts in a
collapsible <details> block, so a maintainer sees the essentials first and can still read everything.

Every value from the report goes through summary.clean (no control character, so no line a crafted value starts,
no terminal escape), then `_cell` (a pipe cannot end a table cell) or `_code` (a backtick cannot end a code span);
a reference is a link only when it is one URL.
"""

from __future__ import annotations

import json
import re

from envaudit.formats import summary
from envaudit.model import Report

URL = re.compile(r"https?://[^\s<>`|]+")


def _cell(text: object) -> str:
    return summary.clean(text).replace("|", "\\|")


def _code(text: object) -> str:
    """Inline code showing `text` as it is: fenced by one backtick more than its longest run of them (CommonMark),
    padded with a space where it starts or ends with one (or a space: the one span that cannot be empty)."""
    body = summary.clean(text)
    fence = "`" * (max(map(len, re.findall("`+", body)), default=0) + 1)
    if not body:
        return "` `"
    pad = " " if body[0] in "` " or body[-1] in "` " else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def _reference(ref: str) -> str:
    clean = summary.clean(ref)
    return f"<{clean}>" if URL.fullmatch(clean) else _code(clean)


def render(report: Report, *, color: bool = False) -> str:
    del color
    facts = report.facts
    out = [
        f"### envaudit report: **{report.verdict}**{summary.scope(report)} ({summary.counts(report)})",
        "",
        f"envaudit {_cell(report.envaudit_version)}, {_cell(report.mode)}, {_cell(report.created)}",
        "",
        "| component | version / state |",
        "|---|---|",
        f"| python | {_cell(summary.python_line(facts))} |",
        f"| platform | {_cell(summary.platform_line(facts))} |",
        f"| jax (as imported) | {_cell(summary.jax_line(facts))} |",
        f"| NVIDIA | {_cell(summary.nvidia_line(facts))} |",
    ]
    out += [f"| {_cell(name)} | {_cell(version)} |" for name, version in facts.packages.items()]
    if facts.env:
        out += ["", "Environment variables: " + ", ".join(_code(f"{k}={v}") for k, v in facts.env.items())]
    out += ["", "#### Findings", ""]
    if not report.findings:
        out.append("None.")
    for f, caused in summary.roots(report):
        refs = " ".join(map(_reference, f.references))
        fix = f" Fix: {_code(f.fix)}" if f.fix else ""
        out.append(f"- **{_cell(f.severity)}** {_code(f.id)}: {_cell(f.title)}. {_cell(f.detail)}{fix} {refs}".rstrip())
        if caused:  # folded under their root: a maintainer opens them only to check
            many = "s" if len(caused) != 1 else ""
            out += [f"  <details><summary>{len(caused)} consequence{many}, fixed with it</summary>", ""]
            out += [
                f"  - {_cell(g.severity)} {_code(g.id)}: {_cell(g.title)}. {_cell(g.detail)}".rstrip() for g in caused
            ]
            out += ["", "  </details>"]
    command, said = summary.plan_lines(report)
    if command or said:
        out += ["", "To fix everything (one command, in this order):", ""]
        out += [_code(command)] if command else []
        out += [f"- {_cell(s)}" for s in said]
    if report.probes:
        out += ["", "#### Probes", "", "| probe | status | time (s) | metrics |", "|---|---|---|---|"]
        for p in report.probes:
            detail = p.judgement or p.message or p.metrics_text(limit=6)  # the judge's words, else the numbers
            out.append(f"| {_cell(p.run.label)} | {_cell(p.status)} | {p.duration_s:.2f} | {_cell(detail)} |")
            if summary.devices_to_show(p.devices):
                out += [
                    f"| ↳ device {_cell(d['id'])} | {_cell(d.get('verdict', '?'))} | | rel_err="
                    f"{_cell(summary.short(d.get('rel_err')))} {_cell(d.get('board', d.get('kind')))} |"
                    for d in p.devices
                ]
    details = json.dumps(report.to_dict(), indent=2, default=str)
    out += [
        "",
        "<details><summary>Full report (JSON)</summary>",
        "",
        "```json",
        details,
        "```",
        "",
        "</details>",
    ]
    return "\n".join(out) + "\n"
