"""GitHub Actions workflow commands: one annotation per root cause, shown on the run's summary page.

`fail` is `::error`, `warn` `::warning`, `info` `::notice` (https://docs.github.com/en/actions/reference/
workflow-commands-for-github-actions); a finding the user ignores is a notice that says so. A plan's finding whose
cause an input file writes carries `file=` and `line=` (`Finding.location`: the file as the command line named it,
the line of the requirement or lock entry), so that the annotation lands on that line of a pull request. Each
command is one line: its data escapes `%`, CR and LF and its properties `:` and `,` too, as the Actions toolkit does
(actions/toolkit packages/core/src/command.ts, escapeData and escapeProperty), so no text of a report can start a
command of its own.

GitHub shows at most 10 error, 10 warning and 10 notice annotations per step, and 50 per job (actions/toolkit
docs/problem-matchers.md, "Limitations"); what a step writes past that is dropped without a word. So at most
`PER_KIND` of each command are written, in the report's order (roots first, the ignored after), and where any is
left out, one `::notice` (its slot kept free) says how many of which kind; each one left out is still in the log, as a
plain line (`envaudit left out: ...`). Then come, as plain log text, the audited packages and, last, the verdict and
the plan's one command.
"""

from __future__ import annotations

from collections import Counter

from envaudit.formats import summary
from envaudit.formats.style import PLAIN, Style
from envaudit.model.report import Finding, Report

COMMAND = {"fail": "error", "warn": "warning", "info": "notice"}
PER_KIND = 10  # annotations of one kind GitHub shows per step (actions/toolkit docs/problem-matchers.md)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(f: Finding) -> str:
    return COMMAND[f.severity] if f.counts else "notice"


def _title(f: Finding) -> str:
    return f"envaudit {f.severity}: {f.id}" if f.counts else f"envaudit ignored {f.severity}: {f.id}"


def _annotation(f: Finding, caused: list[Finding]) -> str:
    parts = [f"{f.title}.", *summary.finding_parts(f, caused)]
    message = "\n".join(summary.clean(p) for p in parts)
    return f"::{_command(f)} {','.join(_properties(f, _title(f)))}::{_data(message)}"


def _properties(f: Finding, title: str) -> list[str]:
    """`file` and `line` where a plan read its cause from an input file (the annotation then lands on that line of
    a pull request's diff), then `title`."""
    where = f.location
    found = [f"file={_property(where.file)}"] if where is not None else []
    found += [f"line={where.line}"] if where is not None and where.line > 0 else []
    return [*found, f"title={_property(title)}"]


def _capped(
    roots: list[tuple[Finding, list[Finding]]], notices: int
) -> tuple[list[tuple[Finding, list[Finding]]], list[Finding]]:
    """The roots annotated (at most PER_KIND of each command, `notices` of notices) and those left out, in order."""
    room = Counter({"error": PER_KIND, "warning": PER_KIND, "notice": notices})
    shown, left = [], []
    for f, caused in roots:
        if room[_command(f)] > 0:
            room[_command(f)] -= 1
            shown.append((f, caused))
        else:
            left.append(f)
    return shown, left


def _overflow(left: list[Finding]) -> str:
    """The one notice that says what GitHub would not have shown: how many annotations of each kind."""
    kinds = Counter(_command(f) for f in left)
    said = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in kinds.items())
    message = (
        f"{len(left)} more annotation{'s' if len(left) > 1 else ''} left out ({said}): GitHub shows {PER_KIND} of"
        " each kind per step. Each is a line of this step's log that starts 'envaudit left out:';"
        " --format text or json shows them all."
    )
    return f"::notice title={_property('envaudit: annotations left out')}::{_data(message)}"


def render(report: Report, *, style: Style = PLAIN) -> str:
    del style  # the runner renders the annotations
    roots = summary.roots(report) + summary.roots(report, ignored=True)
    shown, left = _capped(roots, PER_KIND)
    if left:  # the overflow notice takes a notice's slot
        shown, left = _capped(roots, PER_KIND - 1)
    lines = [_annotation(f, caused) for f, caused in shown]
    if left:
        lines.append(_overflow(left))
        lines += [f"envaudit left out: {summary.clean(_title(f))}: {summary.clean(f.title)}" for f in left]
    lines.append(f"envaudit audited: {summary.clean(summary.packages_line(report.facts))}")
    command, said = summary.plan_lines(report)
    tail = f"envaudit: {report.verdict.upper()}{summary.scope(report)} ({summary.counts(report)})"
    if command:
        tail += f"; {summary.plan_heading(report).removesuffix(':').lower()}: {summary.clean(command)}"
    lines.append(tail + "".join(f" ({summary.clean(s)})" for s in said))
    return "\n".join(lines) + "\n"
