"""Every report with a plan says whether it is proven: a plan's report by what its build found, an audit's as not
yet proven, with the command that proves it (issue: `audit` says proven or not)."""

from __future__ import annotations

from dataclasses import replace

from envaudit.formats import markdown, text
from envaudit.judge import assemble
from tests.conftest import facts_from

BROKEN = {
    "python": {"version": "3.11.7", "executable": "/env/bin/python", "environment": "venv", "pip": True},
    "platform": {"machine": "x86_64", "system": "Linux"},
    "packages": {"jax": "0.4.30", "jaxlib": "0.4.30", "transformers": "4.30.2", "flax": "0.8.5"},
}


def test_an_audit_s_plan_is_not_proven_yet_and_says_how_to_prove_it() -> None:
    report = assemble.assemble(facts_from(BROKEN), mode="audit")
    assert report.plan.fix.command and report.proof == "unproven"
    assert report.to_dict()["plan"]["proof"] == "unproven"
    for rendered in (text.render(report), markdown.render(report)):
        assert "not proven yet" in rendered and "envaudit fix --dry-run" in " ".join(rendered.split())


def test_a_plan_s_report_says_what_its_build_found_and_a_clean_one_says_nothing() -> None:
    planned = assemble.assemble(facts_from({**BROKEN, "origin": "plan"}), mode="plan")
    built = replace(planned, build={"measured": True, "proof": "proven", "proof_reason": "built here"})
    assert built.proof == "proven" and built.to_dict()["plan"]["proof"] == "proven"
    assert "not proven yet" not in text.render(built)
    clean = assemble.assemble(facts_from({**BROKEN, "packages": {"jax": "0.10.1", "jaxlib": "0.10.1"}}), mode="audit")
    assert not clean.plan.fix.command and clean.proof == "" and "proof" not in clean.to_dict()["plan"]
