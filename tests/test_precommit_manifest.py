"""The pre-commit hook manifest (.pre-commit-hooks.yaml) against envaudit itself: its `files` pattern selects only
names `envaudit plan` reads as input files, of the kind it reads them as, and what pre-commit runs (entry, args, then
the files) is a command line envaudit accepts. tests/integration/test_precommit.py runs it under pre-commit."""

from __future__ import annotations

import re
import shlex
import tomllib
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from envaudit.cli import build_parser
from envaudit.commands.plan.inputs import kind
from tests.conftest import ROOT


def hook() -> dict[str, Any]:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert [h["id"] for h in hooks] == ["envaudit-plan"]
    found: dict[str, Any] = hooks[0]
    return found


def selected(path: str) -> bool:
    return re.search(hook()["files"], path) is not None  # as pre-commit filters: re.search on the path from the root


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("requirements.txt", "requirements"),
        ("requirements-cuda.txt", "requirements"),
        ("services/train/requirements_dev.txt", "requirements"),
        ("requirements/base.txt", "requirements"),
        ("uv.lock", "uv.lock"),
        ("app/uv.lock", "uv.lock"),
        ("pylock.toml", "pylock"),
        ("pylock.cpu.toml", "pylock"),
        ("pyproject.toml", "pyproject"),
        ("libs/model/pyproject.toml", "pyproject"),
        ("poetry.lock", "poetry.lock"),
        ("app/pixi.lock", "pixi.lock"),
        ("environment.yml", "conda"),
        ("envs/environment-cuda.yaml", "conda"),
    ],
)
def test_the_files_it_runs_on_are_read_as_their_kind(path: str, expected: str) -> None:
    assert selected(path)
    assert kind(path) == expected


@pytest.mark.parametrize(
    "path",
    [
        "requirements.in",  # pip-tools' input: ranges, not what is installed
        "constraints.txt",  # a constraints file installs nothing alone
        "docs/notes.txt",
        "pylock.a.b.toml",  # not a PEP 751 name
        "my-pyproject.toml",
        "pyproject.toml.orig",
        "uv.lock.bak",
        "setup.cfg",
        "poetry.lock.bak",
        "my-environment.yml",
    ],
)
def test_other_files_are_left_alone(path: str) -> None:
    assert not selected(path)


def test_what_pre_commit_runs_is_an_each_plan_envaudit_accepts() -> None:
    found = hook()
    assert found["language"] == "python" and found["pass_filenames"] is True
    program, *words = shlex.split(found["entry"])
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert program in scripts  # the console script `pip install .` makes
    args = build_parser().parse_args([*words, *found["args"], "requirements.txt", "app/uv.lock"])
    assert (args.verb, args.each, args.strict, args.format) == ("plan", True, True, "text")
    assert args.no_build  # a commit hook installs and imports nothing: the tables alone
    assert args.requirements == ["requirements.txt", "app/uv.lock"]
    # a config's args replace the manifest's: --no-strict must not clash with anything in entry
    assert build_parser().parse_args([*words, "--no-strict", "uv.lock"]).strict is False
