"""Triage on real bug-report texts (tests/fixtures/triage, each with its URL): the facts a careful reader
extracts (expected.json), and the known problems the reports were about."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envaudit.commands.triage.triaged import triage
from envaudit.model.redact import scrub
from envaudit.model.scope import is_relevant
from tests.conftest import FIXTURES

HERE = FIXTURES / "triage"
EXPECTED: dict[str, dict[str, Any]] = json.loads((HERE / "expected.json").read_text(encoding="utf-8"))


def said(path: Path) -> dict[str, set[str]]:
    """Every value triage used for each fact, over the environments it found."""
    result = triage(path.read_bytes())
    found: dict[str, set[str]] = {}
    for env in result.environments:
        for seen in env.seen:
            found.setdefault(seen.fact, set()).add(seen.value)
    found["environments"] = {str(len(result.environments))}
    return found


def wanted(expected: dict[str, Any]) -> dict[str, set[str]]:
    want = {f"package {k}": {v} for k, v in expected.get("packages", {}).items() if is_relevant(k)}  # the audited
    want |= {k: {str(expected[k])} for k in ("python", "system", "driver", "cuda", "platform") if k in expected}
    want |= {"gpu": set(expected["gpus"])} if expected.get("gpus") else {}
    want |= {"x64": {"on" if expected["x64"] else "off"}} if "x64" in expected else {}
    want |= {"environments": {str(expected["environments"])}} if "environments" in expected else {}
    return want


RECALL_FLOOR = 30  # of the 38 reports, those where every fact a careful reader sees is extracted (measured: 30)
KNOWN = {  # the known problem each report was about, as the knowledge base names it
    "11-pip-show-flax-jax-jaxlib-optax.txt": "cuda11-jaxlib-end-of-life",
    "18-neural-tangents-4-gpus-versions.txt": "cuda11-driver-below-450",
    "34-conda-list-jaxlib-older-than-jax.txt": "plugin-jaxlib-mismatch",
    "37-flax-jax-0.4.25-fails-0.4.24-works.txt": "flax-config-jax-0425",
}


def test_most_reports_give_every_fact_a_reader_sees() -> None:
    misses: dict[str, dict[str, set[str]]] = {}
    for name, expected in sorted(EXPECTED.items()):
        found = said(HERE / name)
        lost = {k: v - found.get(k, set()) for k, v in wanted(expected).items() if v - found.get(k, set())}
        misses |= {name: lost} if lost else {}
    assert len(EXPECTED) - len(misses) >= RECALL_FLOOR, misses


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_fact_is_wrong_and_each_is_shown_with_its_line(name: str) -> None:
    """Where the report shows one environment, every value used is the one a reader sees; and each fact's line
    is the text's own line, so a maintainer can check it."""
    raw = (HERE / name).read_bytes()
    result, lines = triage(raw), raw.decode("utf-8", errors="replace").splitlines()
    for env in result.environments:  # the line as quoted: a URL's credentials and query are never repeated
        assert all(s.text and s.text in scrub(lines[s.line - 1], {}) for s in env.seen)
    if "environments" not in EXPECTED[name] and len(result.environments) == 1:
        want = wanted(EXPECTED[name])
        found = said(HERE / name)
        wrong = {k: found[k] - v for k, v in want.items() if k in found and k != "gpu" and found[k] - v}
        assert not wrong


@pytest.mark.parametrize(("name", "rule"), sorted(KNOWN.items()))
def test_the_known_problem_of_a_report_is_found(name: str, rule: str) -> None:
    result = triage((HERE / name).read_bytes())
    assert rule in {f.id for env in result.environments for f in env.report.findings if not f.caused_by}


@pytest.mark.parametrize("width", [60, 100])
def test_the_reply_fits_the_terminal_but_a_command_or_a_url(width: int) -> None:
    """Every prose line of the reply within the width; only a fix (which must stay pasteable) or a URL may not."""
    from envaudit.commands.triage import reply
    from envaudit.formats.style import Style

    for path in sorted((FIXTURES / "triage-unseen-4").glob("*.txt"))[:12]:
        for line in reply.text(triage(path.read_bytes()), style=Style(width=width)).splitlines():
            long_word = any(len(w) > width // 2 for w in line.split())
            assert len(line) <= width or "fix: " in line or "http" in line or long_word, (path.name, line)
