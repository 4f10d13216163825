"""Triage reads what a maintainer reads first: the messages jax, XLA and NumPy print (their facts, and the rule
they name), versions written in prose, stated minimums (requirements, not environments), and envaudit's own
reports as the audited facts they carry."""

from __future__ import annotations

import json

import pytest

from envaudit import audit
from envaudit.facts import Facts
from envaudit.formats import FORMATS
from envaudit.triage import TriageError, reply, triage


def facts(result: object, number: int = 0) -> dict[str, str]:
    env = result.environments[number]  # type: ignore[attr-defined]
    return {s.fact: s.value for s in env.seen}


def roots(result: object) -> set[str]:
    return {f.id for e in result.environments for f in e.report.findings if not f.caused_by}  # type: ignore[attr-defined]


def test_an_error_and_no_versions_is_answered_with_its_cause_its_facts_and_what_to_state() -> None:
    text = b"Traceback (most recent call last):\n  ...\nRuntimeError: jaxlib is version 0.4.1, but this version of jax requires version >= 0.4.6.\n"
    result = triage(text)
    assert result.verdict == "fail" and "jax-jaxlib-coupling" in roots(result)
    assert facts(result) == {"package jaxlib": "0.4.1"}
    assert result.environments[0].seen[0].line == 3
    assert "the jax version (pip show jax)" in result.environments[0].missing
    finding = next(f for f in result.environments[0].report.findings if f.id == "jax-jaxlib-coupling")
    assert "line 3: 'jaxlib is version 0.4.1, but this version of jax requires version >= 0.4.6.'" in finding.detail


def test_a_message_wrapped_by_the_reporters_terminal_still_names_its_rule_and_facts() -> None:
    text = (
        b"/site-packages/jaxlib/plugin_support.py:71: RuntimeWarning: JAX plugin jax_cuda12_plugin version 0.6.2 is\n"
        b"installed, but it is not compatible with the installed jaxlib version 0.6.1, so it will not be used.\n"
    )
    result = triage(text)
    assert "plugin-jaxlib-mismatch" in roots(result)
    assert facts(result) == {"package jax-cuda12-plugin": "0.6.2", "package jaxlib": "0.6.1"}


def test_versions_in_prose_and_downstream_packages_are_read() -> None:
    text = b"After bumping JAX to 0.4.32 the solver gives wrong results; I also upgraded to optax 0.2.3 and equinox 0.10.4.\n"
    assert facts(triage(text)) == {"package jax": "0.4.32", "package optax": "0.2.3", "package equinox": "0.10.4"}


@pytest.mark.parametrize("minimum", ["Jax 0.4.4+", "jax>=0.4.4", "jax 0.4.4 or newer", "jax at least 0.4.4"])
def test_a_stated_minimum_is_a_requirement_not_a_second_environment(minimum: str) -> None:
    text = f"The README says {minimum} is enough, but with jax 0.4.6 and equinox 0.10.4 it fails.\n".encode()
    result = triage(text)
    assert len(result.environments) == 1 and facts(result)["package jax"] == "0.4.6"
    assert [(s.fact, s.value) for s in result.requirements] == [("requires jax", ">=0.4.4")]
    assert "Requirements the text states" in reply.RENDERERS.render(result, "text")
    assert json.loads(reply.RENDERERS.render(result, "json"))["requirements"][0]["value"] == ">=0.4.4"


def test_jax_code_without_versions_is_answered_and_text_about_nothing_is_refused() -> None:
    result = triage(b"import jax.numpy as jnp\nprint(jnp.float16(1) @ jnp.float16(2))  # hangs\n")
    assert result.verdict == "ok" and facts(result) == {}
    assert "the jax version (pip show jax)" in result.environments[0].missing
    with pytest.raises(TriageError, match="no environment in this text"):
        triage(b"The weather was fine and the build finished.\n")


def test_a_message_that_only_states_facts_gives_them_and_fires_nothing() -> None:
    result = triage(
        b"WARNING:absl:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n"
    )
    assert facts(result) == {"platform": "cpu"} and result.verdict == "ok"


def test_a_log_that_repeats_a_message_is_one_message_judged_once() -> None:
    line = b"E cuda_dnn.cc:523] Loaded runtime CuDNN library: 9.0.0 but source was compiled with: 9.1.1.  CuDNN library needs to have matching major version and equal or higher minor version.\n"
    result = triage(line * 5000)
    assert len(result.environments) == 1
    assert len(result.environments[0].report.facts.messages) == 1


BROKEN = Facts(
    packages={"jax": "0.4.30", "jaxlib": "0.4.25", "numpy": "1.26.4", "scipy": "1.13.1"},
    python={"version": "3.11.9", "executable": "/venv/bin/python"},
    platform={"system": "Linux", "machine": "x86_64"},
)


@pytest.mark.parametrize("form", ["text", "markdown", "json"])
def test_envaudits_own_report_is_read_as_its_facts_not_its_fixes(form: str) -> None:
    report = audit.assemble(BROKEN, mode="audit", host_info={"hostname": "node"})
    assert report.verdict == "fail" and any(f.fix for f in report.findings)  # its fix names other versions
    result = triage(("Here is what envaudit said:\n\n" + FORMATS.render(report, form)).encode())
    assert len(result.environments) == 1 and result.verdict == "fail"
    read = {k.removeprefix("package "): v for k, v in facts(result).items() if k.startswith("package ")}
    assert read == BROKEN.packages
    assert facts(result)["python"] == "3.11.9"
    assert "jax-jaxlib-coupling" in roots(result)
