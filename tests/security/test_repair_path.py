"""The repair path as an adversary sees it: `fix`'s snapshot is a new file only its maker can read, `--restore`
acts on no file another user could have written, on the interpreter it is asked for only, after a confirmation,
and checks what it did; an interrupted installer is let roll back; pip's `~` leftovers are not distributions."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from envaudit.child.state import Options
from envaudit.commands import _shared
from envaudit.commands import fix as repair
from envaudit.commands.fix import FixOptions, Installed
from envaudit.files import safewrite
from envaudit.model.exitcodes import Exit
from envaudit.model.report import Report
from tests.conftest import facts_from, interrupted_when

NOBODY = 65534
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to prepare files as another user")


def snapshot(path: Path, python: str = sys.executable, **versions: str) -> Path:
    dists = [{"name": n, "version": v, "installer": "pip"} for n, v in versions.items()]
    safewrite.create(path, json.dumps({"python": python, "distributions": dists}))
    return path


def planned_audit() -> Report:
    """An audit of this interpreter whose one plan moves jax 0.10.2 to 0.10.1: what `fix` applies."""
    from envaudit.judge.assemble import assemble
    from envaudit.model.fixes import Fix, Plan

    facts = facts_from({"python": {"executable": sys.executable}, "packages": {"jax": "0.10.2"}})
    return replace(assemble(facts, mode="audit"), plan=Plan(fix=Fix(install=("jax==0.10.1",))))


def ran_by(ran: list[str]) -> object:
    """A stand-in for the shell that notes each command and says it succeeded."""

    def shell(command: str) -> int:
        ran.append(command)
        return 0

    return shell


def test_a_snapshot_is_new_and_only_its_maker_reads_it(tmp_path: Path) -> None:
    made = snapshot(tmp_path / "s.json", jax="0.10.1")
    assert made.stat().st_mode & 0o777 == 0o600
    with pytest.raises(safewrite.OutputError, match="exists already"):
        snapshot(made, jax="0.10.1")
    (tmp_path / "planted").write_text("theirs")
    (tmp_path / "link.json").symlink_to(tmp_path / "planted")
    with pytest.raises(safewrite.OutputError, match="exists already"):
        snapshot(tmp_path / "link.json", jax="0.10.1")
    assert (tmp_path / "planted").read_text() == "theirs"


@ROOT_ONLY
def test_roots_snapshot_is_never_another_users_file(tmp_path: Path) -> None:
    """The attack: a user creates the snapshot's name first (0666) and edits what root restores from."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    planted = shared / "envaudit-snapshot.json"
    planted.write_text("{}")
    os.chown(planted, NOBODY, NOBODY)
    planted.chmod(0o666)
    with pytest.raises(safewrite.OutputError):
        snapshot(planted, jax="0.10.1")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(safewrite.OutputError, match="belongs to another user"):
        snapshot(theirs / "s.json", jax="0.10.1")


@pytest.mark.parametrize("how", ["writable by others", "another user's", "a link"])
def test_a_snapshot_another_user_could_write_is_not_read(tmp_path: Path, how: str) -> None:
    if how == "another user's" and os.geteuid() != 0:
        pytest.skip("needs root, to give the file to another user")
    made = snapshot(tmp_path / "s.json", jax="0.10.1")
    if how == "writable by others":
        made.chmod(0o666)
    elif how == "another user's":
        os.chown(made, NOBODY, NOBODY)
    else:
        made = tmp_path / "link.json"
        made.symlink_to(tmp_path / "s.json")
    with pytest.raises(safewrite.OutputError):
        repair.read_snapshot(made)


def test_a_restore_acts_only_on_the_interpreter_asked_for_and_only_when_confirmed(tmp_path: Path) -> None:
    other = snapshot(tmp_path / "other.json", python="/somewhere/else/bin/python", jax="0.10.1")
    with pytest.raises(repair.RepairError, match="not of"):
        repair.restore(other, python=sys.executable, timeout=30, dry_run=True, yes=False, say=print, ask=None)
    mine = snapshot(tmp_path / "mine.json", jax="0.10.1")
    with pytest.raises(repair.RepairError, match="--yes"):
        repair.restore(mine, python=sys.executable, timeout=30, dry_run=False, yes=False, say=print, ask=None)


def test_a_dry_run_restore_says_the_command_and_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(repair, "shell", ran_by(ran))
    said: list[str] = []
    code = repair.restore(
        snapshot(tmp_path / "s.json", jax="0.0.1"),
        python=sys.executable,
        timeout=60,
        dry_run=True,
        yes=False,
        say=said.append,
        ask=None,
    )
    assert ran == [] and code == Exit.FINDINGS and "jax==0.0.1" in said[0]


def test_a_restore_never_takes_the_installer_away() -> None:
    """A snapshot that lists a subset (hand-edited, or another environment's) uninstalls what it does not list,
    but never pip, setuptools, wheel, uv or envaudit."""
    before = {"jax": Installed("jax", "0.10.1", "pip")}
    after = {n: Installed(n, "1.0", "pip") for n in ("jax", "pip", "setuptools", "wheel", "uv", "envaudit", "chex")}
    undo = repair.restoring(before, after, facts_from({"python": {"executable": "/e/bin/python"}}))
    assert undo.uninstall == ("chex",)


def test_pips_leftovers_are_not_distributions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupted pip leaves `~axlib-0.10.2.dist-info` (the name's first letter made ~): no jaxlib is installed,
    and neither the snapshot, the restore's check nor the audit may say one is."""
    from importlib import metadata

    from envaudit.collect import _interpreter, packages

    site = tmp_path / "site"
    for name in ("~axlib-0.10.2.dist-info", "jax-0.10.1.dist-info"):
        (site / name).mkdir(parents=True)
        version = name.split("-")[1]
        named = "jaxlib" if name.startswith("~") else "jax"
        (site / name / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {named}\nVersion: {version}\n")
    real = metadata.distributions
    monkeypatch.setattr(metadata, "distributions", lambda **_: real(path=[str(site)]))
    assert [d["name"] for d in _interpreter.distributions()] == ["jax"]
    assert [d.name for d in packages.installed()[0]] == ["jax"]
    # said as what they are, in a site directory only (a working directory's ~$notes.docx is no stash)
    packages_dir = tmp_path / "lib" / "site-packages"
    (packages_dir / "~axlib").mkdir(parents=True)
    (tmp_path / "~$notes.docx").write_text("")
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(packages_dir)])
    assert _interpreter.leftovers() == [str(packages_dir / "~axlib")]


def test_a_restore_deletes_what_a_half_done_install_left_and_only_that() -> None:
    """pip's stashes go first, whatever moves; a distribution without RECORD that must move or go has its dist-info
    deleted (pip and uv refuse to replace or uninstall it), so it is installed again or gone, not uninstalled."""
    site = "/e/lib/python3.11/site-packages"
    before = {"jax": Installed("jax", "0.10.1", "pip"), "jaxlib": Installed("jaxlib", "0.10.1", "pip")}
    after = {"jax": Installed("jax", "0.10.1", "pip"), "chex": Installed("chex", "0.1.90", "pip")}
    left = repair.Debris(
        stashes=(f"{site}/~axlib", f"{site}/~axlib-0.10.1.dist-info"),
        unrecorded=(("chex", f"{site}/chex-0.1.90.dist-info"), ("jax", f"{site}/jax-0.10.1.dist-info")),
    )
    facts = facts_from({"python": {"executable": "/e/bin/python", "environment": "venv", "pip": True}})
    undo = repair.restoring(before, after, facts, left)
    deleted = [f"{site}/~axlib", f"{site}/~axlib-0.10.1.dist-info", f"{site}/chex-0.1.90.dist-info"]
    assert undo.command == shlex.join(["rm", "-rf", "--", *deleted]) + " && /e/bin/python -m pip install jaxlib==0.10.1"
    # jax did not move: its dist-info stays, RECORD or not


def test_debris_is_only_what_lies_inside_the_environment_in_its_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the interpreter says is checked before anything is deleted: a path outside its prefix, a name that is
    no stash, a location that is no dist-info, are never debris."""
    from envaudit.collect import outside

    said = {
        "python": {
            "prefix": "/e",
            "leftovers": ["/e/lib/site/~axlib", "/elsewhere/~axlib", "/e/lib/site/axlib", "/e/lib/site/../../../x/~y"],
        },
        "distributions": [
            {"name": "Chex", "version": "1", "location": "/e/lib/site/chex-1.dist-info", "recorded": False},
            {"name": "jax", "version": "1", "location": "/e/lib/site/jax-1.dist-info", "recorded": True},
            {"name": "egg", "version": "1", "location": "/e/lib/site/egg.egg-info", "recorded": False},
            {"name": "far", "version": "1", "location": "/far/far-1.dist-info", "recorded": False},
            {"name": "old", "version": "1", "location": "/e/lib/site/old-1.dist-info"},  # an older answer: not said
        ],
    }
    monkeypatch.setattr(outside, "describe", lambda *_: said)
    assert repair.debris("/e/bin/python", 10) == repair.Debris(
        stashes=("/e/lib/site/~axlib",), unrecorded=(("chex", "/e/lib/site/chex-1.dist-info"),)
    )


@pytest.mark.slow
def test_a_restore_after_an_interrupted_pip_puts_it_back_and_says_so_only_when_it_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real environment as a killed pip leaves it: jaxlib gone but for its stash (`~axlib-0.10.2.dist-info`, which
    metadata would read as jaxlib 0.10.2), and a distribution installed after the snapshot without a RECORD. The
    restore deletes both, installs the snapshot's jaxlib (the installer stood in for: it writes the dist-info pip
    would), checks the environment again and exits 0; where the installer did nothing, it says what is still off
    and exits 1."""
    env = tmp_path / "env"
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(env)], check=True, timeout=60)
    (site,) = (env / "lib").glob("python3*/site-packages")
    python = str(env / "bin" / "python")

    def dist_info(name: str, version: str, *, record: bool = True, as_name: str = "") -> Path:
        where = site / f"{as_name or name}-{version}.dist-info"
        where.mkdir()
        (where / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (where / "INSTALLER").write_text("pip\n")
        if record:
            (where / "RECORD").write_text(f"{where.name}/METADATA,,\n")
        return where

    def planted() -> None:
        dist_info("jax", "0.10.1")
        dist_info("jaxlib", "0.10.2", as_name="~axlib")
        (site / "~axlib").mkdir()
        dist_info("chex", "0.1.90", record=False)

    def installer(install: bool) -> object:
        def shell(command: str) -> int:
            ran.append(command)
            for part in command.split(" && "):
                words = shlex.split(part)
                if words[:2] == ["rm", "-rf"]:
                    subprocess.run(words, check=True)
                elif install and "install" in words and "jaxlib==0.10.1" in words:
                    dist_info("jaxlib", "0.10.1")
            return 0

        return shell

    saved = snapshot(tmp_path / "s.json", python=python, jax="0.10.1", jaxlib="0.10.1")
    for install, code in ((True, Exit.OK), (False, Exit.FINDINGS)):
        planted()
        ran: list[str] = []
        said: list[str] = []
        monkeypatch.setattr(repair, "shell", installer(install))
        done = repair.restore(saved, python=python, timeout=60, dry_run=False, yes=True, say=said.append, ask=None)
        assert done == code, said
        (command,) = ran
        assert "~axlib-0.10.2.dist-info" in command and "chex-0.1.90.dist-info" in command, command
        assert "jaxlib==0.10.1" in command and "uninstall" not in command, command
        assert not list(site.glob("~*")) and not list(site.glob("chex-*")), list(site.iterdir())
        if install:
            assert said[-1] == "restored", said
        else:
            assert said[-1].startswith("restored but for: jaxlib 0.10.1 removed"), said
        for made in site.glob("jax*-*.dist-info"):
            shutil.rmtree(made)


@pytest.mark.slow
def test_an_interrupted_installer_is_let_roll_back(tmp_path: Path) -> None:
    """Interrupted (Ctrl-C, or the bound: the same handler), the installer's group gets SIGINT first, as from a
    terminal, so pip's rollback runs; only what does not end within the grace period is killed. The interrupt comes
    once the command's trap is set (a bound of one second had fired before it, on a busy machine)."""
    rolled, ready = tmp_path / "rolled-back", tmp_path / "ready"
    command = f"trap 'touch {shlex.quote(str(rolled))}; exit 130' INT; touch {shlex.quote(str(ready))}; sleep 30 & wait"
    with interrupted_when(ready), pytest.raises(KeyboardInterrupt):
        repair.shell(command)
    assert rolled.exists()


def test_an_audit_that_cannot_complete_after_the_fix_restores_it_and_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = planned_audit()
    audits = iter([before])

    def audited(**_: object) -> object:
        found = next(audits, None)
        if found is None:
            raise RuntimeError("the child could not start")
        return found

    installed = iter([{"jax": Installed("jax", "0.10.2", "pip")}] + [{"jax": Installed("jax", "0.10.1", "pip")}] * 3)
    monkeypatch.setattr(_shared, "run_audit", audited)
    monkeypatch.setattr(repair, "distributions", lambda *_: next(installed))
    monkeypatch.setattr(repair, "debris", lambda *_: repair.Debris())
    ran: list[str] = []
    monkeypatch.setattr(repair, "shell", ran_by(ran))
    said: list[str] = []
    code = repair.run(
        python=None,
        probes=Options(),
        timeout=10,
        dry_run=False,
        yes=True,
        snapshot=tmp_path / "s.json",
        say=said.append,
        ask=None,
        proving=repair.Proving(unproven=True),
    )
    assert code == Exit.INTERNAL
    assert any("could not complete" in line for line in said) and len(ran) == 2 and "jax==0.10.2" in ran[1]


def test_the_snapshot_is_on_disk_before_the_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The transaction's first half: whatever the command does (here it is killed, as by an OOM or a closed SSH
    session), the snapshot it would restore from was written, whole, before it started; the way back is said."""
    before = planned_audit()
    monkeypatch.setattr(_shared, "run_audit", lambda **_: before)
    monkeypatch.setattr(repair, "distributions", lambda *_: {"jax": Installed("jax", "0.10.2", "pip")})
    path = tmp_path / "s.json"
    seen: list[object] = []

    def killed(command: str) -> int:
        seen.append(json.loads(path.read_text()))
        raise KeyboardInterrupt

    monkeypatch.setattr(repair, "shell", killed)
    said: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        repair.run(
            python=None,
            probes=Options(),
            timeout=10,
            dry_run=False,
            yes=True,
            snapshot=path,
            say=said.append,
            ask=None,
            proving=repair.Proving(unproven=True),
        )
    dists = [{"name": "jax", "version": "0.10.2", "installer": "pip"}]
    assert seen == [{"python": sys.executable, "prefix": sys.prefix, "distributions": dists}]  # its environment named
    assert any(f"--restore {path}" in line for line in said), said


def test_a_ctrl_c_is_exit_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(**_: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(repair, "run", interrupted)
    monkeypatch.setattr(_shared, "bounded", lambda *_, **__: _shared.Bounds(Options(), None, 1.0))
    assert repair.main(FixOptions(yes=True)) == Exit.INTERRUPTED
    assert int(Exit.INTERRUPTED) == 130


@ROOT_ONLY
def test_root_does_not_fix_another_users_environment(tmp_path: Path) -> None:
    theirs = tmp_path / "venv"
    (theirs / "bin").mkdir(parents=True)
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(repair.RepairError, match="run envaudit fix as that user"):
        repair._not_anothers(str(theirs / "bin" / "python"))


@pytest.mark.parametrize("proven", [False, True])
def test_only_a_proven_plan_is_applied_with_yes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proven: bool) -> None:
    """Fixes predicted, not found: `fix --yes` ran the one plan whether or not its state installs or runs. The plan
    is proven first on a built twin of the environment; one that is not is said, with why, and not run (exit as
    before it: nothing changed), unless --unproven."""
    from envaudit.commands.plan import building

    before = planned_audit()
    monkeypatch.setattr(_shared, "run_audit", lambda **_: before)
    monkeypatch.setattr(repair, "distributions", lambda *_: {"jax": Installed("jax", "0.10.2", "pip")})
    monkeypatch.setattr(repair, "debris", lambda *_: repair.Debris())
    why = "the state the fix leaves (a twin of this environment) does not install here (uv refused it)"
    answer = ("proven", "built here", None) if proven else ("unproven", why, None)
    monkeypatch.setattr(building, "prove", lambda *_, **__: answer)
    ran: list[str] = []
    monkeypatch.setattr(repair, "shell", ran_by(ran))
    said: list[str] = []
    code = repair.run(
        python=None,
        probes=Options(),
        timeout=10,
        dry_run=False,
        yes=True,
        snapshot=tmp_path / "s.json",
        say=said.append,
        ask=None,
    )
    assert f"{answer[0]}: {answer[1]}" in said
    if proven:
        assert ran and "jax==0.10.1" in ran[0], said
    else:
        assert not ran and not (tmp_path / "s.json").exists(), said  # nothing run, no snapshot taken
        assert code == (Exit.FINDINGS if before.verdict == "fail" else Exit.OK)
        assert any("--unproven" in line for line in said), said


def test_fix_applies_the_first_plan_its_twin_proves_not_the_audit_s_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fix` proved only the audit's one plan and, refused, applied nothing (9 of 12 unseen environments), while
    `plan` tried the tables' next ones. Now `fix` tries them too, best first, each on a twin: the first proven is
    said, and applied with --yes; why the first was not proven is said with it."""
    from envaudit.commands.plan import building
    from envaudit.judge import assemble, twin
    from envaudit.model.fixes import Fix, Plan

    before = planned_audit()
    second = replace(before, plan=Plan(fix=Fix(install=("jax==0.10.0",))))
    monkeypatch.setattr(_shared, "run_audit", lambda **_: before)
    monkeypatch.setattr(assemble, "alternatives", lambda report, limit, keep=(): [report, second])
    monkeypatch.setattr(repair, "distributions", lambda *_: {"jax": Installed("jax", "0.10.2", "pip")})
    monkeypatch.setattr(repair, "debris", lambda *_: repair.Debris())
    tried: list[str] = []

    def prove(report: Report, **_: object) -> tuple[str, str, None]:
        tried.append(report.plan.fix.install[0])
        return ("proven", "built here", None) if report is second else ("unproven", "uv refused it", None)

    monkeypatch.setattr(building, "prove", prove)
    monkeypatch.setattr(twin, "off", lambda *_: "")  # twins are built: the other plans are tried
    ran: list[str] = []
    monkeypatch.setattr(repair, "shell", ran_by(ran))
    said: list[str] = []
    options = {"timeout": 10, "snapshot": tmp_path / "s.json", "say": said.append, "ask": None, "python": None}
    repair.run(probes=Options(), dry_run=False, yes=True, **options)  # type: ignore[arg-type]
    assert tried == ["jax==0.10.1", "jax==0.10.0"], said
    assert len(ran) == 1 and "jax==0.10.0" in ran[0] and "jax==0.10.1" not in ran[0], ran
    assert any(
        line.startswith("proven: built here; 1 plan(s) tried before it") and "uv refused it" in line for line in said
    )
    # none proven: the audit's own plan is said, unproven, with its own reason, and nothing runs
    refused = lambda report, **_: ("unproven", f"refused {report.plan.fix.install[0]}", None)  # noqa: E731
    monkeypatch.setattr(building, "prove", refused)
    ran.clear()
    said.clear()
    repair.run(probes=Options(), dry_run=False, yes=True, **options)  # type: ignore[arg-type]
    assert not ran and "unproven: refused jax==0.10.1" in said, said
