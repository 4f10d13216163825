"""Triage never answers `ok` over an error it cannot explain: an error line no signature reads is a warning that
quotes it and says what to state and try; an error a rule reads is that rule's, and a paste without one is judged
by its facts alone."""

from __future__ import annotations

from envaudit.commands.triage.triaged import triage

VERSIONS = "jax: 0.10.1\njaxlib: 0.10.1\nnumpy: 2.2.6\npython: 3.12.3\n"


def roots(text: str) -> tuple[str, dict[str, str]]:
    result = triage(text.encode())
    found = {f.id: f.detail for e in result.environments for f in e.report.findings if not f.caused_by}
    return result.verdict, found


def test_an_error_no_rule_reads_is_a_warning_that_quotes_its_line() -> None:
    verdict, found = roots(
        VERSIONS + "Traceback (most recent call last):\n  File 'x.py'\nRuntimeError: the frobnicator broke\n"
    )
    assert verdict == "warn" and "line 7: 'RuntimeError: the frobnicator broke'" in found["unexplained-error"]
    assert "jax.print_environment_info()" in found["unexplained-error"]  # what the reporter should state


def test_an_error_a_rule_reads_is_that_rules() -> None:
    text = VERSIONS + "RuntimeError: jaxlib is version 0.10.0, but this version of jax requires version >= 0.10.1.\n"
    _, found = roots(text)
    assert "jax-jaxlib-coupling" in found and "unexplained-error" not in found


def test_a_paste_without_an_error_is_judged_by_its_facts() -> None:
    assert roots(VERSIONS) == ("ok", {})


def test_an_error_quoted_in_a_sentence_is_an_error_too() -> None:
    """ "With JAX 0.7.2, the following code errors with `TypeError: cannot create weak reference to 'Flatten'
    object`": the error stated in prose, not on a traceback's last line, is still one no rule explains."""
    verdict, found = roots(
        VERSIONS + "With this release the code errors with `TypeError: cannot create weak reference to 'X' object`:\n"
    )
    assert verdict == "warn" and "TypeError: cannot create weak reference" in found["unexplained-error"]
