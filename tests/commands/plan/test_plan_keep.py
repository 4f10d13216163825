"""What the user chose is kept: the distributions a plan's inputs ask for by name are `facts.requested` (a soft
preference of the planner), and `--keep NAME` holds a distribution where it is in every verb that plans (a way out
that moves it is not taken; what only it would fix is left, and the plan says so)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from envaudit.cli import main
from envaudit.judge import fixplan
from envaudit.model.exitcodes import Exit
from tests.conftest import FIXTURES, facts_from

INPUTS = FIXTURES / "plan-inputs"
TRANSFORMERS = ("jax==0.4.30", "jaxlib==0.4.30", "transformers==4.30.2", "flax==0.8.5")


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["plan", *argv, "--format", "json"])
    captured = capsys.readouterr()
    assert code in (Exit.OK, Exit.FINDINGS), captured.err
    return code, json.loads(captured.out)


def test_what_the_inputs_ask_for_by_name_is_requested_not_what_came_as_a_dependency(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(INPUTS)
    _, lock = plan(capsys, "old-jax/uv.lock", "--python", "3.11", "--extra", "opt")
    assert lock["facts"]["requested"] == ["jax", "jaxlib", "optax"]  # the project's, not NumPy or SciPy
    _, report = plan(capsys, "--pip-report", "jaxlib-0102/report.json")
    assert report["facts"]["requested"] == ["jax", "jaxlib"]  # pip's `requested`
    _, both = plan(capsys, "-r", "jaxlib-0102/requirements.in", "flax==0.10.4")
    assert set(both["facts"]["requested"]) >= {"flax", "jax"}


def test_keep_holds_a_library_and_the_plan_moves_jax_instead(capsys: pytest.CaptureFixture[str]) -> None:
    """transformers 4.30.2's Flax models with jax 0.4.30: the least change moves transformers; kept, the plan
    moves jax below the removal instead (and flax with it), and transformers stays."""
    _, free = plan(capsys, *TRANSFORMERS, "--no-build")
    assert "transformers" in free["plan"]["fix"]
    code, kept = plan(capsys, *TRANSFORMERS, "--no-build", "--keep", "Transformers")
    pins = dict(p.split("==") for p in kept["plan"]["fix"].split(": ", 1)[1].split())
    assert "transformers" not in pins and pins["jax"] != "0.4.30", kept["plan"]
    assert code == Exit.FINDINGS and not kept["plan"]["remaining"] and "kept" not in kept["plan"]


def test_keep_that_leaves_a_failure_says_so_and_never_moves_it(capsys: pytest.CaptureFixture[str]) -> None:
    """Kept both, transformers and jax, nothing fixes the removed API: the failure is left and the plan names
    what was kept. Where a way that moves nothing kept exists (jax 0.4.25's oneDNN miscompile: its variable),
    that is the plan."""
    _, kept = plan(capsys, *TRANSFORMERS, "--no-build", "--keep", "transformers", "--keep", "jax")
    assert kept["plan"]["remaining"] == ["removed-jax-api-in-transformers"], kept["plan"]
    assert "transformers" not in kept["plan"]["fix"] and "jax==" not in kept["plan"]["fix"]
    assert set(kept["plan"]["kept"]) <= {"jax", "transformers"} and kept["plan"]["kept"], kept["plan"]
    main(["plan", *TRANSFORMERS, "--no-build", "--keep", "transformers", "--keep", "jax", "--format", "text"])
    said = " ".join(capsys.readouterr().out.split())
    assert "kept where they are, as asked (--keep):" in said
    pins = ("jax==0.4.25", "jaxlib==0.4.25", "neural-tangents==0.6.5")
    _, free = plan(capsys, *pins, "--no-build")
    assert "jax==0.4.29" in free["plan"]["fix"]
    _, around = plan(capsys, *pins, "--no-build", "--keep", "jax", "--keep", "jaxlib")
    assert "jax==" not in around["plan"]["fix"] and "XLA_FLAGS" in around["plan"]["fix"], around["plan"]


def test_keep_is_the_planner_s_whatever_the_verb() -> None:
    """The search itself: no plan it offers moves a kept distribution, however many it ranks."""
    facts = facts_from({"packages": {"jax": "0.4.30", "jaxlib": "0.4.30", "transformers": "4.30.2", "flax": "0.8.5"}})
    from envaudit.judge.assemble import assemble

    findings = assemble(facts, mode="audit").findings
    for plan_ in fixplan.candidates(facts, findings, keep=("transformers",), limit=4):
        assert fixplan.outcome(facts, plan_.steps).packages["transformers"] == "4.30.2", plan_.fix


@pytest.mark.parametrize("name", ["", "-x", "a b", "jax;rm", "x" * 300])
def test_a_bad_keep_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code = main(["plan", "jax==0.4.30", "jaxlib==0.4.30", f"--keep={name}"])
    err = capsys.readouterr().err
    assert code == Exit.USAGE and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
