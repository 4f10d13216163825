"""The terminal format: aligned sections, worst findings first, wrapped to the width the CLI gives.

Prose is wrapped with a hanging indent under its label (stdlib textwrap, at whitespace only: a URL or a version is
never split); a command is never wrapped, so that it can be copied and pasted whole, and stands on a line of its
own after `fix:`. `Style.verbose` False is a terminal's short view, which keeps the verdict and every finding on a
24-line screen where nothing is wrong: each finding's title and fix (its detail and references behind `-v`), the
packages on one line, the probes that passed or were skipped named on a line each, the others in full. The CLI
decides the style (commands/terminal.py); this module never looks at the terminal.
"""

from __future__ import annotations

from envaudit.formats import summary
from envaudit.formats.style import MIN_WIDTH, PLAIN, Style, hanging
from envaudit.model.report import Finding, Report

COLORS = {
    "fail": "\033[31;1m",
    "warn": "\033[33;1m",
    "info": "\033[36m",
    "ok": "\033[32;1m",
    "error": "\033[35;1m",
    "ignored": "\033[2m",
}
RESET = "\033[0m"
DEVICE_SEVERITY = {"agrees": "ok", "differs": "warn", "wrong": "fail"}
PROBE_SEVERITY = {
    "pass": "ok",
    "skip": "info",
    "fail": "fail",
    "error": "fail",
    "timeout": "fail",
    "crash": "fail",
}
DETAIL = " " * 8  # under a finding's severity
ROW = " " * 12  # under an environment row's value
HINT = "(every finding's detail, package and probe: -v, or --format markdown)"
FOLDED = ("pass", "skip")  # the probes the short view names on one line each (by status), the others in full


def _paint(text: str, level: str | None, color: bool) -> str:
    return f"{COLORS[level]}{text}{RESET}" if color and level in COLORS else text


class _Lines:
    """The report's lines, each paragraph wrapped to the width under a hanging indent."""

    def __init__(self, style: Style) -> None:
        self.style, self.width, self.out = style, max(style.width, MIN_WIDTH), list[str]()

    def para(self, text: str, lead: str, indent: str, painted: str | None = None) -> None:
        """`lead` then `text`, wrapped, the next lines under `indent`; `painted`: the lead as shown (colours do
        not count toward the width)."""
        lines = hanging(text, self.width, lead, indent)
        if painted is not None:
            lines[0] = painted + lines[0][len(lead) :]
        self.out += lines

    def command(self, text: str, lead: str) -> None:
        """A command as it is, never wrapped: a wrapped one could not be pasted."""
        self.out.append(f"{lead}{text}")

    def blank(self, *lines: str) -> None:
        self.out += ["", *lines]


def render(report: Report, *, style: Style = PLAIN) -> str:
    facts, c, color = report.facts, summary.clean, style.color  # every value is cleaned; only our colours escape
    out = _Lines(style)
    host = report.host.get("hostname")
    head = [f"envaudit {c(report.envaudit_version)}", *([c(host)] if host else []), c(report.created)]
    if report.knowledge is not None:  # before the mode: triage reads the mode last (commands/triage/own.py)
        head.append(f"knowledge to jax {c(report.knowledge['jax'])}")
    head.append(c(report.mode))
    word = report.verdict.upper()
    out.para(f"{word}{summary.scope(report)}", "verdict: ", "  ")
    out.out[0] = out.out[0].replace(word, _paint(word, report.verdict, color), 1)  # the first word after the lead
    out.command(" | ".join(head), "")  # one line, as triage reads a pasted report (envaudit/commands/triage/own.py)
    packages = summary.packages_line(facts, room=None if style.verbose else out.width - len(ROW))  # short: one line
    folded = packages != summary.packages_line(facts)
    rows = [
        ("python", summary.python_line(facts)),
        ("platform", summary.platform_line(facts)),
        ("jax", summary.jax_line(facts)),
        ("nvidia", summary.nvidia_line(facts)),
        ("packages", packages),
    ]
    if report.settings is not None:
        settings = report.settings
        said = f"[tool.envaudit] of {settings.file}" if settings.file else f"none applied: {settings.ignored}"
        rows.append(("settings", said))
    rows += summary.build_rows(report)
    out.blank("Environment")
    for name, value in rows:
        out.para(c(value), f"  {name:<10}", ROW)
    out.blank(f"Findings ({summary.counts(report)})")
    shown = summary.roots(report)
    if not shown:
        out.out.append("  none")
    for f, caused in shown:
        _finding(out, f, caused)
    ignored = summary.roots(report, ignored=True)
    if ignored:
        out.blank(f"Ignored ({len(ignored)}: counted in no verdict)")
        for f, caused in ignored:
            _finding(out, f, caused, ignored=True)
    _plan(out, report)
    folded = _probes(out, report) or folded
    if not style.verbose and (folded or any(f.detail or f.references for f in report.findings)):
        out.blank()
        out.para(HINT, "", "")
    return "\n".join(out.out) + "\n"


def _finding(out: _Lines, f: Finding, caused: list[Finding], *, ignored: bool = False) -> None:
    c, color, verbose = summary.clean, out.style.color, out.style.verbose
    level = f.severity.upper().ljust(5)
    lead = f"  {level} "
    out.para(f"{c(f.id)}: {c(f.title)}", lead, DETAIL, f"  {_paint(level, f.severity, color)} ")
    if ignored:
        out.para(c(summary.ignored_line(f)), DETAIL, DETAIL)
    if verbose and f.detail:
        out.para(c(f.detail), DETAIL, DETAIL)
    if f.fix:
        out.command(c(f.fix), f"{DETAIL}fix: ")
    elif not verbose and f.advice is not None and f.advice.text and not ignored:  # the next step, without -v
        out.para(c(f.advice.text), f"{DETAIL}next: ", DETAIL)
    for ref in f.references if verbose else ():
        out.command(c(ref), f"{DETAIL}see: ")  # a URL is not broken either
    if caused:  # folded: one line each, the root's fix is theirs
        out.para(f"consequences ({len(caused)}), fixed with it:", DETAIL, DETAIL)
        for g in caused:
            shown = _paint(g.severity, g.severity, color)
            out.para(f"{c(g.id)}: {c(g.title)}", f"          {g.severity} ", " " * 12, f"          {shown} ")


def _plan(out: _Lines, report: Report) -> None:
    command, said = summary.plan_lines(report)
    if not (command or said):
        return
    out.blank(summary.plan_heading(report))
    if command:
        out.command(summary.clean(command), "  ")
    for line in said:
        out.para(f"({summary.clean(line)})", "  ", "   ")


def _probes(out: _Lines, report: Report) -> bool:
    """The probes' section; whether the short view folded some of them (FOLDED)."""
    if not report.probes:
        return False
    c, color = summary.clean, out.style.color
    out.blank("Probes")
    skipped = [p for p in report.probes if p.status == "skip"]
    reasons = {p.message for p in skipped}
    if len(skipped) == len(report.probes) > 2 and len(reasons) == 1:  # one reason for all: said once
        names = ", ".join(c(p.run.label) for p in skipped)
        out.para(f"{len(skipped)} skipped: {c(reasons.pop())} ({names})", "  skip    ", " " * 10)
        return False
    shown = list(report.probes)
    if not out.style.verbose:  # the short view: those that passed, or were skipped, by name on a line each
        for status in FOLDED:
            labels = [c(p.run.label) for p in shown if p.status == status]
            if labels:
                lead = f"  {status.ljust(7)} "
                painted = f"  {_paint(status.ljust(7), PROBE_SEVERITY[status], color)} "
                out.para(f"{len(labels)}: {', '.join(labels)}", lead, " " * len(lead), painted)
        shown = [p for p in shown if p.status not in FOLDED]
    width = max((len(c(p.run.label)) for p in shown), default=0)
    for p in shown:
        status = p.status.ljust(7)
        tail = p.judgement or p.message or p.metrics_text()  # the judge's words, else the numbers
        lead = f"  {status} {c(p.run.label).ljust(width)}  {p.duration_s:6.2f} s  "
        painted = f"  {_paint(status, PROBE_SEVERITY.get(p.status, 'info'), color)} {lead[10:]}"
        hang = len(lead) if len(lead) <= out.width // 2 else 12  # under the tail, if that leaves room for it
        out.para(c(tail), lead, " " * hang, painted)
        if summary.devices_to_show(p.devices):
            for d in p.devices:
                verdict = str(d.get("verdict", "?")).ljust(7)
                said = _paint(verdict, DEVICE_SEVERITY.get(str(d.get("verdict"))), color)
                body = (
                    f"device {d['id']}: rel_err={summary.short(d.get('rel_err'))}  {c(d.get('board', d.get('kind')))}"
                )
                out.para(body, f"    {verdict} ", " " * 12, f"    {said} ")
    return len(shown) < len(report.probes)
