"""Every install and uninstall line the documentation prints for envaudit (tests/recipes.py reads them), run as
printed, by the installer it names, into a throwaway environment, against a `git+file://` repository of this
checkout: its working tree, committed or not, as one commit (`URL` is that repository, `REV` the commit).

What a recipe leaves to the reader is the one thing filled in: `URL`, `REV`, and an interpreter it names by its
path (`/opt/jax-env/bin/python`: the environment your jobs use) is the throwaway environment's. A recipe that names
the checkout (`.`, `".[jax]"`) runs from that repository's root, as the README's do from a clone. The environment
is a uv venv with pip seeded in it (the current pip, which refuses a requirement whose name its metadata does not
have); `uv tool` and pipx install into directories of the test's. An install must give the `envaudit` command of
this checkout; an uninstall must remove what an install of the checkout put there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.realenv.conftest import UV
from tests.recipes import Recipe, recipes

pytestmark = pytest.mark.realenv
VERSION = subprocess.run(
    [sys.executable, "-m", "envaudit", "--version"], capture_output=True, text=True, check=True, cwd=ROOT
).stdout
INTERPRETER = re.compile(r"/\S*/bin/python[\d.]*")  # an interpreter a recipe names by its path


@dataclass(frozen=True)
class Repository:
    path: Path
    commit: str


def _git(*args: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True, timeout=120)
    return done.stdout


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Repository:
    """The working tree as git sees it (tracked and untracked files, not what it ignores), committed once."""
    path = tmp_path_factory.mktemp("repository") / "envaudit"
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not in it
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, path / name)
    _git("init", "-q", cwd=path)
    _git("add", "-A", cwd=path)
    _git("commit", "-q", "-m", "the working tree", cwd=path)
    return Repository(path, _git("rev-parse", "HEAD", cwd=path).strip())


@pytest.fixture(scope="module")
def pipx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pipx, for the recipes that name it: its command's directory."""
    where = tmp_path_factory.mktemp("pipx") / "venv"
    subprocess.run([*UV, "venv", "-q", "--python", sys.executable, str(where)], check=True, timeout=120)
    install = [*UV, "pip", "install", "-q", "--python", str(where / "bin" / "python"), "pipx"]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    return where / "bin"


def _shell(tmp_path: Path, venv: Path, pipx: Path) -> dict[str, str]:
    """A user's shell with the throwaway environment active, and uv's and pipx's tools kept in tmp_path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}
    tools = tmp_path / "bin"
    env |= {
        "PATH": os.pathsep.join((str(venv / "bin"), str(tools), str(pipx), env.get("PATH", ""))),
        "VIRTUAL_ENV": str(venv),
        "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
        "UV_TOOL_BIN_DIR": str(tools),
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
        "PIPX_HOME": str(tmp_path / "pipx-home"),
        "PIPX_BIN_DIR": str(tools),
        "PIPX_DEFAULT_PYTHON": sys.executable,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    return env


def _as_printed(recipe: Recipe, repository: Repository, venv: Path) -> str:
    command = recipe.command.replace("URL", f"file://{repository.path}").replace("REV", repository.commit)
    return INTERPRETER.sub(str(venv / "bin" / "python"), command)


def _commands(tmp_path: Path, venv: Path) -> list[Path]:
    return [d / "envaudit" for d in (venv / "bin", tmp_path / "bin") if (d / "envaudit").exists()]


@pytest.mark.parametrize("recipe", recipes(), ids=str)
def test_the_recipe_as_printed_does_what_it_says(
    recipe: Recipe, repository: Repository, pipx: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([*UV, "venv", "-q", "--seed", "--python", sys.executable, str(venv)], check=True, timeout=120)
    env = _shell(tmp_path, venv, pipx)
    python = str(venv / "bin" / "python")
    if recipe.uninstalls:  # what it uninstalls: the checkout, installed
        install = [*UV, "pip", "install", "-q", "--python", python, str(repository.path)]
        subprocess.run(install, check=True, capture_output=True, timeout=300)
        assert _commands(tmp_path, venv)
    command = _as_printed(recipe, repository, venv)
    done = subprocess.run(
        ["bash", "-e", "-c", command],
        cwd=repository.path,
        env=env,
        input="y\n",  # the answer to pip uninstall's question
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{recipe}\n{done.stdout}\n{done.stderr}"
    if recipe.uninstalls:
        assert _commands(tmp_path, venv) == [], f"{recipe} left envaudit installed\n{done.stdout}{done.stderr}"
        imported = subprocess.run([python, "-c", "import envaudit"], capture_output=True, cwd=tmp_path, env=env)
        assert imported.returncode != 0, f"{recipe} left envaudit importable"
        return
    (envaudit,) = _commands(tmp_path, venv)
    ran = subprocess.run([str(envaudit), "--version"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert ran.returncode == 0 and ran.stdout == VERSION, f"{recipe}: {ran.stdout}{ran.stderr}"
    if envaudit.parent == venv / "bin":  # in the environment: `python -m envaudit` is the same program
        helped = subprocess.run([python, "-m", "envaudit", "--help"], capture_output=True, cwd=tmp_path, env=env)
        assert helped.returncode == 0, f"{recipe}: {helped.stderr!r}"
