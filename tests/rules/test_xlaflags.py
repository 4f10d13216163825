"""XLA_FLAGS that XLA refuses, on facts: the arguments named, the fix that keeps the others, and what stays unknown;
then for real, the jax child and --quick through envaudit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envaudit.rules.registry import registry
from tests.conftest import ROOT, facts_from

JAX = {"jax": "0.10.1", "jaxlib": "0.10.1"}
LIB = ["/venv/lib/python3.11/site-packages/jaxlib/libjax_common.so"]


def entry(
    shown: str, name: str, defined: bool | None = True, kind: str | None = None, ok: bool | None = None
) -> dict[str, Any]:
    return {"shown": shown, "name": name, "defined": defined, "kind": kind, "value_ok": ok}


def xla(variable: str, *entries: dict[str, Any], **more: Any) -> dict[str, Any]:
    facts = {"status": "ok", "variable": variable, "source": "value", "entries": list(entries), "ignored": 0}
    return {**facts, "flags_defined": 352, "read_from": LIB, **more}


def found(fragment: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {f.id: (f.detail, f.fix) for f in registry().evaluate_checks(facts_from({"packages": JAX, **fragment}))}


UNKNOWN = entry("--xla_no_such_flag=<redacted>", "xla_no_such_flag", False)
COUNT = entry("--xla_force_host_platform_device_count=8", "xla_force_host_platform_device_count", True, "int32", True)


def test_an_unknown_flag_is_named_and_the_others_are_kept() -> None:
    variable = "--xla_force_host_platform_device_count=8 --xla_no_such_flag=<redacted>"
    result = found({"env": {"XLA_FLAGS": variable}, "xla_flags": xla(variable, COUNT, UNKNOWN)})
    detail, fix = result["xla-flags-invalid"]
    assert fix == "export XLA_FLAGS=--xla_force_host_platform_device_count=8"
    assert "the installed jaxlib has no flag xla_no_such_flag" in detail
    alone = found({"env": {"XLA_FLAGS": UNKNOWN["shown"]}, "xla_flags": xla(UNKNOWN["shown"], UNKNOWN)})
    assert alone["xla-flags-invalid"][1] == "unset XLA_FLAGS"


def test_a_value_its_flag_cannot_take_and_an_argument_that_names_no_flag() -> None:
    fast = entry("--xla_cpu_enable_fast_math=<redacted>", "xla_cpu_enable_fast_math", True, "bool", False)
    dash = entry("<redacted>", "", False)
    variable = f"{fast['shown']} <redacted> {COUNT['shown']}"
    detail, fix = found({"env": {"XLA_FLAGS": variable}, "xla_flags": xla(variable, fast, dash, COUNT)})[
        "xla-flags-invalid"
    ]
    assert "xla_cpu_enable_fast_math is a bool flag" in detail and "names no flag" in detail
    assert fix == "export XLA_FLAGS=--xla_force_host_platform_device_count=8"
    int_alone = entry(
        "--xla_force_host_platform_device_count", "xla_force_host_platform_device_count", True, "int32", False
    )
    shown = str(int_alone["shown"])
    assert (
        "an integer" in found({"env": {"XLA_FLAGS": shown}, "xla_flags": xla(shown, int_alone)})["xla-flags-invalid"][0]
    )


def test_a_kept_flag_shown_hidden_gets_no_command_but_words() -> None:
    """--xla_dump_to=/home/u/dumps is hidden in the report (a path): a command would print it, or lose it."""
    dump = entry("--xla_dump_to=<redacted>", "xla_dump_to", True, "string")
    variable = f"{dump['shown']} {UNKNOWN['shown']}"
    detail, fix = found({"env": {"XLA_FLAGS": variable}, "xla_flags": xla(variable, dump, UNKNOWN)})[
        "xla-flags-invalid"
    ]
    assert fix == "" and "no command can print it" in detail and "what to do: export XLA_FLAGS without" in detail


def test_a_file_of_flags_that_cannot_be_opened_is_unset() -> None:
    facts = {"status": "ok", "variable": "<redacted>", "source": "file", "file_opens": False}
    detail, fix = found({"env": {"XLA_FLAGS": "<redacted>"}, "xla_flags": facts})["xla-flags-invalid"]
    assert fix == "unset XLA_FLAGS" and "Could not open file" in detail


def test_the_words_xla_never_reads_are_said_and_not_judged() -> None:
    variable = "--xla_force_host_platform_device_count=8 <redacted> --xla_no_such=<redacted>"
    assert "xla-flags-invalid" not in found(
        {"env": {"XLA_FLAGS": variable}, "xla_flags": xla(variable, COUNT, ignored=2)}
    )
    both = xla(variable, COUNT, UNKNOWN, ignored=2)
    assert (
        "never reads the 2 word(s)"
        in found({"env": {"XLA_FLAGS": variable}, "xla_flags": both})["xla-flags-invalid"][0]
    )


def test_what_the_facts_cannot_say_is_no_finding() -> None:
    variable = UNKNOWN["shown"]
    unread = {**UNKNOWN, "defined": None}
    cases: list[dict[str, Any]] = [
        {"env": {"XLA_FLAGS": variable}, "xla_flags": xla(variable, unread)},  # no jaxlib read
        {"env": {"XLA_FLAGS": variable}},  # no facts of it (a saved report of before)
        {"env": {"XLA_FLAGS": "--xla_other=<redacted>"}, "xla_flags": xla(variable, UNKNOWN)},  # of another value
        {"env": {"XLA_FLAGS": variable}, "xla_flags": xla(variable, UNKNOWN), "origin": "plan"},
        {"env": {"XLA_FLAGS": variable}, "xla_flags": xla(variable, UNKNOWN), "origin": "triage"},
        {"env": {"XLA_FLAGS": variable}, "xla_flags": {"status": "unknown", "variable": variable}},
        {"env": {"XLA_FLAGS": variable}, "xla_flags": xla(variable, UNKNOWN), "jax": {"status": "ok"}},  # XLA took it
    ]
    for fragment in cases:
        assert "xla-flags-invalid" not in found(fragment), fragment


def test_the_failure_it_causes_folds_under_it() -> None:
    """The jax child ended with XLA's own words: one root, jax-broken its consequence, no reinstall printed."""
    from envaudit import rules
    from envaudit.judge import causes

    variable = UNKNOWN["shown"]
    jax = {
        "status": "error",
        "stage": "imported",
        "message": "exited with status 1 before finishing: F1202 "
        "parse_flags_from_env.cc:234] Unknown flag in XLA_FLAGS: --xla_no_such_flag=<redacted>",
    }
    facts = facts_from(
        {"packages": JAX, "env": {"XLA_FLAGS": variable}, "xla_flags": xla(variable, UNKNOWN), "jax": jax}
    )
    linked = causes.link(registry().evaluate_checks(facts), rules.evaluate(facts))
    roots = [f.id for f in linked if not f.caused_by and f.severity == "fail"]
    assert roots == ["xla-flags-invalid"]
    assert {f.id: f.caused_by for f in linked}["jax-broken"] == "xla-flags-invalid"


def _audit(env: dict[str, str], out: Path, *argv: str, fix: str = "") -> tuple[int, dict[str, Any]]:
    script = f"{fix}\n{sys.executable} -m envaudit {' '.join(argv)} --format json --output {out}"
    done = subprocess.run(["bash", "-c", script], env=env, timeout=300, capture_output=True, text=True)
    return done.returncode, json.loads(out.read_text())


def _roots(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["severity"] == "fail" and not f["caused_by"]]


@pytest.mark.jax
def test_for_real_each_wrong_root_is_its_own_and_its_fix_makes_the_audit_pass(tmp_path: Path) -> None:
    """The jax installed here, through envaudit: XLA ends jax on an unknown flag, JAX_PLATFORMS=tpu,cpu fails on
    the missing libtpu; each is its own root (jax-broken under it), --quick finds it too, and the printed fix,
    pasted into a shell, makes the audit pass."""
    base = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    cases = [
        (
            {"XLA_FLAGS": "--xla_force_host_platform_device_count=2 --xla_no_such_flag=1", "JAX_PLATFORMS": "cpu"},
            "xla-flags-invalid",
            "export XLA_FLAGS=--xla_force_host_platform_device_count=2",
        ),
        ({"JAX_PLATFORMS": "tpu,cpu"}, "jax-platforms-unavailable", "export JAX_PLATFORMS=cpu"),
    ]
    for extra, root, fix in cases:
        env = {**base, "PYTHONPATH": str(ROOT), **extra}
        code, report = _audit(env, tmp_path / "r.json")
        assert code == 1 and [f["id"] for f in _roots(report)] == [root], report["findings"]
        assert report["facts"]["jax"]["status"] == "error"
        assert {f["id"]: f["caused_by"] for f in report["findings"]}.get("jax-broken") == root
        assert _roots(report)[0]["fix"] == fix
        code, quick = _audit(env, tmp_path / "q.json", "--quick")
        assert code == 1 and [f["id"] for f in _roots(quick)] == [root]
        # jax starts and computes right after it (one probe: the others have suites of their own, and each costs
        # this test seconds on two devices)
        code, fixed = _audit(env, tmp_path / "f.json", "--probe", "dense_chain", fix=fix)
        assert code == 0 and fixed["facts"]["jax"]["status"] == "ok", fixed["findings"]
        assert [p["status"] for p in fixed["probes"]] == ["pass"]
