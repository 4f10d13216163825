"""A plan's build, offline: a fake uv on PATH plays the installer (a hang, a flood, a refusal, no network), so every
bound and every way a build ends is tested without the package index; the imports child runs for real in the
environment the fake makes. The real builds are tests/realenv/test_build.py's."""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from envaudit.cli import main
from envaudit.collect import build
from envaudit.commands.plan import building
from envaudit.files import buildmemory
from envaudit.judge import measured, twin
from envaudit.judge.assemble import candidates
from envaudit.model.build import Measurement
from envaudit.model.exitcodes import Exit
from envaudit.model.fixes import Fix, Plan, Step
from envaudit.rules import api_removals, checks, wheels
from tests.conftest import facts_from

SITE = sysconfig.get_paths()["purelib"]  # this interpreter's packages: jax, flax (the fake environment's, by a .pth)
# the fake uv: `python find`, `venv` (a venv whose python is this interpreter), `pip install` as FAKE_UV says,
# `pip list` (this interpreter's jax and flax); it writes its pid where FAKE_UV_PID says
FAKE_UV = """\
import json, os, sys, time
from pathlib import Path
mode, args = os.environ.get("FAKE_UV", "ok"), sys.argv[1:]
while args and args[0].startswith("--"):  # uv's global options: --no-config, --config-file FILE
    args = args[2:] if args[0] == "--config-file" else args[1:]
if os.environ.get("FAKE_UV_PID"):
    Path(os.environ["FAKE_UV_PID"]).write_text(str(os.getpid()))
if os.environ.get("FAKE_UV_LOG"):
    with open(os.environ["FAKE_UV_LOG"], "a") as log:
        log.write(" ".join(a for a in args if a not in ("-q", "--python") and not a.startswith("/")) + "\\n")
if args[:2] == ["python", "find"]:
    print(sys.executable)
elif args[0] == "venv":
    prefix = Path(args[-1])
    (prefix / "bin").mkdir(parents=True)
    os.symlink(sys.executable, prefix / "bin" / "python")
    (prefix / "pyvenv.cfg").write_text(
        f"home = {Path(sys._base_executable).parent}\\ninclude-system-site-packages = false\\nversion_info = 3.11.7\\n"
    )
    site = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    site.mkdir(parents=True)
    if mode == "fault":
        (site / "outer.pth").write_text(SITE + "\\n")
elif args[:2] == ["pip", "install"]:
    site = next(Path(args[args.index("--python") + 1]).parent.parent.glob("lib/python*/site-packages"))
    count = site / "installs"
    done = int(count.read_text()) if count.exists() else 0
    count.write_text(str(done + 1))
    if mode.startswith("refuse-") and str(done) in mode.split("-")[1:]:  # refuse-0: the first install here
        sys.stderr.write("error: No solution found when resolving dependencies\\n  cause: refused by the fake\\n")
        sys.exit(1)
    if mode == "wheelless" and "gym" in args and any(a.startswith("gym==") for a in args):  # --only-binary gym
        sys.stderr.write(
            "error: No solution found when resolving dependencies\\n  cause: Because gym==0.26.2 has no usable wheels"
            " and you require gym==0.26.2, we can conclude that your requirements are unsatisfiable.\\n"
        )
        sys.exit(1)
    if mode == "hang":
        time.sleep(3600)
    elif mode == "flood":
        while True:
            sys.stdout.write("x" * 65536)
    elif mode == "conflict":
        sys.stderr.write(
            "error: No solution found when resolving dependencies\\n  cause: Because tensorflow==2.18.0 depends on "
            "ml-dtypes>=0.4.0,<0.5.0 and jax==0.6.0 depends on ml-dtypes>=0.5.0, we can conclude that jax==0.6.0 and\\n"
            "         tensorflow==2.18.0 are incompatible.\\n"
        )
        sys.exit(1)
    elif mode == "offline":
        sys.stderr.write(
            "error: Request failed after 3 retries\\n  cause: Failed to fetch: https://pypi.org/simple/jax/\\n"
            "  cause: error sending request for url (https://pypi.org/simple/jax/)\\n  cause: dns error\\n"
        )
        sys.exit(2)
    elif mode in SITECUSTOMIZE:
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE[mode])
elif args[:2] == ["pip", "list"]:
    asked = [a.split("==") for a in os.environ.get("FAKE_UV_ASKED", "").split() if "==" in a]
    rows = [{"name": "jax", "version": "0.10.1"}, {"name": "flax", "version": "0.12.8"}]
    print(json.dumps(rows + [{"name": n, "version": v} for n, v in asked if n not in ("jax", "flax")]))
"""
# what the fake writes into the environment it installs into: a fault at `import flax`, a child that hangs or floods
SITECUSTOMIZE = {
    "fault": (
        "import sys\n"
        "class Fault:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'flax':\n"
        "            raise ImportError('injected fault: flax is broken here')\n"
        "sys.meta_path.insert(0, Fault())\n"
    ),
    "child-hang": "import time\ntime.sleep(3600)\n",
    "child-flood": "import sys\nwhile True:\n    sys.stderr.write('y' * 65536 + '\\n')\n",
}
HEALTHY = ["flax==0.12.8", "jax==0.10.1", "jaxlib==0.10.1"]  # what the tables find nothing wrong with


@pytest.fixture
def fake_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake uv first on PATH, the build turned on, temporary directories under the test's own."""
    where = tmp_path / "bin"
    where.mkdir()
    uv = where / "uv"
    head = f"#!{sys.executable}\nSITE = {SITE!r}\nSITECUSTOMIZE = {SITECUSTOMIZE!r}\n"
    uv.write_text(head + FAKE_UV, encoding="utf-8")
    uv.chmod(0o755)
    monkeypatch.setenv("PATH", f"{where}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("ENVAUDIT_NO_BUILD", raising=False)
    monkeypatch.setenv("FAKE_UV_PID", str(tmp_path / "uv.pid"))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    return temporary


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["plan", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_the_cpu_twin_leaves_out_the_accelerator_and_refuses_what_only_a_gpu_runs() -> None:
    made = build.twin(
        {"jax": "0.4.20", "jaxlib": "0.4.20+cuda12.cudnn89", "jax-cuda12-plugin": "0.4.20", "libtpu": "0.0.1"}
    )
    assert made.requirements == ("jax==0.4.20", "jaxlib==0.4.20") and not made.refused
    assert "jax-cuda12-plugin 0.4.20" in made.left_out and "libtpu 0.0.1" in made.left_out
    assert any(s.startswith("jaxlib 0.4.20+cuda12.cudnn89") for s in made.left_out)
    assert "GPUs only" in build.twin({"jax": "0.4.30", "cupy-cuda12x": "13.0.0"}).refused
    assert "+cu121" in build.twin({"jax": "0.4.30", "torch": "2.3.0+cu121"}).refused


def test_uv_s_reason_is_one_line_with_its_first_cause() -> None:
    said = build.reason(
        "error: No solution found when resolving dependencies\n"
        "  cause: Because jax==0.6.0 depends on ml-dtypes>=0.5.0 and you require ml-dtypes==0.4.1, we can\n"
        "         conclude that your requirements are unsatisfiable.\n"
        "  hint: something else\n"
    )
    assert said == (
        "No solution found when resolving dependencies: Because jax==0.6.0 depends on ml-dtypes>=0.5.0 and you "
        "require ml-dtypes==0.4.1, we can conclude that your requirements are unsatisfiable."
    )
    assert build.reason("warning: a\nsomething failed\n") == "something failed"
    assert build.reason("error: " + "x" * 5000).endswith("...") and len(build.reason("error: " + "x" * 5000)) == 600


def test_the_pythons_a_plan_is_built_for_are_its_own_else_those_its_jaxlib_has_wheels_for() -> None:
    assert twin.pythons(facts_from({"packages": {"jax": "0.4.25"}, "python": {"version": "3.10.4"}})) == ["3.10"]
    here = build.this_python()
    covered = twin.pythons(facts_from({"packages": {"jax": "0.4.25", "jaxlib": "0.4.25"}}))
    assert set(covered) <= {"3.9", "3.10", "3.11", "3.12"} and (here not in covered or covered[0] == here)
    old = twin.pythons(facts_from({"packages": {"jax": "0.3.25", "jaxlib": "0.3.25"}}))  # before the table
    assert old[0] == here and len(old) <= build.MAX_PYTHONS


def test_a_jaxlib_past_the_wheel_table_is_built_for_the_newest_release_s_pythons_not_older_ones() -> None:
    """A jaxlib newer than the table (the case where the build tried 3.11, 3.10, 3.9 for jaxlib 0.12.1 and never
    3.12, and called a healthy plan uninstallable) gets the Pythons of the newest release the table read."""
    table = wheels.WHEELS.load()
    newest = [int(n) for n in table["covers_to"].split(".")]
    past = f"{newest[0]}.{newest[1] + 1}.0"
    chosen = twin.pythons(facts_from({"packages": {"jax": past, "jaxlib": past}}))
    assert chosen and set(chosen) <= set(wheels.pythons([f"jaxlib=={table['covers_to']}"]) or [])


def test_the_project_s_requires_python_bounds_the_pythons_built_for() -> None:
    """A project that admits only 3.12 (axlearn's `==3.12.*`) is built for 3.12, whatever this interpreter is; one
    whose jaxlib has no wheel for what it admits still gets what it admits (the build then says why it fails)."""
    facts = facts_from({"packages": {"jax": "0.4.30", "jaxlib": "0.4.30"}})
    assert twin.pythons(facts, admitted=("3.12",)) == ["3.12"]
    assert twin.pythons(facts, admitted=("3.12", "3.13"))[0] in ("3.12", "3.13")
    assert "3.10" in twin.pythons(facts)  # any, where the project says none
    assert twin.pythons(facts, admitted=("3.8",)) == ["3.8"]


def test_nothing_is_built_when_asked_or_turned_off_and_the_report_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """The unit tests run with ENVAUDIT_NO_BUILD set (tests/conftest.py): the report is the tables' and says why."""
    code, report, err = plan(capsys, *HEALTHY)
    assert code == Exit.OK and err == ""
    assert report["build"] == {
        "measured": False,
        "reason": "ENVAUDIT_NO_BUILD is set: the report is the tables' alone",
        "proof": "unproven",
        "proof_reason": "nothing was measured: ENVAUDIT_NO_BUILD is set: the report is the tables' alone",
    }
    assert twin.off(True, {}).startswith("--no-build") and twin.off(False, {"ENVAUDIT_NO_BUILD": "0"}) == ""


def test_a_stack_for_another_machine_or_with_a_gpu_only_package_is_not_built(
    fake_uv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report, _ = plan(capsys, *HEALTHY, "--os", "Darwin", "--machine", "arm64")
    assert not report["build"]["measured"] and "the stack is for Darwin arm64" in report["build"]["reason"]
    _, report, _ = plan(capsys, *HEALTHY, "cupy-cuda12x==13.0.0")
    assert report["build"]["planned"]["status"] == "skipped" and "GPUs only" in report["build"]["reason"]
    assert list(fake_uv.iterdir()) == []


@pytest.mark.slow  # waits out its bound
def test_an_installer_that_hangs_is_cut_off_at_the_bound_with_its_process_group(
    fake_uv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_UV", "hang")
    code, report, err = plan(capsys, *HEALTHY, "--build-timeout", "2")
    assert code == Exit.OK and report["verdict"] == "ok"  # the tables' answer, said to be theirs alone
    assert report["build"]["planned"]["status"] == "timeout" and not report["build"]["measured"]
    assert "did not finish within the bound" in report["build"]["reason"] and "envaudit: plan:" in err
    with pytest.raises(ProcessLookupError):  # the uv that hung is gone
        os.kill(int((tmp_path / "uv.pid").read_text()), 0)
    assert list(fake_uv.iterdir()) == []  # nothing left behind


def test_an_installer_that_floods_is_cut_off(
    fake_uv: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_UV", "flood")
    _, report, _ = plan(capsys, *HEALTHY)
    assert report["build"]["planned"]["status"] == "error" and "printed more than" in report["build"]["reason"]
    assert list(fake_uv.iterdir()) == []


def test_a_refused_install_is_a_failure_in_the_installer_s_words_not_an_error_of_envaudit(
    fake_uv: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_UV", "conflict")
    code, report, _ = plan(capsys, "jax==0.6.0", "jaxlib==0.6.0", "tensorflow==2.18.0")
    assert code == Exit.FINDINGS and report["build"]["measured"] and report["build"]["proof"] == "unproven"
    (refused,) = [f for f in report["findings"] if f["id"] == "plan-does-not-install"]
    assert refused["severity"] == "fail" and "uv refused the plan's stack here for Python 3.11" in refused["detail"]
    assert "tensorflow==2.18.0 depends on ml-dtypes>=0.4.0,<0.5.0" in refused["detail"]
    assert "\n" not in refused["detail"] and report["facts"]["install"]["status"] == "refused"


def test_offline_the_report_is_the_tables_and_says_so(
    fake_uv: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_UV", "offline")
    code, report, _ = plan(capsys, *HEALTHY)
    assert code == Exit.OK and report["build"]["planned"]["status"] == "offline"
    assert report["build"]["reason"].startswith("offline: Request failed after 3 retries: Failed to fetch")
    assert "the report is the tables' alone" in report["build"]["reason"]


@pytest.mark.slow  # waits out its bound
@pytest.mark.parametrize("mode", ["child-hang", "child-flood"])
def test_an_imports_child_that_hangs_or_floods_is_bounded(
    fake_uv: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("FAKE_UV", mode)
    _, report, _ = plan(capsys, *HEALTHY, "--build-timeout", "4")
    planned = report["build"]["planned"]
    assert planned["status"] == "timeout" and "jax did not start there within the bound" in planned["reason"]
    assert list(fake_uv.iterdir()) == []


@pytest.mark.jax
def test_a_measured_import_failure_wins_over_tables_that_find_nothing(
    fake_uv: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tables find nothing wrong with flax 0.12.8 and jax 0.10.1; a sitecustomize in the built environment
    breaks `import flax`: the measurement is a failure, quoting the line that raised, with flax as its subject."""
    monkeypatch.setenv("FAKE_UV", "fault")
    code, report, _ = plan(capsys, *HEALTHY)
    assert code == Exit.FINDINGS and report["verdict"] == "fail", report["build"]
    (failed,) = [f for f in report["findings"] if f["id"] == "import-fails-flax"]
    assert failed["severity"] == "fail" and not failed["caused_by"]
    assert (
        "`import flax` raises ImportError: injected fault: flax is broken here (at sitecustomize.py:5)"
        in (failed["detail"])
    )
    assert report["build"]["proof"] == "unproven" and "injected fault" in report["build"]["proof_reason"]
    assert list(fake_uv.iterdir()) == []


def test_a_measured_import_clears_the_table_s_claim_and_names_its_entry() -> None:
    """Evidence beats the table: where a library the table condemns at import (dm-haiku 0.0.12 with jax 0.4.36:
    jax.interpreters.xla.xe) is measured importing, the entry is not counted and is named to be corrected. (The
    entry this was first met on, flax 0.7.5 with jax 0.4.24's define_bool_state, is now derived right: jax 0.4.20
    to 0.4.24's Config.__getattr__ still answers it; the measurement here is hypothetical.)"""
    stated = {"packages": {"dm-haiku": "0.0.12", "jax": "0.4.36", "jaxlib": "0.4.36"}, "origin": "plan"}
    assert [o.about for o in api_removals.contradicted(facts_from(stated))] == []
    assert api_removals.removed_api_uses("dm-haiku")(facts_from(stated))  # the table's claim, unmeasured
    imported = {"distribution": "dm-haiku", "version": "0.0.12", "module": "haiku", "status": "ok"}
    facts = facts_from(stated | {"jax": {"status": "unknown", "imports": [imported]}})
    assert not any("import haiku fails" in o.detail for o in api_removals.removed_api_uses("dm-haiku")(facts))
    (said,) = api_removals.contradicted(facts)
    assert (
        said.about == "dm-haiku" and "jax.interpreters.xla.xe" in said.detail and "`import haiku` worked" in said.detail
    )


def test_a_build_joins_the_plan_s_facts_as_an_audit_s_measurement_would() -> None:
    facts = facts_from({"packages": {"jax": "0.4.24", "jaxlib": "0.4.24"}, "origin": "plan"})
    document: Measurement = {"status": "built", "python": "3.11.7", "installed": {"numpy": "2.4.6", "rich": "15"}}
    failed = {"status": "error", "message": "XlaRuntimeError: Unknown NumPy dtype", "stage": "first_use"}
    joined = measured.joined(facts, build.Built(document, failed))  # type: ignore[arg-type]
    assert joined.jax["status"] == "error" and joined.install == {
        "status": "installed",
        "installer": "uv",
        "python": "3.11.7",
    }
    assert joined.packages == {"jax": "0.4.24", "jaxlib": "0.4.24", "numpy": "2.4.6"}  # jax's own requirement
    refused = measured.joined(facts, build.Built({"status": "not_installable", "reason": "no", "python": "3.11"}))
    assert refused.install["status"] == "refused" and checks.install_refused(refused)[0].detail.endswith(": no")
    assert measured.joined(facts, build.Built({"status": "offline", "reason": "dns"})) == facts


def test_a_fix_plan_is_proven_only_where_its_state_built_and_imported() -> None:
    good: Measurement = {"status": "built", "python": "3.11.7", "jax": "ok", "tried": 3, "failed": []}
    bad: Measurement = {**good, "failed": ["flax: `import flax` raises AttributeError: x"]}
    none = Plan()
    fixing = Plan(steps=(Step("a-rule", Fix(install=("flax>=0.8.0",))),))
    assert measured.proof(none, build.Built(good), None)[0] == "proven"
    assert measured.proof(none, build.Built(bad), None) == ("unproven", f"in the stack as planned: {bad['failed'][0]}")
    assert measured.proof(fixing, build.Built(bad), build.Built(good))[0] == "proven"
    assert measured.proof(fixing, build.Built(good), None) == ("unproven", "the state the fix leaves was not built")
    assert measured.proof(Plan(remaining=("x",)), build.Built(good), None)[0] == "unproven"
    assert measured.proof(none, None, None, "--no-build")[1] == "nothing was built: --no-build"


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf"])
def test_a_bad_build_timeout_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], value: str) -> None:
    assert main(["plan", *HEALTHY, "--build-timeout", value]) == Exit.USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--build-timeout" in err and "positive number of seconds" in err


def test_a_release_the_index_here_lacks_is_not_here_not_uninstallable() -> None:
    """40 unseen plans: a release missing from the index reachable here read as "does not install" (FAIL). A pin uv
    finds no version of, that the tables know was published, leaves the plan unmeasured; one no table knows (a
    release that may not exist: jax-cuda12-pjrt 0.12.1) is still the installer's refusal."""
    facts = facts_from({"origin": "plan", "packages": {"flax": "0.12.8", "jax": "0.10.1", "jaxlib": "0.10.1"}})
    lacking = (
        "No solution found when resolving dependencies: Because there is no version of flax==0.12.8 and you require"
        " flax==0.12.8, we can conclude that your requirements are unsatisfiable."
    )
    missing = build.Built({"status": "not_installable", "reason": lacking, "python": "3.11"})
    assert measured.joined(facts, missing) == facts  # the tables alone
    assert "lacks flax 0.12.8" in measured.verdict(missing.document, "the stack as planned")[1]
    invented = lacking.replace("flax==0.12.8", "flax==99.0")
    refused = measured.joined(facts, build.Built({"status": "not_installable", "reason": invented, "python": "3.11"}))
    assert refused.install.get("status") == "refused"


def test_a_plan_the_installer_refuses_is_not_printed_the_next_one_the_build_proves_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fixes predicted, not found: the one plan was printed whether or not the installer took the state it leaves
    (`'distrax>=0.1.8' 'jax<0.7.0'`, unsatisfiable). The tables' plans are tried best first, each state built; the
    first the build proves is printed, and the reason says what refused the ones before it."""
    facts = facts_from(
        {"origin": "plan", "packages": {"jax": "0.4.27", "jaxlib": "0.4.27"}, "platform": {"machine": "x86_64"}}
    )
    options = candidates(facts, mode="plan", ignore={}, target=None, limit=building.CANDIDATES)
    assert len(options) >= 2 and options[0].plan.fix != options[1].plan.fix  # the tables propose more than one
    good: Measurement = {"status": "built", "python": "3.11.7", "jax": "ok", "tried": 2, "failed": []}
    refusal = "No solution found when resolving dependencies: jaxlib==0.4.29 conflicts with the rest"
    built: list[build.Stack] = []

    def measure(stack: build.Stack, **_: Any) -> build.Built:
        built.append(stack)
        if len(built) == 2:  # the first plan's state: the installer refuses it
            return build.Built({"status": "not_installable", "reason": refusal, "python": "3.11.7"})
        return build.Built(good)

    monkeypatch.setattr(build, "measure", measure)
    monkeypatch.setattr(twin, "off", lambda *_: "")
    monkeypatch.setattr(build, "uv_command", lambda: ("uv",))
    made = building.report(facts, target=None, ignore={}, no_build=False, timeout=60, quiet=True)
    assert len(built) == 3  # the stack, the first plan's state (refused), the second's (proven)
    assert made.plan.fix == options[1].plan.fix and made.plan.fix != options[0].plan.fix
    assert made.build is not None and made.build["proof"] == "proven", made.build
    assert "does not install here (uv refused it)" in made.build["proof_reason"]
    # where none is proven, the first is printed, unproven, with its own build's words
    built.clear()
    monkeypatch.setattr(
        build, "measure", lambda stack, **_: build.Built({"status": "not_installable", "reason": refusal})
    )
    worst = building.report(facts, target=None, ignore={}, no_build=False, timeout=60, quiet=True)
    assert worst.plan.fix == options[0].plan.fix and worst.build is not None and worst.build["proof"] == "unproven"


def test_a_fixed_state_is_built_with_the_modules_the_tables_named_before_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fix that moves a library to a release without the module the tables named (transformers 5 has no Flax
    models) must not pass for want of a claim: the state's twin imports the modules named in the stack before the
    fix, for each library the fix keeps. Where that import fails, the plan is not proven and the next one is
    tried."""
    facts = facts_from(
        {
            "origin": "plan",
            "packages": {"jax": "0.4.30", "jaxlib": "0.4.30", "transformers": "4.30.2", "flax": "0.8.5"},
            "platform": {"machine": "x86_64", "system": "Linux"},
        }
    )
    module = "transformers.models.bart.modeling_flax_bart"
    assert api_removals.claimed_modules(facts) == {"transformers": [module]}
    moved = facts_from({"packages": {"jax": "0.4.30", "transformers": "5.0.0"}})
    assert twin.stack(moved).modules == {}  # no claim for 5.0.0: nothing would ask for the Flax models
    assert twin.stack(moved, (), {"transformers": [module], "gone": ["gone.x"]}).modules == {"transformers": [module]}
    built: list[build.Stack] = []

    def measure(stack: build.Stack, **_: Any) -> build.Built:
        built.append(stack)
        version = stack.packages.get("transformers", "")
        asked = module in stack.modules.get("transformers", ())
        failed = [f"{module}: ModuleNotFoundError: No module named '{module}'"] if asked and version >= "4.32" else []
        return build.Built({"status": "built", "python": "3.11.7", "jax": "ok", "tried": 3, "failed": failed})

    monkeypatch.setattr(build, "measure", measure)
    monkeypatch.setattr(twin, "off", lambda *_: "")
    monkeypatch.setattr(build, "uv_command", lambda: ("uv",))
    made = building.report(facts, target=None, ignore={}, no_build=False, timeout=60, quiet=True)
    assert all(module in s.modules.get("transformers", ()) for s in built if "transformers" in s.packages)
    assert made.build is not None and made.build["proof"] == "proven", made.build
    assert made.plan.fix.command and "transformers" not in " ".join(made.plan.fix.install), made.plan.fix
    assert module in made.build["proof_reason"]  # the plan refused before it, with the import that failed


def test_a_proven_state_judged_again_must_fail_nothing_and_need_no_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Built and imported is not enough: the state a plan leaves, with what its build measured, is judged again as
    its own report would be (`fixplan.settled`); where that finds a failure or a fix of its own, the plan is not
    printed as proven and the next is tried. The judgement itself, on states the tables know: NumPy 2 beside
    jaxlib 0.4.23 fails there; a library's removed API left has a fix of its own; the fixed state has neither."""
    from envaudit.judge import fixplan

    facts = facts_from(
        {
            "origin": "plan",
            "packages": {"jax": "0.4.23", "jaxlib": "0.4.23", "transformers": "4.30.2", "flax": "0.7.5"},
            "platform": {"machine": "x86_64", "system": "Linux"},
        }
    )
    first = candidates(facts, mode="plan", ignore={}, target=None, limit=building.CANDIDATES)[0]
    state = fixplan.outcome(facts, first.plan.steps)
    assert fixplan.settled(facts, first.findings, state) == ""
    numpy2 = replace(state, packages={**state.packages, "numpy": "2.0.0"})
    assert "fails numpy2-with-jaxlib-before-0426" in fixplan.settled(facts, first.findings, numpy2)
    undone = replace(state, packages={**state.packages, "transformers": "4.30.2"})
    assert "fails removed-jax-api-in-transformers" in fixplan.settled(facts, first.findings, undone)
    good: Measurement = {"status": "built", "python": "3.11.7", "jax": "ok", "tried": 3, "failed": []}
    monkeypatch.setattr(build, "measure", lambda stack, **_: build.Built(good, {"status": "ok"}))
    monkeypatch.setattr(twin, "off", lambda *_: "")
    monkeypatch.setattr(build, "uv_command", lambda: ("uv",))
    unsettled = "judged again, the state it leaves fails something"
    monkeypatch.setattr(
        fixplan, "settled", lambda f, found, s, *_, **__: unsettled if s.packages == state.packages else ""
    )
    made = building.report(facts, target=None, ignore={}, no_build=False, timeout=60, quiet=True)
    assert made.build is not None and made.build["proof"] == "proven", made.build
    assert made.plan.fix != first.plan.fix and unsettled in made.build["proof_reason"]


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        ("--index-url https://user:tok@example.com/simple\njax==0.4.30\njaxlib==0.4.30\n", "line 1: --index-url"),
        ("-f ./wheels\njax==0.4.30\njaxlib==0.4.30\n", "line 1: --find-links"),
        ("jax==0.4.30\njaxlib @ https://example.com/jaxlib-0.4.30-cp311-cp311-manylinux2014_x86_64.whl\n", "jaxlib"),
    ],
)
def test_inputs_that_take_distributions_from_elsewhere_are_not_built_from_the_index(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: str, said: str
) -> None:
    """Round 5: the build installed `name==version` from the user's index whatever the file said: a pin only on
    the project's index was "does not install", a jaxlib from a URL was proven with PyPI's. The file's sources are
    the file's (untrusted): nothing is built, and the report says why, naming the line, never its URL's token."""
    monkeypatch.setattr(twin, "off", lambda *_: "")
    monkeypatch.setattr(build, "uv_command", lambda: ("uv",))
    monkeypatch.setattr(build, "measure", lambda *_, **__: pytest.fail("built from the index"))
    (tmp_path / "requirements.txt").write_text(lines)
    main(["plan", "-r", str(tmp_path / "requirements.txt"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert not report["build"]["measured"] and "elsewhere than your package index" in report["build"]["reason"]
    assert said in report["build"]["reason"] and "tok" not in json.dumps(report["build"])
    (tmp_path / "plain.txt").write_text("--extra-index-url https://example.com/simple\njax==0.4.30\njaxlib==0.4.30\n")
    monkeypatch.setattr(build, "measure", lambda *_, **__: build.Built({"status": "offline", "reason": "none here"}))
    main(["plan", "-r", str(tmp_path / "plain.txt"), "--format", "json"])  # PyPI still among its indexes: built
    assert "offline" in json.loads(capsys.readouterr().out)["build"]["reason"]


def test_a_lock_that_takes_jax_from_its_own_index_is_not_built_from_the_index(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    inputs = Path(__file__).parents[2] / "fixtures" / "plan-inputs" / "old-jax"
    (tmp_path / "pyproject.toml").write_text((inputs / "pyproject.toml").read_text())
    lock = (inputs / "uv.lock").read_text()
    own = 'name = "jax"\nversion = "0.4.20"\nsource = { registry = "https://mirror.example.com/simple" }'
    (tmp_path / "uv.lock").write_text(lock.replace(own.replace("mirror.example.com", "pypi.org"), own))
    monkeypatch.setattr(twin, "off", lambda *_: "")
    monkeypatch.setattr(build, "uv_command", lambda: ("uv",))
    monkeypatch.setattr(build, "measure", lambda *_, **__: pytest.fail("built from the index"))
    main(["plan", str(tmp_path / "uv.lock"), "--python", "3.11", "--format", "json"])
    reason = json.loads(capsys.readouterr().out)["build"]["reason"]
    assert "jax from its own index" in reason and "uv.lock line 50" in reason, reason


def test_a_fix_s_ranges_are_built_as_written_not_as_the_model_s_release() -> None:
    """A 16-environment pass: a `scipy<1.13` fix was built as `scipy==1.12.999` (the model's placeholder below the
    bound, which no index has), so a right plan stayed unproven; an `orbax-checkpoint<0.4.8` fix was built at the
    model's 0.3.2 while pip takes 0.4.7. The twin installs the fix's ranges as the command writes them."""
    fix = Fix(install=("scipy<1.13", "orbax-checkpoint<0.4.8", "jax==0.4.23", "jax[cuda12]>=0.4.30"))
    ranges = building.written(Plan(fix=fix))
    assert ranges == {"scipy": "scipy<1.13", "orbax-checkpoint": "orbax-checkpoint<0.4.8"}
    made = build.twin({"scipy": "1.12.999", "orbax-checkpoint": "0.3.2", "jax": "0.4.23"}, ranges)
    assert made.requirements == ("jax==0.4.23", "orbax-checkpoint<0.4.8", "scipy<1.13")


def test_a_twin_installs_and_imports_what_the_audit_imported_beside_the_tables_libraries() -> None:
    """The fix pass: chromax, jax-cfd and haliax are on no table, so a twin of their environments installed jax alone
    and a plan that left them failing was "proven". What the audit imported (at its release) is installed and
    imported in the twin too."""
    facts = facts_from(
        {
            "packages": {"jax": "0.4.24", "jaxlib": "0.4.24"},
            "jax": {
                "status": "ok",
                "imports": [
                    {"distribution": "chromax", "version": "0.0.3a0", "module": "chromax", "status": "error"},
                    {"distribution": "jax", "version": "0.4.24", "module": "jax.scipy.linalg", "status": "ok"},
                    {"distribution": "optional-thing", "version": "1.0", "module": "x", "status": "needs"},
                ],
            },
        }
    )
    made = twin.stack(facts)
    assert made.packages == {"chromax": "0.0.3a0", "jax": "0.4.24", "jaxlib": "0.4.24"}


def _installs(log: Path) -> int:
    return sum(line.startswith("pip install") for line in log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.jax
def test_a_stack_planned_again_reuses_what_its_build_measured_until_what_it_depends_on_changes(
    fake_uv: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The same request planned again is not built again: its measurement is remembered (envaudit's cache) and the
    report says so; a fault the first build measured is measured the second time too, not lost. Another request
    (a pin changed) is built; ENVAUDIT_REBUILD builds anew; a remembered request older than a day is installed again
    (the index moves) and, its installed set unchanged, is not imported again."""
    log = tmp_path / "uv.log"
    monkeypatch.setenv("FAKE_UV_LOG", str(log))
    monkeypatch.setenv("FAKE_UV", "fault")
    _, first, _ = plan(capsys, *HEALTHY)
    assert _installs(log) >= 1 and not first["build"]["planned"].get("reused")
    before = _installs(log)
    _, again, err = plan(capsys, *HEALTHY)
    assert _installs(log) == before, "the same request was installed again"
    assert again["build"]["planned"]["reused"] is True and "measured before" in err
    assert [f["id"] for f in again["findings"]] == [f["id"] for f in first["findings"]]
    assert again["build"]["planned"]["failed"] == first["build"]["planned"]["failed"] != []
    monkeypatch.setenv("FAKE_UV_ASKED", "numpy==2.3.5")  # what the fake's `pip list` adds to its installed set
    _, other, _ = plan(capsys, "flax==0.12.8", "jax==0.10.1", "jaxlib==0.10.1", "numpy==2.3.5")
    monkeypatch.delenv("FAKE_UV_ASKED")
    assert _installs(log) > before and not other["build"]["planned"].get("reused")
    before = _installs(log)
    monkeypatch.setenv(build.REBUILD, "1")
    _, rebuilt, _ = plan(capsys, *HEALTHY)
    assert _installs(log) > before and not rebuilt["build"]["planned"].get("reused")
    monkeypatch.delenv(build.REBUILD)
    before = _installs(log)
    day_later = time.time() + buildmemory.ASKED_S + 60
    monkeypatch.setattr(time, "time", lambda: day_later)
    _, later, _ = plan(capsys, *HEALTHY)
    assert _installs(log) > before, "a request remembered for more than a day was trusted"
    assert later["build"]["planned"]["reused"] is True  # the same installed set: its imports are not measured again


def test_a_refusal_is_remembered_for_the_same_request_and_a_damaged_memory_is_a_build(
    fake_uv: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "uv.log"
    monkeypatch.setenv("FAKE_UV_LOG", str(log))
    monkeypatch.setenv("FAKE_UV", "conflict")
    request = ("jax==0.6.0", "jaxlib==0.6.0", "tensorflow==2.18.0")
    code, first, _ = plan(capsys, *request)
    installs = _installs(log)
    code_again, again, _ = plan(capsys, *request)
    assert _installs(log) == installs and code_again == code
    assert again["build"]["planned"]["reused"] is True
    assert again["build"]["planned"]["reason"] == first["build"]["planned"]["reason"]
    assert [f["id"] for f in again["findings"]] == [f["id"] for f in first["findings"]]
    memory = Path(os.environ["ENVAUDIT_CACHE_DIR"]) / buildmemory.NAME
    for damaged in (
        "{not json",
        json.dumps({"asked": {"x": 1}, "measured": []}),
        json.dumps(
            {
                "asked": {
                    k: {"at": "soon", "value": {"refused": {"status": "built"}}}
                    for k in json.loads(memory.read_text())["asked"]
                }
            }
        ),
    ):
        memory.write_text(damaged)
        code_damaged, damaged_report, _ = plan(capsys, *request)
        assert code_damaged == code and not damaged_report["build"]["planned"].get("reused")
    # how the request is made is envaudit's code: another build.py asks anew (one asked with an option uv does not
    # take was refused, and that refusal was remembered for every stack)
    assert plan(capsys, *request)[1]["build"]["planned"].get("reused") is True
    monkeypatch.setattr(build, "_child_code", lambda: "another envaudit")
    assert not plan(capsys, *request)[1]["build"]["planned"].get("reused")


def test_a_planned_library_around_jax_is_imported_in_the_build_whatever_it_declares(
    fake_uv: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PennyLane 0.45.1 declares no jax (its Requires-Dist on PyPI), and its wheel has no `jax` package, only
    pennylane/workflow/interfaces/jax.py: the imports probe, which finds what to import by what is installed and
    declared, never imported it, so a plan of it beside jax measured nothing of it. The build names every planned
    library of the list (ENVAUDIT_IMPORT), none of jax's own packages, and the probe imports each."""
    from envaudit.child import runner, state

    seen: list[dict[str, str]] = []

    def probe(options: Any) -> Any:
        seen.append(dict(options.environ or {}))
        return state.Outcome(results=[], jax={"status": "ok"})

    monkeypatch.setattr(runner, "run", probe)
    plan(capsys, "pennylane==0.45.1", "optax==0.2.4", "jax==0.10.1", "jaxlib==0.10.1", "numpy==2.2.0")
    assert [s.get(build.IMPORT) for s in seen][:1] == ["optax,pennylane"]
    assert build.imported({"jax": "0.10.1", "jax-metal": "0.1.1", "numpy": "2.2.0"}) == {}


def _applied_stack() -> build.Stack:
    """apax 0.9.1's case (fix-pass-4): the environment pins flax 0.8.4, the fix installs `flax>=0.10.0,<0.10.5`;
    the model's state holds every other pin where it was."""
    before = {"flax": "0.8.4", "jax": "0.4.38", "jaxlib": "0.4.38"}
    return build.Stack(
        {**before, "flax": "0.10.4"},
        ["3.11"],
        ranges={"flax": "flax>=0.10.0,<0.10.5"},
        before=before,
        applied=(build.Applied("install", ("flax>=0.10.0,<0.10.5",)),),
    )


def test_a_fix_s_twin_is_made_by_its_command_over_the_environment_s_pins(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The twin was a fresh install of every pin of the modelled state at once, each unmoved distribution held at its
    release: uv refused apax's and Umol's plans (apax 0.9.1 pins flax 0.8.4; jax 0.4.29 needs an ml_dtypes the held
    0.3.1 is not) that the environments' own installers took, and the programs ran after them. Now the environment's
    pins are installed first and the fix's command runs over them, as the user's installer will run it; the
    measurement says which commands made it."""
    from envaudit.child import runner, state

    monkeypatch.setattr(runner, "run", lambda options: state.Outcome(results=[], jax={"status": "ok"}))
    log = tmp_path / "uv.log"
    monkeypatch.setenv("FAKE_UV_LOG", str(log))
    made = build.measure(_applied_stack(), timeout=60, uv=("uv",))
    installs = [line for line in log.read_text().splitlines() if line.startswith("pip install")]
    assert installs == ["pip install flax==0.8.4 jax==0.4.38 jaxlib==0.4.38", "pip install flax>=0.10.0,<0.10.5"]
    assert made.status == "built" and made.document.get("applied") == ["uv pip install flax>=0.10.0,<0.10.5"]
    # the command itself refused over the environment: the plan does not install, in uv's words
    log.unlink()
    monkeypatch.setenv(build.REBUILD, "1")  # not what the first build measured, remembered
    monkeypatch.setenv("FAKE_UV", "refuse-1")
    refused = build.measure(_applied_stack(), timeout=60, uv=("uv",))
    assert refused.status == "not_installable" and "refused by the fake" in refused.document.get("reason", "")
    # an environment whose own pins uv refuses together (pip left it so: d2l 1.0.3 pins numpy 1.23.5 under chex
    # 0.1.82, which requires numpy>=1.25): the same distributions installed exactly, each at its release, then the
    # commands over them
    log.unlink()
    monkeypatch.setenv("FAKE_UV", "refuse-0")
    exact = build.measure(_applied_stack(), timeout=60, uv=("uv",))
    installs = [line for line in log.read_text().splitlines() if line.startswith("pip install")]
    assert installs[1:] == [
        "pip install --no-deps flax==0.8.4 jax==0.4.38 jaxlib==0.4.38",
        "pip install flax>=0.10.0,<0.10.5",
    ]
    assert exact.status == "built" and exact.document.get("applied") == ["uv pip install flax>=0.10.0,<0.10.5"]
    # where uv cannot install them so either: the environment less what the commands install anew
    log.unlink()
    monkeypatch.setenv("FAKE_UV", "refuse-0-1")
    kept = build.measure(_applied_stack(), timeout=60, uv=("uv",))
    installs = [line for line in log.read_text().splitlines() if line.startswith("pip install")]
    assert installs[2:] == ["pip install jax==0.4.38 jaxlib==0.4.38", "pip install flax>=0.10.0,<0.10.5"]
    assert kept.status == "built" and kept.document.get("applied") == ["uv pip install flax>=0.10.0,<0.10.5"]
    # and where uv refuses that too: the modelled state, at once
    log.unlink()
    monkeypatch.setenv("FAKE_UV", "refuse-0-1-2")
    modelled = build.measure(_applied_stack(), timeout=60, uv=("uv",))
    installs = [line for line in log.read_text().splitlines() if line.startswith("pip install")]
    assert installs[3:] == ["pip install flax>=0.10.0,<0.10.5 jax==0.4.38 jaxlib==0.4.38"]
    assert modelled.status == "built" and "applied" not in modelled.document


def test_a_distribution_without_a_wheel_leaves_the_twin_s_base_not_the_rest_of_the_environment(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """jaxirl's environment (fix-pass-8) holds gym 0.26.2, an sdist only, which the twin's wheels-only base could not
    take: the base fell to the audited distributions, uv chose mujoco anew beside the pinned mujoco-mjx 3.0.0, and
    the twin failed `import mujoco.mjx` where the user's environment imports it. Now only what has no wheel leaves
    the base: mujoco stays at the environment's release."""
    from envaudit.child import runner, state

    monkeypatch.setattr(runner, "run", lambda options: state.Outcome(results=[], jax={"status": "ok"}))
    log = tmp_path / "uv.log"
    monkeypatch.setenv("FAKE_UV_LOG", str(log))
    monkeypatch.setenv("FAKE_UV", "wheelless")
    stack = _applied_stack()
    before = {**stack.before, "gym": "0.26.2", "mujoco": "3.0.0"}
    made = build.measure(replace(stack, before=before), timeout=60, uv=("uv",))
    installs = [line for line in log.read_text().splitlines() if line.startswith("pip install")]
    # wheels only for what the audit did not read: jax 0.4.13 has only an sdist, and the last base builds it too
    wheels_only = "--only-binary gym --only-binary mujoco"
    assert installs == [
        f"pip install {wheels_only} flax==0.8.4 gym==0.26.2 jax==0.4.38 jaxlib==0.4.38 mujoco==3.0.0",
        "pip install --only-binary mujoco flax==0.8.4 jax==0.4.38 jaxlib==0.4.38 mujoco==3.0.0",
        "pip install flax>=0.10.0,<0.10.5",
    ]
    assert made.status == "built"
    assert build.wheelless("Because gym==0.26.2 has no usable wheels and Dm_Tree==0.1.10 has no usable wheels") == {
        "gym",
        "dm-tree",
    }


def test_a_fix_s_commands_are_its_removals_installs_and_reinstalls_in_order_on_the_cpu() -> None:
    fix = Fix(
        install=("jax[cuda12]==0.4.29", "jax-cuda12-plugin==0.4.29"),
        hold=("flax==0.8.5", "jax[cuda12]==0.4.29"),
        reinstall=("jaxlib==0.4.29+cuda12.cudnn91",),
        uninstall=("jax-cuda12-pjrt", "tensorflow"),
    )
    steps = twin.applied(fix)
    assert [(s.action, s.requirements) for s in steps] == [
        ("uninstall", ("jax-cuda12-pjrt", "tensorflow")),
        ("install", ("jax[cuda12]==0.4.29", "jax-cuda12-plugin==0.4.29", "flax==0.8.5")),
        ("reinstall", ("jaxlib==0.4.29+cuda12.cudnn91",)),
    ]
    assert twin.applied(Fix(export=(("XLA_FLAGS", "--x"),))) == ()
    # on the CPU twin: no accelerator package, no accelerator extra, a CPU wheel for a GPU build's pin
    assert build.on_cpu("jax[cuda12]==0.4.29") == "jax==0.4.29"
    assert build.on_cpu("jax-cuda12-plugin==0.4.29") is None
    assert build.on_cpu("jaxlib==0.4.29+cuda12.cudnn91") == "jaxlib==0.4.29"
    assert build.on_cpu("flax[testing]>=0.10.0,<0.10.5") == "flax[testing]>=0.10.0,<0.10.5"


def test_the_state_judged_is_what_the_command_installed_not_the_model_s() -> None:
    """Where the twin was made by the command, what the installer moved beyond the plan's model (ml_dtypes under a
    newer jax) is the state's; a jaxlib's local label stays the model's (its CPU wheel was installed)."""
    state = facts_from(
        {"packages": {"jax": "0.4.29", "jaxlib": "0.4.29+cuda12.cudnn91", "ml-dtypes": "0.3.1", "numpy": "1.26.2"}}
    )
    installed = {"jax": "0.4.29", "jaxlib": "0.4.29", "ml-dtypes": "0.5.1", "numpy": "1.26.2"}
    document: Measurement = {"status": "built", "installed": installed, "applied": ["uv pip install jax==0.4.29"]}
    made = measured.as_installed(state, build.Built(document))
    assert made.packages["ml-dtypes"] == "0.5.1" and made.packages["jaxlib"] == "0.4.29+cuda12.cudnn91"
    assert measured.as_installed(state, build.Built({**document, "applied": []})).packages["ml-dtypes"] == "0.3.1"


def test_what_a_fix_s_commands_moved_and_what_requires_it_are_imported_in_its_twin() -> None:
    """AlphaFold's requirements (fix-pass-4): the plan's `pip install jax==0.4.29 jaxlib==0.4.29` brought ml_dtypes
    0.7 and NumPy 2.4, and pandas 2.0.3, which no table knows and which does not depend on jax, no longer imported
    (`numpy.dtype size changed`); the twin imported only what depends on jax, and called the plan proven. What the
    commands moved, and every distribution installed that requires one of them, is imported there too. Read here
    from this interpreter's own distributions."""
    import importlib.metadata

    from envaudit.model.scope import canonicalize_name

    deadline = time.monotonic() + 30
    found = build._bystanders({"numpy": "1.26.4"}, {"numpy": "2.2.0"}, Path(sys.executable), deadline, {})
    needs_numpy = {
        canonicalize_name(d.metadata["Name"])
        for d in importlib.metadata.distributions()
        if any(r.split(";")[0].strip().lower().startswith("numpy") for r in d.requires or () if "extra ==" not in r)
    }
    assert "numpy" in found and "scipy" in found and "ml-dtypes" in found
    assert set(found) <= needs_numpy | {"numpy"} and not {"jax", "jaxlib", "pip"} & set(found)
    assert build._bystanders({"numpy": "2.2.0"}, {"numpy": "2.2.0"}, Path(sys.executable), deadline, {}) == []
    assert build.imported({"flax": "0.12.8"}, ["pandas"]) == {build.IMPORT: "flax,pandas"}


def test_a_bystander_that_no_longer_imports_fails_the_proof_unless_it_failed_before_too(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the commands broke is the plan's failure; what was broken before them is not (a plan is not refused
    for a pandas the environment had broken already): the module is tried where only the environment's own pins
    are installed."""
    from envaudit.child import runner, state
    from envaudit.model.facts import ImportOutcome, JaxFacts

    broken: ImportOutcome = {"module": "pandas", "distribution": "pandas", "status": "error", "error": "X"}
    jax: JaxFacts = {"status": "ok", "imports": [broken]}
    monkeypatch.setattr(runner, "run", lambda options: state.Outcome(results=[], jax=jax))
    monkeypatch.setattr(build, "_bystanders", lambda *_: ["numpy", "pandas"])
    for before, proof in (([], "unproven"), (["pandas"], "proven")):
        monkeypatch.setattr(build, "_failing_before", lambda *_, said=before: said)
        monkeypatch.setenv(build.REBUILD, "1")
        made = build.measure(_applied_stack(), timeout=60, uv=("uv",))
        assert made.document.get("bystanders") == ["numpy", "pandas"]
        assert measured.verdict(made.document, "the state")[0] == proof, made.document


def test_a_plan_is_held_to_what_it_claims_and_to_breaking_nothing_not_to_what_it_leaves_as_it_was() -> None:
    """scico 0.0.5 beside SciPy 1.14 (fix-pass-4): `scipy<1.13`, the expert's one-package fix, was refused because
    orbax-checkpoint's save/restore call, which failed before the plan and which it does not claim to fix (a
    transitive library's call, off the program's path), still failed in its twin. What failed before the fix too is
    set apart and said; what the plan claims must be fixed, and what worked must still work."""
    from envaudit.judge import fixplan
    from envaudit.model.facts import CallOutcome, ImportOutcome, JaxFacts

    call: CallOutcome = {"distribution": "orbax-checkpoint", "call": "save/restore", "status": "error", "error": "E"}
    optax: ImportOutcome = {"distribution": "optax", "module": "optax", "status": "error", "error": "gone"}
    before: JaxFacts = {"status": "ok", "calls": [call]}
    document: Measurement = {"status": "built", "python": "3.11.7", "jax": "ok", "tried": 2, "called": 1}
    fixed = build.Built(
        document | {"failed": build.failures([optax], [call])}, {"status": "ok", "imports": [optax], "calls": [call]}
    )
    kept = measured.as_before(fixed, before)
    assert kept.document["failed"] == build.failures([optax], []) and len(kept.document["failing_before"]) == 1
    assert measured.verdict(kept.document, "it")[0] == "unproven"  # optax imported before: the plan broke it
    only_old = measured.as_before(
        build.Built(document | {"failed": build.failures([], [call])}, {"status": "ok", "calls": [call]}), before
    )
    proof, why = measured.verdict(only_old.document, "it")
    assert proof == "proven" and "as before it: orbax-checkpoint" in why
    # a plan with steps is proven for what it claims, what no step fixes said; a stack with nothing to fix is not
    step = Plan(
        steps=(Step("jax-scipy-tril-scipy-113", Fix(install=("scipy<1.13",))),), remaining=("import-fails-optax",)
    )
    assert measured.proof(step, fixed, only_old)[0] == "proven"
    assert "no step claims import-fails-optax" in measured.proof(step, fixed, only_old)[1]
    assert measured.proof(Plan(remaining=("import-fails-optax",)), only_old, None)[0] == "unproven"
    # judged again, a finding that was there before and that no step claims is neither a failure nor a fix to make
    facts = facts_from({"origin": "plan", "packages": {"jax": "0.4.23", "jaxlib": "0.4.23", "numpy": "2.0.0"}})
    found = candidates(facts, mode="plan", ignore={}, target=None)[0].findings
    assert "numpy2-with-jaxlib-before-0426" in {f.id for f in found}
    other = Plan(steps=(Step("something-else", Fix(install=("flax==0.8.5",))),))
    assert "fails numpy2-with-jaxlib-before-0426" in fixplan.settled(facts, found, facts)
    assert fixplan.settled(facts, found, facts, plan=other) == ""
    assert fixplan.unclaimed(found, other) and "numpy2-with-jaxlib-before-0426" in fixplan.unclaimed(found, other)
    claiming = Plan(steps=(Step("numpy2-with-jaxlib-before-0426", Fix(install=("numpy<2",))),))
    assert "fails numpy2-with-jaxlib-before-0426" in fixplan.settled(facts, found, facts, plan=claiming)


def test_a_pip_environment_s_twin_runs_the_fix_with_pip_whose_resolver_moves_what_uv_keeps(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """AlphaFold's requirements (fix-pass-4): `pip install jax==0.4.29 jaxlib==0.4.29` takes ml_dtypes 0.7, the
    newest its `>=0.4` allows, and NumPy 2.4 with it, which broke pandas; uv, asked the same over the same pins,
    kept NumPy 1.24 (an ml_dtypes 0.4 that takes it), and the twin proved what pip would not do. The twin of a pip
    environment runs the fix's commands with pip (its own, seeded by uv), and pip's refusal is the plan's."""
    from envaudit.child import runner, state

    monkeypatch.setattr(runner, "run", lambda options: state.Outcome(results=[], jax={"status": "ok"}))
    log = tmp_path / "uv.log"
    monkeypatch.setenv("FAKE_UV_LOG", str(log))
    ran: list[list[str]] = []

    def pip(interpreter: Path, args: list[str], *_: Any) -> Any:
        ran.append(args)
        return build._Ran(None)

    real_pip = build._pip
    monkeypatch.setattr(build, "_pip", pip)
    made = build.measure(replace(_applied_stack(), installer="pip"), timeout=60, uv=("uv",))
    installs = [line for line in log.read_text().splitlines() if line.startswith("pip install")]
    assert installs == ["pip install flax==0.8.4 jax==0.4.38 jaxlib==0.4.38", "pip install pip"]
    assert ran == [["install", "-q", "--disable-pip-version-check", "flax>=0.10.0,<0.10.5"]]
    assert made.status == "built" and made.document.get("applied") == ["pip install flax>=0.10.0,<0.10.5"]
    # pip's own words where its resolver refuses, read from what it prints
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\necho 'ERROR: Cannot install scico==0.0.7 and jax==0.4.36 because these package versions have"
        " conflicting dependencies.' >&2\necho 'ERROR: ResolutionImpossible: for help visit https://pip.pypa.io' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    refused = real_pip(fake, ["install", "scico>0.0.5"], time.monotonic() + 30, {}, tmp_path)
    assert refused.status == "not_installable" and "conflicting dependencies" in refused.reason
    # a release pip will not install (brax 0.12.2's entry point, fix-pass-8) is refused too; this machine's full disk
    # is not the plan's fault
    for said, status in (
        ("ERROR: For req: brax==0.12.2. Invalid script entry point: <ExportEntry learn = bin.learn:None []>", "not_"),
        ("ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device", "error"),
    ):
        fake.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 1\n")
        assert (real_pip(fake, ["install", "brax"], time.monotonic() + 30, {}, tmp_path).status or "").startswith(
            status
        )


def test_a_live_environment_s_twin_holds_every_distribution_it_has_and_falls_back_to_those_audited(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """pandas, which no table knows and which does not depend on jax, was never in AlphaFold's twin, so nothing
    could see the fix's NumPy move break it. The twin installs every distribution the environment has (not
    envaudit, the installers, nor a local `+label` build); where uv refuses them together, the same less what the
    fix's commands install anew, then those audited."""
    from envaudit.child import runner, state

    facts = facts_from({"packages": {"flax": "0.8.4", "jax": "0.4.38", "jaxlib": "0.4.38"}})
    installed = {"pandas": "2.0.3", "pip": "24.0", "jax-envaudit": "0.2.0", "torch": "2.1.0+cu118", "jax": "0.4.38"}
    assert twin.whole(facts, installed) == {"flax": "0.8.4", "jax": "0.4.38", "jaxlib": "0.4.38", "pandas": "2.0.3"}
    monkeypatch.setattr(runner, "run", lambda options: state.Outcome(results=[], jax={"status": "ok"}))
    log = tmp_path / "uv.log"
    monkeypatch.setenv("FAKE_UV_LOG", str(log))
    monkeypatch.setenv("FAKE_UV", "refuse-0-1")
    stack = replace(_applied_stack(), before=twin.whole(facts, installed))
    made = build.measure(stack, timeout=60, uv=("uv",))
    installs = [line for line in log.read_text().splitlines() if line.startswith("pip install")]
    assert installs == [
        # wheels only for what the audit did not read: refused, and as it is: refused too
        "pip install --only-binary pandas flax==0.8.4 jax==0.4.38 jaxlib==0.4.38 pandas==2.0.3",
        "pip install --only-binary pandas --no-deps flax==0.8.4 jax==0.4.38 jaxlib==0.4.38 pandas==2.0.3",
        # the environment less what the commands install anew (pip leaves states no resolver chooses)
        "pip install --only-binary pandas jax==0.4.38 jaxlib==0.4.38 pandas==2.0.3",
        "pip install flax>=0.10.0,<0.10.5",
    ]
    assert made.document.get("applied") == ["uv pip install flax>=0.10.0,<0.10.5"]


def test_what_failed_before_the_commands_is_tried_where_the_twin_s_own_base_was_installed(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A bystander that raised after the fix's commands is tried where only the environment's pins are installed:
    the same pins, installed the same way, as the twin's own base (where uv refused the whole environment, those
    audited), not the whole environment again."""
    from envaudit.child import runner, state
    from envaudit.model.facts import ImportOutcome, JaxFacts

    broken: ImportOutcome = {"module": "pandas", "distribution": "pandas", "status": "error", "error": "X"}
    jax: JaxFacts = {"status": "ok", "imports": [broken]}
    monkeypatch.setattr(runner, "run", lambda options: state.Outcome(results=[], jax=jax))
    monkeypatch.setattr(build, "_bystanders", lambda *_: ["pandas"])
    log = tmp_path / "uv.log"
    monkeypatch.setenv("FAKE_UV_LOG", str(log))
    monkeypatch.setenv("FAKE_UV", "refuse-0-1-2")
    monkeypatch.setenv(build.REBUILD, "1")  # not what another test's build of the same stack remembered
    stack = replace(_applied_stack(), before={**_applied_stack().before, "pandas": "2.0.3"})
    build.measure(stack, timeout=60, uv=("uv",))
    installs = [line for line in log.read_text().splitlines() if line.startswith("pip install")]
    audited = "pip install flax==0.8.4 jax==0.4.38 jaxlib==0.4.38"
    assert installs[3] == audited and installs[-1] == audited, installs  # the twin's base, then the same again


def test_what_a_plan_claims_to_fix_is_never_set_apart_as_failing_before(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fix-pass-6's qax 0.3.1 beside a pinned jax 0.4.13: the plan `qax==0.3.0` was proven while qax still failed to
    import in its twin, since qax had failed before the commands too and was set apart. A distribution whose failure
    the plan's steps claim to fix must import after them: in the twin's bystanders and in the measurement joined
    to the environment's alike, and its claim is part of what a remembered measurement is keyed on."""
    from envaudit.child import runner, state
    from envaudit.judge import fixplan
    from envaudit.model.facts import CallOutcome, ImportOutcome, JaxFacts
    from envaudit.model.report import Finding, Report, Subject

    qax: ImportOutcome = {"distribution": "qax", "module": "qax", "status": "error", "error": "No module named X"}
    before: JaxFacts = {"status": "ok", "imports": [qax]}
    document: Measurement = {"status": "built", "python": "3.11.7", "jax": "ok", "tried": 1, "called": 0}
    fixed = build.Built(document | {"failed": build.failures([qax], [])}, {"status": "ok", "imports": [qax]})
    assert measured.verdict(measured.as_before(fixed, before).document, "it")[0] == "proven"
    assert measured.verdict(measured.as_before(fixed, before, {"qax"}).document, "it")[0] == "unproven"
    # a call that failed before stays set apart, claimed or not: a root can fold under it a call that fails for
    # another reason (jaxopt's smoke call without optax, under the root of ott-jax's removed names)
    call: CallOutcome = {"distribution": "jaxopt", "call": "run", "status": "error", "error": "No module named 'optax'"}
    called = build.Built(document | {"failed": build.failures([], [call])}, {"status": "ok", "calls": [call]})
    kept = measured.as_before(called, {"status": "ok", "calls": [call]}, {"jaxopt"})
    assert measured.verdict(kept.document, "it")[0] == "proven"
    # the claim: the findings the steps fix and those folded under them
    root = Finding(Subject("rule", "jax-api-missing"), "fail", "t", "d")
    consequence = Finding(Subject("check", "import-fails", "qax"), "fail", "t", "d", caused_by="jax-api-missing")
    other = Finding(Subject("check", "import-fails", "other"), "fail", "t", "d")
    plan = Plan(steps=(Step("jax-api-missing", Fix(install=("qax==0.3.0",))),))
    report = replace(Report(facts_from({})), findings=(root, consequence, other), plan=plan)
    assert fixplan.claimed_distributions(report.findings, report.plan) == {"qax"}
    # in the twin: a claimed bystander's failure is kept, though it failed before the commands too
    monkeypatch.setattr(runner, "run", lambda options: state.Outcome(results=[], jax=before))
    monkeypatch.setattr(build, "_bystanders", lambda *_: ["qax"])
    monkeypatch.setattr(build, "_failing_before", lambda *_: ["qax"])
    for claimed, proof in (((), "proven"), (("qax",), "unproven")):
        monkeypatch.setenv(build.REBUILD, "1")
        made = build.measure(replace(_applied_stack(), claimed=claimed), timeout=60, uv=("uv",))
        assert measured.verdict(made.document, "the state")[0] == proof, made.document


def test_a_path_read_in_a_library_the_plan_does_not_claim_is_said_not_held_against_it() -> None:
    """fix-pass-5's brainstate 0.5.0 beside jax 0.10.2: the plan moves jax to 0.10.1 for jaxlib 0.10.2's XLA:CPU
    regression, and brainevent's Pallas kernel generators, off the program's path, pass pallas_call a keyword jax
    0.10.1 does not take: read, that is a warning about brainevent, not the plan's failure; a read path of a
    library the plan claims to fix must work (rlax's newest release, which calls jax.tree, was refused so)."""
    from envaudit.judge import fixplan
    from envaudit.model.facts import CallOutcome

    read: CallOutcome = {
        "distribution": "brainevent",
        "version": "0.2.1",
        "call": "brainevent._csr.kernel",
        "status": "error",
        "error": "TypeError: pallas_call() got an unexpected keyword argument 'backend'",
        "read": "jax.experimental.pallas.pallas_call(backend=...)",
    }
    assert build.failures([], [read], reads=()) == [] and build.failures([], [read], reads={"brainevent"})
    assert build.failures([], [read]) != []  # a measurement said whole, where no claim is asked
    packages = {"jax": "0.10.1", "jaxlib": "0.10.1", "brainevent": "0.2.1"}
    state = facts_from({"packages": packages, "jax": {"status": "ok", "calls": [read]}})
    # judged again, the read path is a warning with a fix of its own (a newer brainevent): not the plan's to make
    assert "brainevent>0.2.1" in fixplan.settled(state, (), state)
    other = Plan(steps=(Step("jaxlib-0102-cpu-vmap-matvec-sum", Fix(install=("jax==0.10.1", "jaxlib==0.10.1"))),))
    assert fixplan.settled(state, (), state, plan=other) == ""


def test_a_read_path_of_a_library_whose_import_a_plan_claims_is_a_warning_of_one_whose_call_it_claims_a_failure() -> (
    None
):
    """jaxns 2.6.4, which imports jax and declares none: the plan installing jax claims its import, and in the twin
    `jaxify_likelihood` (which the program does not call) passes pure_callback a keyword jax 0.5.3 only raises on:
    read, a warning, not the plan's failure. dm-pix 0.4.3, whose call the plan claims: a read there still fails it."""
    from envaudit.judge import fixplan
    from envaudit.model.facts import CallOutcome
    from envaudit.model.report import Finding, Subject

    def read(distribution: str) -> CallOutcome:
        return {
            "distribution": distribution,
            "call": f"{distribution}.f",
            "status": "error",
            "error": "TypeError: the vectorized argument was removed",
            "read": "jax.pure_callback(vectorized=...)",
        }

    imports = Finding(Subject("check", "import-fails", "jaxns"), "fail", "t", "d")
    calls = Finding(Subject("check", "call-fails", "dm-pix"), "warn", "t", "d", caused_by="removed-jax-api-in-dm-pix")
    root = Finding(Subject("rule", "removed-jax-api-in-dm-pix"), "warn", "t", "d")
    plan = Plan(steps=(Step("import-fails-jaxns", Fix(install=("jax==0.5.3",))),))
    assert fixplan.claimed_distributions((imports,), plan) == {"jaxns"} and not fixplan.claimed_calls((imports,), plan)
    reads = fixplan.claimed_calls((imports,), plan)
    assert build.failures([], [read("jaxns")], reads) == []
    packages = {"jax": "0.5.3", "jaxlib": "0.5.3", "jaxns": "2.6.4"}
    after = facts_from({"packages": packages, "jax": {"status": "ok", "calls": [read("jaxns")]}})
    assert fixplan.settled(after, (imports,), after, plan=plan) == ""
    # the plan that claims dm-pix's call (a finding folded under the rule its step fixes): its read counts
    fixing = Plan(steps=(Step("removed-jax-api-in-dm-pix", Fix(install=("dm-pix==0.4.4",))),))
    assert fixplan.claimed_calls((root, calls), fixing) == {"dm-pix"}
    assert build.failures([], [read("dm-pix")], fixplan.claimed_calls((root, calls), fixing)) != []


def test_a_release_the_rules_modelled_is_installed_by_its_requirement_not_refused_as_an_accelerator_build() -> None:
    """A package no table knows, added by a plan without a version (matplotlib, which jaxns imports as pylab),
    is modelled `0+unknown` (a valid version): its twin asks the installer for it as the plan writes it."""
    made = build.twin(
        {"jax": "0.5.3", "matplotlib": "0+unknown", "pytensor": "2.14.3+unknown"}, {"pytensor": "pytensor>2.14.2"}
    )
    assert not made.refused and made.requirements == ("jax==0.5.3", "matplotlib", "pytensor>2.14.2")
    assert "+cu121" in build.twin({"torch": "2.3.0+cu121"}).refused  # a real local label is still a build


def test_a_twin_s_call_of_a_library_nobody_asked_for_is_said_not_held_against_the_plan(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BridgeData V2's requirements pin jax 0.4.13 and leave jaxlib open: the expert's fix (jaxlib 0.4.13, SciPy
    below 1.13) runs the program, and its twin showed orbax-checkpoint, which flax pulls in, calling jax.tree. The
    audit says that call as information (rules/calls.py); the twin's verdict is the same truth: not the plan's
    failure, unless the plan claims that library."""
    from envaudit.child import runner, state
    from envaudit.model.facts import CallOutcome, ImportOutcome, JaxFacts

    call: CallOutcome = {"distribution": "orbax-checkpoint", "call": "ocp.StandardCheckpointer", "status": "error"}
    call |= {"error": "AttributeError: module 'jax' has no attribute 'tree'"}
    measured_there: JaxFacts = {"status": "ok", "imports": [], "calls": [call]}
    monkeypatch.setattr(runner, "run", lambda options: state.Outcome(results=[], jax=measured_there))
    base = _applied_stack()
    had = replace(base, before={**base.before, "orbax-checkpoint": "0.4.4"})  # the environment had it, as BridgeData
    for pulled, proof in (((), "unproven"), (("orbax-checkpoint",), "proven")):
        monkeypatch.setenv(build.REBUILD, "1")
        made = build.measure(replace(had, pulled=pulled), timeout=60, uv=("uv",))
        assert measured.verdict(made.document, "the state")[0] == proof, made.document
    claims = replace(had, pulled=("orbax-checkpoint",), claimed=("orbax-checkpoint",))
    assert measured.verdict(build.measure(claims, timeout=60, uv=("uv",)).document, "it")[0] == "unproven"
    # and where what failed before is set apart (another library's import), the same holds of what is left
    other: ImportOutcome = {"distribution": "other", "module": "other", "status": "error", "error": "ImportError: x"}
    there = build.Built({"status": "built", "jax": "ok", "tried": 1, "called": 1}, {"status": "ok"})
    there = build.Built(there.document | {"failed": ["other"]}, {"status": "ok", "imports": [other], "calls": [call]})
    before: JaxFacts = {"status": "ok", "imports": [other]}
    assert measured.verdict(measured.as_before(there, before).document, "it")[0] == "unproven"
    said = measured.as_before(there, before, pulled=("orbax-checkpoint",))
    assert measured.verdict(said.document, "it")[0] == "proven"


def test_a_call_of_a_library_nobody_asked_for_fails_no_state_judged_again_unless_the_plan_claims_it() -> None:
    """fix-pass-8's octo requirements (pip; they name flax, which pulls in orbax-checkpoint): the plan `jaxlib==0.4.20
    'scipy<1.13'` was built and imported, then judged again and refused for orbax-checkpoint's checkpointer calling
    jax.tree, absent from the pinned jax 0.4.20, a call the program never makes, and which the audit itself says
    as information. Judged again, the state fails it only where the plan claims that library."""
    from envaudit.judge import fixplan
    from envaudit.model.report import Finding, Subject

    packages = {"jax": "0.4.20", "jaxlib": "0.4.20", "flax": "0.7.5", "orbax-checkpoint": "0.5.0"}
    call: dict[str, object] = {
        "distribution": "orbax-checkpoint",
        "version": "0.5.0",
        "call": "ocp.StandardCheckpointer",
    }
    call |= {"status": "error", "error": "AttributeError: module 'jax' has no attribute 'tree'", "seconds": 0.1}
    live = {"packages": packages, "requires": {"flax": ["orbax-checkpoint", "jax>=0.4.19"]}}
    live |= {"requested": ["flax", "jax", "jaxlib"], "installers": dict.fromkeys(packages, "pip")}
    before = facts_from(live | {"jax": {"status": "ok", "calls": [call]}})
    state = facts_from(live | {"origin": "plan", "jax": {"status": "ok", "calls": [call]}})
    mismatch = Finding(Subject("check", "jaxlib-newer-than-jax"), "fail", "t", "d")
    plan = Plan(steps=(Step(mismatch.id, Fix(install=("jaxlib==0.4.20",))),))
    assert fixplan.settled(before, (mismatch,), state, plan=plan) == ""
    claiming = Finding(Subject("check", "call-fails", "orbax-checkpoint"), "fail", "t", "d")
    plan = Plan(steps=(Step(claiming.id, Fix(install=("orbax-checkpoint==0.4.4",))),))
    assert "call-fails-orbax-checkpoint" in fixplan.settled(before, (claiming,), state, plan=plan)


def test_a_library_a_fix_brings_without_naming_it_is_pulled_in_and_its_call_fails_no_twin() -> None:
    """fix-pass-8's flax 0.6.1 (uv): the plan `flax>=0.6.7,<0.7.5` installs flax 0.7.4, which brings
    orbax-checkpoint 0.5.16, whose checkpointer calls jax.tree, absent from the environment's jax 0.4.13. The
    environment never had orbax-checkpoint and the plan does not name it: its call is said, not the twin's failure,
    nor the failure of the state judged again; a library the fix names, or one the environment had, stays judged."""
    from envaudit.judge import fixplan
    from envaudit.model.facts import CallOutcome
    from envaudit.model.report import Finding, Subject

    stack = _applied_stack()
    call: CallOutcome = {"distribution": "orbax-checkpoint", "call": "ocp.StandardCheckpointer", "status": "error"}
    call |= {"error": "AttributeError: module 'jax' has no attribute 'tree'"}
    flax: CallOutcome = {"distribution": "flax", "call": "flax.linen", "status": "error", "error": "TypeError: x"}
    assert build.arrived(stack, [call, flax]) == {"orbax-checkpoint"}
    assert build.arrived(replace(stack, before={}), [call]) == set()  # a plan's stack: nothing was there before
    named = replace(stack, applied=(build.Applied("install", ("flax>=0.10.0", "orbax-checkpoint>0.5")),))
    assert build.arrived(named, [call]) == set()
    assert build.failures([], [call, flax], set(), build.arrived(stack, [call, flax])) != []  # flax's own: judged
    assert build.failures([], [call], set(), build.arrived(stack, [call])) == []
    live = facts_from({"packages": dict(stack.before), "requested": ["flax"], "jax": {"status": "ok"}})
    state = facts_from(
        {"origin": "plan", "packages": {**stack.packages, "orbax-checkpoint": "0.5.16"}}
        | {"jax": {"status": "ok", "calls": [call | {"version": "0.5.16", "seconds": 0.1}]}}
    )
    broken = Finding(Subject("check", "import-fails", "flax"), "fail", "t", "d")
    plan = Plan(steps=(Step(broken.id, Fix(install=("flax>=0.10.0,<0.10.5",))),))
    assert fixplan.settled(live, (broken,), state, plan=plan) == ""
    naming = Plan(steps=(Step(broken.id, Fix(install=("flax>=0.10.0,<0.10.5", "orbax-checkpoint>0.5"))),))
    assert "call-fails-orbax-checkpoint" in fixplan.settled(live, (broken,), state, plan=naming)
