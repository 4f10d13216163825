"""What may be a secret never reaches a report: reports travel, and Markdown is meant for public bug reports."""

from __future__ import annotations

import subprocess

import pytest

from envaudit.stack import REDACTED, select_env
from tests.conftest import PYTHON

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
    proc = subprocess.run([PYTHON, "-m", "envaudit", "--quick", "--format", fmt], env={**child_env, **SECRETS},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for leaked in ("tok-0a1b2c", "pw-9z8y", "alice", "sk-77aa"):
        assert leaked not in proc.stdout, (fmt, leaked)
    if fmt == "json":
        assert "--xla_gpu_deterministic_ops=true" in proc.stdout
