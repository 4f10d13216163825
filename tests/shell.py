"""What makes a printed fix a command: bash parses it, and each of its commands starts with a builtin that sets the
environment, an installer, or the audited interpreter (advice is read in a finding's detail, never pasted)."""

from __future__ import annotations

import shlex
import subprocess

from envaudit.facts import Facts

STARTS = ("unset", "export", "uv", "conda")


def problems(command: str, facts: Facts) -> list[str]:
    """Why `command` is not a fix a shell runs as it is ("" is no fix: nothing wrong)."""
    if not command:
        return []
    found = []
    parsed = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True, timeout=30)
    if parsed.returncode != 0:
        found.append(f"bash -n: {parsed.stderr.strip()}")
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # a `# comment` is words an interactive zsh passes on: found below
    words = list(lexer)
    python = str(facts.python.get("executable") or "python")
    starts = [words[0]] + [words[i + 1] for i, w in enumerate(words[:-1]) if w == "&&"]
    found += [f"{w!r} starts a command" for w in starts if w not in (*STARTS, python)]
    found += [f"{w!r} in a fix" for w in words if w in (";", "|", "||", "&", "#") or w.startswith("#")]
    return found
