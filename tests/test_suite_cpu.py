"""scripts/suite_cpu.py: what it prints of the rows its plugin records (the CPU of a test, its own and its waited
children's), by marker and file, most first; and that its plugin records a real run's tests."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scripts import suite_cpu
from tests.conftest import ROOT


def test_the_report_ranks_files_and_tests_by_cpu_and_sums_each_marker() -> None:
    rows = [
        {"id": "tests/a.py::t1", "own": 0.5, "children": 9.5, "wall": 4.0, "markers": ["jax"]},
        {"id": "tests/a.py::t2", "own": 1.0, "children": 0.0, "wall": 1.0, "markers": []},
        {"id": "tests/b.py::t3", "own": 2.0, "children": 3.0, "wall": 9.0, "markers": ["realenv", "slow"]},
    ]
    lines = suite_cpu.report(rows, top=2)
    assert lines[0] == "3 tests, 16 CPU s (14 s of summed wall time)"
    assert lines[1].strip().startswith("10.0 s") and lines[1].endswith("jax")  # the costliest marker first
    assert any(line.endswith("realenv, slow") for line in lines) and any("(fast loop)" in line for line in lines)
    files = lines[lines.index("files costing most (of 2):") + 1 :][:2]
    assert [f.split()[-1] for f in files] == ["tests/a.py", "tests/b.py"]
    assert lines[-2].endswith("tests/a.py::t1") and lines[-1].endswith("tests/b.py::t3")  # top 2 tests


@pytest.mark.slow  # a pytest run of its own
def test_a_run_records_each_test_it_ran() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scripts.suite_cpu", "tests/test_suite_cpu.py", "-k", "ranks_files"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0 and "1 tests, " in done.stdout and "tests/test_suite_cpu.py" in done.stdout
