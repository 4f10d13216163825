"""Compiling ahead (issue: the first run as fast as the second): on an accelerator's host the child compiles the
programs of the probes after the running one while it runs (probes/_kit.prepare, child/_main.prepare), and each
probe's own compile waits for what was started instead of compiling again. Run here on the CPU for real: the
programs prepared are the very ones the probe then runs (found by their text), and the answers are the same."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from envaudit.child import state
from envaudit.files import probefiles
from tests.conftest import PYTHON, ROOT

PREPARED = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    import _kit as kit
    import linalg, fft
    for probe in (linalg, fft):
        kit.prepare(probe.run, "float32")
    started = len(kit._PREPARED)
    results = [linalg.run("float32")["status"], fft.run("float32")["status"]]
    print(started, len(kit._PREPARED), results)
    """
)


@pytest.mark.jax
def test_a_prepared_probe_s_compile_is_the_one_its_run_waits_for() -> None:
    proc = subprocess.run(
        [PYTHON, "-c", PREPARED, str(ROOT / "probes")], capture_output=True, text=True, timeout=300, check=False
    )
    started, left, results = proc.stdout.strip().split(" ", 2)
    assert int(started) >= 3 and int(left) == 0, proc.stdout + proc.stderr  # every one started was taken
    assert results == "['pass', 'pass']", proc.stdout + proc.stderr


def test_only_probes_that_compile_first_are_prepared_and_only_in_the_first_child_on_an_accelerator() -> None:
    from envaudit.child import runner
    from envaudit.child._main import PREPARE_VARIABLE

    known = probefiles.available()
    first = [n for n in known if probefiles.compiles_first(known[n])]
    assert {"conv_chain", "fft"} <= set(first) and "imports" not in first
    names = ("dense_chain", *first, "imports")
    tpu = state.Run(state.Options(names, platform="tpu"), deadline=1e9)
    ahead = runner._ahead(tpu)[PREPARE_VARIABLE].split(",")
    assert ahead == [n for n in first]  # in order, the first task (dense_chain) compiling itself
    assert runner._ahead(state.Run(state.Options(names, platform="cpu"), deadline=1e9)) == {}
    tpu.pids.append(1)  # a child restarted after a crash compiles each in its own turn
    assert runner._ahead(tpu) == {}


@pytest.mark.jax
def test_an_audit_that_prepares_gives_the_answers_one_that_does_not_gives(tmp_path: Path) -> None:
    """The same probes through the real child, prepared (as on a TPU) and not: the same statuses and metrics."""
    from envaudit.child import runner

    names = ("dense_chain", "linalg", "fft", "ntk")
    ran = {
        platform: runner.run(state.Options(names, timeout=120, total=600, facts=False, platform=platform)).results
        for platform in ("tpu", "cpu")
    }
    for prepared, alone in zip(ran["tpu"], ran["cpu"], strict=True):
        assert prepared.status == alone.status == "pass", (prepared, alone)
        assert prepared.metrics.keys() == alone.metrics.keys()
