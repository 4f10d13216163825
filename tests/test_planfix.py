"""tests/planfix.py reads back exactly what a fix's values are, in both forms a fix is rendered in (a plan's lines and
each installer's command), and refuses what it cannot read instead of reading part of it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from envaudit.model import fixes
from envaudit.model.fixes import Fix, Target
from tests.planfix import Requested, requested

LINES = Target(tool="lines", written=(("numpy", "requirements.txt"),), into="pyproject.toml")
TARGETS = {
    "pip": Target(python="'/my env/bin/python'"),
    "ensurepip": Target(python="/e/bin/python", pip=False),
    "uv": Target(python="/e/bin/python", tool="uv", pip=False),
    "conda": Target(python="/e/bin/python", prefix="'/opt/conda/envs/my env'", conda=frozenset({"numpy", "scipy"})),
}
FIX = Fix(
    install=("numpy<2,>=1.26", "ml-dtypes<0.7.0", "jax[cuda12]==0.4.30"),
    hold=("jaxlib==0.4.30",),
    uninstall=("jax-cuda13-plugin",),
    unset=("JAX_PLATFORMS", "PYTHONPATH"),
    export=(("XLA_FLAGS", "--a=1; in x.txt: jax==1 && 'q'"),),
)


def test_a_plans_lines_are_read_file_by_file() -> None:
    found = requested(replace(FIX, target=LINES).command)
    assert found == Requested(
        requirements=("numpy<2,>=1.26", "ml-dtypes<0.7.0", "jax[cuda12]==0.4.30", "jaxlib==0.4.30"),
        pins={"jax": "0.4.30", "jaxlib": "0.4.30"},
        remove=("jax-cuda13-plugin",),
        unset=("JAX_PLATFORMS", "PYTHONPATH"),
        export={"XLA_FLAGS": "--a=1; in x.txt: jax==1 && 'q'"},
        files={
            "requirements.txt": ("numpy<2,>=1.26",),
            "pyproject.toml": ("ml-dtypes<0.7.0", "jax[cuda12]==0.4.30", "jaxlib==0.4.30", "no jax-cuda13-plugin"),
        },
    )


@pytest.mark.parametrize("installer", TARGETS)
def test_each_installers_command_asks_for_what_the_lines_do(installer: str) -> None:
    command = replace(FIX, target=TARGETS[installer]).command
    found = requested(command)
    assert replace(found, requirements=tuple(sorted(found.requirements))) == replace(
        requested(replace(FIX, target=LINES).command),
        requirements=tuple(sorted(FIX.install + FIX.hold)),  # conda's first, the rest after
        files={},
    ), command


def test_a_reinstall_and_a_cuda_jaxlib_keep_their_options_and_index() -> None:
    found = requested(Fix(reinstall=("jaxlib==0.4.23+cuda12.cudnn89",), target=TARGETS["pip"]).command)
    assert found.pins == {"jaxlib": "0.4.23+cuda12.cudnn89"}
    assert found.options == {"--force-reinstall", "--no-deps"} and found.links == (fixes.CUDA_RELEASES,)
    assert requested(Fix(reinstall=("numpy==2.0.2",), target=TARGETS["uv"]).command).options == {
        "--reinstall",
        "--no-deps",
    }


@pytest.mark.parametrize(
    "fix",
    [
        "",
        "in requirements.txt: numpy<2; python_version < '3.12'",  # a marker: cut by "; "
        "in requirements.txt: numpy @ https://example.com/numpy-2.0.0-py3-none-any.whl",
        "in requirements.txt: numpy<2, 'jax==0.4.30'",
        "in requirements.txt: numpy>=1.26, <2",  # a specifier's comma written with a space
        "in requirements.txt: no numpy<2",
        "in a.txt: jax==0.4.30; in a.txt: jaxlib==0.4.30",
        "in a.txt: jax==0.4.30, jax==0.4.31",
        "in a.txt: jax==0.4.30, no jax",
        "in a.txt: jax==0.4.30;in b.txt: jaxlib==0.4.30",
        "export A='1; in x.txt: jax==1",
        "export A=1; rm -rf build",
        "unset A; export A=1",
        "pip install numpy",  # not the audited interpreter's pip
        "python -m pip install --upgrade numpy",
        "python -m pip install numpy; rm -rf build",
        "python -m pip install numpy && rm -rf build",
        "python -m pip install numpy &&",
        "python -m pip install",
        "python -m pip uninstall numpy",  # no -y: waits for an answer
        "uv pip install numpy",  # no --python: another environment's
        "conda install numpy",
        "python -m pip install 'numpy<2' -f",
    ],
)
def test_what_it_cannot_read_is_an_error_that_quotes_the_fix(fix: str) -> None:
    with pytest.raises(AssertionError):
        requested(fix)


NAMES = st.sampled_from(["numpy", "ml-dtypes", "jax", "jaxlib", "scipy", "jax-cuda12-plugin"])
SPECIFIERS = st.sampled_from(["==2.0.2", "<2", "<2,>=1.26", ">=0.4.30", "==0.4.23+cuda12.cudnn89", ""])
VARIABLES = st.sampled_from(["JAX_PLATFORMS", "XLA_FLAGS", "PYTHONPATH", "CUDA_VISIBLE_DEVICES"])


@st.composite
def fix_values(draw: st.DrawFn) -> Fix:
    names = draw(st.lists(NAMES, unique=True, max_size=6))
    cut = draw(st.integers(0, len(names)))
    variables = draw(st.lists(VARIABLES, unique=True, max_size=4))
    half = draw(st.integers(0, len(variables)))
    return Fix(
        install=tuple(f"{n}{draw(SPECIFIERS)}" for n in names[:cut]),
        uninstall=tuple(names[cut:]),
        unset=tuple(variables[:half]),
        export=tuple((v, draw(st.text(max_size=12))) for v in variables[half:]),
    )


@settings(deadline=None)  # shlex and the parser take over 200 ms beside a busy suite: once seen as DeadlineExceeded
@given(fix_values(), st.sampled_from([LINES, *TARGETS.values()]))
def test_any_fix_is_read_back_as_its_values(fix: Fix, target: Target) -> None:
    assume(fix)
    found = requested(replace(fix, target=target).command)
    assert sorted(found.requirements) == sorted(fix.install)
    assert sorted(found.remove) == sorted(fix.uninstall)
    assert found.unset == fix.unset and found.export == dict(fix.export)
