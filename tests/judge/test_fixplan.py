"""A report's fixes are one plan: computed in order on the state the previous ones leave, for the environment's own
installer, and the state the plan leaves has nothing left to fix (a fixed point) or says what stays wrong.

The cases are those of the issue that asked for this (each seen in a real environment built from the package
index; tests/realenv builds some of them for real): their expected plans were written from what pip and jax do
there before the planner existed.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from envaudit.judge import assemble, fixplan
from envaudit.model import fixes
from envaudit.model.facts import Facts
from envaudit.model.report import ProbeResult, Report
from envaudit.rules import engine, fixing, installing
from envaudit.rules.releases import numbers
from tests.conftest import ROOT, facts_from
from tests.golden import STALE
from tests.planfix import requested
from tests.shell import problems

CPU: dict[str, Any] = {
    "python": {"version": "3.11.7", "executable": "/env/bin/python", "environment": "venv", "pip": True},
    "platform": {"machine": "x86_64", "system": "Linux"},
    "nvidia": {"status": "absent", "message": "NVML Shared Library Not Found"},
}
GPU = {
    **CPU,
    "nvidia": {"status": "ok", "driver_version": "580.82.07", "gpus": [{"index": 0, "compute_capability": "9.0"}]},
}


def planned(doc: dict[str, Any]) -> Report:
    return assemble.assemble(facts_from(doc), mode="audit")


def after(report: Report) -> list[Any]:
    """The root causes of the state the plan's one command leaves, as the knowledge base judges it."""
    return fixplan.leaves(report.facts, report.findings, report.plan.steps)


def assert_fixed_point(report: Report) -> None:
    """What the plan claims holds: its one command leaves exactly the failures it says stay, and a new audit of that
    state would print no fix of its own."""
    left = after(report)
    assert {f.id for f in left if f.severity == "fail"} == set(report.plan.remaining), report.plan
    looping = set(report.plan.remaining) if report.plan.loop else set()  # said to have no fix that does not loop
    looping |= set(report.plan.declined)  # warnings whose fix would move a package down: said to be left out
    assert [f.id for f in left if f.remedy and f.id not in looping] == [], [(f.id, f.fix) for f in left if f.remedy]


MEASURED_0102 = ProbeResult("known_regressions", "fail", {"rel_err_jax39103": 0.002, "output_dtype": "float32"})


def measured(doc: dict[str, Any]) -> Report:
    """The report where known_regressions measured jax#39103 on this CPU (jaxlib 0.10.2 computes it wrong)."""
    return assemble.judged(facts_from(doc), [MEASURED_0102], mode="audit")


def test_a_library_fix_and_a_regression_fix_are_one_command_that_does_not_re_pin_the_bad_jaxlib() -> None:
    """pip install chex==0.1.82 picks jax 0.10.2: chex's fix held jaxlib 0.10.2, which jax#39103's fix condemns
    once the probe measured it on this CPU (jax's default backend here)."""
    report = measured({**CPU, "packages": {"jax": "0.10.2", "jaxlib": "0.10.2", "chex": "0.1.82", "numpy": "2.2.6"}})
    command = report.plan.fix.command
    assert command.startswith("/env/bin/python -m pip install "), command
    asked = set(requested(command).requirements)
    assert {"jax==0.10.1", "jaxlib==0.10.1"} <= asked and "jaxlib==0.10.2" not in asked
    (upgrade,) = [r for r in asked if r.startswith("chex>=")]  # 0.1.87 drops jax.random.KeyArray (gone in 0.4.24)
    assert numbers(upgrade.removeprefix("chex>=")) >= (0, 1, 87)
    assert report.plan.remaining == () and not report.plan.loop
    assert_fixed_point(report)
    chex = next(f for f in report.findings if f.id == "removed-jax-api-in-chex")
    assert "chex>=" in chex.fix  # its own part of the one plan
    assert "jaxlib==0.10.2" not in chex.fix and "jaxlib==0.10.1" in chex.fix, chex.fix  # never the faulty one held


def test_a_warning_never_forces_a_downgrade() -> None:
    """The same stack where known_regressions ran jax#39103's case and this CPU computed it right: the rule is a
    warning, whose fix moves jax down. The plan takes chex's fix alone, says it left the warning's out, and the
    finding still says its own fix."""
    right = ProbeResult("known_regressions", "pass", {"rel_err_jax39103": 2.9e-8, "output_dtype": "float32"})
    doc = {**CPU, "packages": {"jax": "0.10.2", "jaxlib": "0.10.2", "chex": "0.1.82", "numpy": "2.2.6"}}
    report = assemble.judged(facts_from(doc), [right], mode="audit")
    asked = requested(report.plan.fix.command)
    assert asked.pins.get("jaxlib", "0.10.2") == "0.10.2", asked  # held where it is, or not named
    assert any(r.startswith("chex>=") for r in asked.requirements), asked
    assert report.plan.declined == ("jaxlib-0102-cpu-vmap-matvec-sum",)
    regression = next(f for f in report.findings if f.id == "jaxlib-0102-cpu-vmap-matvec-sum")
    assert regression.severity == "warn" and "jax==0.10.1" in regression.fix
    from envaudit.formats import text

    assert "warnings never force a downgrade" in " ".join(text.render(report).split())
    assert_fixed_point(report)


def test_plugins_left_behind_move_forward_to_jaxlib_on_a_gpu_host() -> None:
    """A CUDA plugin at 0.10.1 under jaxlib 0.10.2: jax skips the plugin and computes on the CPU. The least change
    that fixes it moves the plugins to jaxlib's release; jax#39103 (an XLA:CPU fault, a warning where jax computes
    on the GPU) does not pull jax back."""
    stack = {"jax": "0.10.2", "jaxlib": "0.10.2", "jax-cuda12-plugin": "0.10.1", "jax-cuda12-pjrt": "0.10.1"}
    report = planned({**GPU, "packages": stack, "jax": {"status": "ok", "platform": "cuda"}})
    asked = requested(report.plan.fix.command)
    assert asked.pins == {"jax-cuda12-plugin": "0.10.2", "jax-cuda12-pjrt": "0.10.2"}, asked
    assert [s.finding for s in report.plan.steps] == ["plugin-jaxlib-mismatch"]
    regression = next(f for f in report.findings if f.id == "jaxlib-0102-cpu-vmap-matvec-sum")
    assert regression.severity == "warn" and "jax computes on cuda by default here" in regression.detail
    assert_fixed_point(report)


def test_a_platform_variable_root_is_fixed_by_the_variable_never_by_a_reinstall() -> None:
    """JAX_PLATFORM_NAME=gpu on a CPU machine: jax imports, then its first computation raises. The root is the
    variable, so the plan is the variable alone: no reinstall of jax (which changes nothing, and so looped), and
    the state it leaves has nothing left to fix (objective, point 2: a variable is a fix where it is the root)."""
    unknown = "Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present."
    doc = {
        **CPU,
        "packages": {"jax": "0.10.1", "jaxlib": "0.10.1", "numpy": "2.2.6"},
        "env": {"JAX_PLATFORM_NAME": "gpu"},
        "jax": {"status": "error", "stage": "devices", "message": f"RuntimeError: {unknown}"},
    }
    report = planned(doc)
    roots = [f for f in report.findings if f.severity == "fail" and not f.caused_by]
    assert [f.id for f in roots] == ["jax-platform-name-unavailable"]
    assert report.plan.fix.command == "unset JAX_PLATFORM_NAME"
    assert not report.plan.fix.install and not report.plan.fix.reinstall and not report.plan.loop
    assert_fixed_point(report)


def test_what_an_interrupted_pip_left_is_deleted_by_path_beside_the_reinstall() -> None:
    """real-pass-2's pip-interrupted: pip killed while replacing jaxlib leaves `~axlib/` and
    `~axlib-0.10.1.dist-info` (347 MB) and no jaxlib. pip uninstall cannot remove a stash (it is no distribution),
    so the one plan deletes the stashes by path, inside the environment only, and installs jaxlib again; a
    stash outside the environment is never in a command."""
    site = "/env/lib/python3.11/site-packages"
    stashes = [f"{site}/~axlib", f"{site}/~axlib-0.10.1.dist-info"]
    python = {**CPU["python"], "prefix": "/env", "leftovers": [*stashes, "/home/u/.local/~ther"]}
    unmet = [{"package": "jax", "requires": "jaxlib<=0.10.1,>=0.10.1", "installed": None}]  # as its audit said
    doc = {**CPU, "python": python, "packages": {"jax": "0.10.1", "numpy": "2.2.6"}, "requirements": unmet}
    report = planned(doc)
    leftover = next(f for f in report.findings if f.id == "pip-leftovers")
    assert leftover.severity == "warn" and not leftover.caused_by
    command = report.plan.fix.command
    assert command.startswith(shlex.join(["rm", "-rf", "--", *stashes]) + " && "), command
    assert "jaxlib==0.10.1" in command and ".local" not in command, command
    assert_fixed_point(report)


def test_a_rocm_stack_moves_its_plugins_with_jax() -> None:
    """Objective, point 1, on AMD: jax held back for neural-tangents takes the ROCm plugin and its PJRT package to
    the same release (they are released in lockstep with jaxlib), never leaves them behind on a newer jaxlib."""
    stack = {
        "jax": "0.10.2", "jaxlib": "0.10.2", "jax-rocm7-plugin": "0.10.2", "jax-rocm7-pjrt": "0.10.2",
        "neural-tangents": "0.6.5", "numpy": "2.2.6",
    }  # fmt: skip
    report = planned({**CPU, "packages": stack, "jax": {"status": "ok", "platform": "rocm"}})
    asked = requested(report.plan.fix.command)
    assert {n: asked.pins[n] for n in stack if n in asked.pins} == {
        "jax": "0.5.3", "jaxlib": "0.5.3", "jax-rocm7-plugin": "0.5.3", "jax-rocm7-pjrt": "0.5.3"
    }  # fmt: skip
    assert report.plan.held == (("neural-tangents", "0.5.3"),) and report.plan.remaining == ()
    assert_fixed_point(report)


def test_neural_tangents_moves_with_the_newest_jax_it_imports_and_no_variable() -> None:
    """neural-tangents 0.6.4 with jax 0.10.2: its fix is 0.6.5 with the newest jax below 0.6.0 (0.5.3, measured
    importing with NumPy 2), not jax 0.4.25 (which needs NumPy 1 and an XLA_FLAGS workaround for xla#13054): no
    loop, no variable, NumPy kept; implementation=3's warning (jax >= 0.4.26) is left out, not forced."""
    stack = {"jax": "0.10.2", "jaxlib": "0.10.2", "neural-tangents": "0.6.4", "tensorflow": "2.21.0", "numpy": "2.2.6"}
    report = planned({**CPU, "packages": stack})
    command = report.plan.fix.command
    assert "export" not in command and "XLA_FLAGS" not in command, command
    asked = requested(command)
    assert {"neural-tangents==0.6.5", "jax==0.5.3", "jaxlib==0.5.3"} <= set(asked.requirements), asked
    assert "numpy" not in asked.pins and not any(r.startswith("numpy") for r in asked.requirements)
    assert report.plan.declined == ("nt-065-impl3-jax-0426",) and not report.plan.loop
    assert_fixed_point(report)


@pytest.mark.parametrize(
    ("python", "installers", "first"),
    [
        (
            {"environment": "uv", "pip": False},
            {"jax": "uv", "jaxlib": "uv"},
            "uv pip install --python /env/bin/python ",
        ),
        ({"environment": "venv", "pip": False}, {}, "/env/bin/python -m ensurepip && /env/bin/python -m pip install "),
        ({"environment": "venv", "pip": True}, {"jax": "pip"}, "/env/bin/python -m pip install "),
        ({"pip": False}, {"jax": "uv"}, "uv pip install --python /env/bin/python "),  # no pyvenv.cfg said, uv did
        # a uv venv where no uv runs (not in the environment, not on PATH): its pip, else ensurepip and pip
        ({"environment": "uv", "pip": True, "uv": False}, {"jax": "uv"}, "/env/bin/python -m pip install "),
        (
            {"environment": "uv", "pip": False, "uv": False},
            {"jax": "uv"},
            "/env/bin/python -m ensurepip && /env/bin/python -m pip install ",
        ),
        ({"environment": "uv", "pip": True, "uv": True}, {"jax": "uv"}, "uv pip install --python /env/bin/python "),
    ],
)
def test_the_fix_uses_the_installer_that_made_the_environment(
    python: dict[str, Any], installers: dict[str, str], first: str
) -> None:
    doc = {**CPU, "python": {**CPU["python"], **python}, "installers": installers}
    report = planned({**doc, "packages": {"jax": "0.4.32", "jaxlib": "0.4.32"}})  # yanked: a failure, upgraded
    assert report.plan.fix.command.startswith(first), report.plan.fix.command
    assert report.findings[0].fix.startswith(first), report.findings[0].fix


def test_in_a_conda_environment_conda_moves_what_conda_installed_and_pip_what_pip_did() -> None:
    python = {**CPU["python"], "environment": "conda", "conda": True, "prefix": "/opt/conda/envs/my env"}
    doc = {**CPU, "python": python, "installers": {"numpy": "conda", "jax": "pip", "jaxlib": "pip", "scipy": "conda"}}
    report = planned({**doc, "packages": {"jax": "0.4.23", "jaxlib": "0.4.23", "numpy": "2.0.2", "scipy": "1.13.1"}})
    # NumPy 2 kept (the objective): jax and jaxlib move past both faults, with pip, which installed them; conda's
    # NumPy and SciPy stay where they are
    assert report.plan.fix.command == "/env/bin/python -m pip install jax==0.10.1 jaxlib==0.10.1", report.plan.fix
    both = fixing.install(report.facts, ["numpy<2", "jaxlib==0.4.26"])  # one conda's, one pip's
    assert both.command == (
        "conda install -y -p '/opt/conda/envs/my env' 'numpy<2' && /env/bin/python -m pip install jaxlib==0.4.26"
    )
    assert_fixed_point(report)


def test_a_shadowing_user_site_is_one_root_whose_fix_says_it_lasts_one_shell() -> None:
    """The golden report's stale jax, in the user site instead of on PYTHONPATH: three fails that each listed the
    same consequences were one root cause's."""
    doc = {**STALE, "python": {**STALE["python"], "pythonpath": "", "user_site": "/old"}}
    report = planned(doc)
    assert [f.id for f in report.findings if not f.caused_by and f.severity == "fail"] == ["user-site-shadows"]
    assert report.plan.fix.command == "export PYTHONNOUSERSITE=1"
    assert_fixed_point(report)


@pytest.mark.slow
def test_every_rule_example_planned_reaches_what_its_plan_claims() -> None:
    """The fixed point over the knowledge base: each example a rule fires on, planned, leaves the failures its plan
    says stay and no fix of its own. A rule whose fix is a release is fixed by it; one of a driver or a board stays,
    said (no command fixes it)."""
    planned_any = 0
    for rule in engine.load_rules():
        for example in rule.examples:
            if example["match"]:
                report = assemble.assemble(facts_from(example["facts"]), mode="audit")
                assert_fixed_point(report)
                planned_any += bool(report.plan.steps)
                if rule.pins and report.plan.steps:
                    assert rule.id not in report.plan.remaining, (rule.id, report.plan)
    assert planned_any >= 30  # most rules' examples have a fix that the plan applies


REPLAYS = sorted((ROOT / "tests" / "fixtures" / "replay").glob("*.json"))


@pytest.mark.parametrize("path", REPLAYS, ids=lambda p: p.stem)
def test_every_replayed_report_reaches_what_its_plan_claims(path: Path) -> None:
    report = assemble.recheck(Report.from_dict(json.loads(path.read_text(encoding="utf-8"))))
    assert_fixed_point(report)
    for finding in report.findings:
        assert not problems(finding.fix, report.facts), (finding.id, finding.fix)
    assert not problems(report.plan.fix.command, report.facts)


def test_a_cuda_plugin_without_a_driver_is_removed_not_reinstalled() -> None:
    """jax[cuda12] on a machine without a driver: no finding before; now the plugin's removal, and no fix anywhere
    in the plan installs CUDA wheels there."""
    stack = {"jax": "0.10.1", "jaxlib": "0.10.1", "jax-cuda12-plugin": "0.10.1", "jax-cuda12-pjrt": "0.10.1"}
    report = planned({**CPU, "packages": stack, "jax": {"status": "ok", "platform": "cpu"}})
    (found,) = [f for f in report.findings if f.id == "cuda-plugin-without-driver"]
    assert found.severity == "warn" and "Jax plugin configuration error" in found.detail
    assert report.plan.fix.command == "/env/bin/python -m pip uninstall -y jax-cuda12-pjrt jax-cuda12-plugin"
    assert_fixed_point(report)
    unknown = planned({**CPU, "nvidia": {"status": "unknown"}, "packages": stack})  # NVML not asked: not absent
    assert "cuda-plugin-without-driver" not in {f.id for f in unknown.findings}
    on_gpu = planned({**CPU, "packages": stack, "jax": {"status": "ok", "platform": "cuda"}})
    assert "cuda-plugin-without-driver" not in {f.id for f in on_gpu.findings}


def test_a_uv_venv_removes_with_uv_and_conda_with_conda() -> None:
    uv = fixes.Target(python="/e/bin/python", tool="uv", pip=False)
    assert fixes.Fix(uninstall=("a",), target=uv).command == "uv pip uninstall --python /e/bin/python a"
    conda = fixes.Target(python="/e/bin/python", prefix="/e", conda=frozenset({"a"}))
    assert fixes.Fix(uninstall=("a", "b"), target=conda).command == (
        "conda remove -y -p /e a && /e/bin/python -m pip uninstall -y b"
    )


def test_a_variable_set_for_another_cause_does_not_clear_a_failed_import_of_jax() -> None:
    """The review's case: xla#13054's workaround is an export; jax's own ImportError is not its consequence, so the
    plan still reinstalls jax instead of calling it fixed by a variable."""
    stack = {"jax": "0.4.25", "jaxlib": "0.4.25", "neural-tangents": "0.6.5", "numpy": "1.26.4"}
    failed = {
        "status": "import_error",
        "stage": "import",
        "message": "ImportError: libfoo.so: cannot open shared object",
    }
    report = planned({**CPU, "packages": stack, "jax": failed})
    asked = requested(report.plan.fix.command)
    reinstalled = "jax-broken" in [s.finding for s in report.plan.steps] and "--force-reinstall" in asked.options
    moved = asked.pins.get("jaxlib") not in (None, "0.4.25")  # another release installed over the broken one
    assert reinstalled or moved, report.plan
    assert "jax-broken" not in report.plan.remaining
    assert_fixed_point(report)


def test_the_one_command_reaches_the_state_its_steps_were_judged_in() -> None:
    """A later range after an earlier exact pin (jaxlib==0.7.2, then jaxlib>=0.8.1) would leave the installed
    jaxlib where the steps had moved it: the one command pins what the steps reached."""
    python = {**CPU["python"], "version": "3.13.1"}
    report = planned({**GPU, "python": python, "packages": {"jax": "0.7.2", "jaxlib": "0.10.2", "numpy": "1.26.4"}})
    steps: Facts = report.facts
    for step in report.plan.steps:
        steps = installing.after(steps, step.fix)
    assert installing.after(report.facts, report.plan.fix).packages == steps.packages
    assert_fixed_point(report)


def test_a_plan_never_installs_a_jaxlib_that_has_no_wheel_for_the_python() -> None:
    """neural-tangents' fix is a jax below 0.6.0, and none has a wheel for Python 3.14 (jaxlib 0.5.3's newest is
    3.13): the plan cannot claim one. On Python 3.13 the same fix is jax 0.5.3."""
    stack = {"jax": "0.10.2", "jaxlib": "0.10.2", "neural-tangents": "0.6.4", "numpy": "2.2.6"}
    on_313 = planned({**CPU, "python": {**CPU["python"], "version": "3.13.1"}, "packages": stack})
    assert requested(on_313.plan.fix.command).pins["jaxlib"] == "0.5.3"
    python = {**CPU["python"], "version": "3.14.0"}
    report = planned({**CPU, "python": python, "packages": stack})
    command = report.plan.fix.command
    below = [v for v in [requested(command).pins.get("jaxlib")] if v and numbers(v) < (0, 6)] if command else []
    assert below == [], command
    assert report.plan.remaining, report.plan  # what stays wrong is said, not a clean state that cannot install
    assert_fixed_point(report)


VERSIONS = {
    "jax": ["0.4.23", "0.4.25", "0.4.30", "0.6.0", "0.7.2", "0.10.1", "0.10.2"],
    "jaxlib": ["0.4.23", "0.4.25", "0.4.26", "0.4.30", "0.6.0", "0.7.2", "0.10.1", "0.10.2"],
    "jax-cuda12-plugin": ["0.4.30", "0.10.1", "0.10.2"],
    "numpy": ["1.26.4", "2.0.2", "2.2.6"],
    "ml-dtypes": ["0.4.1", "0.5.1"],
    "flax": ["0.7.4", "0.8.5", "0.10.4", "0.12.6"],
    "chex": ["0.1.82", "0.1.90"],
    "optax": ["0.2.2", "0.2.4"],
    "neural-tangents": ["0.6.4", "0.6.5"],
}
ENV = {
    "JAX_PLATFORMS": ["tpu,cpu", "cpu", "cuda"],
    "XLA_FLAGS": ["--xla_force_host_platform_device_count=2"],
    "JAX_DEFAULT_MATMUL_PRECISION": ["FLOAT32", "float32"],
}


@st.composite
def stacks(draw: st.DrawFn) -> dict[str, Any]:
    packages = {n: draw(st.sampled_from(v)) for n, v in VERSIONS.items() if n == "jax" or draw(st.booleans())}
    env = {n: draw(st.sampled_from(v)) for n, v in ENV.items() if draw(st.integers(0, 3)) == 0}
    machine = draw(st.sampled_from([CPU, GPU]))
    python = {**machine["python"], "version": draw(st.sampled_from(["3.10.14", "3.11.7", "3.13.1"]))}
    return {**machine, "python": python, "packages": packages, "env": env}


@pytest.mark.slow
@settings(max_examples=120, deadline=None, derandomize=True)
@given(stacks())
def test_any_stack_planned_reaches_what_its_plan_claims(doc: dict[str, Any]) -> None:
    """Code checks and rules at their boundaries together, as random stacks of real release numbers: the one command
    leaves exactly the failures the plan says stay, and no fix of its own."""
    assert_fixed_point(planned(doc))


def test_a_pixi_environment_gets_no_command_that_pixi_would_undo() -> None:
    """pixi re-syncs its environment to its lock file: a conda package of it moved by a command does not stay moved
    (and conda may not be there), so that fix has no command; what pip installed there pip still moves."""
    python = {**CPU["python"], "environment": "pixi", "conda": True, "prefix": "/p/.pixi/envs/default"}
    doc = {**CPU, "python": python, "installers": {"numpy": "conda", "jax": "pip", "jaxlib": "pip"}}
    report = planned({**doc, "packages": {"jax": "0.4.23", "jaxlib": "0.4.23", "numpy": "2.0.2"}})
    numpy = next(f for f in report.findings if f.id == "numpy2-with-jaxlib-before-0426")
    assert "conda" not in report.plan.fix.command and "'numpy<2'" not in report.plan.fix.command
    assert numpy.fix == "" or "fixes it too" in numpy.detail
    assert_fixed_point(report)


TPU_HOST = {  # the TPU v5e host: jax[tpu] 0.10.2, and neural-tangents 0.6.5, whose last release needs jax < 0.6
    **CPU,
    "packages": {
        "jax": "0.10.2", "jaxlib": "0.10.2", "libtpu": "0.0.42.1", "flax": "0.12.8", "neural-tangents": "0.6.5",
        "numpy": "2.4.6", "ml-dtypes": "0.6.0", "optax": "0.2.8", "orbax-checkpoint": "0.12.8", "chex": "0.1.92",
        "tf2jax": "0.3.8", "tensorflow": "2.21.0",
    },
    "jax": {"status": "ok", "platform": "tpu", "jax_version": "0.10.2"},
}  # fmt: skip


def test_the_tpu_host_keeps_its_accelerator_numpy_2_and_exports_nothing() -> None:
    """The plan an engineer writes: jax[tpu] at 0.5.3 (the newest below 0.6.0) with the libtpu its extra pins,
    the libraries that need a newer jax moved to their newest releases that accept it, NumPy 2 kept, no variable;
    jax is said to be held for neural-tangents, with the other ways named."""
    report = planned(TPU_HOST)
    command = report.plan.fix.command
    asked = requested(command)
    assert {"jax[tpu]==0.5.3", "jaxlib==0.5.3", "libtpu==0.0.11.*"} <= set(asked.requirements), command
    assert "XLA_FLAGS" not in command and not asked.export and "numpy" not in asked.pins, command
    assert not any(r.startswith(("numpy", "ml-dtypes")) for r in asked.requirements), command
    followed = {name: version for name, version in asked.pins.items() if name not in ("jax", "jaxlib")}
    assert followed["flax"] == "0.10.6" and followed["orbax-checkpoint"].startswith("0.11.")  # need jax >= 0.6.0
    assert report.plan.held == (("neural-tangents", "0.5.3"),)
    assert report.plan.remaining == () and not report.plan.loop
    assert "jaxlib-0102-cpu-vmap-matvec-sum" not in report.plan.declined  # gone with 0.10.2, not declined
    assert_fixed_point(report)
    from envaudit.formats import text

    said = " ".join(text.render(report).split())
    assert "it holds jax at 0.5.3 for neural-tangents" in said and "uninstall it and jax is free to move" in said


def test_a_library_s_fix_stays_in_its_installed_major_where_its_floor_is_there() -> None:
    """transformers 4.30.2's Flax models use jnp.DeviceArray, which jax 0.4.30 lacks; 4.32.0 fixes it, and
    `transformers>=4.32.0` lands on 5.x, which has no Flax models at all. The least change stays in the major the
    user has (`transformers>=4.32.0,<5`), jax held."""
    doc = {**CPU, "packages": {"jax": "0.4.30", "jaxlib": "0.4.30", "transformers": "4.30.2", "flax": "0.8.5"}}
    plans = fixplan.candidates(facts_from(doc), assemble.assemble(facts_from(doc), mode="audit").findings)
    first = requested(plans[0].fix.command)
    transformers = next(r for r in first.requirements if r.startswith("transformers"))
    assert transformers.replace(" ", "") in ("transformers>=4.32.0,<5", "transformers<5,>=4.32.0"), first
    assert first.pins["jax"] == "0.4.30"
    assert numbers(fixplan.outcome(facts_from(doc), plans[0].steps).packages["transformers"])[0] == 4


def test_a_warning_never_forces_a_new_major() -> None:
    """transformers 4.57.6 calls jax.lib.xla_bridge (gone in jax 0.9.0) in its `env` command only: a warning, whose
    own fix is transformers 5, a new major without the Flax models. The plan does not take it; the finding still
    says it. (flax 0.12.2: with jax 0.9.0, whose jax.array_ref is gone, flax 0.12.0's flax/nnx/variablelib.py:49-53
    falls back to `from jax._src.core import mutable_array, MutableArray`, gone too; measured, `import flax.nnx`
    raises "ImportError: cannot import name 'mutable_array' from 'jax._src.core'" and works with jax 0.8.2.)"""
    doc = {**CPU, "packages": {"jax": "0.9.0", "jaxlib": "0.9.0", "transformers": "4.57.6", "flax": "0.12.2"}}
    report = assemble.assemble(facts_from(doc), mode="audit")
    found = next(f for f in report.findings if f.id == "removed-jax-api-in-transformers")
    assert found.severity == "warn" and "transformers>=5" in found.fix
    assert not report.plan.steps and report.plan.declined == ("removed-jax-api-in-transformers",)


def test_a_library_failing_on_jax_s_api_gone_moves_up_and_moving_jax_up_does_not_fix_it() -> None:
    """Third fix pass (chromax 0.0.3a0 on jax 0.4.24: `jax.random` has no `PRNGKeyArray`): no table knows
    chromax, and the plan moved jax to 0.4.29 for the oneDNN rule and called the import fixed (a moved jax dropped
    what the audit saw). A newer jax does not bring a removed name back: the failure stays in the planned state,
    and the library's next release, which the import's own root now offers, is the way out (a build proves it)."""
    doc = {
        **CPU,
        "packages": {"jax": "0.4.24", "jaxlib": "0.4.24", "chromax": "0.0.3a0", "numpy": "1.26.4"},
        "jax": {
            "status": "ok",
            "imports": [
                {
                    "distribution": "chromax",
                    "version": "0.0.3a0",
                    "module": "chromax",
                    "status": "error",
                    "error": "AttributeError: module 'jax.random' has no attribute 'PRNGKeyArray'",
                    "where": "chromax/functional.py:12",
                }
            ],
        },
    }
    report = assemble.assemble(facts_from(doc), mode="audit")
    root = next(f for f in report.findings if f.id == "jax-api-missing")
    assert "chromax>=0.0.3a0,!=0.0.3a0" in root.fix and not report.plan.remaining, report.plan
    assert "'chromax>=0.0.3a0,!=0.0.3a0'" in report.plan.fix.command
    moved_up = installing.after(facts_from(doc), fixes.Fix(install=("jax==0.4.29", "jaxlib==0.4.29")))
    assert [o["distribution"] for o in moved_up.jax.get("imports", [])] == ["chromax"]  # still failing
    moved_down = installing.after(facts_from(doc), fixes.Fix(install=("jax==0.4.23", "jaxlib==0.4.23")))
    assert not moved_down.jax.get("imports")  # below the removal: unknown until measured


def test_a_library_outside_the_audited_scope_is_moved_by_its_fix_as_one_inside_it() -> None:
    """Fix pass 3, second run: a live audit collects the audited scope's packages only, and chromax (or jax-cfd)
    is outside it; the audit knows its release from what the imports probe measured. The model of the installer
    dropped `chromax>0.0.3a0` for a package it did not hold, so no way moved it, its failure stayed, and the plan
    printed moved jax alone (the oneDNN rule's 0.4.29), which leaves the program failing."""
    doc = {
        **CPU,
        "packages": {"jax": "0.4.24", "jaxlib": "0.4.24", "numpy": "1.26.4"},
        "jax": {
            "status": "ok",
            "imports": [
                {
                    "distribution": "chromax",
                    "version": "0.0.3a0",
                    "module": "chromax",
                    "status": "error",
                    "error": "AttributeError: module 'jax.random' has no attribute 'PRNGKeyArray'",
                    "where": "chromax/functional.py:12",
                }
            ],
        },
    }
    report = assemble.assemble(facts_from(doc), mode="audit")
    assert "'chromax>=0.0.3a0,!=0.0.3a0'" in report.plan.fix.command and not report.plan.remaining, report.plan
    moved = installing.after(facts_from(doc), fixes.Fix(install=("chromax>=0.0.3a0,!=0.0.3a0",), hold=("jax==0.4.24",)))
    # a release no table knows, above the installed one as the range asks (neither down nor a new major)
    chosen = moved.packages.get("chromax", "")
    assert chosen.endswith("+unknown") and Version(chosen) > Version("0.0.3a0") and not moved.jax.get("imports")
    unmoved = installing.after(facts_from(doc), fixes.Fix(install=("numpy<2",)))
    assert "chromax" not in unmoved.packages  # a state holds only what the command makes
    assert [o["distribution"] for o in unmoved.jax.get("imports", [])] == ["chromax"]


def test_the_plans_a_measurement_tries_include_a_one_package_fix_with_the_variable_of_the_regression_it_meets() -> None:
    """AlphaFold's requirements (fix-pass-4): jax 0.4.26 beside jaxlib 0.4.38. The best plan moves both to 0.4.29,
    past the coupling and the oneDNN regression (xla13054, measured on this CPU) in one step; pip then takes NumPy 2
    and breaks pandas, which the twin shows. The expert's fix is the finding's own (`jaxlib==0.4.26`), which lands on
    the regression, whose rule names a variable. That plan is one step longer than the best, and the search, which
    stopped at the best one's length, never offered it: the unfinished states at that length are expanded once more
    for the plans a measurement tries. The first plan (every report's) is unchanged."""
    packages = {"jax": "0.4.26", "jaxlib": "0.4.38", "numpy": "1.24.3", "ml-dtypes": "0.3.2", "scipy": "1.11.1"}
    said = "RuntimeError: jaxlib version 0.4.38 is newer than and incompatible with jax version 0.4.26."
    facts = facts_from({**CPU, "packages": packages, "jax": {"status": "import_error", "message": said}})
    report = assemble.judged(facts, [], mode="audit")
    options = assemble.alternatives(report, 4)
    assert options[0].plan.fix == report.plan.fix  # the one plan every verb prints first
    commands = [o.plan.fix.command for o in options]
    assert any("jaxlib==0.4.26" in c and "onednn-matmul-rewriter" in c and "jax==" not in c for c in commands), commands


def test_a_plan_whose_steps_cancel_out_is_no_plan() -> None:
    """neural-tangents 0.6.5 fixed to jax 0.5.3 (tests/realenv): audited again, orbax-checkpoint's warning took jax
    up and neural-tangents' failure took it back, and the plan printed `jax==0.5.3 jaxlib==0.5.3` beside jax 0.5.3:
    a command that moves nothing is no fix, and the state is a fixed point."""
    facts = facts_from({"packages": {"jax": "0.5.3", "jaxlib": "0.5.3", "flax": "0.10.6"}})
    assert fixplan._no_op(fixes.Fix(install=("jax==0.5.3", "jaxlib==0.5.3")), facts)
    assert not fixplan._no_op(fixes.Fix(install=("jax==0.5.3", "jaxlib==0.5.4")), facts)
    assert not fixplan._no_op(fixes.Fix(install=("jax==0.5.3", "optax==0.2.4")), facts)  # optax is not installed
    assert not fixplan._no_op(fixes.Fix(install=("jax==0.5.3",), uninstall=("flax",)), facts)
    assert not fixplan._no_op(fixes.Fix(install=("jax>=0.5.3",)), facts)
