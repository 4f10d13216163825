"""The import hook runs inside every Python process of an environment: it must never make `import jax` fail or
hang, and must cost almost nothing at start-up. Attacked in a real venv with the hook enabled."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.commands.test_hook import CHAIN, import_jax, make_venv
from tests.conftest import ROOT

FAULTS = ROOT / "tests" / "faults"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = make_venv(tmp_path_factory.mktemp("hooked") / "venv", CHAIN)
    subprocess.run([str(python), "-m", "envaudit", "hook", "enable"], check=True, capture_output=True)
    return python


@pytest.mark.slow
def test_another_finder_that_delegates_to_the_meta_path_does_not_recurse(venv: Path, tmp_path: Path) -> None:
    """tests/faults' finders delegate to sys.meta_path as the hook does (so do post-import-hook libraries): the two
    asked each other forever (RecursionError) and `import jax` failed."""
    proc = import_jax(venv, tmp_path, PYTHONPATH=str(FAULTS / "noise"))
    assert proc.returncode == 0 and proc.stdout.startswith("imported"), proc.stderr[-500:]
    assert "RecursionError" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("escalate", [("-W", "error"), ("-W", "error::Warning"), ("PYTHONWARNINGS", "error")])
def test_every_warning_made_an_error_does_not_break_the_import(
    venv: Path, nt065: Path, tmp_path: Path, escalate: tuple[str, str]
) -> None:
    flags, env = ([escalate[0], escalate[1]], {}) if escalate[0] == "-W" else ([], {escalate[0]: escalate[1]})
    proc = import_jax(venv, tmp_path, *flags, PYTHONPATH=str(nt065), **env)
    assert proc.returncode == 0 and proc.stdout.startswith("imported"), proc.stderr[-800:]
    assert "EnvAuditWarning: [nt-065-jax-060-import]" in proc.stderr  # still said, as warnings would print it


@pytest.mark.slow
def test_escalating_envaudits_own_category_still_fails_the_import(venv: Path, nt065: Path, tmp_path: Path) -> None:
    proc = import_jax(venv, tmp_path, "-W", "error::envaudit.EnvAuditWarning", PYTHONPATH=str(nt065))
    assert proc.returncode != 0 and "envaudit.EnvAuditWarning: [nt-065-jax-060-import]" in proc.stderr


def fingerprint(venv: Path, cache: Path, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENVAUDIT_HOOK")}
    proc = subprocess.run(
        [str(venv), "-c", "from envaudit.files.cachedir import fingerprint; print(fingerprint())"],
        env={**environ, "ENVAUDIT_CACHE_DIR": str(cache), **env},
        capture_output=True,
        text=True,
        check=True,
        cwd=cache.parent,
    )
    return proc.stdout.strip()


@pytest.mark.slow
def test_a_fifo_at_the_cache_path_does_not_hang_the_import(venv: Path, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / f"hook-{fingerprint(venv, tmp_path)}.json")
    proc = import_jax(venv, tmp_path)  # a hang is import_jax's timeout
    assert proc.returncode == 0 and proc.stdout.startswith("imported") and proc.stderr == ""


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["[{}]", '[{"id": null, "title": null, "fix": null}]', '[{"id": "x"}]', "[1]"])
def test_a_wrong_shaped_cache_entry_is_recomputed_not_printed(venv: Path, tmp_path: Path, entry: str) -> None:
    (tmp_path / f"hook-{fingerprint(venv, tmp_path)}.json").write_text(entry)
    proc = import_jax(venv, tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr  # a healthy stack: nothing to say
    assert "None" not in proc.stderr


def test_python_start_up_imports_nothing_costly(venv: Path) -> None:
    """The .pth line runs at every Python start: it must not import typing, re or collections.abc (about 10 ms,
    measured in scripts/bench_hook.py)."""
    code = "import sys; print(sorted(m for m in ('typing', 're', 'collections.abc', 'warnings') if m in sys.modules))"
    proc = subprocess.run(
        [str(venv), "-c", code], capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]}
    )
    assert proc.stdout.strip() == "[]"
    hooked = subprocess.run(
        [str(venv), "-c", "import sys; print(any(type(f).__name__ == '_Finder' for f in sys.meta_path))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert hooked.stdout.strip() == "True"  # and the hook is really installed


@pytest.mark.slow
def test_a_driver_that_hung_once_is_not_remembered_as_hung(venv: Path, tmp_path: Path) -> None:
    """NVML hangs at one import (the hook waits 5 s and says so); at the next, with the driver answering, the
    warning must not come back from the cache: a moment's state is never cached."""
    hung = import_jax(venv, tmp_path, PYTHONPATH=os.pathsep.join([str(FAULTS / "nvml_hang"), str(ROOT)]))
    assert hung.returncode == 0 and "[nvml-hung]" in hung.stderr, hung.stderr[-800:]
    again = import_jax(venv, tmp_path, PYTHONPATH=str(ROOT))
    assert again.returncode == 0 and "nvml-hung" not in again.stderr, again.stderr[-800:]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
        ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
        ("raise ValueError('not envaudit at all')\n", "ValueError: not envaudit at all"),
    ],
    ids=["sys.exit", "KeyboardInterrupt", "an exception"],
)
def test_a_shadowing_envaudit_that_exits_or_raises_leaves_every_python_start_working(
    venv: Path, tmp_path: Path, body: str, said: str
) -> None:
    """A package named envaudit earlier on sys.path (a project directory on PYTHONPATH) is what the hook's `.pth`
    line imports at every start. site.py catches only Exception around a `.pth` line: a shadow that called sys.exit
    ended every Python start of the environment while the hook was enabled. Its exit is one line now."""
    shadow = tmp_path / "shadow" / "envaudit"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(body)
    environ = {k: v for k, v in os.environ.items() if k not in ("ENVAUDIT_HOOK", "PYTHONWARNINGS")}
    proc = subprocess.run(
        [str(venv), "-c", "print(42)"],
        env={**environ, "PYTHONPATH": str(shadow.parent), "ENVAUDIT_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert (proc.returncode, proc.stdout) == (0, "42\n"), proc.stderr[-800:]
    assert proc.stderr.splitlines() == [f"envaudit: import hook failed: {said}"], proc.stderr
