"""The one registry of causes: every check declared in the rules package is listed in it once, every id is one
cause's, a retired id stays known (listed, ignorable, re-checkable in a saved report) and never fires."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import pytest

from envaudit import rules
from envaudit.cli import main
from envaudit.model.facts import Facts
from envaudit.rules import engine
from envaudit.rules.check import Check
from envaudit.rules.registry import CHECKS, RETIRED, Retired, registry


def _declared_checks() -> list[Check]:
    """Every Check value a module of the rules package holds, alone or in a tuple of a family."""
    found: list[Check] = []
    for info in pkgutil.iter_modules(rules.__path__):
        module = importlib.import_module(f"envaudit.rules.{info.name}")
        if info.name == "registry":
            continue
        for value in vars(module).values():
            values = value if isinstance(value, tuple) else (value,)
            found += [v for v in values if isinstance(v, Check)]
    return found


def test_every_declared_check_is_listed_once() -> None:
    declared = {id(c): c for c in _declared_checks()}
    listed = {id(c) for c in CHECKS}
    assert len(listed) == len(CHECKS)  # none twice
    assert [c.id for k, c in declared.items() if k not in listed] == []  # none declared and forgotten


def test_every_id_is_one_causes_and_the_registry_answers_by_it() -> None:
    causes = registry().causes
    ids = [c.id for c in causes]
    assert len(ids) == len(set(ids))
    assert all(registry().get(i) is c for i, c in zip(ids, causes, strict=True))
    assert {c.kind for c in registry().active} == {"rule", "check"}
    assert {r.id for r in registry().rules} == {r.id for r in engine.load_rules()}


@pytest.mark.parametrize("retired", RETIRED, ids=lambda r: r.id)
def test_a_retired_id_is_known_listed_and_never_found(retired: Retired, capsys: pytest.CaptureFixture[str]) -> None:
    assert registry().get(retired.id) is retired and retired.lifecycle == "retired"
    successors = [registry().get(r) for r in retired.replaced_by]
    assert all(s is not None and s.lifecycle == "active" for s in successors)
    assert retired not in registry().active and retired.id not in registry().declared
    assert retired.findings(Facts()) == []
    assert main(["rules", retired.id]) == 0
    assert "retired" in capsys.readouterr().out


def test_a_saved_report_or_an_ignore_that_names_a_retired_id_still_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retired = RETIRED[0].id
    pins = ["jax==0.4.30", "jaxlib==0.4.30"]
    assert main(["plan", *pins, "--ignore", f"{retired}:moved on", "--format", "json"]) == 0  # not exit 2
    document = json.loads(capsys.readouterr().out)
    document["findings"].append({"id": retired, "severity": "fail", "title": "as an old envaudit wrote it"})
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(document))
    assert main(["check", str(saved), "--format", "json"]) == 0  # today's rules judge the facts: it is not found
    assert retired not in {f["id"] for f in json.loads(capsys.readouterr().out)["findings"]}
