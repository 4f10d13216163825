"""Real broken environments, audited, fixed by the printed command, audited again: the proof that a fix works.

For each environment of envs.py: a copy is audited as its user would (`python -m envaudit`), and the report must
show one failure, the expected root cause, with every other failure folded under it (`caused_by`); then the
report's one command (its plan: every fix, in order) is pasted into a shell, as it is, in the user's environment,
and the copy must audit without a failure and without a new fix (a fixed point), and run the user's program.
Audited from outside (`--python`), those that say so (one of each kind: a pip venv, a uv venv, a variable, a
PYTHONPATH) give the same root causes and fixes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, envaudit_run
from tests.realenv.conftest import PROBES, UV_BIN, built, copy
from tests.realenv.envs import BROKEN, Broken

pytestmark = pytest.mark.realenv
PROBE_ARGS = " ".join(PROBES)


def _env(env: Broken, prefix: Path) -> dict[str, str]:
    shell = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_PLATFORMS", "JAX_ENABLE_X64")}
    if env.maker == "uv":  # a uv user has uv on PATH
        shell = shell | {"PATH": f"{UV_BIN}{os.pathsep}{shell.get('PATH', '')}"}
    return shell | {k: v.replace("{stale}", str(prefix / "stale")) for k, v in env.env.items()}


def audit(prefix: Path, shell_env: dict[str, str], before: str = "", then: str = "") -> tuple[int, dict[str, Any]]:
    """The audit run in a shell, after `before` (the fix, pasted as it is); `then`, the user's program, runs next
    in the same shell (the fix's variables last one shell), its output kept in program.out and program.err."""
    python = f'"{prefix}/bin/python"'
    script = f'{before}\n{python} -m envaudit {PROBE_ARGS} --format json --output "{prefix}/report.json"'
    if then:  # the shell still ends with the audit's exit status
        ran = f'-c "{then}" >"{prefix}/program.out" 2>"{prefix}/program.err"'
        script += f'\ncode=$?\n{python} {ran}\necho $? >"{prefix}/program.rc"\nexit $code'
    done = subprocess.run(["bash", "-c", script], env=shell_env, capture_output=True, text=True, timeout=600)
    assert (prefix / "report.json").exists(), done.stderr[-2000:]
    return done.returncode, json.loads((prefix / "report.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("env", [e.param() for e in BROKEN])
def test_broken_environment_has_one_root_cause_and_its_fix_works(env: Broken, tmp_path: Path) -> None:
    prefix = copy(built(env), tmp_path, damaged=bool(env.damage))
    shell_env = _env(env, prefix)
    if env.damage:
        site = str(next((prefix / "lib").glob("python3*/site-packages")))
        subprocess.run([a.replace("{site}", site) for a in env.damage], check=True)
    code, report = audit(prefix, shell_env)
    assert code == (1 if env.severity == "fail" else 0), report["findings"]
    roots = [f for f in report["findings"] if f["severity"] == env.severity and not f["caused_by"]]
    assert sorted(f["id"] for f in roots) == sorted([env.root, *env.also]), [
        (f["id"], f["caused_by"]) for f in report["findings"]
    ]
    folded = [f for f in report["findings"] if f["caused_by"]]
    assert all(f["caused_by"] == env.root for f in folded)
    fix = report["plan"]["fix"]  # the one command that fixes everything, pasted as it is
    assert fix and report["plan"]["remaining"] == [], report["plan"]
    if env.outside:  # audited from this environment (--python), as from inside
        outside = envaudit_run(
            sys.executable, *PROBES, "--format", "json", "--python", str(prefix), env=shell_env, timeout=600
        )
        seen = json.loads(outside.stdout)
        assert outside.returncode == code and [(f["id"], f["fix"]) for f in seen["findings"] if not f["caused_by"]] == [
            (f["id"], f["fix"]) for f in report["findings"] if not f["caused_by"]
        ]
    installs = [part for part in fix.split(" && ") if " install " in f" {part} "]  # not `pip uninstall`
    assert not any("cuda" in part for part in installs)  # a machine without a GPU gets CPU wheels
    assert str(prefix / "bin" / "python") in fix or fix.startswith(("export ", "unset "))  # this environment, or
    # the variables it runs with
    assert env.maker != "uv" or (installs and all(p.startswith("uv pip install --python ") for p in installs))  # a uv
    # venv has no pip: every install is uv's (after the variables the fix exports, if any)

    code, after = audit(prefix, shell_env, before=fix, then=env.program)
    assert code == 0, [(f["id"], f["detail"]) for f in after["findings"] if f["severity"] == "fail"]
    assert not [
        f for f in after["findings"] if f["severity"] == "warn" and not f["caused_by"] and env.severity == "warn"
    ]
    # the root is gone (a library release the fix installs may still warn of its own call-time uses)
    assert env.root not in {f["id"] for f in after["findings"] if f["severity"] == env.severity}
    assert after["plan"]["fix"] == "", after["plan"]  # a fixed point: the audit after it prints no new fix
    ran, out = (prefix / "program.rc").read_text().strip(), (prefix / "program.out").read_text()
    assert ran == "0" and out.strip().endswith("ok"), (prefix / "program.err").read_text()[-2000:]


FIXED_BY_THE_VERB = (  # one of each kind of plan: pip (a library and a jaxlib), uv, a variable to set, one to unset
    "chex0182-jax0102",
    "uv-flax085-jax0102",
    "jax-platforms-tpu",
    "stale-jax-on-pythonpath",
)


@pytest.mark.parametrize("env", [e.param() for e in BROKEN if e.name in FIXED_BY_THE_VERB])
def test_envaudit_fix_yes_applies_the_plan_and_ends_clean(env: Broken, tmp_path: Path) -> None:
    """`envaudit fix --yes` from inside the environment: the plan applied with its installer, a snapshot kept, what
    changed said, and the audit after it clean (its variables said, since they last one shell)."""
    prefix = copy(built(env), tmp_path)
    snapshot = tmp_path / "before.json"
    # unproven: the suite builds no twin here (ENVAUDIT_NO_BUILD); test_envaudit_fix_dry_run_changes_nothing proves
    argv = ["fix", "--yes", "--unproven", "--snapshot", str(snapshot), *PROBES]
    done = subprocess.run(
        [str(prefix / "bin" / "python"), "-m", "envaudit", *argv],
        env=_env(env, prefix),
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "the plan: " in done.stdout and "changed: " in done.stdout and "OK after it" in done.stdout, done.stdout
    saved = json.loads(snapshot.read_text(encoding="utf-8"))
    assert {d["name"] for d in saved["distributions"]} >= {"jax", "jaxlib"}


def test_envaudit_fix_restores_the_snapshot_when_the_fix_makes_things_worse(tmp_path: Path) -> None:
    """The jaxlib 0.10.2 regression, whose plan moves jax to 0.10.1, where an injected fault makes `import jax`
    raise: the audit after it is worse (jax imported before, not after), so the snapshot is put back."""
    (env,) = [e for e in BROKEN if e.name == "uv-jaxlib-0102"]
    prefix = copy(built(env), tmp_path)
    shell_env = _env(env, prefix) | {"PYTHONPATH": str(ROOT / "tests" / "faults" / "jax_0101_refused")}
    python = str(prefix / "bin" / "python")
    done = subprocess.run(
        [python, "-m", "envaudit", "fix", "--yes", "--unproven", "--snapshot", str(tmp_path / "s.json"), *PROBES],
        env=shell_env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "changed: jax 0.10.2 -> 0.10.1; jaxlib 0.10.2 -> 0.10.1" in done.stdout, done.stdout
    assert "worse: jax imported before it and not after" in done.stdout and "\nrestored\n" in done.stdout, done.stdout
    versions = subprocess.run(
        [python, "-c", "from importlib.metadata import version as v; print(v('jax'), v('jaxlib'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert versions.stdout.split() == ["0.10.2", "0.10.2"]  # as it was


def test_envaudit_fix_dry_run_changes_nothing(tmp_path: Path) -> None:
    (env,) = [e for e in BROKEN if e.name == "uv-jaxlib-0102"]
    prefix = copy(built(env), tmp_path)
    before = sorted(p.name for p in next((prefix / "lib").glob("python3*/site-packages")).iterdir())
    # the twin is built here (the suite's ENVAUDIT_NO_BUILD lifted): the plan is proven before anything is run
    shell = {k: v for k, v in _env(env, prefix).items() if k != "ENVAUDIT_NO_BUILD"}
    done = subprocess.run(
        [str(prefix / "bin" / "python"), "-m", "envaudit", "fix", "--dry-run", *PROBES],
        env=shell,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 1 and "the plan: " in done.stdout and "jax==0.10.1" in done.stdout, done.stdout
    assert "\nproven: the state the fix leaves (a twin of this environment) built here" in done.stdout, done.stdout
    after = sorted(p.name for p in next((prefix / "lib").glob("python3*/site-packages")).iterdir())
    assert after == before and not list(tmp_path.glob("envaudit-snapshot-*"))
