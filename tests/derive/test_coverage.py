"""How far the knowledge reaches: every table keyed on jax covers the same newest release (a closed history aside),
coverage.toml says which, and a jax past it is a warning, never OK (rules/knowledge.py)."""

from __future__ import annotations

import json

import pytest

from derive import registry
from derive.tables import coverage
from envaudit.cli import main
from envaudit.model.versions import release
from envaudit.rules import knowledge
from tests.conftest import facts_from

COVERAGE = knowledge.COVERAGE.load()


def test_every_table_keyed_on_jax_reaches_the_same_newest_release() -> None:
    tables = registry.declared_tables()
    reached = coverage.reaches(tables)
    assert len(reached) >= 10, reached  # the tables keyed on jax say so (Table(jax=...))
    open_ = {name: v for name, v in reached.items() if not tables[name].closed}
    assert len(set(open_.values())) == 1, f"tables stop at different jax releases: {open_}"


def test_coverage_toml_is_what_the_tables_say() -> None:
    tables = registry.declared_tables()
    reached = coverage.reaches(tables)
    assert COVERAGE["tables"] == reached, "coverage.toml is stale: `python -m derive refresh` writes it"
    assert COVERAGE["jax"] == coverage.common(tables, reached)


def test_a_jax_past_the_knowledge_is_a_warning_and_one_within_it_is_none() -> None:
    newest = release(COVERAGE["jax"]) or ()
    past = ".".join(map(str, (*newest[:-1], newest[-1] + 1)))
    cases: tuple[tuple[str, list[str]], ...] = (
        (COVERAGE["jax"], []),
        (past, ["jax"]),
        (past + ".dev20270101", ["jax"]),
        ("0.4.30", []),
        (COVERAGE["jax"] + ".post1", ["jax"]),  # released after the tables read: unknown
        (COVERAGE["jax"] + "+cuda12", []),  # a build of the release they read
        (COVERAGE["jax"] + ".dev0", []),  # before it
        ("1!0.1", ["jax"]),  # another epoch sorts after every release of epoch 0
    )
    for version, expected in cases:
        found = knowledge.beyond(facts_from({"packages": {"jax": version}}))
        assert [o.about for o in found] == expected, version
    said = knowledge.beyond(facts_from({"packages": {"jax": past, "jaxlib": past}}))
    assert [o.about for o in said] == ["jax", "jaxlib"]
    assert COVERAGE["jax"] in said[0].detail and COVERAGE["released"] in said[0].detail


def test_a_plan_past_the_knowledge_is_never_ok(capsys: pytest.CaptureFixture[str]) -> None:
    newest = release(COVERAGE["jax"]) or ()
    past = ".".join(map(str, (newest[0], newest[1] + 1, 0)))
    main(["plan", f"jax=={past}", f"jaxlib=={past}", "--no-build", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] != "ok"
    assert "jax-newer-than-knowledge-jax" in {f["id"] for f in report["findings"]}


def test_the_newest_release_covered_is_judged_by_the_coupling_as_every_older_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The case that showed the tables apart: jax 0.12.0 beside jaxlib 0.10.1 fails as jax 0.11.0 beside it does
    (jax refuses a jaxlib older than its minimum at import); a table that stopped at 0.11.0 passed it."""
    for jax in ("0.11.0", "0.12.0"):
        main(["plan", f"jax=={jax}", "jaxlib==0.10.1", "--no-build", "--format", "json"])
        report = json.loads(capsys.readouterr().out)
        assert report["verdict"] == "fail", (jax, [f["id"] for f in report["findings"]])


def test_every_report_says_how_far_the_knowledge_that_judged_it_reaches(capsys: pytest.CaptureFixture[str]) -> None:
    main(["plan", "jax==0.10.1", "jaxlib==0.10.1", "--no-build", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["knowledge"] == {"jax": COVERAGE["jax"], "released": COVERAGE["released"]}
    main(["plan", "jax==0.10.1", "jaxlib==0.10.1", "--no-build"])
    head = capsys.readouterr().out.splitlines()[1]
    assert head.endswith(f"| knowledge to jax {COVERAGE['jax']} | plan"), head
    main(["rules", "--tables"])
    listed = capsys.readouterr().out
    assert listed.startswith(f"knowledge as of jax {COVERAGE['jax']} (released {COVERAGE['released']})")
