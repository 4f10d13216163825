"""envaudit's pre-commit hook as another repository uses it: pre-commit 4 from the package index, a project whose
.pre-commit-config.yaml names this checkout as `repo:` with a `rev:`, and `pre-commit run` / `git commit` on its
requirements files, through the published manifest (.pre-commit-hooks.yaml), never a `repo: local` copy of it.

pre-commit clones `repo:` at `rev:`, so the hook repository is a clone of this checkout's HEAD with the working
tree's envaudit/, pyproject.toml, README.md and .pre-commit-hooks.yaml (tracked and untracked files, as
`git ls-files` lists them) copied over it and committed there: the test runs on uncommitted work too. pre-commit
then builds the hook's environment itself (virtualenv, then `pip install .` of that clone), with this
environment's variables and pip's configuration files, so its pip uses the index, find-links and cache that pip
here is configured with; PRE_COMMIT_HOME (its clones and environments) is under the test's directory, and git
reads no user or system configuration. The environment is built once for the module (13-14 s here with pip's
cache warm; each run after it takes under 2 s, the whole module about 20 s).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.realenv, pytest.mark.cost(20)]

HOOK_FILES = ("envaudit", "pyproject.toml", "README.md", ".pre-commit-hooks.yaml")  # what `pip install .` needs
COUPLING = "jax==0.4.30\njaxlib==0.4.23\n"  # fail: jax 0.4.30 requires jaxlib >= 0.4.27
YANKED = "jax==0.4.0\njaxlib==0.4.0\n"  # warn: rule jax-040-yanked (a release that computes wrong numbers fails a plan)
CURRENT = "jax==0.10.1\njaxlib==0.10.1\n"
LEGACY = "jax==0.4.30\njaxlib==0.4.30\n"


@dataclass(frozen=True)
class Hooked:
    pre_commit: Path
    repo: Path  # the hook repository pre-commit clones
    rev: str
    env: dict[str, str]
    where: Path  # where the projects are made


def _git(*args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def _hook_repository(into: Path, env: dict[str, str]) -> str:
    """A clone of this checkout's HEAD with the working tree's hook files committed over it; its commit."""
    _git("clone", "-q", str(ROOT), str(into), cwd=into.parent, env=env)
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", *HOOK_FILES, cwd=ROOT, env=env)
    shutil.rmtree(into / "envaudit")  # a file deleted in the working tree is deleted in the clone too
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is listed, and left out
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    _git("add", "-A", cwd=into, env=env)
    _git("commit", "-q", "--allow-empty", "-m", "the working tree under test", cwd=into, env=env)
    return _git("rev-parse", "HEAD", cwd=into, env=env).strip()


@pytest.fixture(scope="module")
def hooked(tmp_path_factory: pytest.TempPathFactory) -> Hooked:
    base = tmp_path_factory.mktemp("precommit")
    (base / "gitconfig").write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env |= {
        "PRE_COMMIT_HOME": str(base / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": str(base / "gitconfig"),  # no hooksPath, signing or template of the user's
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "envaudit test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "envaudit test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
    }
    tools = base / "pre-commit-venv"  # pre-commit from the package index, by uv (uv's cache is shared too)
    subprocess.run([sys.executable, "-m", "uv", "venv", "-q", "--python", sys.executable, str(tools)], check=True)
    install = [sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(tools / "bin" / "python")]
    subprocess.run([*install, "pre-commit>=4,<5"], check=True, capture_output=True, timeout=300)
    repo = base / "envaudit"
    rev = _hook_repository(repo, env)
    hooked = Hooked(tools / "bin" / "pre-commit", repo, rev, env, base)
    built = _project(hooked, "warm", {"requirements.txt": CURRENT})
    done = _pre_commit(hooked, built, "install-hooks", timeout=600)  # the hook's environment, once
    assert done.returncode == 0, done.stdout + done.stderr
    return hooked


def _project(hooked: Hooked, name: str, files: dict[str, str], args: list[str] | None = None) -> Path:
    """A git repository whose .pre-commit-config.yaml uses the hook from `hooked.repo` at `hooked.rev`."""
    where = hooked.where / name
    where.mkdir()
    _git("init", "-q", cwd=where, env=hooked.env)
    config = f"repos:\n  - repo: {hooked.repo}\n    rev: {hooked.rev}\n    hooks:\n      - id: envaudit-plan\n"
    if args is not None:
        config += f"        args: [{', '.join(args)}]\n"
    (where / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    for path, text in files.items():
        (where / path).parent.mkdir(parents=True, exist_ok=True)
        (where / path).write_text(text, encoding="utf-8")
    _git("add", "-A", cwd=where, env=hooked.env)
    return where


def _pre_commit(hooked: Hooked, project: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(hooked.pre_commit), *args], cwd=project, env=hooked.env, capture_output=True, text=True, timeout=timeout
    )


def _run_all(hooked: Hooked, project: Path) -> subprocess.CompletedProcess[str]:
    return _pre_commit(hooked, project, "run", "--all-files", "--color", "never")


def test_pre_commit_validates_the_manifest(hooked: Hooked) -> None:
    done = _pre_commit(hooked, hooked.repo, "validate-manifest", ".pre-commit-hooks.yaml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_failing_pin_fails_the_hook_with_the_finding_and_its_fix(hooked: Hooked) -> None:
    project = _project(hooked, "coupling", {"requirements.txt": COUPLING})
    done = _run_all(hooked, project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "envaudit plan....." in done.stdout and "Failed" in done.stdout and "- exit code: 1" in done.stdout
    assert "plan of requirements.txt:" in done.stdout
    assert "FAIL  jax-jaxlib-coupling" in done.stdout and "fix: in requirements.txt: jaxlib==0.4.30" in done.stdout


def test_files_pinning_different_jax_releases_pass_each_planned_alone(hooked: Hooked) -> None:
    files = {"requirements.txt": CURRENT, "legacy/requirements-legacy.txt": LEGACY, "notes.txt": COUPLING}
    done = _run_all(hooked, _project(hooked, "good", files))
    assert done.returncode == 0, done.stdout + done.stderr  # notes.txt is no file the hook runs on
    assert "envaudit plan....." in done.stdout and "Passed" in done.stdout


def test_a_warned_release_fails_strictly_unless_the_config_says_no_strict(hooked: Hooked) -> None:
    done = _run_all(hooked, _project(hooked, "yanked", {"requirements.txt": YANKED}))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "WARN  jax-040-yanked" in done.stdout
    lenient = _project(hooked, "yanked-lenient", {"requirements.txt": YANKED}, args=["--no-strict"])
    done = _run_all(hooked, lenient)
    assert done.returncode == 0, done.stdout + done.stderr  # the config's args replace the manifest's --strict


def test_git_commit_of_a_failing_pin_is_refused(hooked: Hooked) -> None:
    """The installed git hook: pre-commit passes the staged files, and the commit does not happen."""
    project = _project(hooked, "commit", {"requirements.txt": CURRENT})
    assert _pre_commit(hooked, project, "install").returncode == 0
    _git("commit", "-q", "-m", "good pins", cwd=project, env=hooked.env)
    (project / "requirements-old.txt").write_text(COUPLING, encoding="utf-8")
    _git("add", "requirements-old.txt", cwd=project, env=hooked.env)
    done = subprocess.run(
        ["git", "commit", "-m", "old pins"], cwd=project, env=hooked.env, capture_output=True, text=True, timeout=120
    )
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "plan of requirements-old.txt:" in said and "FAIL  jax-jaxlib-coupling" in said
    assert "plan of requirements.txt:" not in said  # only what the commit changes
    assert _git("rev-list", "--count", "HEAD", cwd=project, env=hooked.env).strip() == "1"
