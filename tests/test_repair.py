"""`envaudit fix`: what it says changed, how it undoes a fix that made things worse, and that it changes nothing
without a confirmation (tests/realenv applies it to real environments, one whose fix is made to fail)."""

from __future__ import annotations

import subprocess
import sys

from envaudit import repair
from envaudit.fixes import Fix
from envaudit.repair import Installed
from tests.conftest import ROOT, facts_from


def dists(**versions: str) -> dict[str, Installed]:
    return {n.replace("_", "-"): Installed(n.replace("_", "-"), v, "pip") for n, v in versions.items()}


def test_changes_are_said_as_people_read_them() -> None:
    before = dists(jax="0.10.2", jaxlib="0.10.2", jax_cuda12_plugin="0.10.1", numpy="2.2.6")
    after = dists(jax="0.10.1", jaxlib="0.10.1", numpy="2.2.6", chex="0.1.90")
    assert repair.changes(before, after) == [
        "jax 0.10.2 -> 0.10.1",
        "jaxlib 0.10.2 -> 0.10.1",
        "jax-cuda12-plugin 0.10.1 removed",
        "chex 0.1.90 added",
    ]
    assert repair.changes(before, before) == []


def test_the_restore_puts_back_what_moved_and_removes_what_appeared() -> None:
    before = dists(jax="0.10.2", jaxlib="0.10.2", jax_cuda12_plugin="0.10.1")
    after = dists(jax="0.10.1", jaxlib="0.10.1", chex="0.1.90")
    facts = facts_from({"python": {"executable": "/e/bin/python", "environment": "uv", "pip": False}})
    undo = repair.restoring(before, after, facts)
    assert undo.command == (
        "uv pip uninstall --python /e/bin/python chex && "
        "uv pip install --python /e/bin/python jax==0.10.2 jaxlib==0.10.2 jax-cuda12-plugin==0.10.1"
    )
    assert not repair.restoring(before, before, facts)


def test_without_a_terminal_or_yes_nothing_runs_and_it_is_one_line_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "envaudit", "fix"], stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--yes" in done.stderr, done.stderr


def test_an_empty_fix_is_no_restore() -> None:
    assert not Fix() and Fix().command == ""
