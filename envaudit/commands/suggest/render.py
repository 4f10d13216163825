"""A suggestion written: text for a person (the command first, alone on its line, so that it pastes whole), JSON
for a program (`Suggestion.to_dict`)."""

from __future__ import annotations

from envaudit.formats import PLAIN, Renderers, Style, as_json
from envaudit.formats.summary import clean
from envaudit.model.suggestion import Suggestion


def text(suggestion: Suggestion, *, style: Style = PLAIN) -> str:
    del style  # plain lines: a command is never wrapped
    lines = []
    if suggestion.installs:
        lines += [suggestion.command, "", f"installs jax {suggestion.release} for this machine:"]
    else:
        lines += [f"nothing installs jax for this machine's accelerator ({suggestion.accelerator}):"]
    lines += [f"  {clean(line)}" for line in suggestion.machine]
    lines += ["", "why:"] + [f"  - {clean(line)}" for line in suggestion.reasons]
    if suggestion.otherwise:
        lines += ["", "what would install:"]
        for way in suggestion.otherwise:
            lines.append(f"  - {clean(way.said)}" + (f" (jax {way.release})" if way.release else ""))
            if way.command:
                lines.append(f"    {way.command}")
    return "\n".join(lines) + "\n"


RENDERERS: Renderers[Suggestion] = Renderers(text=text, json=as_json)
