"""What makes a printed fix a command: bash parses it, and each of its commands starts with a builtin that sets the
environment, an installer, or the audited interpreter (advice is read in a finding's detail, never pasted).

A plan of input files has no environment to run an installer in: its fix is the requirement lines to write
(`fixes.Target` "lines": `in FILE: REQ, REQ; export NAME=VALUE`). That is held to what its reader does with it:
each part is either a variable, which must pass the shell check above (it is set where the program will run), or
an input file's lines, each a PEP 508 requirement a requirements file or pyproject.toml takes as it is (no marker,
no URL), or `no NAME` for a distribution the file should not name. An audit's fix is never of that form."""

from __future__ import annotations

import re
import shlex
import subprocess

from packaging.requirements import InvalidRequirement, Requirement

from envaudit.model.facts import Facts

STARTS = ("unset", "export", "uv", "conda")
WRITTEN = re.compile(r"(?:^|; )in [^:;]+: ")  # a part that names an input file and its lines


def problems(command: str, facts: Facts) -> list[str]:
    """Why `command` is not a fix a shell runs as it is ("" is no fix: nothing wrong)."""
    if not command:
        return []
    if facts.origin == "plan" and WRITTEN.search(command):
        return written(command, facts)
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
    found += [f"{w!r} starts a command" for w in starts if w not in (*STARTS, "rm", python)]
    found += [f"{w!r} in a fix" for w in words if w in (";", "|", "||", "&", "#") or w.startswith("#")]
    found += deletions(words, str(facts.python.get("prefix") or ""))
    return found


def deletions(words: list[str], prefix: str) -> list[str]:
    """Why an `rm` in a fix deletes more than pip's stashes inside the environment: `rm -rf --` and paths only,
    each absolute, under the environment's prefix, its name `~...` (no `..`, no glob)."""
    found = []
    for i in (i for i, w in enumerate(words) if w == "rm" and (i == 0 or words[i - 1] == "&&")):
        end = words.index("&&", i) if "&&" in words[i:] else len(words)
        options, paths = words[i + 1 : i + 3], words[i + 3 : end]
        if options != ["-rf", "--"] or not paths:
            found.append(f"rm {' '.join(words[i + 1 : end])}: not rm -rf -- PATH...")
        for path in paths:
            name = path.rsplit("/", 1)[-1]
            if not (prefix and path.startswith(prefix.rstrip("/") + "/")) or ".." in path.split("/") or "*" in path:
                found.append(f"rm {path}: outside the environment {prefix or '(prefix not said)'}")
            elif not name.startswith("~"):
                found.append(f"rm {path}: not a stash of pip's")
    return found


def written(fix: str, facts: Facts) -> list[str]:
    """Why a plan's requirement-line fix is not lines a requirements file or pyproject.toml takes as they are."""
    found = []
    for part in fix.split("; "):
        if part.startswith(("unset ", "export ")):
            try:
                found += problems(part, facts)
            except ValueError as exc:  # shlex: a quote the "; " between parts cut open
                found.append(f"{part!r} does not parse: {exc}")
            continue
        match = re.fullmatch(r"in (?P<file>[^:;]+): (?P<lines>.+)", part)
        if match is None:
            found.append(f"{part!r} is neither a variable nor an input file's requirement lines")
            continue
        for line in match["lines"].split(", "):
            text = line.removeprefix("no ")
            try:
                req = Requirement(text)
            except InvalidRequirement as exc:
                found.append(f"{line!r} in {match['file']} is no requirement: {exc}")
                continue
            if req.marker is not None or req.url:
                found.append(f"{line!r} in {match['file']}: a fix's line has no marker and no URL")
            if line.startswith("no ") and (req.specifier or req.extras):
                found.append(f"{line!r} in {match['file']}: a removal names the distribution alone")
    return found
