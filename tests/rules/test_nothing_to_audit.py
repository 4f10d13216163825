"""An interpreter without jax (a fresh virtualenv after `pip install .`): a warn that says so, with no command.

Which environment has jax is the user's to name (`--python PATH`), and whether this one should get jax is theirs
to decide, so the finding's fix is absent and both ways on are advice in its detail. Its report is assembled here,
in this process, so that the suite's check that every fix is a command (tests/conftest.py) sees it.
"""

from __future__ import annotations

from typing import Any

from envaudit.judge import assemble
from tests.conftest import facts_from

PYTHON = "/srv/tools/bin/python"
WITHOUT_JAX: dict[str, Any] = {
    "packages": {"envaudit": "0.2.0", "packaging": "26.4", "psutil": "7.2.2"},
    "python": {"executable": PYTHON, "version": "3.11.7"},
    "jax": {"status": "absent", "message": "ModuleNotFoundError: No module named 'jax'"},
}


def test_no_jax_is_a_warn_without_a_command_and_says_both_ways_on() -> None:
    report = assemble.assemble(facts_from(WITHOUT_JAX), mode="audit")
    (found,) = report.findings
    assert (found.id, found.severity, report.verdict) == ("nothing-to-audit", "warn", "warn")
    assert not found.remedy and found.fix == "" and not report.plan.fix  # advice is never pasted
    assert f"jax is not installed in {PYTHON}" in found.detail
    assert "envaudit audit --python PATH" in found.detail  # the environment that has jax
    assert "pip install '.[jax]'" in found.detail  # or jax here, without the releases envaudit fails


def test_an_environment_with_jax_has_something_to_audit() -> None:
    with_jax = WITHOUT_JAX | {"packages": WITHOUT_JAX["packages"] | {"jax": "0.10.1", "jaxlib": "0.10.1"}}
    report = assemble.assemble(facts_from(with_jax), mode="audit")
    assert "nothing-to-audit" not in {f.id for f in report.findings}
