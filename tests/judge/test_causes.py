"""One root cause, one failure: consequences linked to their cause, folded in every human format, kept in JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envaudit import judge, rules
from envaudit.child import jaxfacts
from envaudit.formats import markdown, text
from envaudit.judge import assemble, causes
from envaudit.model.report import Finding, ProbeResult, Report, Subject
from envaudit.rules import explains
from envaudit.rules.evaluation import Evaluation
from tests.conftest import ROOT, facts_from
from tests.golden import ERRORS, STALE


def stale_report() -> Report:
    return assemble.judged(facts_from(STALE), ERRORS, mode="audit")


def test_a_stale_jax_on_pythonpath_is_the_one_root_of_every_failure() -> None:
    report = stale_report()
    first, *rest = report.findings
    assert (first.id, first.severity, first.caused_by) == ("pythonpath-shadows", "fail", "")
    assert {f.id for f in rest} == {
        "jax-jaxlib-coupling",
        "jax-broken",
        "duplicate-distribution",
        "probe-dense-chain-error",
        "probe-ntk-error",
    }
    assert all(f.caused_by == "pythonpath-shadows" for f in rest)
    assert report.verdict == "fail" and assemble.exit_code(report, strict=False) == 1  # the meaning is unchanged


def test_a_root_takes_the_worst_severity_of_what_it_causes() -> None:
    found = [
        Finding(Subject("check", "jax-broken"), "fail", "t"),
        Finding(Subject("check", "pythonpath-shadows"), "warn", "t"),
    ]
    linked = causes.link(found, rules.evaluate(facts_from(STALE)))
    assert [(f.id, f.severity, f.caused_by) for f in linked] == [
        ("pythonpath-shadows", "fail", ""),
        ("jax-broken", "fail", "pythonpath-shadows"),
    ]


def test_findings_that_name_each_other_are_never_lost() -> None:
    named = {"a": explains.parse(("b",)), "b": explains.parse(("a",))}
    linked = causes.link(
        [Finding(Subject("check", "a"), "fail", "t"), Finding(Subject("check", "b"), "warn", "t")],
        Evaluation(facts_from({}), (), named),
    )
    assert [(f.id, f.caused_by) for f in linked] == [("b", ""), ("a", "b")]


def test_caused_by_travels_in_json_and_old_reports_read_without_it() -> None:
    report = stale_report()
    again = Report.from_dict(json.loads(json.dumps(report.to_dict())))
    assert [(f.id, f.caused_by) for f in again.findings] == [(f.id, f.caused_by) for f in report.findings]
    old = report.to_dict()
    for finding in old["findings"]:
        del finding["caused_by"]
    assert all(f.caused_by == "" for f in Report.from_dict(old).findings)


def test_human_formats_show_the_root_and_fold_its_consequences() -> None:
    report = stale_report()
    shown = text.render(report)
    assert "Findings (1 fail, 0 warn, 0 info; 5 consequences folded under them)" in shown
    root_at, folded_at = shown.index("FAIL  pythonpath-shadows"), shown.index("consequences (5), fixed with it:")
    assert root_at < folded_at < shown.index("fail jax-broken") < shown.index("Probes")
    assert "fix: unset PYTHONPATH" in shown and shown.count("        fix: ") == 1  # the root's fix, only
    md = markdown.render(report)
    assert "<details><summary>5 consequences, fixed with it</summary>" in md
    assert md.index("`pythonpath-shadows`") < md.index("5 consequences, fixed") < md.index("`jax-broken`")


def test_a_probe_for_a_package_that_is_not_installed_is_a_skip_even_when_jax_fails() -> None:
    flax = ProbeResult("flax_dtype", "error", {"error_kind": "exception"}, 0.1, "AttributeError: partially init")
    without = assemble.judged(facts_from(STALE), [flax], mode="audit")
    assert without.probes[0].status == "skip" and without.probes[0].message == "flax is not installed"
    assert "probe-flax-dtype-error" not in {f.id for f in without.findings}
    with_flax = assemble.judged(
        facts_from({**STALE, "packages": {**STALE["packages"], "flax": "0.12.8"}}), [flax], mode="audit"
    )
    assert with_flax.probes[0].status == "error"


def test_a_signal_while_importing_jax_says_so() -> None:
    facts = jaxfacts.parse([{"event": "fact", "stage": "start"}], ended=-7, timed_out=False, duration_s=0.5)
    assert facts["status"] == "crash" and str(facts["message"]).startswith("killed by SIGBUS while importing jax")


@pytest.mark.jax
@pytest.mark.cpu_only
@pytest.mark.parametrize(
    ("variable", "value", "rule"),
    [
        ("JAX_PLATFORMS", "cuda", "jax-platforms-unavailable"),
        ("JAX_PLATFORM_NAME", "gpu", "jax-platform-name-unavailable"),
    ],
)
def test_a_platform_variable_without_its_platform_is_one_failure_fixed_by_the_variable(
    tmp_path: Path, variable: str, value: str, rule: str
) -> None:
    """For real: jax's own error here is a bare AssertionError (JAX_PLATFORMS=cuda) or "Unknown backend: 'gpu'
    requested" (JAX_PLATFORM_NAME=gpu); the cause is the variable, never a reinstall of jax, and the fix printed,
    pasted into a shell, makes the audit pass."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), variable: value}
    script = f"{{fix}}\n{sys.executable} -m envaudit --format json --output {tmp_path}/r.json"
    subprocess.run(["bash", "-c", script.format(fix="")], env=env, timeout=300)
    report = json.loads((tmp_path / "r.json").read_text())
    roots = [f for f in report["findings"] if f["severity"] == "fail" and not f["caused_by"]]
    assert [f["id"] for f in roots] == [rule]
    assert "jax-broken" in {f["id"] for f in report["findings"] if f["caused_by"] == rule}
    assert "--force-reinstall" not in report["plan"]["fix"] and variable in report["plan"]["fix"]
    fixed = subprocess.run(["bash", "-c", script.format(fix=roots[0]["fix"])], env=env, timeout=300)
    assert fixed.returncode == 0, json.loads((tmp_path / "r.json").read_text())["findings"]


def test_a_check_that_fires_twice_folds_its_consequences_once() -> None:
    """plugin-jaxlib-mismatch fires for the plugin and for the pjrt package: jax-broken folds under it once."""
    found = [
        Finding(Subject("check", "plugin-jaxlib-mismatch"), "fail", "t", "plugin"),
        Finding(Subject("check", "plugin-jaxlib-mismatch"), "fail", "t", "pjrt"),
        Finding(Subject("check", "jax-broken"), "fail", "t"),
    ]
    linked = causes.link(found, rules.evaluate(facts_from({"jax": {"status": "import_error"}})))
    mismatch = "plugin-jaxlib-mismatch"
    assert [(f.id, f.caused_by) for f in linked] == [(mismatch, ""), ("jax-broken", mismatch), (mismatch, "")]


def test_a_probe_that_crashed_under_a_working_jax_without_metadata_stays_a_crash() -> None:
    """jax imported from a source checkout has no dist-info: a crash there is a crash, not 'jax is not installed'."""
    crash = ProbeResult("dense_chain", "crash", {"signal": "SIGSEGV"}, 0.1, "killed by SIGSEGV")
    facts = facts_from({"jax": {"status": "ok", "platform": "cpu"}, "packages": {}})
    assert causes.not_applicable([crash], facts)[0].status == "crash"
    absent = facts_from({"jax": {"status": "absent"}, "packages": {}})
    assert causes.not_applicable([crash], absent)[0].status == "skip"


def test_a_root_quotes_what_the_user_saw_not_only_its_rules_symptom() -> None:
    """flax 0.7.4 with jax 0.4.25: the rule's symptom is one release's words; the probe's own error is what this
    environment printed, and the root's detail quotes it (the exception's last line)."""
    facts = facts_from({"packages": {"flax": "0.7.4", "jax": "0.4.25", "jaxlib": "0.4.25"}, "jax": {"status": "ok"}})
    said = "Traceback (most recent call last):\n  ...\nImportError: cannot import name 'linear_util' from 'jax'\n"
    flax = ProbeResult("flax_dtype", "error", {"error_kind": "import"}, 0.2, said)
    report = assemble.judged(facts, [flax], mode="audit")
    (root,) = [f for f in report.findings if not f.caused_by and f.severity == "fail"]
    assert "probe-flax-dtype-error" in {f.id for f in report.findings if f.caused_by == root.id}
    assert root.detail.endswith("(seen here: ImportError: cannot import name 'linear_util' from 'jax')"), root.detail


def test_a_probe_health_left_out_warns_only_where_it_could_have_run() -> None:
    """Health's bound leaves ntk_nt out (25 s declared): on a node without neural-tangents that is a skip, since no
    bound would run it (every default health there warned); with neural-tangents it stays the budget warning."""
    left = ProbeResult("ntk_nt", "skip", {"declared_cost_s": 25.0}, 0.0, "not run: does not fit", left_out="budget")
    ok = {"status": "ok", "platform": "cpu"}
    without = facts_from({"jax": ok, "packages": {"jax": "0.10.1", "flax": "0.12.8"}})
    (skipped,) = causes.not_applicable([left], without)
    assert (skipped.status, skipped.left_out, skipped.message) == ("skip", None, "neural-tangents is not installed")
    assert not judge.judge([skipped], without).findings
    packages = {"jax": "0.10.1", "flax": "0.12.8", "neural-tangents": "0.6.5"}
    (kept,) = causes.not_applicable([left], facts_from({"jax": ok, "packages": packages}))
    assert kept.left_out == "budget"
    assert [f.id for f in judge.judge([kept], without).findings] == ["probe-ntk-nt-not-run"]
