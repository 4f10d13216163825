"""What a maintainer would reply to a bug report, as text for a terminal or Markdown to paste into the thread.

Per environment the text shows: the facts used, each with its line; the known problems (root causes, with their
references and fixes; consequences folded); what the text did not say that would matter; the rules that could
apply if it did. Every value from the text goes through `summary.clean` (and `markdown._cell` / `_code`), so a
crafted paste cannot end a table or a code span, or move a terminal's cursor.
"""

from __future__ import annotations

import textwrap

from envaudit.commands.triage.extract import Seen, Unread, known
from envaudit.commands.triage.triaged import Environment, Triage
from envaudit.formats import PLAIN, Renderers, Style, as_json, summary
from envaudit.formats.markdown import _cell, _code, _reference
from envaudit.model.report import Finding


def _in_cell(text: str) -> str:
    """Code in a table cell: GitHub splits cells at a pipe even inside a code span, unless it is escaped."""
    return _code(text).replace("|", "\\|")


def _span(env: Environment) -> str:
    lines = [s.line for s in env.seen] or [m["line"] for m in env.report.facts.messages]
    if not lines:
        return "no versions stated"
    return f"lines {min(lines)}-{max(lines)}" if len(set(lines)) > 1 else f"line {lines[0]}"


def _fix(finding: Finding) -> str:
    """A finding's fix in Markdown: its command as code, else what to do in words."""
    return _code(finding.fix) if finding.fix else _cell(summary.what_to_do(finding))


def _used(env: Environment) -> tuple[list[Seen], list[Seen]]:
    """The facts a reply lists, and the packages it only counts: those of an installer's list that envaudit neither
    audits nor knows as a library on or around jax, and no finding names (a `pip list` of 200 lines is read whole,
    for the pairs between its libraries, but a reply of 200 rows hides the few that matter)."""
    named = {p for f in env.report.findings for p in f.about}
    used: list[Seen] = []
    other: list[Seen] = []
    for s in env.seen:
        name = s.fact.removeprefix("package ")
        quiet = s.fact.startswith("package ") and not known(name) and name not in named
        (other if quiet else used).append(s)
    return used, other


def _lines(seen: list[Seen]) -> str:
    lines = sorted({s.line for s in seen})
    return f"lines {lines[0]}-{lines[-1]}" if len(lines) > 1 else f"line {lines[0]}"


def _others(other: list[Seen]) -> str:
    return f"{len(other)} other package{'s' if len(other) > 1 else ''} ({_lines(other)})"


def _stopped(unread: Unread) -> str:
    """Where the reading stopped, and why, from the typed value."""
    bound = "environments" if unread.bound == "environments" else "facts in one environment"
    return f"reading stopped at line {unread.line}, which would make more than {unread.limit} {bound}"


# what building the stack the text states here showed (reproduce.Reproduction.status), as a reply says it
_REPRODUCED = {"reproduced": "reproduced here", "not_reproduced": "not reproduced here", "not_built": "not built here"}

# what the text states that is not installed, by the kind of its fact (extract.NOT_INSTALLED)
HEADINGS = (
    ("Requirements the text states (not what is installed)", "requires "),
    ("Releases the text says help (a way out, not what is installed)", "helps "),
)


def _stated(seen: Seen, kind: str) -> str:
    """A requirement as a specifier (`jax>=0.4.4`), a release that helps as a pin (`flax==0.6.4`)."""
    name = seen.fact.removeprefix(kind)
    return f"{name}=={seen.value}" if kind == "helps " else name + seen.value


def text(result: Triage, *, style: Style = PLAIN) -> str:
    """Lines for a terminal, prose wrapped to the style's width with a hanging indent; a command or a URL is never
    wrapped, so it can be copied whole."""
    c, width = summary.clean, style.width

    def wrapped(body: str, lead: str, hang: str) -> list[str]:
        return textwrap.wrap(
            body, width, initial_indent=lead, subsequent_indent=hang, break_on_hyphens=False, break_long_words=False
        ) or [lead.rstrip()]

    many = len(result.environments) > 1
    cut = " (the text was cut: too large)" if result.truncated else ""
    cut += f" ({_stopped(result.unread)})" if result.unread else ""
    out = [
        f"envaudit triage: {len(result.environments)} environment{'s' if many else ''} | "
        f"verdict: {result.verdict.upper()}{cut}"
    ]
    for n, env in enumerate(result.environments, 1):
        out += ["", f"Environment {n} ({_span(env)})" if many else f"Environment ({_span(env)})"]
        if env.reproduction is not None:
            out += wrapped(c(env.reproduction.reason), f"  {_REPRODUCED[env.reproduction.status]}: ", " " * 4)
        out += ["  facts used"]
        used, other = _used(env)
        for s in used:
            lead = f"    {c(s.fact.removeprefix('package ')):<18} {c(s.value):<22} "
            out += wrapped(f"line {s.line}: {c(s.text)}", lead, " " * 10)
        out += [f"    and {_others(other)}"] if other else []
        roots = [(f, caused) for f, caused in summary.roots(env.report) if f.id != "jax-not-imported"]
        out += ["  known problems" if roots else "  known problems: none for these facts"]
        for f, caused in roots:
            out += wrapped(f"{c(f.id)}: {c(f.title)}", f"    {f.severity.upper():<5} ", " " * 10)
            out += wrapped(c(f.detail), " " * 10, " " * 10)
            out += wrapped(c(summary.what_to_do(f)), "          fix: ", " " * 15)
            out += [f"          see: {c(r)}" for r in f.references]
            if caused:
                said = f"(with {len(caused)} consequence(s): {', '.join(g.id for g in caused)})"
                out += wrapped(said, " " * 10, " " * 11)
        if env.missing:
            out += ["  not stated, and it would matter"]
            out += [line for m in env.missing for line in wrapped(m, "    - ", " " * 6)]
        if env.possible:
            out += ["  could apply, if what is not stated allows it"]
            out += [
                line for rule, title in env.possible for line in wrapped(f"{c(rule)}: {c(title)}", "    - ", " " * 6)
            ]
    if result.unnamed:
        out += ["", "Versions without a name: which packages are these? (state NAME==VERSION, or paste pip list)"]
        for s in result.unnamed:
            out += wrapped(f"{c(s.value)}  line {s.line}: {c(s.text)}", "    ", " " * 6)
    for heading, kind in HEADINGS:
        stated = [s for s in result.requirements if s.fact.startswith(kind)]
        out += ["", heading] if stated else []
        for s in stated:
            said = f"{c(s.fact.removeprefix(kind))} {c(s.value)}  line {s.line}: {c(s.text)}"
            out += wrapped(said, "    ", " " * 6)
    return "\n".join(out) + "\n"


def markdown(result: Triage, *, style: Style = PLAIN) -> str:
    del style  # Markdown is never coloured
    many = len(result.environments) > 1
    out = [f"From the environment{'s' if many else ''} in this report (checked with `envaudit triage`):"]
    out += [f"_Only part of this text was checked: {_stopped(result.unread)}._"] if result.unread else []
    for n, env in enumerate(result.environments, 1):
        out += [
            "",
            f"**Environment {n}** ({_span(env)})" if many else f"**Environment** ({_span(env)})",
            "",
            *([f"_{_REPRODUCED[r.status].capitalize()}_: {_cell(r.reason)}", ""] if (r := env.reproduction) else []),
            "| fact | value | from |",
            "|---|---|---|",
        ]
        used, other = _used(env)
        out += [
            f"| {_cell(s.fact.removeprefix('package '))} | {_in_cell(s.value)} | line {s.line}: {_in_cell(s.text)} |"
            for s in used
        ]
        out += [f"| {len(other)} other packages | | {_lines(other)} |"] if other else []
        roots = [(f, caused) for f, caused in summary.roots(env.report) if f.id != "jax-not-imported"]
        out += ["", "Known problems:" if roots else "No known problem for these versions."]
        for f, _ in roots:
            refs = " ".join(map(_reference, f.references))
            out.append(f"- **{_cell(f.severity)}** {_code(f.id)}: {_cell(f.title)}. Fix: {_fix(f)} {refs}".rstrip())
        if env.missing:
            out += ["", "Could you also tell us " + "; ".join(_cell(m) for m in env.missing) + "?"]
        if env.possible:
            out += ["", "That would decide: " + ", ".join(_code(rule) for rule, _ in env.possible) + "."]
    if result.unnamed:
        bare = ", ".join(f"{_code(s.value)} (line {s.line})" for s in result.unnamed)
        out += ["", f"Which packages are {bare}? Could you paste `pip list` (or name each as NAME==VERSION)?"]
    for heading, kind in HEADINGS:
        said = [f"{_code(_stated(s, kind))} (line {s.line})" for s in result.requirements if s.fact.startswith(kind)]
        out += ["", f"{heading}: {', '.join(said)}."] if said else []
    return "\n".join(out) + "\n"


RENDERERS: Renderers[Triage] = Renderers(text=text, markdown=markdown, json=as_json)
