"""The import-time hook in a real virtual environment made by the test: a venv whose site-packages chains to
this interpreter's (so jax and envaudit are installed there as usual), with `envaudit hook enable` run by it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from envaudit.commands.hook import PTH_LINE, PTH_NAME
from tests.conftest import ROOT, envaudit_run

PARENT_SITE = sysconfig.get_paths()["purelib"]
CHAIN = f"{PARENT_SITE}\n{ROOT}\n"  # plain path lines: the parent's own .pth files are not processed


def make_venv(where: Path, chain: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = next((where / "lib").glob("python*/site-packages"))
    (site / "00-parent.pth").write_text(chain)
    return where / "bin" / "python"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv where jax and envaudit are installed (path lines to this site-packages and checkout), hook enabled."""
    python = make_venv(tmp_path_factory.mktemp("hooked") / "venv", CHAIN)
    subprocess.run([str(python), "-m", "envaudit", "hook", "enable"], check=True, capture_output=True)
    return python


def import_jax(python: Path, cache: Path, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENVAUDIT_HOOK", "PYTHONWARNINGS")}
    environ.update({"ENVAUDIT_CACHE_DIR": str(cache), **env})
    return subprocess.run(
        [str(python), *flags, "-c", "import jax; print('imported', jax.__version__)"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cache.parent,
    )


@pytest.mark.slow
def test_healthy_environment_prints_nothing(venv: Path, tmp_path: Path) -> None:
    for _ in range(2):  # cold, then warm cache
        proc = import_jax(venv, tmp_path)
        assert proc.returncode == 0 and proc.stdout.startswith("imported") and proc.stderr == ""
    assert list(tmp_path.glob("hook-*.json"))


@pytest.mark.slow
def test_known_bad_environment_warns_with_rule_id(venv: Path, nt065: Path, tmp_path: Path) -> None:
    for _ in range(2):  # cold, then from the cache
        proc = import_jax(venv, tmp_path, PYTHONPATH=str(nt065))
        assert proc.returncode == 0 and proc.stdout.startswith("imported")
        lines = [line for line in proc.stderr.splitlines() if "EnvAuditWarning" in line]
        assert any("[nt-065-jax-060-import]" in line and "-m pip install jax==0.5.3" in line for line in lines), (
            proc.stderr
        )
        assert len(lines) == len(proc.stderr.splitlines())  # one line per finding, nothing else


@pytest.mark.slow
def test_warning_controls(venv: Path, nt065: Path, tmp_path: Path) -> None:
    fatal = import_jax(venv, tmp_path, "-W", "error::envaudit.EnvAuditWarning", PYTHONPATH=str(nt065))
    assert fatal.returncode != 0 and "envaudit.EnvAuditWarning: [nt-065-jax-060-import]" in fatal.stderr
    quiet = import_jax(venv, tmp_path, "-W", "ignore::envaudit.EnvAuditWarning", PYTHONPATH=str(nt065))
    assert quiet.returncode == 0 and "EnvAuditWarning:" not in quiet.stderr
    off = import_jax(venv, tmp_path, PYTHONPATH=str(nt065), ENVAUDIT_HOOK="0")
    assert off.returncode == 0 and off.stderr == ""


@pytest.mark.slow
def test_corrupt_or_unwritable_cache_still_warns(venv: Path, nt065: Path, tmp_path: Path) -> None:
    import_jax(venv, tmp_path, PYTHONPATH=str(nt065))
    for cached in tmp_path.glob("hook-*.json"):
        cached.write_text("{ not json")
    proc = import_jax(venv, tmp_path, PYTHONPATH=str(nt065))
    assert proc.returncode == 0 and "[nt-065-jax-060-import]" in proc.stderr
    proc = import_jax(venv, Path("/proc/envaudit-cache"), PYTHONPATH=str(nt065))
    assert proc.returncode == 0 and "[nt-065-jax-060-import]" in proc.stderr


@pytest.mark.slow
def test_broken_envaudit_costs_at_most_one_line(venv: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken" / "envaudit"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise RuntimeError('half-upgraded envaudit')\n")
    proc = import_jax(venv, tmp_path, PYTHONPATH=str(broken.parent))
    assert proc.returncode == 0 and proc.stdout.startswith("imported")
    assert proc.stderr.splitlines() == ["envaudit: import hook failed: RuntimeError: half-upgraded envaudit"]


@pytest.mark.slow
def test_a_rule_that_raises_costs_one_line(venv: Path, tmp_path: Path) -> None:
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(
        "import envaudit.rules as r\ndef boom(facts):\n    raise ValueError('rule exploded')\nr.evaluate = boom\n"
    )
    proc = import_jax(venv, tmp_path, PYTHONPATH=str(patch))
    assert proc.returncode == 0 and proc.stdout.startswith("imported")
    assert proc.stderr.splitlines() == ["envaudit: import hook failed: ValueError: rule exploded"]


@pytest.mark.slow
def test_leftover_pth_after_uninstall_is_silent(tmp_path: Path) -> None:
    # jax is installed, envaudit is not (the test suite runs from an editable install, which lives in the checkout,
    # not in site-packages), and the hook's .pth was left behind
    python = make_venv(tmp_path / "venv", PARENT_SITE + "\n")
    site = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    (site / PTH_NAME).write_text(PTH_LINE)  # left behind by an uninstall
    probe = subprocess.run(
        [str(python), "-c", "import envaudit"], env={"PATH": os.environ["PATH"]}, capture_output=True, cwd=tmp_path
    )
    assert probe.returncode != 0, "envaudit is importable without the checkout: run the tests from `pip install -e`"
    proc = import_jax(python, tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("imported") and proc.stderr == ""


@pytest.mark.slow
def test_enable_twice_then_disable(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv", CHAIN)
    for _ in range(2):
        subprocess.run([str(python), "-m", "envaudit", "hook", "enable"], check=True, capture_output=True)
    site = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    assert (site / PTH_NAME).read_text().splitlines() == [PTH_LINE.rstrip("\n")]
    status = subprocess.run([str(python), "-m", "envaudit", "hook", "status"], capture_output=True, text=True)
    assert f"site-packages: enabled ({site / PTH_NAME})" in status.stdout
    subprocess.run([str(python), "-m", "envaudit", "hook", "disable"], check=True, capture_output=True)
    assert not (site / PTH_NAME).exists()


@pytest.mark.slow
def test_hook_is_not_enabled_by_installing(tmp_path: Path) -> None:
    """Installing envaudit installs no .pth file: the wheel pip builds from this checkout has none, and the
    environment the suite runs in (installed by the README's command) has not got the hook's."""
    import zipfile

    assert not (Path(PARENT_SITE) / PTH_NAME).exists()
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("jax_envaudit-*.whl")
    members = zipfile.ZipFile(wheel).namelist()
    assert "envaudit/_hook_boot.py" in members and not [m for m in members if m.endswith(".pth")], members


def _raising_jax(where: Path) -> Path:
    """A jax earlier on PYTHONPATH whose import raises, with its metadata (as `pip install --target` leaves)."""
    (where / "jax").mkdir(parents=True)
    (where / "jax" / "__init__.py").write_text(
        "raise RuntimeError('jaxlib version 9.9 is newer than and incompatible')\n"
    )
    (where / "jax-0.4.30.dist-info").mkdir()
    (where / "jax-0.4.30.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: jax\nVersion: 0.4.30\n")
    return where


@pytest.mark.slow  # an interpreter in a virtualenv imports a failing module through the hook: a second
def test_import_failure_is_explained_and_the_exception_is_the_users(venv: Path, tmp_path: Path) -> None:
    """The root cause printed, once, before the traceback; the traceback itself exactly as without the hook (no
    frame of the hook's), and the exception the program catches is jax's own."""
    stale = str(_raising_jax(tmp_path / "stale"))
    hooked = import_jax(venv, tmp_path, PYTHONPATH=stale)
    plain = import_jax(venv, tmp_path, PYTHONPATH=stale, ENVAUDIT_HOOK="0")
    ours = [line for line in hooked.stderr.splitlines() if line.startswith("envaudit: ")]
    assert len(ours) == 1 and "[pythonpath-shadows]" in ours[0] and "Fix: unset PYTHONPATH" in ours[0], hooked.stderr
    assert hooked.returncode == plain.returncode == 1
    assert [line for line in hooked.stderr.splitlines() if line not in ours] == plain.stderr.splitlines()
    assert "_hook_boot" not in hooked.stderr and "Traceback" in plain.stderr
    caught = "try:\n import jax\nexcept RuntimeError as e:\n print('caught', e)"
    environ = {**os.environ, "PYTHONPATH": stale, "ENVAUDIT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([str(venv), "-c", caught], env=environ, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "caught jaxlib version 9.9 is newer than and incompatible\n"


def test_an_import_error_whose_message_names_its_cause_is_explained_by_that_rule(venv: Path, tmp_path: Path) -> None:
    """jax's import raising NumPy 2's message for a module built against NumPy 1.x: the hook's line names the rule
    that message is a signature of (with its fix), not the bare "jax does not import"."""
    fault = str(ROOT / "tests" / "faults" / "numpy1_module_on_import")
    hooked = import_jax(venv, tmp_path, PYTHONPATH=fault)
    ours = [line for line in hooked.stderr.splitlines() if line.startswith("envaudit: ")]
    assert hooked.returncode == 1 and "compiled using NumPy 1.x" in hooked.stderr
    assert len(ours) == 1 and "[numpy2-module-built-for-numpy1]" in ours[0], hooked.stderr
    assert "Fix: " in ours[0] and "-m pip install 'numpy<2'" in ours[0]  # with what jax needs moved for it


def test_one_cached_verdict_whichever_name_started_the_interpreter(venv: Path, tmp_path: Path) -> None:
    """bin/python and bin/python3 are one environment: `envaudit hook status` run by either sees one cache."""
    code = "from envaudit.files.cachedir import fingerprint; print(fingerprint())"
    prints = {
        subprocess.run([str(venv.with_name(name)), "-c", code], capture_output=True, text=True, check=True).stdout
        for name in ("python", "python3")
    }
    assert len(prints) == 1


@pytest.mark.slow
def test_status_of_another_environment_is_what_it_says_itself(venv: Path, tmp_path: Path) -> None:
    """`envaudit hook status --python VENV` from this environment: where that one's hook is enabled, and the
    verdict its own hook cached, exactly as `hook status` run there says."""
    import_jax(venv, tmp_path)  # that environment's hook computes and caches its verdict
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"ENVAUDIT_CACHE_DIR": str(tmp_path)}

    def status(python: str, *argv: str) -> subprocess.CompletedProcess[str]:
        return envaudit_run(python, "hook", "status", *argv, env=environ, timeout=120, cwd=tmp_path)

    inside, outside = status(str(venv)), status(sys.executable, "--python", str(venv))
    assert inside.returncode == outside.returncode == 0, outside.stderr
    assert outside.stdout == inside.stdout and "site-packages: enabled" in outside.stdout
    assert "cached verdict for this environment: no warnings" in outside.stdout
    refused = envaudit_run(sys.executable, "hook", "enable", "--python", str(venv), env=environ, timeout=120)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
