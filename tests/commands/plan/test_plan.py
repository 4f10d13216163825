"""`envaudit plan`: pins become facts that the same rules evaluate; anything unevaluable is exit 2, one line;
fuzzed requirement strings, version flags and report JSON never produce a traceback."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envaudit.cli import build_parser, main
from envaudit.commands import plan
from envaudit.commands.plan import PlanError, pin
from envaudit.model.exitcodes import Exit
from envaudit.model.facts import Facts
from envaudit.rules import accessors


def plan_facts(*argv: str) -> Facts:
    return plan.planned(plan.parse(build_parser().parse_args(["plan", *argv]))).facts


def test_pins_and_what_they_imply() -> None:
    facts = plan_facts(
        "jax[cuda12]==0.4.30", "flax==0.8.5", "--driver", "535.104.05", "--gpus", "2", "--compute-capability", "8.0"
    )
    # jax's cuda12 extra installs jax-cuda12-plugin (0.4.22 on), which brings its pjrt (setup.py at the tags)
    assert facts.packages == {
        "flax": "0.8.5",
        "jax": "0.4.30",
        "jax-cuda12-pjrt": "0.4.30",
        "jax-cuda12-plugin": "0.4.30",
        "jaxlib": "0.4.30",
    }
    # jax 0.4.21 defines no cuda12 extra (setup.py at the tag: cuda12_pip and cuda12_local), so pip installs jax
    # alone: no jaxlib is implied, and the plan says the extra is not there (rules/jax_extras.py)
    early = plan_facts("jax[cuda12]==0.4.21")
    assert early.packages == {"jax": "0.4.21"} and early.jax.get("undefined_extras") == ["cuda12"]
    assert "jax-cuda12-plugin" not in plan_facts("jax[cuda12_pip]==0.4.29").packages  # a +cuda12 jaxlib then
    assert accessors.platform(facts) == "cuda"
    assert accessors.cuda(facts) == accessors.Partial("12", "jax")
    assert accessors.gpu_count(facts) == 2 and accessors.compute_capabilities(facts) == ["8.0"]


def test_local_label_gives_cuda() -> None:
    facts = plan_facts("jax==0.2.19", "jaxlib==0.1.70+cuda102")
    assert accessors.cuda(facts) == accessors.Partial("10.2", "jaxlib local label +cuda102")
    assert accessors.platform(facts) == "cuda"


def plan_ids(capsys: pytest.CaptureFixture[str], *argv: str) -> set[str]:
    main(["plan", *argv, "--format", "json"])
    return {f["id"] for f in json.loads(capsys.readouterr().out)["findings"]}


A100 = ("jax[cuda12]==0.4.30", "--driver", "550.54.15", "--compute-capability", "8.0")


def test_a_plan_assumes_jax_defaults_unless_told(capsys: pytest.CaptureFixture[str]) -> None:
    """A fresh process has x64 off, the default precision (TF32 on an A100) and no XLA_FLAGS: a plan says what
    such a process would compute, and --env changes it as the variable changes jax."""
    assert {"tf32-default-matmul-precision", "gpu-nondeterministic-by-default"} <= plan_ids(capsys, *A100)
    told = plan_ids(
        capsys,
        *A100,
        "--env",
        "JAX_DEFAULT_MATMUL_PRECISION=float32",
        "--env",
        "XLA_FLAGS=--xla_gpu_deterministic_ops=true",
    )
    assert not {"tf32-default-matmul-precision", "gpu-nondeterministic-by-default"} & told
    assert "tf32-default-matmul-precision" not in plan_ids(capsys, "jax[cuda12]==0.4.30", "--compute-capability", "7.0")
    unsafe = "XLA_FLAGS=--xla_cpu_enable_fast_math=true --xla_cpu_fast_math_honor_nans=false"
    assert "xla-cpu-fast-math-enabled" in plan_ids(capsys, "jax==0.4.30", "--env", unsafe)
    assert "xla-cpu-fast-math-enabled" not in plan_ids(capsys, "jax==0.4.30", "--env", unsafe.rsplit(" ", 1)[0])


def test_env_and_python_become_the_facts_an_audit_would_record() -> None:
    facts = plan_facts(
        "jax==0.4.30",
        "--python",
        "3.13",
        "--env",
        "JAX_ENABLE_X64=1",
        "--env",
        "HF_TOKEN=hunter2",
        "--env",
        "LD_LIBRARY_PATH=/home/alice/acme/lib:/usr/local/cuda/lib64",
        "--env",
        "XLA_FLAGS=--xla_dump_to=/home/alice/dumps",
    )
    assert facts.origin == "plan" and facts.python == {"version": "3.13"}
    assert facts.jax["x64"] is True and facts.jax["default_matmul_precision"] is None
    assert facts.env == {
        "JAX_ENABLE_X64": "1",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
        "XLA_FLAGS": "--xla_dump_to=<redacted>",
    }  # what an audit would keep, and nothing else


def test_pin_normalizes() -> None:
    assert pin("Neural_Tangents==0.6.5") == ("neural-tangents", "0.6.5", set())


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["jax>=0.4"], "is not pinned"),
        (["jax"], "is not pinned"),
        (["jax==0.4.*"], "is not pinned"),
        (["jax==="], "cannot parse requirement"),
        (["jax==0.4.30", "jax==0.4.31"], "pinned twice"),
        (["jax==0.4.30", "--driver", "new"], "--driver 'new' is not a version number"),
        (["jax==0.4.30", "--compute-capability", "sm_80"], "not of the form X.Y"),
        (["jax==0.4.30", "--gpus", "-1"], "is not a number of GPUs"),
        (["jax==0.4.30", "--platform", "metal"], "invalid choice"),
        (["jax==0.4.30", "--env", "XLA_FLAGS"], "is not of the form NAME=VALUE"),
        (["jax==0.4.30", "--env", "1X=2"], "is not of the form NAME=VALUE"),
        (["jax==0.4.30", "--python", "three"], "is not a Python version"),
        ([], "nothing to plan"),
    ],
)
def test_unevaluable_plans_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    assert main(["plan", *argv]) == Exit.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]


def test_plan_report_has_the_report_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "jax==0.10.1", "jaxlib==0.10.1", "--format", "json"]) == Exit.OK
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "plan" and data["facts"]["origin"] == "plan" and data["facts"]["jax"]["status"] == "unknown"


REQ_ALPHABET = string.ascii_letters + string.digits + "=<>!~.*+-_[],;' @/:"


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    reqs=st.lists(st.text(alphabet=REQ_ALPHABET, min_size=1, max_size=30), min_size=1, max_size=3),
    flag=st.sampled_from(["--driver", "--cuda", "--cudnn", "--compute-capability", "--gpus"]),
    value=st.text(alphabet=string.printable, min_size=1, max_size=12),
)
def test_fuzzed_plans_never_traceback(
    capsys: pytest.CaptureFixture[str], reqs: list[str], flag: str, value: str
) -> None:
    reqs = [r for r in reqs if not r.startswith("-")] or ["jax==0.4.30"]
    value = value if not value.startswith("-") else "x" + value
    code = main(["plan", *reqs, flag, value, "--format", "json"])
    captured = capsys.readouterr()
    assert code in (Exit.OK, Exit.FINDINGS, Exit.USAGE), captured.err
    assert "Traceback" not in captured.err
    if code == Exit.USAGE:
        assert len(captured.err.strip().splitlines()) == 1
    else:
        assert json.loads(captured.out)["mode"] == "plan"


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=JSONISH,
    key=st.sampled_from(
        [
            "facts",
            "findings",
            "probes",
            "verdict",
            "host",
            None,
            "nvidia",
            "jax",
            "requirements",
            "duplicates",
            "gpus",
            "devices",
            "env",
            "packages",
        ]
    ),
)
def test_fuzzed_reports_never_traceback(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], data: object, key: str | None
) -> None:
    document: object = data
    if key is not None:
        base: dict[str, Any] = {
            "schema": "envaudit/report/v1",
            "envaudit_version": "0",
            "created": "",
            "host": {},
            "verdict": "ok",
            "facts": {"packages": {}, "python": {}, "platform": {}, "nvidia": {}, "jax": {}, "env": {}},
            "findings": [],
            "probes": [],
        }
        facts = base["facts"]
        assert isinstance(facts, dict)
        if key in ("gpus", "devices"):
            facts["nvidia" if key == "gpus" else "jax"] = {"status": "ok", key: data}
        elif key in facts or key in ("requirements", "duplicates"):
            facts[key] = data
        else:
            base[key] = data
        document = base
    path = Path(tmp_path_factory.mktemp("fuzz")) / "r.json"
    path.write_text(json.dumps(document))
    code = main(["check", str(path)])
    err = capsys.readouterr().err
    assert code in (Exit.OK, Exit.FINDINGS, Exit.USAGE), err
    assert "Traceback" not in err and "internal error" not in err


def test_plan_error_is_a_value_error() -> None:
    with pytest.raises(PlanError):
        pin("numpy")


def test_argument_order_does_not_matter(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["jaxlib==0.4.31", "jax[cuda12]==0.4.30"], ["jax[cuda12]==0.4.30", "jaxlib==0.4.31"]):
        assert main(["plan", *argv]) == Exit.USAGE
        assert "the jax extra implies 0.4.30" in capsys.readouterr().err
    assert plan_facts("jaxlib==0.4.30", "jax[cpu]==0.4.30").packages["jaxlib"] == "0.4.30"
