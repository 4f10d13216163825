"""Prometheus' own tools on what envaudit ships for it: `promtool check metrics` (the exposition format and the
naming lint: units, suffixes, help) on the textfile of real reports and of a live `envaudit health` run, and
`promtool check rules` / `promtool test rules` on scripts/prometheus/envaudit-alerts.yml with its unit tests.
promtool comes from Debian's `prometheus` package (.ci/install-integration.sh).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]
from prometheus_client.parser import text_string_to_metric_families

from envaudit.files import reportfile
from envaudit.formats import prometheus, render
from tests.conftest import FIXTURES, PYTHON, ROOT, envaudit_run, sample_report
from tests.integration import _support

pytestmark = pytest.mark.integration

RULES = ROOT / "scripts" / "prometheus"
REPORTS = [FIXTURES / "replay" / "h200-default-settings.json", ROOT / "tests" / "golden" / "readme-audit.json"]
FAULT = ROOT / "tests" / "faults" / "conv_batch_scale"


@pytest.fixture(scope="module")
def promtool() -> str:
    return _support.ensure_programs(["promtool"])["promtool"]


def _check_metrics(promtool: str, text: str) -> None:
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and not proc.stdout.strip() and not proc.stderr.strip(), proc.stdout + proc.stderr


def _names(text: str) -> set[str]:
    return {f.name for f in text_string_to_metric_families(text)}


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_the_textfile_of_each_saved_report_passes_promtool(promtool: str, path: Path) -> None:
    text = render(reportfile.read_report(path), "prometheus")
    assert {"envaudit_probe_relative_error_ratio", "envaudit_probe_rerun_difference_ratio"} <= _names(text)
    _check_metrics(promtool, text)


def test_the_textfile_of_a_run_that_did_not_complete_passes_promtool(promtool: str) -> None:
    report = replace(sample_report(), complete=False, duration_s=3.5)
    text = prometheus.textfile(report, sample_report().created_timestamp())
    assert {"envaudit_last_success_timestamp_seconds", "envaudit_duration_seconds"} <= _names(text)
    _check_metrics(promtool, text)


@pytest.mark.jax
@pytest.mark.parametrize("fault", [False, True], ids=["healthy", "faulty"])
def test_the_textfile_of_a_live_health_run_passes_promtool(
    promtool: str, tmp_path: Path, child_env: dict[str, str], fault: bool
) -> None:
    env = {**child_env, "PYTHONPATH": os.pathsep.join([*([str(FAULT)] if fault else []), str(ROOT)])}
    proc = envaudit_run(PYTHON, "health", "--prometheus-dir", str(tmp_path), env=env, timeout=300)
    assert proc.returncode == (1 if fault else 0), proc.stdout + proc.stderr
    text = (tmp_path / "envaudit.prom").read_text()
    assert {"envaudit_duration_seconds", "envaudit_last_success_timestamp_seconds"} <= _names(text)
    _check_metrics(promtool, text)


def test_the_alerting_rules_load_and_their_unit_tests_pass(promtool: str) -> None:
    for argv in (["check", "rules", "envaudit-alerts.yml"], ["test", "rules", "envaudit-alerts.test.yml"]):
        proc = subprocess.run([promtool, *argv], capture_output=True, text=True, timeout=120, cwd=RULES)
        assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout + proc.stderr


def test_every_alert_has_a_unit_test_and_reads_only_metrics_envaudit_writes() -> None:
    rules = yaml.safe_load((RULES / "envaudit-alerts.yml").read_text())
    tests = yaml.safe_load((RULES / "envaudit-alerts.test.yml").read_text())
    alerts = {r["alert"]: r["expr"] for g in rules["groups"] for r in g["rules"]}
    tested = {t["alertname"] for case in tests["tests"] for t in case["alert_rule_test"] if t["exp_alerts"]}
    assert set(alerts) == tested  # each alert is seen firing in a test, not only silent
    written = set().union(*(_names(render(reportfile.read_report(p), "prometheus")) for p in REPORTS))
    written |= _names(prometheus.textfile(replace(sample_report(), duration_s=1.0), None))
    used = {name for expr in alerts.values() for name in re.findall(r"\benvaudit_[a-z_]+\b", expr)}
    assert used and used <= written, used - written
