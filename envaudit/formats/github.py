"""GitHub Actions workflow commands: one annotation per root cause, shown on the run's summary page.

`fail` is `::error`, `warn` `::warning`, `info` `::notice` (https://docs.github.com/en/actions/reference/
workflow-commands-for-github-actions); a finding the user ignores is a notice that says so. A plan's finding whose
cause an input file writes carries `file=` and `line=` (`Finding.location`: the file as the command line named it,
the line of the requirement or lock entry), so that the annotation lands on that line of a pull request. Each
command is one line: its data escapes `%`, CR and LF and its properties `:` and `,` too, as the Actions toolkit does
(actions/toolkit packages/core/src/command.ts, escapeData and escapeProperty), so no text of a report can start a
command of its own. Then come, as plain log text, the audited
packages and, last, the verdict and the plan's one command.
"""

from __future__ import annotations

from envaudit.formats import summary
from envaudit.formats.style import PLAIN, Style
from envaudit.model.report import Finding, Report

COMMAND = {"fail": "error", "warn": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(f: Finding, caused: list[Finding]) -> str:
    command = COMMAND[f.severity] if f.counts else "notice"
    title = f"envaudit {f.severity}: {f.id}" if f.counts else f"envaudit ignored {f.severity}: {f.id}"
    parts = [f"{f.title}."]
    if not f.counts:
        parts.append(f"({summary.ignored_line(f)})")
    if f.detail:
        parts.append(f.detail)
    if f.fix:
        parts.append(f"Fix: {f.fix}")
    if caused:
        parts.append(f"Consequences, fixed with it: {', '.join(g.id for g in caused)}.")
    parts += [f"See {ref}" for ref in f.references]
    message = "\n".join(summary.clean(p) for p in parts)
    return f"::{command} {','.join(_properties(f, title))}::{_data(message)}"


def _properties(f: Finding, title: str) -> list[str]:
    """`file` and `line` where a plan read its cause from an input file (the annotation then lands on that line of
    a pull request's diff), then `title`."""
    where = f.location
    found = [f"file={_property(where.file)}"] if where is not None else []
    found += [f"line={where.line}"] if where is not None and where.line > 0 else []
    return [*found, f"title={_property(title)}"]


def render(report: Report, *, style: Style = PLAIN) -> str:
    del style  # the runner renders the annotations
    lines = [_annotation(f, caused) for f, caused in summary.roots(report)]
    lines += [_annotation(f, caused) for f, caused in summary.roots(report, ignored=True)]
    lines.append(f"envaudit audited: {summary.clean(summary.packages_line(report.facts))}")
    command, said = summary.plan_lines(report)
    tail = f"envaudit: {report.verdict.upper()}{summary.scope(report)} ({summary.counts(report)})"
    if command:
        tail += f"; {summary.plan_heading(report).removesuffix(':').lower()}: {summary.clean(command)}"
    lines.append(tail + "".join(f" ({summary.clean(s)})" for s in said))
    return "\n".join(lines) + "\n"
