"""Markdown for pasting into a GitHub issue: a verdict line, a versions table, findings, and the full facts in a
collapsible <details> block, so a maintainer sees the essentials first and can still read everything.
"""

from __future__ import annotations

import json

from envaudit.formats import summary
from envaudit.model import Report


def _cell(text: object) -> str:
    return summary.clean(text).replace("|", "\\|")


def render(report: Report, *, color: bool = False) -> str:
    del color
    facts = report.facts
    out = [
        f"### envaudit report: **{report.verdict}** ({summary.counts(report)})",
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
        out += ["", "Environment variables: " + ", ".join(f"`{k}={v}`" for k, v in facts.env.items())]
    out += ["", "#### Findings", ""]
    if not report.findings:
        out.append("None.")
    for f in report.findings:
        refs = " ".join(f"<{r}>" for r in f.references)
        out.append(
            f"- **{f.severity}** `{f.id}`: {_cell(f.title)}. {_cell(f.detail)} Fix: `{_cell(f.fix)}` {refs}".rstrip()
        )
    if report.probes:
        out += ["", "#### Probes", "", "| probe | status | time (s) | metrics |", "|---|---|---|---|"]
        for p in report.probes:
            detail = (
                p.judgement or p.message or summary.metrics_line(p.metrics, limit=6)
            )  # the judge's words, else the numbers
            out.append(f"| {_cell(p.name)} | {p.status} | {p.duration_s:.2f} | {_cell(detail)} |")
            if any(d.get("verdict", "agrees") != "agrees" for d in p.devices):  # one row per device, then
                out += [f"| ↳ device {d['id']} | {_cell(d.get('verdict', '?'))} | | rel_err="
                        f"{summary.short(d.get('rel_err'))} {_cell(d.get('board', d.get('kind')))} |"
                        for d in p.devices]  # fmt: skip
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
