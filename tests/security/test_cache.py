"""envaudit's cache, as root on a shared machine: never a place someone else prepared, never a directory created
where HOME merely points, never a read that blocks. (The probe child loads compiled programs from it.)"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from envaudit.child import state
from envaudit.files import cachedir
from tests.conftest import PYTHON, ROOT

NOBODY = 65534
WHERE = "from envaudit.files import cachedir; print(cachedir.cache_dir())"


def run(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME", "ENVAUDIT_CACHE_DIR")}
    return subprocess.run(
        [PYTHON, "-c", code],
        env={**base, "PYTHONPATH": str(ROOT), **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to prepare the directory as another user")
@pytest.mark.parametrize("prepared", ["owned by another user", "a link to another user's directory"])
def test_a_prepared_temporary_cache_is_not_used(tmp_path: Path, prepared: str) -> None:
    tmp, theirs = tmp_path / "tmp", tmp_path / "theirs"
    tmp.mkdir()
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    name = tmp / f"envaudit-{os.geteuid()}"
    if prepared.startswith("owned"):
        name.mkdir(mode=0o700)
        os.chown(name, NOBODY, NOBODY)
    else:
        name.symlink_to(theirs)
    proc = run(WHERE + "; print(cachedir.write_text('x.json', '{}'))", tmp_path, TMPDIR=str(tmp))
    assert proc.stdout.split() == ["None", "False"], proc.stderr
    assert list(theirs.iterdir()) == [] and (not name.is_dir() or name.is_symlink() or list(name.iterdir()) == [])


def test_an_open_temporary_cache_of_our_own_is_not_used_either(tmp_path: Path) -> None:
    (tmp_path / f"envaudit-{os.geteuid()}").mkdir()
    (tmp_path / f"envaudit-{os.geteuid()}").chmod(0o777)
    assert run(WHERE, tmp_path, TMPDIR=str(tmp_path)).stdout.strip() == "None"


def test_a_private_temporary_cache_is_made_when_there_is_no_home(tmp_path: Path) -> None:
    assert run(WHERE, tmp_path, TMPDIR=str(tmp_path)).stdout.strip() == str(tmp_path / f"envaudit-{os.geteuid()}")
    assert (tmp_path / f"envaudit-{os.geteuid()}").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("home", ["nonexistent", "", "relative"])
def test_a_home_that_is_not_a_directory_of_ours_creates_nothing(tmp_path: Path, home: str) -> None:
    value = str(tmp_path / "nonexistent") if home == "nonexistent" else home
    proc = run(
        "from envaudit.files import cachedir; cachedir.write_text('x.json', '{}')",
        tmp_path,
        HOME=value,
        TMPDIR=str(tmp_path / "tmp"),
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no /nonexistent/.cache, no ./.cache, no tmp either


def test_a_relative_xdg_cache_home_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    proc = run(WHERE, tmp_path, XDG_CACHE_HOME="cache", HOME=str(tmp_path / "home"))
    assert proc.stdout.strip() == str(tmp_path / "home" / ".cache" / "envaudit")


def test_a_fifo_in_the_cache_is_no_cache_and_no_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVAUDIT_CACHE_DIR", str(tmp_path))
    os.mkfifo(tmp_path / "hook-x.json")
    answer: list[object] = []
    reader = threading.Thread(target=lambda: answer.append(cachedir.read_json("hook-x.json")), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert answer == [None]
    (tmp_path / "big.json").write_bytes(b"[" + b"0," * (cachedir.MAX_BYTES // 2) + b"0]")
    assert cachedir.read_json("big.json") is None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to prepare the directory as another user")
@pytest.mark.parametrize("variable", ["XDG_CACHE_HOME", "ENVAUDIT_CACHE_DIR"])
def test_a_users_cache_directory_is_no_cache_of_roots(tmp_path: Path, variable: str) -> None:
    """root keeps a user's XDG_CACHE_HOME under `su`: the user could then swap in cached rules that hide a finding,
    or compiled programs for the probe child. A directory another user owns or can write to is no cache at all."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    proc = run(WHERE + "; print(cachedir.write_text('x.json', '{}'))", tmp_path, **{variable: str(theirs)})
    assert proc.stdout.split() == ["None", "False"], proc.stdout + proc.stderr
    assert list(theirs.iterdir()) == []
    open_to_all = tmp_path / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)  # root's own, but anybody can replace what is in it
    assert run(WHERE, tmp_path, ENVAUDIT_CACHE_DIR=str(open_to_all)).stdout.strip() == "None"


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to act as another user")
def test_cached_rules_planted_by_another_user_do_not_hide_a_finding(tmp_path: Path) -> None:
    """The review's attack: the user who owns XDG_CACHE_HOME replaces root's cached rules with an empty list."""
    base = Path(tempfile.mkdtemp(prefix="envaudit-attack-"))
    base.chmod(0o755)  # reachable by the attacker, as a home directory is
    xdg = base / "xdg"
    xdg.mkdir()
    os.chown(xdg, NOBODY, NOBODY)
    audit = [PYTHON, "-m", "envaudit", "--quick", "--format", "json"]
    env = {
        **{k: v for k, v in os.environ.items() if k != "ENVAUDIT_CACHE_DIR"},
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(xdg),
        "XLA_FLAGS": "--xla_cpu_enable_fast_math=true --xla_cpu_fast_math_honor_nans=false",
    }
    first = subprocess.run(audit, env=env, capture_output=True, text=True, timeout=120)
    plant = (
        "import os; os.setgid(65534); os.setuid(65534); d = os.path.join(os.environ['XDG'], 'envaudit'); "
        "names = os.listdir(d) if os.path.isdir(d) else []; os.path.isdir(d) and os.rename(d, d + '.old'); "
        "os.mkdir(d); [open(os.path.join(d, n), 'w').write('[]') for n in names or ['rules.json']]"
    )
    subprocess.run([PYTHON, "-c", plant], env={"XDG": str(xdg)}, check=True, timeout=60)
    second = subprocess.run(audit, env=env, capture_output=True, text=True, timeout=120)
    subprocess.run(["rm", "-rf", str(base)], check=False)
    found = [{f["id"] for f in json.loads(p.stdout)["findings"]} for p in (first, second)]
    assert "xla-cpu-fast-math-enabled" in found[0] and found[0] == found[1]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to act as another user")
def test_roots_compilation_cache_is_made_private_before_the_child_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An HPC profile's XDG_CACHE_HOME=/tmp/$USER/.cache, kept by `sudo -E`: the path does not exist yet below a
    sticky /tmp. jax would create it 1-2 s after the child starts; a user who made it first owned the programs
    root's jax loads. Before the child starts, every directory on the way is root's and the cache private."""
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    tmp_path.chmod(0o755)  # the attacker can reach the sticky directory, as everyone reaches /tmp
    for name in ("XDG_CACHE_HOME", "ENVAUDIT_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(sticky / "xdgroot" / ".cache"))
    _, changes = state.child_env(cache=True)
    where = Path(changes["JAX_COMPILATION_CACHE_DIR"])
    assert where.is_relative_to(sticky / "xdgroot")
    for directory in [where, *where.parents][: len(where.relative_to(sticky).parts)]:
        st = directory.stat()
        assert (st.st_uid, st.st_mode & 0o777) == (os.geteuid(), 0o700), directory
    attack = (  # what the user does in the gap: make the directories, or plant an entry, as the other user
        "import os, sys; os.setgid(65534); os.setuid(65534)\n"
        "for path in sys.argv[1:]:\n"
        "    try: os.makedirs(path); print('made', path)\n"
        "    except OSError: pass\n"
    )
    planted = [str(where / "planted"), str(sticky / "xdgroot" / ".cache" / "x")]
    proc = subprocess.run([PYTHON, "-c", attack, *planted], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "", proc.stdout + proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to prepare the directory as another user")
def test_a_compilation_cache_on_a_path_another_user_made_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user was first: root's probe child gets no compilation cache at all (and nothing is made there)."""
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    (sticky / "xdgroot").mkdir(mode=0o755)
    os.chown(sticky / "xdgroot", NOBODY, NOBODY)
    for name in ("ENVAUDIT_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(sticky / "xdgroot" / ".cache"))
    assert "JAX_COMPILATION_CACHE_DIR" not in state.child_env(cache=True)[1]
    assert list((sticky / "xdgroot").iterdir()) == []
    open_cache = tmp_path / "open"
    (open_cache / "jax-compilation-cache").mkdir(parents=True)
    (open_cache / "jax-compilation-cache").chmod(0o777)  # ours, but anybody could have planted entries
    monkeypatch.setenv("ENVAUDIT_CACHE_DIR", str(open_cache))
    assert "JAX_COMPILATION_CACHE_DIR" not in state.child_env(cache=True)[1]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to prepare the directory as another user")
def test_a_cache_in_a_directory_another_user_owns_is_not_read(tmp_path: Path) -> None:
    """`sudo -E` keeps a user's TMPDIR: root's private envaudit-0 in it is root's, but the user owns the directory
    that holds it and can swap it for her own between the check and the read (the review planted a value 1 time
    in 2,000 with renameat2's exchange). A cache whose parents are not closed to others is not read either."""
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, NOBODY, NOBODY)
    ours = theirs / f"envaudit-{os.geteuid()}"
    ours.mkdir(mode=0o700)
    (ours / "x.json").write_text("[1]")
    code = (
        "from envaudit.files import cachedir; print(cachedir.read_json('x.json'), cachedir.write_text('y.json', '{}'))"
    )
    proc = run(code, tmp_path, HOME=str(tmp_path / "nonexistent"), TMPDIR=str(theirs))
    assert proc.stdout.split() == ["None", "False"], proc.stdout + proc.stderr
