"""Real builds: `envaudit plan` builds the planned stack from the package index (uv, with its shared cache) in a
throwaway environment, imports its libraries there, and reports what it measured beside what the tables say.

Small stacks: jax and jaxlib CPU wheels and one library. What each asserts is behaviour a table cannot give: a
failure measured at `import flax` (jax 0.4.25 removed define_bool_state), a healthy stack measured passing and its
plan proven, a table's claim overruled by an import that works, a fault injected into the built environment (its
sitecustomize.py) winning over tables that find nothing, a fix plan proven by building the state it leaves, and the
installer's refusal in its own words. Nothing is left in the temporary directory afterwards.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from envaudit.cli import main
from envaudit.collect import build
from envaudit.model.exitcodes import Exit

pytestmark = [pytest.mark.realenv, pytest.mark.jax, pytest.mark.cost(20)]

HEALTHY = ("chex==0.1.91", "jax==0.10.1", "jaxlib==0.10.1")  # chex 0.1.91 was released for jax 0.8-0.10
FAULT = """\
import sys
class Fault:
    def find_spec(self, name, path=None, target=None):
        if name == "chex":
            raise ImportError("injected fault: chex is broken here")
sys.meta_path.insert(0, Fault())
"""
# uv as the user has it, wrapped: after `uv pip install` it writes FAULT as the built environment's sitecustomize.py
WRAPPER = """\
import subprocess, sys
from pathlib import Path
done = subprocess.run([*UV, *sys.argv[1:]])
args = sys.argv[1:]
while args and args[0].startswith("--"):  # uv's global options before the command: --no-config, --config-file F
    args = args[2:] if args[0] == "--config-file" else args[1:]
if done.returncode == 0 and args[:2] == ["pip", "install"]:
    prefix = Path(args[args.index("--python") + 1]).parent.parent
    next(prefix.glob("lib/python*/site-packages")).joinpath("sitecustomize.py").write_text(FAULT)
sys.exit(done.returncode)
"""


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The build turned on (the unit tests turn it off), its temporary directories under the test's own."""
    if build.uv_command() is None:
        pytest.skip("uv is not installed here (the test extra installs it)")
    monkeypatch.delenv("ENVAUDIT_NO_BUILD", raising=False)
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["plan", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (Exit.OK, Exit.FINDINGS), err
    report: dict[str, Any] = json.loads(out)
    return code, report


def finding(report: dict[str, Any], wanted: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [f for f in report["findings"] if f["id"] == wanted]
    assert len(found) == 1, [f["id"] for f in report["findings"]]
    return found[0]


def test_flax_075_with_jax_0425_is_measured_failing_at_import_flax(
    temporary: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # NumPy and ml_dtypes as they were when these were current: today's resolution brings NumPy 2.4.6, under which
    # jaxlib 0.4.25 (built for NumPy 1) stops jax at its start ("Unknown NumPy dtype dtype('float32') ...
    # itemsize 0": numpy2-with-jaxlib-before-0426, jax-broken folded under it), before flax is imported
    code, report = plan(capsys, "flax==0.7.5", "jax==0.4.25", "jaxlib==0.4.25", "numpy==1.26.4", "ml-dtypes==0.5.4")
    planned = report["build"]["planned"]
    assert code == Exit.FINDINGS and report["build"]["measured"] and planned["status"] == "built", planned
    said = "flax: `import flax` raises AttributeError: 'Config' object has no attribute 'define_bool_state'"
    assert any(f.startswith(said) for f in planned["failed"]), planned["failed"]
    failed = finding(report, "import-fails-flax")  # the measurement, with flax as its subject, quoting the line
    assert failed["severity"] == "fail" and "'Config' object has no attribute 'define_bool_state'" in failed["detail"]
    assert "(at flax/configurations.py:" in failed["detail"]
    # the plan's fix (a flax that asks jax no removed name, a jaxlib past the oneDNN miscompile) is built and imports
    fixed = report["build"]["fixed"]
    assert report["build"]["proof"] == "proven" and fixed["failed"] == [] and fixed["installed"]["flax"] != "0.7.5"
    assert list(temporary.iterdir()) == []


def test_a_healthy_stack_is_measured_passing_and_its_plan_proven(
    temporary: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = plan(capsys, *HEALTHY)
    planned = report["build"]["planned"]
    assert code == Exit.OK and report["verdict"] == "ok", report["findings"]
    assert planned["status"] == "built" and planned["jax"] == "ok" and planned["failed"] == [], planned
    assert planned["installed"]["chex"] == "0.1.91" and planned["python"].startswith(build.this_python())
    chex = [o for o in report["facts"]["jax"]["imports"] if o["distribution"] == "chex"]
    assert chex and all(o["status"] == "ok" for o in chex)
    assert report["build"]["proof"] == "proven" and "fixed" not in report["build"]
    assert list(temporary.iterdir()) == []


def test_flax_075_with_jax_0424_imports_as_measured_and_as_the_table_now_says(
    temporary: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """jax 0.4.24 still answers jax.config.define_bool_state (deprecated, through Config.__getattr__): measured here,
    `import flax` 0.7.5 works, and the derived table, which once said it failed, agrees now: no removed-API
    finding and nothing contradicted (tests/commands/plan/test_build.py holds a measured import overruling the
    table)."""
    _, report = plan(capsys, "flax==0.7.5", "jax==0.4.24", "jaxlib==0.4.24", "numpy==1.26.4")
    assert report["build"]["planned"]["status"] == "built" and report["build"]["planned"]["jax"] == "ok"
    ids = {f["id"] for f in report["findings"]}
    assert not ids & {"removed-jax-api-in-flax", "import-fails-flax", "api-removal-contradicted-flax"}, ids


def test_a_fault_injected_into_the_built_environment_wins_over_tables_that_find_nothing(
    temporary: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uv = build.uv_command()
    where = tmp_path / "bin"
    where.mkdir()
    wrapper = where / "uv"
    wrapper.write_text(f"#!{sys.executable}\nUV = {list(uv or ())!r}\nFAULT = {FAULT!r}\n{WRAPPER}", encoding="utf-8")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{where}{os.pathsep}{os.environ.get('PATH', '')}")
    code, report = plan(capsys, *HEALTHY)
    failed = finding(report, "import-fails-chex")
    assert code == Exit.FINDINGS and report["verdict"] == "fail" and not failed["caused_by"]
    assert (
        "`import chex` raises ImportError: injected fault: chex is broken here (at sitecustomize.py:"
        in (failed["detail"])
    )
    assert report["build"]["proof"] == "unproven" and "injected fault" in report["build"]["proof_reason"]
    assert list(temporary.iterdir()) == []


def test_the_fix_plan_is_proven_by_building_the_state_it_leaves(
    temporary: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """chex 0.1.82 uses a name jax 0.10.1 removed; the plan moves chex, holding jax: that state is built too."""
    code, report = plan(capsys, "chex==0.1.82", "jax==0.10.1", "jaxlib==0.10.1")
    assert code == Exit.FINDINGS and "chex" in report["plan"]["fix"], report["plan"]
    fixed = report["build"]["fixed"]
    assert fixed["status"] == "built" and fixed["failed"] == [] and fixed["installed"]["jax"] == "0.10.1", fixed
    assert report["build"]["proof"] == "proven", report["build"]["proof_reason"]
    assert list(temporary.iterdir()) == []


def test_an_install_the_resolver_refuses_is_said_in_uv_s_words(
    temporary: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """jax 0.6.0 needs ml_dtypes >= 0.5, TensorFlow 2.18 pins it below: no table knows; uv says so (resolution
    only: nothing is downloaded but metadata)."""
    code, report = plan(capsys, "jax==0.6.0", "jaxlib==0.6.0", "tensorflow==2.18.0")
    refused = finding(report, "plan-does-not-install")
    assert code == Exit.FINDINGS and refused["severity"] == "fail" and "ml-dtypes" in refused["detail"]
    assert report["build"]["planned"]["status"] == "not_installable" and report["build"]["proof"] == "unproven"
