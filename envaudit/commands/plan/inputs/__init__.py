"""What `envaudit plan` reads: requirements files, pyproject.toml, uv.lock, pylock.toml, pip's installation report,
poetry.lock, pixi.lock, conda's environment.yml and `conda list --export` / `--json` output.

Each input is read once, bounded (`files.py`), into values (`values.py`); what it selects for the plan's target is
then evaluated for that target's markers (`markers.py`), and `gather.py` puts the inputs together: what each says is
installed, where each requirement line stands, and the one-line error for everything a plan cannot evaluate exactly.
This package's `__init__` holds `PlanError`, `Unresolved` and the names of the input files alone, so that `plan.py`,
which the command line loads, uses them without loading packaging or building the values' dataclasses (5 ms).
"""

from __future__ import annotations

import os
import re
from typing import Literal

from envaudit.model.exitcodes import BadInput

Kind = Literal[
    "requirements",
    "pyproject",
    "uv.lock",
    "pylock",
    "pip-report",
    "poetry.lock",
    "pixi.lock",
    "pipfile.lock",
    "conda",
    "json",
]
# PEP 751's names of a lock file: pylock.toml, or pylock.NAME.toml (https://packaging.python.org/en/latest/
# specifications/pylock-toml/#file-name: r"^pylock\.([^.]+\.)?toml$")
PYLOCK = re.compile(r"^pylock\.([^.]+\.)?toml$")
# conda's environment file: `conda env create` reads environment.yml (or .yaml) by default; a project names its
# variants environment-cuda.yml, environment_dev.yaml
CONDA_ENV = re.compile(r"^environment([-_.][^/]*)?\.ya?ml$")
NAMES: dict[str, Kind] = {
    "pyproject.toml": "pyproject",
    "uv.lock": "uv.lock",
    "poetry.lock": "poetry.lock",
    "pixi.lock": "pixi.lock",
}


class PlanError(BadInput, ValueError):
    """A requirement, input file or flag that a plan cannot evaluate; the message is one line."""


class Unresolved(PlanError):
    """Inputs that hold no resolution of an audited stack: nothing audited in them, or requirements whose versions a
    resolver would have to choose (the message names the command that makes one). Read as they are, not malformed:
    `plan --skip-unresolved` (the pre-commit hook's) notes them and goes on."""


def kind(word: str) -> Kind | None:
    """The kind of input file a plan's argument names, by its name (a requirement string has no such name):
    pyproject.toml, uv.lock, a pylock.toml, poetry.lock, pixi.lock, a conda environment.yml, a *.json
    (pip's report or `conda list --json`: its content says which), a requirements *.txt (or `conda list --export`
    output: its header says so)."""
    if re.search(r"[\s=<>!~;@\[]", word):
        return None
    base = os.path.basename(word)
    if base in NAMES:
        return NAMES[base]
    if PYLOCK.match(base):
        return "pylock"
    if CONDA_ENV.match(base) or base.endswith((".yml", ".yaml")):  # named by the user: YAML a plan reads is conda's
        return "conda"
    if base.endswith(".json") and len(base) > 5:
        return "json"
    return "requirements" if base.endswith(".txt") and len(base) > 4 else None


# files a plan does not read, and the command that makes one it reads (each output's form is planned in
# tests/commands/plan/test_plan_round3.py)
REPORT = "pip install --dry-run --ignore-installed --report report.json"
EXPORTS = {
    "setup.py": f"`{REPORT} .` beside it, then `envaudit plan --pip-report report.json`",
    "setup.cfg": f"`{REPORT} .` beside it, then `envaudit plan --pip-report report.json`",
    "Pipfile": "`pipenv requirements > requirements.txt`, then `envaudit plan -r requirements.txt`",
    "Pipfile.lock": "`pipenv requirements > requirements.txt`, then `envaudit plan -r requirements.txt`",
    "pixi.toml": "`pixi lock` beside it, then `envaudit plan pixi.lock`",
    "pdm.lock": "`pdm export -o requirements.txt`, then `envaudit plan -r requirements.txt`",
    "requirements.in": "`uv pip compile requirements.in -o requirements.txt`, then `envaudit plan requirements.txt`",
}


def unread(word: str) -> str:
    """The one line for a file whose kind a plan does not read: the command that makes a file it reads."""
    base = os.path.basename(word)
    how = EXPORTS.get(
        base, f"`{REPORT} -r {word}` if it is a requirements file, then `envaudit plan --pip-report report.json`"
    )
    return f"{word} is not a file envaudit plan reads: {how}"
