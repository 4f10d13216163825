"""A plan of input files fixes with requirement lines, not with an install into an environment that does not exist
yet: the same plan as an audit's (fixplan), rendered for the files that hold the lines; and tests/shell.py holds those
lines to what a requirements file takes, while an audit's fix stays held to what bash runs."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.requirements import Requirement

from envaudit.cli import build_parser
from envaudit.commands.plan import ARGUMENTS, PlanOptions, parse, planned
from envaudit.judge import assemble
from envaudit.model import fixes
from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix, Target
from envaudit.model.scope import canonicalize_name
from tests.conftest import FIXTURES
from tests.planfix import requested
from tests.shell import problems, written

INPUTS = FIXTURES / "plan-inputs"
PLAN = Facts(origin="plan")


def args(*argv: str) -> PlanOptions:
    return parse(build_parser().parse_args(["plan", *argv]))


def lines_by_file(fix: str) -> dict[str, set[str]]:
    """What a fix written as lines asks each file to hold (the test reads the rendering back; the code never does)."""
    return {file: set(lines) for file, lines in requested(fix).files.items()}


@pytest.fixture(autouse=True)
def _in_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(INPUTS)


def test_a_plan_of_files_is_the_plan_of_its_pins_written_as_lines() -> None:
    """The nested fixture and its pins given as arguments: the same facts, the same steps with the same
    requirements, both written as lines; only the file they are written in differs."""
    of_files = planned(args("-r", "nested/requirements.txt", "--python", "3.11"))
    of_pins = planned(args("jax==0.4.20", "jaxlib==0.4.20", "numpy==2.0.2", "scipy==1.11.4", "--python", "3.11"))
    assert of_files.facts == of_pins.facts
    assert of_files.target is not None and of_files.target.tool == "lines"
    assert of_pins.target == Target(tool="lines", into=ARGUMENTS)  # no environment either: lines, not a command
    by_files = assemble.assemble(of_files.facts, mode="plan", target=of_files.target).plan
    by_pins = assemble.assemble(of_pins.facts, mode="plan", target=of_pins.target).plan
    assert [s.finding for s in by_files.steps] == [s.finding for s in by_pins.steps] != []
    assert [(s.fix.install, s.fix.hold) for s in by_files.steps] == [(s.fix.install, s.fix.hold) for s in by_pins.steps]
    files, pins = requested(by_files.fix.command), requested(by_pins.fix.command)
    assert replace(files, files={}) == replace(pins, files={}) and pins.requirements == by_pins.fix.install
    assert files.files == {"nested/constraints.txt": by_pins.fix.install}
    assert pins.files == {ARGUMENTS: by_pins.fix.install}


def test_each_line_goes_to_the_file_that_names_its_distribution() -> None:
    """jaxlib 0.10.2's fix moves jax, jaxlib and the CUDA plugins; the plugins are pinned by arguments here. The plan
    says jax computes on the CPU (on the GPU the plugins give it, the XLA:CPU fault is a warning, as the audit of
    such a host says, and no fix is forced)."""
    plugins = ("jax-cuda12-plugin==0.10.2", "jax-cuda12-pjrt==0.10.2")
    made = planned(args("-r", "jaxlib-0102/requirements.in", *plugins, "--platform", "cpu"))
    assert made.target is not None
    fix = assemble.assemble(made.facts, mode="plan", target=made.target).plan.fix
    found = lines_by_file(fix.command)
    assert {canonicalize_name(Requirement(r).name) for r in found["jaxlib-0102/requirements.in"]} == {"jax", "jaxlib"}
    assert {canonicalize_name(Requirement(r).name) for r in found[ARGUMENTS]} == {p.split("==")[0] for p in plugins}
    assert set(fix.install) == set().union(*found.values())  # every requirement, each once, nothing else
    assert not written(fix.command, made.facts)


def test_lines_keep_the_fixs_values_and_variables_stay_shell() -> None:
    target = Target(tool="lines", written=(("numpy", "requirements.txt"),), into="pyproject.toml")
    fix = Fix(
        install=("numpy<2", "ml-dtypes<0.7.0"),
        hold=("jax==0.4.20",),
        uninstall=("jax-cuda12-plugin",),
        unset=("JAX_PLATFORMS",),
        export=(("XLA_FLAGS", "--xla_cpu_experimental_ynn_fusion_type="),),
        target=target,
    )
    command = fix.command
    assert lines_by_file(command) == {
        "requirements.txt": {"numpy<2"},
        "pyproject.toml": {"ml-dtypes<0.7.0", "jax==0.4.20", "no jax-cuda12-plugin"},
    }
    variables = [p for p in command.split("; ") if not p.startswith("in ")]
    assert variables and all(not problems(p, PLAN) for p in variables)
    assert not written(command, PLAN)
    assert fixes.aimed(fix, Target()).command.startswith("unset JAX_PLATFORMS && export XLA_FLAGS=")  # values kept


@pytest.mark.parametrize(
    ("fix", "wrong"),
    [
        ("in requirements.txt: numpy<2; python_version < '3.12'", "neither a variable nor"),
        ("in requirements.txt: numpy @ https://example.com/numpy.whl", "no marker and no URL"),
        ("in requirements.txt: numpy<2, 'jax==0.4.30'", "is no requirement"),
        ("in requirements.txt: no numpy<2", "names the distribution alone"),
        ("export A='1; in x.txt: jax==1", "does not parse"),  # a value with "; " would be cut in two
    ],
)
def test_the_shell_check_holds_a_plans_lines_to_what_a_requirements_file_takes(fix: str, wrong: str) -> None:
    assert any(wrong in p for p in problems(fix, PLAN)), problems(fix, PLAN)


def test_an_audits_fix_gets_no_such_leniency() -> None:
    """The same text in a live audit's report is judged as a shell command, and it is not one."""
    assert problems("in requirements.txt: numpy<2", Facts(origin="live"))
    assert not problems("in requirements.txt: numpy<2", PLAN)
