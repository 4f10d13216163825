"""Hostile input: each case the review reproduced as exit 3 (or a hang, or raw escapes on the terminal) is one clear
line and exit 2 now; and fuzzed reports (the judge re-judges whatever metrics a file claims) and plan arguments
exit only 0, 1 or 2."""

from __future__ import annotations

import json
import os
import string
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envaudit.cli import main
from envaudit.model.exitcodes import Exit
from tests.conftest import PYTHON, envaudit_run

BASE: dict[str, Any] = {
    "schema": "envaudit/report/v1",
    "envaudit_version": "0",
    "created": "2026-12-01T00:00:00Z",
    "host": {"hostname": "node01"},
    "verdict": "ok",
    "findings": [],
    "probes": [],
    "facts": {"packages": {"jax": "0.10.2"}, "python": {}, "platform": {}, "nvidia": {}, "jax": {}, "env": {}},
}


def saved(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "report.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def check(path: Path | str, child_env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return envaudit_run(PYTHON, "check", str(path), *argv, env=child_env, timeout=30)  # a hang would be this timeout


def one_line_exit_2(proc: subprocess.CompletedProcess[str], says: str) -> None:
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("envaudit: error: ") and says in proc.stderr, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            json.dumps(BASE).replace(
                '"probes": []', '"probes": [{"name": "x", "status": "pass", "duration_s": 1' + "0" * 5000 + "}]"
            ),
            "4300 digits",
        ),
        (
            json.dumps({**BASE, "probes": [{"name": "x", "status": "pass", "duration_s": 1}]}).replace(
                '"duration_s": 1', '"duration_s": 1e309'
            ),
            "not a finite number",
        ),
        (json.dumps(BASE).replace('"node01"', '"\\ud800node"'), "lone surrogate"),
    ],
    ids=["integer-of-5000-digits", "duration-1e309", "lone-surrogate-in-host"],
)
def test_numbers_and_text_python_cannot_take_are_bad_input(
    tmp_path: Path, child_env: dict[str, str], text: str, says: str
) -> None:
    one_line_exit_2(check(saved(tmp_path, text), child_env), says)


def test_a_version_of_5000_digits_is_not_a_version(tmp_path: Path, child_env: dict[str, str]) -> None:
    document = {**BASE, "facts": {**BASE["facts"], "packages": {"jax": "0.4." + "9" * 5000}}}
    proc = check(saved(tmp_path, json.dumps(document)), child_env, "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["verdict"] == "ok", proc.stderr  # unknown, no crash


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_device_or_fifo_is_not_a_report_and_never_blocks(
    tmp_path: Path, child_env: dict[str, str], special: str
) -> None:
    path = special
    if special == "fifo":
        os.mkfifo(tmp_path / "fifo")
        path = str(tmp_path / "fifo")
    one_line_exit_2(check(path, child_env), "not a regular file")


ARABIC_INDIC = "".join(chr(0x0660 + d) for d in range(10))  # digits Python's int() reads, no version has
FULLWIDTH = "".join(chr(0xFF10 + d) for d in range(10))


def digits(text: str, alphabet: str) -> str:
    return "".join(alphabet[int(ch)] if ch.isdigit() else ch for ch in text)


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--driver", digits("535.1", ARABIC_INDIC)),
        ("--compute-capability", digits("8.0", ARABIC_INDIC)),
        ("--gpus", digits("8", ARABIC_INDIC)),
        ("--cuda", digits("12.4", FULLWIDTH)),
    ],
)
def test_plan_takes_ascii_digits_only(capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    assert main(["plan", "jax==0.4.30", flag, value]) == Exit.USAGE
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.slow
def test_terminal_escapes_in_a_report_are_not_sent_to_the_terminal(tmp_path: Path, child_env: dict[str, str]) -> None:
    evil = "\x1b]0;pwned\x07\x1b[2J\u202eEVIL"
    document = {
        **BASE,
        "host": {"hostname": evil},
        "findings": [
            {
                "id": evil,
                "severity": "warn",
                "title": evil,
                "detail": evil,
                "fix": evil,
                "references": [evil],
                "source": "rule",
            }
        ],
    }
    for fmt in ("text", "markdown"):
        proc = check(saved(tmp_path, json.dumps(document)), child_env, "--format", fmt, "--show-host")
        assert proc.returncode == 0 and "EVIL" in proc.stdout
        assert not any(ch in proc.stdout for ch in "\x1b\x07\u202e"), fmt


ESCAPES = "\x1b\x07\x9b\u202e"  # ESC, BEL, CSI, and a right-to-left override
EVIL_ENV = {"JAX_X": "\u001b]0;PWNED\u0007\u001b[2J", "JAX_Y": "a`b\n# injected heading"}
EVIL_PROBE = {"name": "\u001b[31mred\u001b[0m|x", "status": "pass", "duration_s": 1.0}


def no_escape_and_no_injected_line(out: str) -> None:
    assert not any(ch in out for ch in ESCAPES), ascii(out)
    assert not any(line.lstrip().startswith("# injected") for line in out.splitlines()), out


def test_values_in_markdown_and_compare_cannot_escape_or_inject(tmp_path: Path, child_env: dict[str, str]) -> None:
    """The review's report: env values and a probe's name, in `check --format markdown` and in `compare`'s text (two
    nodes, so that the crafted values are drift lines; tests/formats has the findings, which `check` re-derives)."""
    document = {**BASE, "facts": {**BASE["facts"], "env": EVIL_ENV}, "probes": [EVIL_PROBE]}
    first = saved(tmp_path, json.dumps(document))
    proc = check(first, child_env, "--format", "markdown")
    assert proc.returncode == 0 and "red" in proc.stdout and "PWNED" in proc.stdout, proc.stderr
    no_escape_and_no_injected_line(proc.stdout)
    assert "``JAX_Y=a`b # injected heading``" in proc.stdout  # a backtick inside inline code cannot end it
    other = tmp_path / "other.json"
    env = {"JAX_Y": "b\n# injected two\x07", "JAX_\x1b[2J": "1"}
    other.write_text(
        json.dumps({**document, "host": {"hostname": "node02\x1b[2J"}, "facts": {**BASE["facts"], "env": env}})
    )
    proc = envaudit_run(PYTHON, "compare", str(first), str(other), env=child_env, timeout=30)
    assert proc.returncode == 1 and proc.stdout.count("DRIFT") == 3, proc.stdout + proc.stderr
    no_escape_and_no_injected_line(proc.stdout)


HUGE = 10**400  # 401 digits: under the parser's 4300, but no float holds it


@pytest.mark.slow
@pytest.mark.parametrize(
    "document",
    [
        {**BASE, "probes": [{"name": "x", "status": "pass", "duration_s": HUGE}]},
        {**BASE, "probes": [{"name": "dense_chain", "status": "pass", "metrics": {"rel_err_batched": HUGE}}]},
        {**BASE, "probes": [{"name": "x", "status": "pass", "metrics": {"x": -HUGE}}]},
        {**BASE, "facts": {**BASE["facts"], "platform": {"memory_total_bytes": HUGE}}},
        {**BASE, "facts": {**BASE["facts"], "platform": {"memory_total_bytes": 2**64}}},
    ],
    ids=["duration", "metric", "negative-metric", "memory", "memory-of-65-bits"],
)
@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "prometheus"])
def test_an_integer_no_float_holds_is_bad_input(
    tmp_path: Path, child_env: dict[str, str], document: dict[str, Any], fmt: str
) -> None:
    one_line_exit_2(check(saved(tmp_path, json.dumps(document)), child_env, "--format", fmt), "bits")


def test_64_bit_integers_are_still_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = {
        **BASE,
        "facts": {**BASE["facts"], "platform": {"memory_total_bytes": 2**64 - 1}},
        "probes": [{"name": "x", "status": "pass", "duration_s": 1, "metrics": {"n": -(2**63)}}],
    }
    assert main(["check", str(saved(tmp_path, json.dumps(document)))]) == Exit.OK, capsys.readouterr().err


def test_a_saved_error_report_says_why_it_exits_3(tmp_path: Path, child_env: dict[str, str]) -> None:
    proc = check(saved(tmp_path, json.dumps({**BASE, "verdict": "error"})), child_env)
    assert proc.returncode == 3 and "did not complete" in proc.stderr and len(proc.stderr.splitlines()) == 1


@pytest.mark.jax
def test_a_repeated_probe_is_run_and_exported_once(child_env: dict[str, str]) -> None:
    argv = ["--probe", "matmul_precision", "--probe", "matmul_precision", "--format", "prometheus"]
    proc = envaudit_run(PYTHON, *argv, env=child_env, timeout=120)
    series = [line for line in proc.stdout.splitlines() if line.startswith("envaudit_probe_duration_seconds{")]
    assert proc.returncode == 0 and len(series) == 1, proc.stdout


def test_hook_enable_user_in_a_virtualenv_is_refused(child_env: dict[str, str]) -> None:
    proc = envaudit_run(PYTHON, "hook", "enable", "--user", env=child_env, timeout=60)
    one_line_exit_2(proc, "without --user")


METRIC_NAMES = st.sampled_from(
    [
        "rel_err_batched",
        "rel_err_batched_default",
        "rerun_rel_diff",
        "output_dtype",
        "rerun_rel_diff_scatter_add",
        "default_param_dtype",
        "error_impl1",
        "import_error",
        "precision",
        "effective_bits_default",
        "neg_eig_rel",
        "x",
    ]
)
VALUES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=string.printable + "\u202e\x00", max_size=8)
    | st.lists(st.integers(), max_size=2)
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    probes=st.lists(
        st.fixed_dictionaries(
            {
                "name": st.sampled_from(
                    ["dense_chain", "determinism", "flax_dtype", "ntk_nt", "dense_chain[float64]", "?"]
                ),
                "status": st.sampled_from(["pass", "fail", "skip", "error", "timeout", "crash"]),
                "metrics": st.dictionaries(METRIC_NAMES, VALUES, max_size=5),
            }
        ),
        max_size=4,
    ),
    jax=st.fixed_dictionaries(
        {
            "status": st.sampled_from(["ok", "planned", "crash"]),
            "platform": st.sampled_from(["cpu", "cuda", "tpu", "rocm", ""]),
            "default_matmul_precision": st.sampled_from([None, "float32", "tensorfloat32", "x"]),
        }
    ),
    env=st.dictionaries(st.sampled_from(["XLA_FLAGS", "JAX_ENABLE_X64"]), st.text(max_size=12), max_size=2),
)
def test_fuzzed_probe_metrics_are_judged_without_a_crash(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    probes: list[Any],
    jax: dict[str, Any],
    env: dict[str, str],
) -> None:
    document = {**BASE, "probes": probes, "facts": {**BASE["facts"], "jax": jax, "env": env}}
    path = Path(tmp_path_factory.mktemp("fuzz")) / "r.json"
    path.write_text(json.dumps(document))
    code = main(["check", str(path)])
    err = capsys.readouterr().err
    assert code in (Exit.OK, Exit.FINDINGS, Exit.USAGE), err
    assert "internal error" not in err
