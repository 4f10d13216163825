"""One truth across the verbs, the differential harness: every saved report envaudit wrote (the TPU and H200
replays, the real pass's audits before and after their fixes, the README's sample) is judged by each verb from the
facts it has, and they agree. `check` of its JSON and `triage` of each form that carries its measurements (the JSON,
the Markdown report) give one verdict and the same failing roots; `--quick` (no jax, no probe) and `plan` of its
pins (no probe, no driver) fail nothing the audit does not; the one plan leaves a state with no failure, no further
command and no invented fact; one stack written through its extra or as its packages is judged alike."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envaudit.cli import main
from envaudit.formats import render
from envaudit.judge import fixplan
from envaudit.judge.assemble import assemble, recheck
from envaudit.model.facts import Facts
from envaudit.model.report import Report
from envaudit.model.scope import is_relevant
from envaudit.rules import accessors, checks, wheels
from tests.conftest import FIXTURES, facts_from

# every case re-judges a whole saved report through the CLI (0.2-2.3 s each, 15 s of CPU in all): CI runs them
pytestmark = pytest.mark.slow

REPORTS = sorted(
    p
    for p in [*FIXTURES.rglob("*.json"), *(FIXTURES.parent / "golden").glob("*.json")]
    if '"envaudit/report/v1"' in p.read_text()
)


def verdict_and_roots(document: dict[str, Any]) -> tuple[str, list[str]]:
    failing = sorted(f["id"] for f in document["findings"] if f["severity"] == "fail" and not f.get("caused_by"))
    return document["verdict"], failing


def checked(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    main(["check", str(path), "--format", "json"])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def triaged(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    main(["triage", str(path), "--format", "json"])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert len(document["environments"]) == 1, (path, len(document["environments"]))
    return {"verdict": document["verdict"], "findings": document["environments"][0]["findings"]}


def with_chips(facts: Facts) -> Facts:
    """A TPU host's facts with the chips the collector reads today (collect/tpu.py), where its report predates them:
    what --quick and a plan see of the host without importing jax."""
    if facts.jax.get("platform") != "tpu" or "tpu" in facts.platform:
        return facts
    platform = facts.platform.copy()
    platform["tpu"] = {"chips": 1, "device_files": 1}
    return replace(facts, platform=platform)


def test_there_are_reports_of_every_kind_to_compare() -> None:
    assert len(REPORTS) >= 25
    assert any("tpu" in p.parts for p in REPORTS) and any("replay" in p.parts for p in REPORTS)


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_check_and_triage_of_each_form_judge_a_report_alike(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, path: Path
) -> None:
    expected = verdict_and_roots(checked(capsys, path))
    assert verdict_and_roots(triaged(capsys, path)) == expected, "triage of the JSON"
    report = Report.from_dict(json.loads(path.read_text()))
    markdown = tmp_path / "report.md"
    markdown.write_text("I ran envaudit and got this:\n\n" + render(report, "markdown") + "\n")
    assert verdict_and_roots(triaged(capsys, markdown)) == expected, "triage of the Markdown"


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_quick_never_fails_what_the_full_audit_of_the_same_host_does_not(path: Path) -> None:
    """`--quick` has fewer facts (jax is not imported, no probe runs), never another judgement: its failing roots
    are among the full audit's. On the TPU host `--quick` failed jaxlib 0.10.2's XLA:CPU rule, which the audit
    warns of (jax computes on the TPU): the quick facts see the chips' device files beside libtpu (collect/tpu.py),
    added here where a report predates that fact."""
    saved = Report.from_dict(json.loads(path.read_text()))
    quick = replace(with_chips(saved.facts), jax={"status": "skipped", "message": "--quick does not start jax"})
    quick_roots = set(verdict_and_roots(assemble(quick, mode="quick").to_dict())[1])
    assert quick_roots <= set(verdict_and_roots(recheck(saved).to_dict())[1])


def test_the_default_backend_is_what_jax_said_else_an_accelerator_present_with_its_runtime() -> None:
    tpu_host = {"packages": {"jax": "0.10.2", "jaxlib": "0.10.2", "libtpu": "0.0.42.1"}}
    present = {"system": "Linux", "tpu": {"chips": 4, "device_files": 1}}
    assert accessors.default_backend(facts_from({**tpu_host, "platform": present})) == "tpu"
    assert accessors.default_backend(facts_from(tpu_host)) == ""  # libtpu on a machine without chips: the CPU
    assert accessors.default_backend(facts_from({**tpu_host, "jax": {"status": "ok", "platform": "cpu"}})) == "cpu"


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_state_the_one_plan_leaves_has_no_failure_no_new_fix_and_no_invented_fact(path: Path) -> None:
    """plan(fix(state)): the one command applied to the state (judge/fixplan.outcome, as the planner applies it)
    leaves no failing root and asks for no further command. A TPU host's report carries its chips here (as the
    collector reads them today): a planned state after a jax move showed tpu-chips-unseen, a fact no plan makes."""
    saved = Report.from_dict(json.loads(path.read_text()))
    facts = with_chips(saved.facts)
    report = recheck(replace(saved, facts=facts))
    state = fixplan.outcome(facts, report.plan.steps)
    after = assemble(state, mode="plan")
    assert verdict_and_roots(after.to_dict())[1] == [], report.plan.fix.command
    assert not after.plan.fix.command, (report.plan.fix.command, after.plan.fix.command)


@pytest.mark.parametrize("version", ["0.4.30", "0.6.0", "0.10.2"])
@pytest.mark.parametrize(("extra", "lines"), [("cuda12", ("jax-cuda12-plugin", "jax-cuda12-pjrt")), ("tpu", ())])
def test_one_stack_written_through_its_extra_or_as_its_packages_is_judged_alike(
    capsys: pytest.CaptureFixture[str], version: str, extra: str, lines: tuple[str, ...]
) -> None:
    """A lock writes what `jax[cuda12]` resolves to (jax, jaxlib, jax-cuda12-plugin lines): alphafold3's uv.lock
    failed where its pyproject.toml warned, the platform read from the extra and not from the plugin lines."""
    main(["plan", f"jax[{extra}]=={version}", "--no-build", "--format", "json"])
    through_extra = json.loads(capsys.readouterr().out)
    written = [f"{name}=={v}" for name, v in through_extra["facts"]["packages"].items()]
    assert {f"{p}=={version}" for p in lines} <= set(written)
    main(["plan", *written, "--no-build", "--format", "json"])
    as_packages = json.loads(capsys.readouterr().out)
    assert as_packages["facts"]["jax"].get("platform") == through_extra["facts"]["jax"].get("platform")
    assert verdict_and_roots(as_packages) == verdict_and_roots(through_extra)


# what only a plan judges: whether the installer would take the pins (a live environment exists however it was made)
INSTALLER_ONLY = {
    checks.PLANNED_REQUIREMENT_REFUSED.id,
    checks.PLAN_DOES_NOT_INSTALL.id,
    wheels.NO_JAXLIB_WHEEL_FOR_PYTHON.id,
}


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_plan_of_the_same_pins_fails_nothing_the_audit_does_not(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    """`plan` of the audited stack's own pins (its Python and jax's platform stated) judges the same facts the same
    way: a plan has fewer facts (no probe, no driver, no variable), so its failing roots are among the audit's,
    besides the installer's word on the pins, which only a plan asks for."""
    saved = Report.from_dict(json.loads(path.read_text()))
    pins = [f"{name}=={version}" for name, version in saved.facts.packages.items() if is_relevant(name)]
    argv = ["plan", *pins, "--no-build", "--format", "json"]
    if python := saved.facts.python.get("version"):
        argv += ["--python", ".".join(str(python).split(".")[:2])]
    if platform := saved.facts.jax.get("platform"):
        argv += ["--platform", str(platform)]
    main(argv)
    planned = set(verdict_and_roots(json.loads(capsys.readouterr().out))[1]) - INSTALLER_ONLY
    assert planned <= set(verdict_and_roots(recheck(saved).to_dict())[1])


VERSIONS = ("0.4.23", "0.4.30", "0.6.0", "0.10.1", "0.10.2", "0.12.1", "0.13.0")


@settings(
    max_examples=int(os.environ.get("ENVAUDIT_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    index=st.integers(0, len(REPORTS) - 1),
    jax=st.sampled_from(VERSIONS),
    jaxlib=st.sampled_from(VERSIONS),
    numpy=st.sampled_from(("1.26.4", "2.0.0", "2.4.6")),
    x64=st.sampled_from(("", "1", "0", "true", "yes")),
)
def test_mutated_reports_are_judged_alike_by_check_triage_and_quick(
    capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
    index: int,
    jax: str,
    jaxlib: str,
    numpy: str,
    x64: str,
) -> None:
    """The same properties over states no one saved: a report's jax, jaxlib and NumPy moved (jax then not measured:
    what the audit saw of the old one says nothing of these) and JAX_ENABLE_X64 set or not. check and triage of its
    JSON agree; --quick fails nothing check does not."""
    saved = Report.from_dict(json.loads(REPORTS[index].read_text()))
    env = {**saved.facts.env, **({"JAX_ENABLE_X64": x64} if x64 else {})}
    packages = {**saved.facts.packages, "jax": jax, "jaxlib": jaxlib, "numpy": numpy}
    moved = packages != saved.facts.packages
    facts = replace(
        with_chips(saved.facts), packages=packages, env=env, jax={"status": "unknown"} if moved else saved.facts.jax
    )
    mutated = replace(saved, facts=facts, probes=() if moved else saved.probes, findings=())
    path = tmp_path_factory.mktemp("mutated") / "report.json"
    path.write_text(json.dumps(mutated.to_dict()))
    checked_ = checked(capsys, path)
    assert verdict_and_roots(triaged(capsys, path)) == verdict_and_roots(checked_)
    quick = replace(mutated.facts, jax={"status": "skipped", "message": "--quick does not start jax"})
    assert set(verdict_and_roots(assemble(quick, mode="quick").to_dict())[1]) <= set(verdict_and_roots(checked_)[1])
