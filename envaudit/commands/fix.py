"""`envaudit fix`: the report's one plan applied to the audited environment with its own installer, checked by a
new audit, and undone when it made things worse.

The plan is the one the report prints (`fixplan`): nothing is run that the user could not read first (`--dry-run`
prints it and stops; without `--yes` a terminal asks), and nothing unproven without being asked: the state the plan
leaves is built first as a twin of the environment (commands/plan/building.prove: its distributions with the plan's
changes, imported and called in a throwaway uv environment); only a proven plan runs with `--yes` alone, another
needs `--unproven` or a `y` at the terminal after the reason is read. Before anything changes, every distribution
of the audited interpreter (name, version, installer) is written to a snapshot file that is kept (the user removes
it). The plan's
command runs in bash, as the user would paste it (but in a private working directory of its own, where no `pip.py`
or `json.py` another user left is imported by `python -m pip`, and with uv given no configuration file but the
user's own and a cache of this user's alone: collect/build.py's docstring says why); its variables (an `export
XLA_FLAGS=...`) hold for the new audit here and are said, since they last one shell. The audit after it is compared
with the one before: more failing root causes, or jax imported before and not after, and the snapshot is restored
(what moved installed at its version again, what appeared removed, each by the installer that had installed it).
What changed is said either way. The command runs in a session of its own: interrupted (Ctrl-C, SIGTERM, its bound),
bash and the installer are killed together and the way back is printed (`envaudit fix --restore SNAPSHOT`, which
puts any snapshot back). Exit 0 when the environment audits without a failure afterwards, 1 when not, 2 on bad usage
(no confirmation from a non-terminal, a snapshot path that cannot be written or read).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from envaudit.child.state import Options
from envaudit.commands import _shared, options
from envaudit.commands.options import Command, Probing
from envaudit.files import safewrite
from envaudit.model import fixes
from envaudit.model.exitcodes import JUDGING, BadInput, Exit
from envaudit.model.facts import Facts, ReportError
from envaudit.model.fixes import Fix
from envaudit.model.report import Report
from envaudit.model.scope import INSTALLERS, SELF

APPLY_TIMEOUT_S = 3600.0  # an installer downloading gigabytes of CUDA wheels; a hung one still ends
SNAPSHOT_BYTES = 16 * 1024 * 1024  # a snapshot of ten thousand distributions is under 1 MiB


class RepairError(BadInput):
    """No confirmation, or a snapshot that cannot be written: nothing was changed; the message is one line."""


@dataclass(frozen=True)
class Installed:
    """One distribution of the audited interpreter, as a snapshot keeps it."""

    name: str
    version: str
    installer: str


def distributions(python: str, timeout: float) -> dict[str, Installed]:
    """Every distribution the interpreter sees (the first copy on its path), by canonical name."""
    from envaudit.collect import outside
    from envaudit.model.scope import canonicalize_name

    found: dict[str, Installed] = {}
    for d in outside.describe(python, timeout)["distributions"]:
        name = canonicalize_name(str(d["name"]))
        found.setdefault(name, Installed(name, str(d["version"]), str(d.get("installer") or "")))
    return found


@dataclass(frozen=True)
class Debris:
    """What an interrupted installer left in the environment that no installer removes: pip's stashes (`~axlib`,
    `~axlib-0.10.2.dist-info`: Python never imports them, pip warns of them at every run) and the dist-info
    directories without a RECORD (pip and uv refuse to replace them), each an absolute path inside the environment."""

    stashes: tuple[str, ...] = ()
    unrecorded: tuple[tuple[str, str], ...] = ()  # (canonical name, its dist-info directory)


def debris(python: str, timeout: float) -> Debris:
    """The interpreter's debris, as it says itself; only paths inside its environment (its prefix), each of the
    shape its kind has, so that nothing else is ever deleted."""
    from envaudit.collect import outside
    from envaudit.model.scope import canonicalize_name

    said = outside.describe(python, timeout)
    itself = said.get("python") or {}
    prefix = str(itself.get("prefix") or "")
    unrecorded = [
        (canonicalize_name(str(d["name"])), str(d["location"]))
        for d in said["distributions"]
        if d.get("recorded") is False
        and str(d["location"]).endswith(".dist-info")
        and fixes.inside(prefix, str(d["location"]))
    ]
    return Debris(fixes.stashes(prefix, itself.get("leftovers") or []), tuple(unrecorded))


def changes(before: dict[str, Installed], after: dict[str, Installed]) -> list[str]:
    """What moved, as people read it: `jax 0.10.2 -> 0.10.1`, `jax-cuda12-plugin 0.10.1 removed`, `x 1.0 added`."""
    kept = sorted(before.keys() & after.keys())
    said = [f"{n} {before[n].version} -> {after[n].version}" for n in kept if before[n].version != after[n].version]
    said += [f"{n} {before[n].version} removed" for n in sorted(before.keys() - after.keys())]
    said += [f"{n} {after[n].version} added" for n in sorted(after.keys() - before.keys())]
    return said


def restoring(
    before: dict[str, Installed], after: dict[str, Installed], facts: Facts, left: Debris | None = None
) -> Fix:
    """The fix that puts the snapshot back: what moved or went installed at its version, what appeared removed,
    each by the installer the snapshot says installed it (conda's by conda: the audit's facts name only the
    audited packages, and not those the fix removed). What a half-done install left is deleted first: pip's
    stashes, and the dist-info without RECORD of a distribution that moves or goes (its installer would refuse
    it; deleted, the install writes it again, and one to remove is gone from the environment's metadata)."""
    left = left or Debris()
    moved = [f"{n}=={d.version}" for n, d in sorted(before.items()) if after.get(n, d).version != d.version]
    moved += [f"{n}=={d.version}" for n, d in sorted(before.items()) if n not in after]
    by_conda = {n for n, d in (*before.items(), *after.items()) if d.installer == "conda"}
    target = replace(fixes.target(facts), conda=frozenset(by_conda))
    added = sorted(after.keys() - before.keys() - KEPT)
    touched = {fixes.parse(r)[0] for r in moved} | set(added)
    unrecorded = {n: where for n, where in left.unrecorded if n in touched and n not in by_conda}
    delete = (*left.stashes, *unrecorded.values())
    uninstall = tuple(n for n in added if n not in unrecorded)
    return Fix(install=tuple(moved), uninstall=uninstall, delete=delete, target=target)


@dataclass(frozen=True)
class Snapshot:
    """What `fix` kept: the interpreter it audited, its environment (its sys.prefix: a venv's, though its
    bin/python links to a base Python every other venv of it shares; "" in a snapshot written before it was kept)
    and every distribution there."""

    python: str
    prefix: str
    distributions: dict[str, Installed]


def prefix_of(python: str, timeout: float) -> str:
    """The interpreter's environment, as it says itself (its sys.prefix)."""
    from envaudit.collect import outside

    return str((outside.describe(python, timeout).get("python") or {}).get("prefix") or "")


def read_snapshot(path: Path) -> Snapshot:
    """A snapshot `fix` wrote (bad input: one line, exit 2). Only a regular file the caller or root owns and nobody
    else may write is read (its interpreter is run), checked on the descriptor it is read from."""
    from envaudit.files import reportfile

    raw = safewrite.read_trusted(path, SNAPSHOT_BYTES, "a snapshot")
    try:
        data = reportfile.parse_json(raw.decode("utf-8"), path, "a snapshot")
        python, prefix = data["python"], data.get("prefix", "")
        found = {d["name"]: Installed(d["name"], d["version"], d.get("installer", "")) for d in data["distributions"]}
    except (ValueError, KeyError, TypeError, AttributeError, ReportError):
        raise RepairError(f"{path}: not a snapshot written by envaudit fix") from None
    if not all(isinstance(p, str) and "\x00" not in p and p.isprintable() for p in (python, prefix)) or not all(
        isinstance(d.name, str) and isinstance(d.version, str) and isinstance(d.installer, str) for d in found.values()
    ):
        raise RepairError(f"{path}: not a snapshot written by envaudit fix")
    return Snapshot(python, prefix, found)


def worse(before: Report, after: Report) -> str:
    """Why the audit after the fix is worse than the one before ("" where it is not)."""
    roots = [len([f for f in r.findings if f.severity == "fail" and not f.caused_by]) for r in (before, after)]
    if roots[1] > roots[0]:
        return f"{roots[1]} failing root causes after it, {roots[0]} before"
    if before.facts.jax.get("status") == "ok" and after.facts.jax.get("status") != "ok":
        return f"jax imported before it and not after ({after.facts.jax.get('message')})"
    return ""


def snapshot_path(given: Path | None) -> Path:
    """--snapshot's path, else a new name in the working directory (a second's stamp and a random part: no name
    another user could prepare for it)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return given if given is not None else Path(f"envaudit-snapshot-{stamp}-{secrets.token_hex(4)}.json")


def run(
    *,
    python: str | None,
    probes: Options,
    timeout: float,
    dry_run: bool,
    yes: bool,
    snapshot: Path | None,
    say: Callable[[str], None],
    ask: Callable[[str], bool] | None,
    proving: Proving | None = None,
    keep: Sequence[str] = (),
) -> int:
    """The verb: audit, plan, prove it on a built twin, confirm, snapshot, apply, audit again, restore if worse.
    `ask` is the terminal's prompt (None: stdin is no terminal). A plan that is not proven is applied only with
    --unproven, or where the terminal's user says so after reading why."""
    proving = proving or Proving()
    if not dry_run and not yes and ask is None:  # refused before minutes of auditing, nothing changed
        raise RepairError("fix changes the environment: confirm with --yes, or --dry-run (stdin is not a terminal)")
    interpreter = python or sys.executable
    before = _shared.run_audit(quick=False, timeout=timeout, probes=probes, python=python, keep=keep)
    command = before.plan.fix.command
    say(f"envaudit fix: {before.verdict.upper()} in {interpreter}")
    if not command:
        still = [f.id for f in before.findings if f.severity == "fail" and not f.caused_by]
        say("nothing to run" + (f": no command fixes {', '.join(still)}" if still else ": nothing to fix"))
        return Exit.FINDINGS if still else Exit.OK
    from envaudit.commands.plan import building  # the twin's build: loaded only where a plan is to prove
    from envaudit.judge import twin
    from envaudit.judge.assemble import alternatives

    audited = before
    # where twins are built: the tables' other plans, to prove in turn, and every distribution a twin is to hold
    building_on = not twin.off(proving.no_build)
    options = alternatives(before, building.CANDIDATES, keep) if building_on else [before]
    everything = {d.name: d.version for d in distributions(interpreter, timeout).values()} if building_on else {}
    before, proof, why = building.searched(
        options,
        no_build=proving.no_build,
        timeout=proving.timeout,
        quiet=proving.quiet,
        keep=keep,
        installed=everything,
    )
    if before is not audited:
        say(f"the audit's own plan was not proven ({audited.plan.fix.command}): the first the twin proves instead")
    command = before.plan.fix.command
    say(f"the plan: {command}")
    if before.plan.remaining:
        say(f"still failing after it: {', '.join(before.plan.remaining)}")
    say(f"{proof}: {why}")
    unchanged = Exit.FINDINGS if before.verdict == "fail" else Exit.OK
    if dry_run:  # nothing changed: the environment afterwards is the one audited
        return unchanged
    if proof != "proven" and not proving.unproven:
        if yes or ask is None or not ask("it is not proven; run it anyway? [y/N] "):
            say("nothing changed: only a proven plan is applied without asking (--unproven to apply it anyway)")
            return unchanged
    elif not yes and ask is not None and not ask("run it? [y/N] "):
        say("nothing changed")
        return unchanged
    fix = before.plan.fix
    for name in fix.unset:  # what the command does to its own shell, done first here: the snapshot, the installer and
        os.environ.pop(name, None)  # the audit after it see the environment as the user's next shell will
    os.environ.update(dict(fix.export))
    saved = distributions(interpreter, timeout)  # the environment's own (a PYTHONPATH copy unset is none of them)
    path = snapshot_path(snapshot)
    prefix = str(before.facts.python.get("prefix") or "") or prefix_of(interpreter, timeout)  # the audit's word
    document = {"python": interpreter, "prefix": prefix, "distributions": [vars(d) for d in saved.values()]}
    safewrite.create(path, json.dumps(document, indent=1) + "\n")
    say(f"snapshot of {len(saved)} distributions: {path} (kept: remove it when you no longer need it)")
    back = f"envaudit fix --restore {shlex.quote(str(path))}" + (
        f" --python {shlex.quote(interpreter)}" if python else ""
    )
    try:
        code = shell(_as_run(fix))
    except BaseException:  # Ctrl-C, SIGTERM, the bound: the installer's group is gone, the way back is said
        say(f"interrupted: the environment may be half changed; to put the snapshot back: {back}")
        raise
    # audited as another interpreter, whatever this one is: this process's own path still holds what was unset
    try:
        after = _shared.run_audit(quick=False, timeout=timeout, probes=probes, python=interpreter)
    except Exception as exc:  # no verdict after it: what it changed is not kept on faith
        say(f"the audit after it could not complete ({type(exc).__name__}: {exc}); restoring the snapshot")
        _restore(saved, before.facts, interpreter, timeout, say)
        return Exit.INTERNAL
    now = distributions(interpreter, timeout)
    moved = changes(saved, now)
    say(f"changed: {'; '.join(moved) if moved else 'no distribution'}" + _status(code))
    why = worse(before, after)
    if why:
        say(f"worse: {why}; restoring the snapshot")
        _restore(saved, after.facts, interpreter, timeout, say)
        return Exit.FINDINGS  # the fix did not help, whether or not the way back was complete
    if code != 0:
        say(f"the command failed; to put the snapshot back: {back}")
    if fix.export or fix.unset:
        variables = " && ".join([*(f"unset {n}" for n in fix.unset), *(c for c in _exports(fix))])
        say(f"set in the shell that runs your program (they last one shell): {variables}")
    say(f"envaudit fix: {after.verdict.upper()} after it")
    return Exit.FINDINGS if after.verdict == "fail" else Exit.OK


# never removed by a restore, whatever a snapshot lists: what installs (a snapshot missing them, hand-edited or of
# another environment, would otherwise take the installer away with the rest)
KEPT = INSTALLERS | SELF


def restore(
    path: Path,
    *,
    python: str,
    timeout: float,
    dry_run: bool,
    yes: bool,
    say: Callable[[str], None],
    ask: Callable[[str], bool] | None,
) -> int:
    """`fix --restore SNAPSHOT`: the interpreter asked for (`python`: --python's, else this one) put back as the
    snapshot has it, after the same confirmation as a fix, then checked. Exit 0 when it holds the snapshot's
    versions again, 1 when it does not; a snapshot of another environment is refused (bad input, exit 2): its
    prefix, as the interpreter asked for says its own, not by the interpreter's real path (every venv of one base
    Python shares it), and a snapshot that names no prefix (an older one) of the same interpreter path only."""
    from envaudit.collect import collect

    kept = read_snapshot(path)
    interpreter, saved = kept.python, kept.distributions
    here = prefix_of(python, timeout)
    same = (
        os.path.realpath(kept.prefix) == os.path.realpath(here)
        if kept.prefix and here
        else os.path.abspath(interpreter) == os.path.abspath(python)
    )
    if not same:
        theirs = f"{kept.prefix or 'an environment'} ({interpreter})"
        raise RepairError(
            f"{path} is a snapshot of {theirs}, not of {here or 'this environment'} ({python}):"
            f" give --python {interpreter}"
        )
    if not dry_run and not yes and ask is None:
        raise RepairError("--restore changes the environment: confirm with --yes, or --dry-run (stdin is no terminal)")
    now = distributions(python, timeout)
    undo = restoring(saved, now, collect(timeout=timeout, python=python), debris(python, timeout))
    say(f"restoring: {undo.command or 'nothing moved'}")
    if dry_run or not undo:
        return Exit.OK if not undo else Exit.FINDINGS
    if not yes and ask is not None and not ask("run it? [y/N] "):
        say("nothing changed")
        return Exit.FINDINGS
    code = shell(_as_run(undo))
    return _verified(saved, python, timeout, code, say)


def _restore(
    saved: dict[str, Installed], facts: Facts, interpreter: str, timeout: float, say: Callable[[str], None]
) -> int:
    undo = restoring(saved, distributions(interpreter, timeout), facts, debris(interpreter, timeout))
    say(f"restoring: {undo.command or 'nothing moved'}")
    code = shell(_as_run(undo)) if undo else 0
    return _verified(saved, interpreter, timeout, code, say)


def _verified(
    saved: dict[str, Installed], interpreter: str, timeout: float, code: int, say: Callable[[str], None]
) -> int:
    """Whether the interpreter holds the snapshot's versions again, as it says itself (pip's `~` leftovers are no
    distribution), and no stash of a half-done install is left: 0 restored, 1 not."""
    now = distributions(interpreter, timeout)
    left = [c for c in changes(saved, now) if c.split(" ")[0] not in KEPT]
    left += [f"{os.path.basename(p)} left by an interrupted install" for p in debris(interpreter, timeout).stashes]
    say("restored" if not left else f"restored but for: {'; '.join(left)}" + _status(code))
    return Exit.OK if not left else Exit.FINDINGS


INTERRUPT_GRACE_S = 60.0  # for pip, told of Ctrl-C, to roll back what it had half installed


def _as_run(fix: Fix) -> str:
    """The command as envaudit runs it: the printed one, but for uv's options (`build.uv_options`: no
    configuration file found by walking up from the working directory, the user's own passed by name)."""
    from envaudit.collect import build

    return replace(fix, target=replace(fix.target, uv_options=build.uv_options())).command


def shell(command: str) -> int:
    """The command run in bash in a session of its own, to its end or the bound, in a private working directory
    (what the caller's holds is not imported by `python -m pip`, nor read by uv), with uv's cache this user's alone
    (`build.uv_environ`) and no BASH_ENV (a pasted line reads none in an interactive shell). Interrupted (Ctrl-C,
    SIGTERM, the bound), its group is sent SIGINT, as a terminal's Ctrl-C would be, so that pip rolls back what it
    had half installed; what has not ended after a grace period is killed."""
    from envaudit.collect import build
    from envaudit.files import safedir

    with safedir.scratch("envaudit-fix-") as home:
        cache = build.uv_environ(home)["UV_CACHE_DIR"]
        env = {k: v for k, v in os.environ.items() if k not in ("BASH_ENV", "ENV", "UV_CONFIG_FILE")}
        return _shell(command, cwd=home, env=env | {"UV_CACHE_DIR": cache})


def _shell(command: str, *, cwd: Path, env: dict[str, str]) -> int:
    from envaudit.child.bounded import kill_group

    proc = subprocess.Popen(["bash", "-c", command], start_new_session=True, cwd=cwd, env=env)
    try:
        return proc.wait(timeout=APPLY_TIMEOUT_S)
    except BaseException:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=INTERRUPT_GRACE_S)
        except BaseException:  # a second Ctrl-C, or the grace spent: no longer waited for
            kill_group(proc)
            proc.wait()
        kill_group(proc)  # what it started and left behind
        raise


def _exports(fix: Fix) -> list[str]:
    return [Fix(export=((n, v),)).command for n, v in fix.export]


def _status(code: int) -> str:
    return "" if code == 0 else f" (the command exited {code})"


@dataclass(frozen=True)
class Proving:
    """How the plan is proven before it is applied: its state built as a twin of the environment (--no-build: not;
    --build-timeout), and whether an unproven one may be applied all the same (--unproven)."""

    no_build: bool = False
    timeout: float = 240.0
    unproven: bool = False
    quiet: bool = False


@dataclass(frozen=True)
class FixOptions:
    dry_run: bool = False
    yes: bool = False
    snapshot: Path | None = None
    restore: Path | None = None
    probing: Probing = field(default_factory=Probing)
    proving: Proving = field(default_factory=Proving)
    keep: tuple[str, ...] = ()  # what the plan never moves (--keep)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    p.add_argument("--yes", action="store_true", help="apply it without asking")
    p.add_argument(
        "--snapshot",
        type=options.path_argument,
        help="where to keep the distributions as they were (default: ./envaudit-snapshot-*)",
    )
    p.add_argument(
        "--restore", type=options.path_argument, metavar="SNAPSHOT", help="put a snapshot's distributions back instead"
    )
    p.add_argument(
        "--unproven",
        action="store_true",
        help="apply the plan even where it could not be proven (by default only a plan whose state was built here as"
        " a twin of this environment, and imported and called there, is applied without asking)",
    )
    options.add_build(
        p,
        "do not build the twin: the plan stays unproven",
        "seconds for building and measuring the twin (default: 240)",
    )
    options.add_probing(p)
    options.add_keep(p)


def parse(parsed: argparse.Namespace) -> FixOptions:
    proving = Proving(parsed.no_build, parsed.build_timeout, parsed.unproven)
    probing = options.probing(parsed)
    return FixOptions(
        parsed.dry_run, parsed.yes, parsed.snapshot, parsed.restore, probing, proving, options.kept(parsed)
    )


def _say(line: str) -> None:
    print(line, flush=True)


def _confirm(question: str) -> bool:
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def main(o: FixOptions) -> int:
    """`fix` or `fix --restore`; a Ctrl-C is exit 130 (the shell's convention), after pip was let roll back."""
    ask = _confirm if sys.stdin.isatty() else None
    try:
        if o.restore is not None:
            python = _shared.interpreter(o.probing.python, o.probing.timeout) or sys.executable
            _not_anothers(python)
            return restore(
                o.restore, python=python, timeout=o.probing.timeout, dry_run=o.dry_run, yes=o.yes, say=_say, ask=ask
            )
        bounds = _shared.bounded(o.probing, quick=False)
        assert bounds.probes is not None  # fix always probes: the audit after it must see what the one before saw
        _not_anothers(bounds.python or sys.executable)
        return run(
            python=bounds.python,
            probes=bounds.probes,
            timeout=bounds.timeout,
            dry_run=o.dry_run,
            yes=o.yes,
            snapshot=o.snapshot,
            say=_say,
            ask=ask,
            proving=o.proving,
            keep=o.keep,
        )
    except KeyboardInterrupt:
        print("envaudit: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED


def _not_anothers(python: str) -> None:
    """As root, an environment another user owns is theirs to change: its code would run as root (its
    sitecustomize, its installer) and leave files of root's among theirs."""
    if os.geteuid() != 0:
        return
    environment = Path(os.path.abspath(python)).parent.parent  # a venv's bin/python links to its base: not resolved
    try:
        owner = environment.stat().st_uid
    except OSError:
        return
    if owner != 0:
        raise RepairError(f"{environment} belongs to uid {owner}: run envaudit fix as that user, not as root")


COMMAND = Command(
    "fix",
    "apply the report's one plan with the environment's installer, then audit again",
    add_arguments,
    parse,
    main,
    examples=(
        ("envaudit fix --dry-run", "the plan, proven on a twin of this environment; nothing changes"),
        ("envaudit fix --yes", "apply a proven plan without asking (a snapshot is kept; undone if worse)"),
        ("envaudit fix --restore envaudit-snapshot-FILE.json", "put a snapshot's distributions back"),
    ),
    exits=(*JUDGING, Exit.INTERRUPTED),
    exit_words=(
        (Exit.OK, "no fail finding after it (--dry-run: before it; --restore: the snapshot is back)"),
        (Exit.FINDINGS, "a fail finding is left, the fix made things worse and was undone, or a restore is partial"),
    ),
)
