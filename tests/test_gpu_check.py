"""scripts/gpu-check.sh is the one prepared command a GPU session runs; it must work before a GPU is ever lent,
so it runs here on the CPU: the same files, a schema-valid report, the audit's exit status."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from envaudit.model.report import Report
from tests.conftest import PYTHON, ROOT


@pytest.mark.jax
def test_gpu_check_script_writes_report_markdown_and_text(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": PYTHON, "ENVAUDIT_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "out"
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu-check.sh"), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "gpu-report.json",
        "gpu-report.md",
        "gpu-report.txt",
        "health",
        "health.txt",
        "nvidia-smi.txt",
    ]
    report = Report.from_dict(json.loads((out / "gpu-report.json").read_text()))
    assert report.facts.jax["status"] == "ok" and report.probes
    assert (out / "gpu-report.md").read_text().startswith("### envaudit report: **ok**")
    assert "gpu-check: audit exit 0" in proc.stdout and "gpu-check: health exit 0 in" in proc.stdout
    checked = Report.from_dict(json.loads((out / "health" / "envaudit-report.json").read_text()))
    compared = [p for p in checked.probes if p.devices]  # device 0 named: the per-device path ran on it alone
    assert compared and all([d["id"] for d in p.devices] == [0] for p in compared)
    assert (out / "health.txt").read_text().startswith("envaudit OK")
