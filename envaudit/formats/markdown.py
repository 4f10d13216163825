"""Markdown for pasting into a GitHub issue: a verdict line, a versions table, findings, and the full facts in a
collapsible <details> block, so a maintainer sees the essentials first and can still read everything.

Every value from the report goes through summary.clean (no control character, so no line a crafted value starts,
no terminal escape), then `_cell` (HTML escaped, and a pipe cannot end a table cell) or `_code` (a backtick cannot
end a code span);
a reference is a link only when it is one URL.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable

from envaudit.formats import sharing, summary
from envaudit.formats.style import PLAIN, Style
from envaudit.model.report import Finding, Report

URL = re.compile(r"https?://[^\s<>`|]+")


def _cell(text: object) -> str:
    """Text in a table cell or a line: no HTML of a report's values is ever rendered (`<img onerror=...>` in a
    version shows as text), and a pipe cannot end the cell."""
    return html.escape(summary.clean(text), quote=False).replace("|", "\\|")


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


def _block(text: str, language: str = "text", *, keep_lines: bool = False) -> list[str]:
    """A fenced code block showing `text` as it is: its fence longer than any run of backticks in it. One line
    (a command) unless `keep_lines`: a line break in a command would end the list item it stands in."""
    body = summary.clean_lines(text) if keep_lines else summary.clean(text)
    fence = "`" * max(3, max(map(len, re.findall("`+", body)), default=0) + 1)
    return [f"{fence}{language}", body, fence]


def _finding(f: Finding, caused: list[Finding], shared: Callable[[object], str], language: str) -> list[str]:
    """A finding in a few lines: what, then its fix on a line of its own, then why and the references, folded."""
    ignored = "" if f.counts else f" *({_cell(summary.ignored_line(f))})*"
    lines = [f"- **{_cell(f.severity)}** {_code(f.id)}: {_cell(f.title)}{ignored}"]
    if f.fix:
        lines += ["", *(f"  {line}" for line in _block(shared(f.fix), language))]
    refs = " ".join(map(_reference, f.references))
    if f.detail or refs:
        lines += ["", "  <details><summary>why</summary>", "", f"  {_cell(shared(f.detail))} {refs}".rstrip(), ""]
        lines += ["  </details>"]
    if caused:  # folded under their root: a maintainer opens them only to check
        many = "s" if len(caused) != 1 else ""
        lines += ["", f"  <details><summary>{len(caused)} consequence{many}, fixed with it</summary>", ""]
        lines += [
            f"  - {_cell(g.severity)} {_code(g.id)}: {_cell(g.title)}. {_cell(shared(g.detail))}".rstrip()
            for g in caused
        ]
        lines += ["", "  </details>"]
    return lines


def render(report: Report, *, style: Style = PLAIN) -> str:
    facts = report.facts

    def shared(value: object) -> str:
        return str(value) if style.show_host else sharing.text(report, value)

    out = [
        f"### envaudit report: **{report.verdict}**{summary.scope(report)} ({summary.counts(report)})",
        "",
        f"envaudit {_cell(report.envaudit_version)}, {_cell(report.mode)}, {_cell(report.created)}"
        + (f", knowledge to jax {_cell(report.knowledge['jax'])}" if report.knowledge else "")
        + (f", host {_cell(report.host.get('hostname'))}" if style.show_host and report.host.get("hostname") else ""),
        "",
        "| component | version / state |",
        "|---|---|",
        f"| python | {_cell(summary.python_line(facts))} |",
        f"| platform | {_cell(summary.platform_line(facts))} |",
        f"| jax (as imported) | {_cell(summary.jax_line(facts))} |",
        f"| NVIDIA | {_cell(summary.nvidia_line(facts))} |",
    ]
    out += [f"| {_cell(name)} | {_cell(version)} |" for name, version in facts.packages.items()]
    out += [f"| {_cell(name)} | {_cell(shared(said))} |" for name, said in summary.build_rows(report)]
    if facts.env:
        out += ["", "Environment variables: " + ", ".join(_code(shared(f"{k}={v}")) for k, v in facts.env.items())]
    if info := facts.jax.get("environment_info"):
        out += ["", "`jax.print_environment_info()`:", "", *_block(shared(info), keep_lines=True)]
    language = "text" if summary.lines(report) else "sh"  # a plan's fix is lines to write, not a command
    out += ["", "#### Findings", ""]
    if not report.findings:
        out.append("None.")
    for f, caused in [*summary.roots(report), *summary.roots(report, ignored=True)]:
        out += _finding(f, caused, shared, language)
    command, said = summary.plan_lines(report)
    if command or said:
        out += ["", summary.plan_heading(report), ""]
        out += _block(shared(command), language) if command else []
        out += [f"- {_cell(shared(s))}" for s in said]
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
    document = report.to_dict() if style.show_host else sharing.document(report)
    details = json.dumps(document, indent=2, default=str)
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
