"""What may be a secret never reaches a report: reports travel, and Markdown is meant for public bug reports."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

from envaudit.child.jaxfacts import parse
from envaudit.child.state import Task, parse_result
from envaudit.model.redact import REDACTED, scrub, select_env
from envaudit.model.report import ProbeRun
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


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "markdown", "text", "prometheus"])
def test_no_report_format_carries_them(child_env: dict[str, str], fmt: str) -> None:
    proc = envaudit_run(PYTHON, "--quick", "--format", fmt, env={**child_env, **SECRETS}, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr  # 1: jaxlib has no --xla_plugin_key (xla-flags-invalid)
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


# Issue 27 item 6: names the list missed, structured values, flag values kept verbatim, and URLs in a child's text
# that come from variables outside the audited scope.
HIDDEN = "hunter2-0a1b2c"


@pytest.mark.parametrize(
    "name",
    [
        "JAX_SIGNING_KEY",
        "XLA_DB_PASS",
        "JAX_GPG_PASSPHRASE",
        "XLA_DB_PWD",
        "JAX_CRED",
        "TF_XLA_CREDS",
        "JAX_SESSION",
        "JAX_HUB_BEARER",
        "JAX_URL_SIGNATURE",
        "JAX_DB_PW",
    ],
)
def test_a_name_with_a_secret_word_hides_its_value(name: str) -> None:
    assert select_env({name: HIDDEN})[name] == REDACTED
    assert HIDDEN not in scrub(f"connecting with {HIDDEN}", {name: HIDDEN})


def test_a_name_that_merely_holds_a_word_stays_readable() -> None:
    """jax's own options and the shell's working directory are no secrets: hidden, they would make a report (and
    every path in a child's traceback) unreadable."""
    env = {"JAX_LEGACY_PRNG_KEY": "allow", "JAX_DEBUG_KEY_REUSE": "true", "PWD": "/work/project"}
    assert select_env(env) == {"JAX_DEBUG_KEY_REUSE": "true", "JAX_LEGACY_PRNG_KEY": "allow"}
    line = 'File "/work/project/train.py", line 3'
    assert scrub(line, env) == line


SERVICE_ACCOUNT = json.dumps(
    {
        "type": "service_account",
        "private_key_id": "5c1e9f0a7d3b",
        "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\n-----END PRIVATE KEY-----\n",
    }
)
PEM_KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBn\n-----END EC PRIVATE KEY-----"


def test_a_json_document_or_a_pem_block_is_hidden_whatever_the_name() -> None:
    env = {"JAX_SERVICE_ACCOUNT": SERVICE_ACCOUNT, "XLA_TLS": PEM_KEY, "JAX_PLATFORMS": "cpu"}
    assert select_env(env) == {"JAX_PLATFORMS": "cpu", "JAX_SERVICE_ACCOUNT": REDACTED, "XLA_TLS": REDACTED}
    quoted = "bad key 5c1e9f0a7d3b: MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw; MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBn"
    scrubbed = scrub(quoted, env)  # its strings and the key's body, quoted alone
    assert not any(part in scrubbed for part in ("5c1e9f0a7d3b", "MIIEvQ", "MHcCAQ")), scrubbed


TYPED = (
    "--xla_gpu_deterministic_ops=TRUE --xla_force_host_platform_device_count=8 "
    "--xla_cpu_experimental_ynn_fusion_type=-dot,+reduce --xla_disable_hlo_passes=algsimp,onednn-matmul-rewriter"
)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("--xla_gpu_autotune_level=sk-live-4f9a", f"--xla_gpu_autotune_level={REDACTED}"),  # not an int
        ("--xla_gpu_deterministic_ops=hunter2", f"--xla_gpu_deterministic_ops={REDACTED}"),  # not a bool
        ("--xla_disable_hlo_passes=Hunter2Secret", f"--xla_disable_hlo_passes={REDACTED}"),  # not pass names
        ("--abcdef123secret --xla_foo", f"{REDACTED} --xla_foo"),  # no flag's shape; a bare flag of XLA's stays
        ("-sk_live_4f9a --tf_xla_auto_jit", f"{REDACTED} --tf_xla_auto_jit"),
        ("--Hunter2=x", REDACTED),  # not a flag's name either: the whole argument goes
        (TYPED, TYPED),  # values of the flags' own types, as tsl parses them: what the rules read
    ],
)
def test_a_flag_keeps_only_a_value_of_its_type_and_only_a_flags_name(value: str, shown: str) -> None:
    assert select_env({"XLA_FLAGS": value})["XLA_FLAGS"] == shown
    hidden = [word for word in ("sk-live-4f9a", "hunter2", "Hunter2", "abcdef123secret", "sk_live") if word in value]
    assert not any(word in scrub(f"XLA said: {value}", {"XLA_FLAGS": value}) for word in hidden)


def test_a_url_in_any_text_loses_its_credentials_and_query_whatever_the_environment() -> None:
    """A child's text quotes URLs the audited scope never held: a package index's, a proxy's."""
    text = (
        "ImportError: fetching https://ci-bot:tok3nXYZ@pypi.example/simple/jax/?sig=abc123sig failed; "
        f"see https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError. key: {PEM_KEY!r}"
    )
    scrubbed = scrub(text, {})
    assert not any(part in scrubbed for part in ("ci-bot", "tok3nXYZ", "abc123sig", "MHcCAQ")), scrubbed
    assert f"https://{REDACTED}@pypi.example/simple/jax/?{REDACTED} failed" in scrubbed
    assert "errors.html#jax.errors.TracerBoolConversionError" in scrubbed  # an anchor is no secret
    proxy = {"HTTPS_PROXY": "http://bob:Pr0xyPassw0rd@proxy.example:3128"}  # outside the scope, quoted alone
    assert "Pr0xyPassw0rd" not in scrub("407 for bob (Pr0xyPassw0rd)", proxy)


URL_ERROR = "ImportError: https://ci-bot:tok3nXYZ@pypi.example/simple/jax/?sig=abc123sig"


def test_every_string_a_child_reports_is_scrubbed() -> None:
    """Not only the messages: a probe's error_* metric, a library's error among jax's facts, a result too odd to
    read (cut only after scrubbing: a URL cut short keeps its secret), the last words of a child that exited."""
    result = {"status": "fail", "message": URL_ERROR, "metrics": {"error_impl0": URL_ERROR, "rel_err": 0.5}}
    pad = 200 - repr({"status": "?", "pad": "", "u": URL_ERROR}).index("@")  # the first 200 characters end at the @
    with patch.dict(os.environ, {}, clear=True):
        parsed = parse_result(TASK, {"event": "result", "result": result})
        odd = parse_result(TASK, {"event": "result", "result": {"status": "?", "pad": "x" * pad, "u": URL_ERROR}})
    devices: dict[str, Any] = {"stage": "devices", "backend": "cpu", "cuda_libraries": {"cudnn": f"error: {URL_ERROR}"}}
    stages = [{"stage": "start"}, {"stage": "import"}, {"stage": "imported"}, devices]
    facts = parse(stages, ended=None, timed_out=False, duration_s=0.1, environ={})
    words = parse([{"stage": "start"}], ended=3, timed_out=False, duration_s=0.1, last_words=URL_ERROR, environ={})
    assert parsed.metrics["rel_err"] == 0.5
    for text in (json.dumps(parsed.metrics), parsed.message, odd.message, json.dumps(facts), str(words["message"])):
        assert "tok3nXYZ" not in text and "abc123sig" not in text, text
    assert str(facts["cuda_libraries"]["cudnn"]).startswith("error: ImportError: https://<redacted>@pypi.example")


JAX_SERVED_BY = """
import sys


class _Unreachable:
    def find_spec(self, fullname, path=None, target=None):
        if fullname == "jax":
            raise ImportError("jax is served by {url}")


sys.meta_path.insert(0, _Unreachable())
"""


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_a_url_in_a_childs_error_never_reaches_a_report(child_env: dict[str, str], tmp_path: Path, fmt: str) -> None:
    """End to end, a real child: `import jax` fails quoting a package index's URL with its token, from no variable
    envaudit reads. Neither facts.jax.message, nor jax-broken's detail, nor a probe's error carries the token or the
    query. (The same text as a dying child's last line on stderr is `parse`'s last_words, tested above: which
    line the runner has read when the child is gone is a race, so no end-to-end test of that path is exact.)"""
    url = "https://ci-bot:tok3nXYZ@pypi.example/simple/jax/?sig=abc123sig"
    (tmp_path / "sitecustomize.py").write_text(JAX_SERVED_BY.format(url=url))
    env = {**child_env, "PYTHONPATH": os.pathsep.join([str(tmp_path), child_env["PYTHONPATH"]])}
    proc = envaudit_run(PYTHON, "audit", "--probe", "matmul_precision", "--format", fmt, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr  # jax-broken fails
    assert "pypi.example" in proc.stdout  # the case it guards: the child's text is in the report
    for leaked in ("ci-bot", "tok3nXYZ", "abc123sig"):
        assert leaked not in proc.stdout, (fmt, leaked)
    if fmt == "json":
        report = json.loads(proc.stdout)
        assert "pypi.example" in report["facts"]["jax"]["message"]
        assert any("pypi.example" in p["message"] for p in report["probes"]), report["probes"]
        assert any("pypi.example" in f["detail"] for f in report["findings"] if f["id"] == "jax-broken")


def test_an_interpreter_that_fails_quoting_a_url_is_one_line_without_its_token(
    child_env: dict[str, str], tmp_path: Path
) -> None:
    """`--python` runs what it names: its last words on stderr become envaudit's one line (which a Slurm log keeps)."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\necho "fatal: https://ci-bot:tok3nXYZ@pypi.example/simple?sig=abc123sig" >&2\nexit 1\n')
    fake.chmod(0o755)
    proc = envaudit_run(PYTHON, "audit", "--python", str(fake), "--format", "json", env=child_env, timeout=60)
    assert proc.returncode == 2 and "pypi.example" in proc.stderr, proc.stderr
    assert "tok3nXYZ" not in proc.stderr and "abc123sig" not in proc.stderr, proc.stderr


ANSWER = {
    "python": {"version": "3.11.9", "executable": "/opt/py/bin/python"},
    "distributions": [
        {
            "name": "flax",
            "version": "0.8.0",
            "location": "/opt/py/lib",
            "requires": ["vendored-ops @ https://ci-bot:tok3nXYZ@pypi.example/vendored_ops.whl?sig=abc123sig"],
        }
    ],
}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_an_interpreters_answer_reaches_a_report_without_a_urls_secrets(
    child_env: dict[str, str], tmp_path: Path, fmt: str
) -> None:
    """What `--python` runs answers with its distributions: a requirement by direct URL (PEP 508 `name @ URL`) with
    a token, of a package it lacks, becomes an unsatisfied requirement and a finding."""
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho '{json.dumps(ANSWER)}'\n")
    fake.chmod(0o755)
    proc = envaudit_run(PYTHON, "audit", "--python", str(fake), "--quick", "--format", fmt, env=child_env, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    assert "pypi.example/vendored_ops.whl" in proc.stdout  # the case it guards: the answer is in the report
    assert "tok3nXYZ" not in proc.stdout and "abc123sig" not in proc.stdout and "ci-bot" not in proc.stdout


def test_a_direct_url_requirement_of_this_environment_loses_its_token() -> None:
    """The live audit judges this environment's requirements with the same function as another interpreter's: a
    `name @ https://token@...` requirement reached facts.requirements and its finding verbatim."""
    from envaudit.collect import packages

    dist = packages.Dist(
        name="jax", version="0.4.1", location="/x", requires=("numpy @ https://bot:tok3n@h/n.whl?s=1",)
    )
    (problem,) = packages.check([dist])[0]
    assert (
        problem["requires"].startswith("numpy @ https://") and "tok3n" not in str(problem) and "s=1" not in str(problem)
    )
