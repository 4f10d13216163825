"""What may be a secret never reaches a report: reports travel, and Markdown is meant for public bug reports."""

from __future__ import annotations

import json
import os
from pathlib import Path
from unittest.mock import patch

import pytest

from envaudit.child.jaxfacts import parse
from envaudit.child.state import Task, parse_result
from envaudit.model import ProbeRun
from envaudit.redact import REDACTED, scrub, select_env
from tests.conftest import PYTHON, envaudit_run

TASK = Task(ProbeRun("p"), "float32", Path("p.py"))

SECRETS = {
    "JAX_API_TOKEN": "tok-0a1b2c",  # a secret-looking name under an audited prefix
    "XLA_PYTHON_CLIENT_AUTH": "pw-9z8y",
    "XLA_FLAGS": "--xla_gpu_deterministic_ops=true --xla_dump_to=/home/alice/private --xla_plugin_key=sk-77aa "
    "--xla_foo",
}


def test_values_that_may_be_secrets_are_redacted_and_the_rest_kept() -> None:
    env = select_env({**SECRETS, "JAX_ENABLE_X64": "1", "HOME": "/home/alice"})
    assert env["JAX_API_TOKEN"] == env["XLA_PYTHON_CLIENT_AUTH"] == REDACTED
    assert env["XLA_FLAGS"] == (
        f"--xla_gpu_deterministic_ops=true --xla_dump_to={REDACTED} --xla_plugin_key={REDACTED} --xla_foo"
    )  # the flags that decide numerics keep their values, for the rules and the judge
    assert env["JAX_ENABLE_X64"] == "1" and "HOME" not in env


@pytest.mark.parametrize("fmt", ["json", "markdown", "text", "prometheus"])
def test_no_report_format_carries_them(child_env: dict[str, str], fmt: str) -> None:
    proc = envaudit_run(PYTHON, "--quick", "--format", fmt, env={**child_env, **SECRETS}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for leaked in ("tok-0a1b2c", "pw-9z8y", "alice", "sk-77aa"):
        assert leaked not in proc.stdout, (fmt, leaked)
    if fmt == "json":
        assert "--xla_gpu_deterministic_ops=true" in proc.stdout


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        (
            "XLA_FLAGS",
            '--xla_dump_to="/x hunter2" --xla_gpu_deterministic_ops=true',
            f"--xla_dump_to={REDACTED} --xla_gpu_deterministic_ops=true",
        ),  # quoted: the value is all of "..."
        (
            "XLA_FLAGS",
            "--xla_dump_to='/x hunter2' --xla_gpu_autotune_level=0",
            f"--xla_dump_to={REDACTED} --xla_gpu_autotune_level=0",
        ),
        ("XLA_FLAGS", '--xla_gpu_autotune_level="0 hunter2"', f"--xla_gpu_autotune_level={REDACTED}"),  # not plain
        ("XLA_FLAGS", "--xla_dump_to hunter2", f"--xla_dump_to {REDACTED}"),  # a bare word is no flag
        ("XLA_FLAGS", "/home/alice/hunter2.flags", REDACTED),  # XLA reads flags from a file not starting with -
        (
            "TF_XLA_FLAGS",
            "--tf_xla_auto_jit=2 --tf_xla_token=hunter2 --xla_gpu_deterministic_ops=true",
            f"--tf_xla_auto_jit={REDACTED} --tf_xla_token={REDACTED} --xla_gpu_deterministic_ops=true",
        ),
        ("JAX_COORDINATOR_ADDRESS", "admin:hunter2@10.0.0.1:1234", f"{REDACTED}@10.0.0.1:1234"),
        ("JAX_COORDINATOR_ADDRESS", "10.0.0.1:1234", "10.0.0.1:1234"),  # nothing to hide: the fact stays useful
        (
            "JAX_SLACK_WEBHOOK_URL",
            "https://hooks.slack.com/services/T0/B0/hunter2",
            f"https://hooks.slack.com/{REDACTED}",
        ),
        (
            "JAX_CACHE_LOCATION",
            "https://u:p@w:hunter2@cache.example:8443/c?sig=hunter2#k",
            f"https://{REDACTED}@cache.example:8443/c?{REDACTED}",
        ),  # the last @ ends the credentials; path kept
        ("JAX_PLATFORMS", "cuda,cpu", "cuda,cpu"),
    ],
)
def test_flags_and_addresses_keep_no_secret(name: str, value: str, shown: str) -> None:
    """The review's cases: a quoted flag's tail, TF_XLA_FLAGS, credentials and a webhook's path in a URL."""
    assert select_env({name: value})[name] == shown
    assert "hunter2" not in shown


LEAKY = {
    "XLA_FLAGS": '--xla_plugin_token=hunter3 --xla_dump_to="/x hunter4" --xla_gpu_deterministic_ops=true',
    "JAX_COORDINATOR_ADDRESS": "admin:S3cr3tPW@host:1234",
    "HF_TOKEN": "hf_hunter5",
}


def test_scrub_hides_in_any_text_what_redaction_hides() -> None:
    line = (
        "F1201 parse_flags_from_env.cc:234] Unknown flags in XLA_FLAGS: --xla_plugin_token=hunter3 "
        "--xla_dump_to=/x hunter4; connecting to admin:S3cr3tPW@host:1234 with hf_hunter5 (true)"
    )
    scrubbed = scrub(line, LEAKY)
    assert not any(word in scrubbed for word in ("hunter", "S3cr3tPW")), scrubbed
    assert f"--xla_plugin_token={REDACTED}" in scrubbed and "host:1234" in scrubbed and "(true)" in scrubbed
    assert scrub("nothing to hide", {}) == "nothing to hide"


def test_the_childs_last_words_and_errors_are_scrubbed() -> None:
    """XLA quotes XLA_FLAGS on stderr when it rejects a flag: that line is facts.jax.message and a probe's."""
    stderr = "F1201 parse_flags_from_env.cc:234] Unknown flag in XLA_FLAGS: --xla_plugin_token=hunter3"
    facts = parse([{"stage": "start"}], ended=1, timed_out=False, duration_s=0.1, last_words=stderr, environ=LEAKY)
    assert "hunter3" not in str(facts["message"]) and f"--xla_plugin_token={REDACTED}" in str(facts["message"])
    with patch.dict(os.environ, LEAKY):
        error = parse_result(TASK, {"event": "error", "kind": "exception", "error": stderr})
        result = parse_result(TASK, {"event": "result", "result": {"status": "fail", "message": stderr}})
    assert "hunter3" not in error.message + result.message


@pytest.mark.jax
def test_a_flag_xla_rejects_never_reaches_a_report(child_env: dict[str, str]) -> None:
    """End to end: the child dies on the unknown flag, and neither the facts, the findings nor the probe's message
    carries its value (the probe's needs runner.py to scrub the stderr line it quotes: redact.scrub)."""
    env = {**child_env, **LEAKY, "JAX_PLATFORMS": "cpu"}
    proc = envaudit_run(PYTHON, "--probe", "matmul_precision", "--format", "json", env=env, timeout=300)
    report = json.loads(proc.stdout)
    assert "Unknown flag" in report["facts"]["jax"]["message"], report["facts"]["jax"]  # the case it guards
    for part in ("facts", "findings", "probes"):
        for leaked in ("hunter3", "hunter4", "S3cr3tPW", "hf_hunter5"):
            assert leaked not in json.dumps(report[part]), (part, leaked)
