"""Every install and uninstall line the documentation prints for envaudit names what pyproject.toml builds: its
distribution's name (the index's "envaudit" is another project, and pip refuses `envaudit @ git+URL` whose
metadata says jax-envaudit) and only the extras it declares. tests/realenv/test_recipes.py runs each line."""

from __future__ import annotations

import pytest

from tests.recipes import NAME, Recipe, arguments, commands, of_project, problems, recipes


def test_every_recipe_names_the_distribution_the_project_builds() -> None:
    found = recipes()
    assert found, "no install line found: the reader of the documents is broken"
    assert any(r.uninstalls for r in found) and any(not r.uninstalls for r in found)  # both verbs are read
    said = [p for r in found for p in problems(r)]
    assert not said, "\n".join(said)


@pytest.mark.parametrize(
    ("line", "wrong"),
    [
        ('      - run: python -m pip install "envaudit @ git+URL@REV"', True),  # pip: "inconsistent name"
        ("RUN pip install --no-cache-dir envaudit", True),  # the index's unrelated envaudit
        ("after `pip uninstall envaudit` stays", True),  # pip: "Skipping envaudit as it is not installed"
        ('`pip install ".[gpu]"`', True),  # no such extra
        ("/opt/env/bin/python -m pip install -e '.[jax]' && python -m envaudit", False),
        (f'python -m pip install "{NAME} @ git+URL@REV"', False),
        (f"`uv pip uninstall {NAME}`", False),
    ],
)
def test_the_check_reads_a_recipe_wherever_it_is_printed(line: str, wrong: bool) -> None:
    ((number, command),) = commands(line)
    names = tuple(a for a in arguments(command) if of_project(a))
    assert names, command
    assert bool(problems(Recipe("a document", number, command, names))) is wrong


def test_a_line_that_installs_something_else_is_no_recipe_of_envaudit() -> None:
    for line in ("pip install 'flax>=0.10.0'", "uv pip install --python PY -r requirements.txt", "pip install ..."):
        ((_, command),) = commands(line)
        assert not [a for a in arguments(command) if of_project(a)], command
