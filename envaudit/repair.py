"""`envaudit fix`: the report's one plan applied to the audited environment with its own installer, checked by a
new audit, and undone when it made things worse.

The plan is the one the report prints (`fixplan`): nothing is run that the user could not read first (`--dry-run`
prints it and stops; without `--yes` a terminal asks). Before anything changes, every distribution of the audited
interpreter (name, version, installer) is written to a snapshot file that is kept (the user removes it). The plan's
command runs in bash, as the user would paste it; its variables (an `export XLA_FLAGS=...`) hold for the new audit
here and are said, since they last one shell. The audit after it is compared with the one before: more failing root
causes, or jax imported before and not after, and the snapshot is restored (what moved installed at its version
again, what appeared removed). What changed is said either way. Exit 0 when the environment audits without a
failure afterwards, 1 when not, 2 on bad usage (no confirmation from a non-terminal, a snapshot path that cannot be
written).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from envaudit import audit, fixes, safewrite
from envaudit.child.state import Options
from envaudit.exitcodes import BadInput, Exit
from envaudit.facts import Facts
from envaudit.fixes import Fix
from envaudit.model import Report

APPLY_TIMEOUT_S = 3600.0  # an installer downloading gigabytes of CUDA wheels; a hung one still ends


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
    from envaudit.scope import canonicalize_name

    found: dict[str, Installed] = {}
    for d in outside.describe(python, timeout)["distributions"]:
        name = canonicalize_name(str(d["name"]))
        found.setdefault(name, Installed(name, str(d["version"]), str(d.get("installer") or "")))
    return found


def changes(before: dict[str, Installed], after: dict[str, Installed]) -> list[str]:
    """What moved, as people read it: `jax 0.10.2 -> 0.10.1`, `jax-cuda12-plugin 0.10.1 removed`, `x 1.0 added`."""
    kept = sorted(before.keys() & after.keys())
    said = [f"{n} {before[n].version} -> {after[n].version}" for n in kept if before[n].version != after[n].version]
    said += [f"{n} {before[n].version} removed" for n in sorted(before.keys() - after.keys())]
    said += [f"{n} {after[n].version} added" for n in sorted(after.keys() - before.keys())]
    return said


def restoring(before: dict[str, Installed], after: dict[str, Installed], facts: Facts) -> Fix:
    """The fix that puts the snapshot back: what moved or went installed at its version, what appeared removed."""
    moved = [f"{n}=={d.version}" for n, d in sorted(before.items()) if after.get(n, d).version != d.version]
    moved += [f"{n}=={d.version}" for n, d in sorted(before.items()) if n not in after]
    target = fixes.target(facts)
    return Fix(install=tuple(moved), uninstall=tuple(sorted(after.keys() - before.keys())), target=target)


def worse(before: Report, after: Report) -> str:
    """Why the audit after the fix is worse than the one before ("" where it is not)."""
    roots = [len([f for f in r.findings if f.severity == "fail" and not f.caused_by]) for r in (before, after)]
    if roots[1] > roots[0]:
        return f"{roots[1]} failing root causes after it, {roots[0]} before"
    if before.facts.jax.get("status") == "ok" and after.facts.jax.get("status") != "ok":
        return f"jax imported before it and not after ({after.facts.jax.get('message')})"
    return ""


def snapshot_path(given: Path | None) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return given if given is not None else Path(f"envaudit-snapshot-{stamp}.json")


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
) -> int:
    """The verb: audit, plan, confirm, snapshot, apply, audit again, restore if worse. `ask` is the terminal's
    prompt (None: stdin is no terminal)."""
    if not dry_run and not yes and ask is None:  # refused before minutes of auditing, nothing changed
        raise RepairError("fix changes the environment: confirm with --yes, or --dry-run (stdin is not a terminal)")
    interpreter = python or sys.executable
    before = audit.run_audit(quick=False, timeout=timeout, probes=probes, python=python)
    command = before.plan.fix.command
    say(f"envaudit fix: {before.verdict.upper()} in {interpreter}")
    if not command:
        still = [f.id for f in before.findings if f.severity == "fail" and not f.caused_by]
        say("nothing to run" + (f": no command fixes {', '.join(still)}" if still else ": nothing to fix"))
        return Exit.FINDINGS if still else Exit.OK
    say(f"the plan: {command}")
    if before.plan.remaining:
        say(f"still failing after it: {', '.join(before.plan.remaining)}")
    if dry_run:
        return Exit.FINDINGS if before.plan.remaining else Exit.OK
    if not yes and ask is not None and not ask("run it? [y/N] "):
        say("nothing changed")
        return Exit.FINDINGS if before.verdict == "fail" else Exit.OK
    fix = before.plan.fix
    for name in fix.unset:  # what the command does to its own shell, done first here: the snapshot, the installer and
        os.environ.pop(name, None)  # the audit after it see the environment as the user's next shell will
    os.environ.update(dict(fix.export))
    saved = distributions(interpreter, timeout)  # the environment's own (a PYTHONPATH copy unset is none of them)
    path = snapshot_path(snapshot)
    document = {"python": interpreter, "distributions": [vars(d) for d in saved.values()]}
    safewrite.write(path, json.dumps(document, indent=1) + "\n")
    say(f"snapshot of {len(saved)} distributions: {path} (kept: remove it when you no longer need it)")
    done = subprocess.run(["bash", "-c", command], timeout=APPLY_TIMEOUT_S, check=False)
    # audited as another interpreter, whatever this one is: this process's own path still holds what was unset
    after = audit.run_audit(quick=False, timeout=timeout, probes=probes, python=interpreter)
    now = distributions(interpreter, timeout)
    moved = changes(saved, now)
    say(f"changed: {'; '.join(moved) if moved else 'no distribution'}" + _status(done.returncode))
    why = worse(before, after)
    if why:
        undo = restoring(saved, now, after.facts)
        say(f"worse: {why}; restoring the snapshot: {undo.command or 'nothing moved'}")
        if undo:
            subprocess.run(["bash", "-c", undo.command], timeout=APPLY_TIMEOUT_S, check=False)
        restored = changes(saved, distributions(interpreter, timeout))
        say("restored" if not restored else f"restored but for: {'; '.join(restored)}")
        return Exit.FINDINGS
    if fix.export or fix.unset:
        shell = " && ".join([*(f"unset {n}" for n in fix.unset), *(c for c in _exports(fix))])
        say(f"set in the shell that runs your program (they last one shell): {shell}")
    say(f"envaudit fix: {after.verdict.upper()} after it")
    return Exit.FINDINGS if after.verdict == "fail" else Exit.OK


def _exports(fix: Fix) -> list[str]:
    return [Fix(export=((n, v),)).command for n, v in fix.export]


def _status(code: int) -> str:
    return "" if code == 0 else f" (the command exited {code})"
