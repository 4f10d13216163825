"""`envaudit fix`: what it says changed, how it undoes a fix that made things worse, and that it changes nothing
without a confirmation (tests/realenv applies it to real environments, one whose fix is made to fail)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envaudit.commands import fix as repair
from envaudit.commands.fix import Installed
from envaudit.model.fixes import Fix
from tests.conftest import ROOT, facts_from, interrupted_when


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


def test_the_restore_uses_the_installer_the_snapshot_names() -> None:
    """A conda-installed plugin the fix removed: the audit's facts no longer name it, the snapshot does."""
    before = {"jax-cuda12-plugin": Installed("jax-cuda12-plugin", "0.4.30", "conda")}
    python = {"executable": "/e/bin/python", "environment": "conda", "conda": True, "prefix": "/e"}
    undo = repair.restoring(before, {}, facts_from({"python": python}))
    assert undo.command == "conda install -y -p /e jax-cuda12-plugin==0.4.30"


@pytest.mark.slow
def test_an_interrupted_command_takes_the_installer_with_it(tmp_path: Path) -> None:
    """bash and what it started are one session: a Ctrl-C (or the bound: the same handler) kills both, nothing
    installs on after. The interrupt comes once the command runs: a bound of half a second had fired, on a busy
    machine, before bash had started, and a signal sent between fork and exec is lost."""
    marker, ready = tmp_path / "still-running", tmp_path / "ready"
    with interrupted_when(ready), pytest.raises(KeyboardInterrupt):
        repair.shell(f"touch {shlex.quote(str(ready))}; sleep 3; touch {shlex.quote(str(marker))}")
    time.sleep(3.5)
    assert not marker.exists()


def test_a_snapshot_that_is_not_one_is_one_line_of_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "s.json"
    bad.write_text('{"python": 1}', encoding="utf-8")
    with pytest.raises(repair.RepairError, match="not a snapshot written by envaudit fix"):
        repair.read_snapshot(bad)
