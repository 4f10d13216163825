"""A plan's input files read bounded, as UTF-8 text, TOML or JSON: every way one can be wrong is one PlanError line.

An input is whatever the user names: a lock of a few hundred packages is under a megabyte, a pip report with every
distribution's metadata a few megabytes; a FIFO, a directory, a device, a binary file, a TOML or JSON document
nested past recursion are refused in one line naming the file (reportfile.read_bounded opens it without blocking).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

from envaudit.commands.plan.inputs import PlanError
from envaudit.commands.plan.inputs.values import STDIN
from envaudit.files.reportfile import parse_json, read_bounded
from envaudit.model.facts import ReportError

MAX_BYTES = 16 * 2**20  # an input is a few MB at most (a pip report carries every distribution's description)


def read_text(path: str, what: str) -> str:
    """The text of an input file (`-`: standard input), bounded, UTF-8 (a leading byte-order mark dropped)."""
    try:
        raw = sys.stdin.buffer.read(MAX_BYTES + 1) if path == STDIN else read_bounded(Path(path), MAX_BYTES + 1, what)
    except ReportError as exc:
        raise PlanError(str(exc)) from None
    except OSError as exc:  # standard input closed or unreadable
        raise PlanError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise PlanError(f"{path}: larger than {MAX_BYTES // 2**20} MiB, so not {what}")
    try:
        return raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError(f"{path}: not UTF-8 text, so not {what}") from None


def read_toml(path: str, what: str) -> dict[str, Any]:
    return read_toml_text(path, what)[0]


def read_toml_text(path: str, what: str) -> tuple[dict[str, Any], str]:
    """The document and the text it was read from (where its values are written: `tomllines.py`)."""
    text = read_text(path, what)
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path}: not valid TOML ({str(exc).splitlines()[0]}), so not {what}") from None
    except RecursionError:
        raise PlanError(f"{path}: nested too deeply to be {what}") from None


def read_yaml(path: str, what: str) -> object:
    """A YAML document (conda's environment.yml, pixi.lock), read as PyYAML's safe loader reads it: plain data, no
    tags; an alias is refused (neither conda nor pixi writes one, and a document of aliases of aliases is a small
    file that expands to more than memory holds)."""
    import yaml  # type: ignore[import-untyped, unused-ignore]  # lazily: only a YAML input needs it

    text = read_text(path, what)
    loader = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader
    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=loader)):
            raise PlanError(f"{path}: it uses YAML aliases (*NAME), which {what} does not, so not read")
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:  # its problem and line, never the text it quotes (a file may hold a secret)
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        said = str(getattr(exc, "problem", None) or "invalid")[:80]
        raise PlanError(f"{path}{where}: not valid YAML ({said}), so not {what}") from None
    except RecursionError:
        raise PlanError(f"{path}: nested too deeply to be {what}") from None


def read_json(path: str, what: str) -> object:
    try:
        return parse_json(read_text(path, what), path, what)
    except ReportError as exc:
        raise PlanError(str(exc)) from None
