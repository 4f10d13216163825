"""`fix` tries each plan's least move first: a library's floor (`ott-jax>=0.4.5`) made that release
(`ott-jax==0.4.5`), since the installer takes the newest release a floor allows, whose own use of jax may differ
(blackjax 1.3, ott-jax past 0.4.5: the experts pinned the first fixed release). The plan itself follows where the
pin is not proven; jax's own packages keep what the plan says."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from envaudit.commands.plan import building
from envaudit.judge import fixplan
from envaudit.model.fixes import Fix, Plan, Step
from envaudit.model.report import Report
from tests.conftest import facts_from


def _plan(*install: str) -> Plan:
    fix = Fix(install=install)
    return Plan(steps=(Step("removed-jax-api-in-ott-jax", fix),), fix=fix)


def test_a_library_floor_is_made_that_release_and_jax_s_packages_and_other_ranges_are_kept() -> None:
    plan = _plan("ott-jax>=0.4.5", "jax==0.4.29", "jaxlib>=0.4.29", "scipy<1.13", "numpy>=1.2,<2", "flax[all]>=0.8")
    least = fixplan.least(plan)
    assert least is not None
    assert least.fix.install == (
        "ott-jax==0.4.5",
        "jax==0.4.29",
        "jaxlib>=0.4.29",
        "scipy<1.13",
        "numpy>=1.2,<2",
        "flax[all]>=0.8",
    )
    assert least.steps[0].fix.install == least.fix.install and least.steps[0].finding == plan.steps[0].finding
    assert fixplan.least(_plan("scipy<1.13", "jax==0.4.29")) is None
    assert fixplan.least(_plan("ott-jax>=0.4.5rc1")) is None  # a pre-release floor is no release to pin


@pytest.fixture
def proven_when(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """`prove` replaced: proven only for the commands the test lists."""
    proven: list[str] = []

    def prove(report: Report, **_: object) -> tuple[str, str]:
        command = " ".join(report.plan.fix.install)
        return ("proven", "built") if command in proven else ("unproven", f"twin: {command} fails")

    monkeypatch.setattr(building, "prove", prove)
    yield proven


def _search(*plans: Plan) -> tuple[Report, str, str]:
    facts = facts_from({"packages": {"jax": "0.4.29", "ott-jax": "0.4.4"}})
    report, proof, why = building.searched(
        [replace(Report(facts), plan=p) for p in plans], no_build=False, timeout=60, quiet=True
    )
    return report, proof, why


def test_the_least_move_is_tried_first_and_printed_where_proven(proven_when: list[str]) -> None:
    proven_when.append("ott-jax==0.4.5 jax==0.4.29")
    report, proof, _ = _search(_plan("ott-jax>=0.4.5", "jax==0.4.29"))
    assert proof == "proven" and report.plan.fix.install == ("ott-jax==0.4.5", "jax==0.4.29")


def test_the_plan_itself_follows_its_least_move_and_none_proven_says_the_first_plan_s_own_why(
    proven_when: list[str],
) -> None:
    proven_when.append("ott-jax>=0.4.5 jax==0.4.29")
    report, proof, _ = _search(_plan("ott-jax>=0.4.5", "jax==0.4.29"))
    assert proof == "proven" and report.plan.fix.install == ("ott-jax>=0.4.5", "jax==0.4.29")
    proven_when.clear()
    report, proof, why = _search(_plan("ott-jax>=0.4.5", "jax==0.4.29"), _plan("jax==0.4.23"))
    assert proof == "unproven" and report.plan.fix.install == ("ott-jax>=0.4.5", "jax==0.4.29")
    assert why == "twin: ott-jax>=0.4.5 jax==0.4.29 fails"
