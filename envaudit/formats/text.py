"""The terminal format: aligned sections, worst findings first, colour only when the CLI says it is a TTY.

The CLI decides `color` (a TTY and no NO_COLOR); this module never looks at the terminal itself.
"""

from __future__ import annotations

from envaudit.formats import summary
from envaudit.model import Report

COLORS = {
    "fail": "\033[31;1m",
    "warn": "\033[33;1m",
    "info": "\033[36m",
    "ok": "\033[32;1m",
    "error": "\033[35;1m",
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


def _paint(text: str, level: str | None, color: bool) -> str:
    return f"{COLORS[level]}{text}{RESET}" if color and level in COLORS else text


def render(report: Report, *, color: bool = False) -> str:
    facts, c = report.facts, summary.clean  # every value from the report is cleaned; only our colours are escapes
    host = report.host.get("hostname", "?")
    verdict = _paint(report.verdict.upper(), report.verdict, color)
    lines = [
        f"envaudit {c(report.envaudit_version)} | {c(host)} | {c(report.created)} | {c(report.mode)} | "
        f"verdict: {verdict}{summary.scope(report)}",
        "",
    ]
    rows = [
        ("python", summary.python_line(facts)),
        ("platform", summary.platform_line(facts)),
        ("jax", summary.jax_line(facts)),
        ("nvidia", summary.nvidia_line(facts)),
        ("packages", ", ".join(f"{k} {v}" for k, v in facts.packages.items()) or "none of the audited stack"),
    ]
    lines.append("Environment")
    lines += [f"  {name:<10}{c(value)}" for name, value in rows]
    lines += ["", f"Findings ({summary.counts(report)})"]
    if not report.findings:
        lines.append("  none")
    for f, caused in summary.roots(report):
        lines.append(f"  {_paint(f.severity.upper().ljust(5), f.severity, color)} {c(f.id)}: {c(f.title)}")
        if f.detail:
            lines.append(f"        {c(f.detail)}")
        if f.fix:
            lines.append(f"        fix: {c(f.fix)}")
        for ref in f.references:
            lines.append(f"        see: {c(ref)}")
        if caused:  # folded: one line each, the root's fix is theirs
            lines.append(f"        consequences ({len(caused)}), fixed with it:")
            lines += [f"          {_paint(g.severity, g.severity, color)} {c(g.id)}: {c(g.title)}" for g in caused]
    command, said = summary.plan_lines(report)
    if command or said:
        lines += ["", "To fix everything (one command, in this order):"]
        lines += [f"  {c(command)}"] if command else []
        lines += [f"  ({c(s)})" for s in said]
    if report.probes:
        lines += ["", "Probes"]
        width = max(len(c(p.run.label)) for p in report.probes)
        for p in report.probes:
            status = _paint(p.status.ljust(7), PROBE_SEVERITY.get(p.status, "info"), color)
            tail = p.judgement or p.message or p.metrics_text()  # the judge's words, else the numbers
            lines.append(f"  {status} {c(p.run.label).ljust(width)}  {p.duration_s:6.2f} s  {c(tail)}")
            if summary.devices_to_show(p.devices):
                for d in p.devices:
                    verdict = _paint(
                        str(d.get("verdict", "?")).ljust(7), DEVICE_SEVERITY.get(str(d.get("verdict"))), color
                    )
                    lines.append(
                        f"    {verdict} device {d['id']}: rel_err={summary.short(d.get('rel_err'))}  "
                        f"{c(d.get('board', d.get('kind')))}"
                    )
    return "\n".join(lines) + "\n"
