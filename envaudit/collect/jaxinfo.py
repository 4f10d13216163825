"""What jax itself reports, asked in a child process with a timeout, so that a broken stack is a fact.

The child (`_jax_child.py`) prints one JSON line per stage. `parse_child` turns its output, exit status and
whether it timed out into the `facts.jax` dict; it is pure and tested with captured output. An import error, a
crash by signal, a timeout and a wrong first computation are different statuses, each with its text.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHILD = Path(__file__).with_name("_jax_child.py")
DEFAULT_TIMEOUT_S = 60.0


def signal_name(returncode: int) -> str | None:
    """SIGSEGV for -11 (the child was killed by a signal), None for a normal exit."""
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def parse_child(stdout: str, stderr: str, returncode: int | None, timed_out: bool, duration_s: float) -> dict[str, Any]:
    """Assemble facts.jax from the child's stage lines (pure)."""
    stages: dict[str, dict[str, Any]] = {}
    for line in stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("stage"), str):
            stages[record.pop("stage")] = record
    facts: dict[str, Any] = {"status": "ok", "message": None, "duration_s": round(duration_s, 3)}
    for stage in ("imported", "devices"):
        facts.update({k: v for k, v in stages.get(stage, {}).items() if k != "error"})
    reached = next((s for s in ("first_use", "devices", "imported", "import", "start") if s in stages), None)
    facts["stage"] = reached
    error = next((stages[s]["error"] for s in ("import", "devices", "first_use") if "error" in stages.get(s, {})), None)
    tail = stderr.strip().splitlines()[-1:] if stderr.strip() else []

    if timed_out:
        facts.update(status="timeout", message=f"no answer within {duration_s:.0f} s (last stage: {reached})")
    elif returncode is not None and returncode < 0:
        name = signal_name(returncode)
        facts.update(status="crash", signal=name, message=f"killed by {name} after stage {reached!r}")
    elif stages.get("import", {}).get("absent"):
        facts.update(status="absent", message=stages["import"]["error"])
    elif "import" in stages:
        facts.update(status="import_error", message=error)
    elif error is not None:
        facts.update(status="error", message=error)
    elif "first_use" not in stages:
        detail = tail[0] if tail else "no output"
        facts.update(status="error", message=f"exited with status {returncode} before finishing: {detail}")
    elif not stages["first_use"].get("ok"):
        facts.update(status="error", message=f"first computation gave {stages['first_use'].get('value')}, not 3920")
    facts["returncode"] = returncode
    return facts


def get_jax(
    timeout: float = DEFAULT_TIMEOUT_S, env: dict[str, str] | None = None, python: str | None = None
) -> dict[str, Any]:
    """Run the child with the user's environment (that environment is what is audited); never raises."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            [python or sys.executable, str(CHILD)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=dict(os.environ) if env is None else env,
            start_new_session=True,
        )
    except OSError as exc:
        return {"status": "error", "message": f"could not start the jax child: {exc}"}
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    return parse_child(out, err, None if timed_out else proc.returncode, timed_out, time.monotonic() - start)


def kill_group(proc: subprocess.Popen[str]) -> None:
    """Kill the child and anything it started (it runs in its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
