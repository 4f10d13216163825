"""scripts/nhc/: `check_envaudit` run as LBNL NHC runs a check, on every kind of status file, and on the one a real
`envaudit health --status-file` run writes; the systemd units that run health beside NHC.

NHC has no Debian package and its code is not copied here: tests/integration/nhc_driver.sh reproduces the driver's
conventions a check relies on (each cited there from github.com/mej/nhc): the scripts sourced into one bash
process, `TARGET || CHECK` lines, `die`'s offline mark and exit, a watchdog. The check runs with nothing on PATH but
spies, so a program it started (date, python, envaudit) would be seen: under NHC's watchdog it must start none.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import PYTHON, ROOT, envaudit_run
from tests.integration import _support

pytestmark = pytest.mark.integration

NHC = ROOT / "scripts" / "nhc"
CHECK = NHC / "envaudit.nhc"
DRIVER = ROOT / "tests" / "integration" / "nhc_driver.sh"
FAULT = ROOT / "tests" / "faults" / "conv_batch_scale"
HOST = "gpu-017"
SPIED = ("date", "stat", "cat", "head", "python", "python3", "envaudit", "timeout", "readlink", "hostname")
OK_LINE = "envaudit OK: 0 fail, 0 warn; 7/7 probes pass"
FAIL_LINE = "envaudit FAIL probe-conv-chain: probe conv_chain computed a wrong answer"


@dataclass
class Ran:
    code: int
    out: str
    marks: list[str]  # what the driver asked the resource manager: "offline NODE: NOTE" or "online NODE"
    spied: list[str]  # programs started from PATH


@pytest.fixture
def nhc(tmp_path: Path) -> Path:
    """An NHC layout: scripts/ with the shipped check, the offline and online helpers, spies on PATH."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(CHECK, tmp_path / "scripts" / CHECK.name)
    for mark, words in (("offline", '"offline $1: $2"'), ("online", '"online $1"')):
        helper = tmp_path / f"node-mark-{mark}"
        helper.write_text(f"#!/bin/sh\necho {words} >>{tmp_path / 'marks'}\n")
        helper.chmod(0o755)
    spies = tmp_path / "bin"
    spies.mkdir()
    for name in SPIED:
        spy = spies / name
        spy.write_text(f"#!/bin/sh\necho {name} >>{tmp_path / 'spied'}\nexit 0\n")
        spy.chmod(0o755)
    return tmp_path


def _run(nhc: Path, *lines: str, **env: str) -> Ran:
    conf = nhc / "nhc.conf"
    conf.write_text("# envaudit's check\n\n" + "".join(f"{line}\n" for line in lines))
    sleep = _support.ensure_programs(["sleep"])["sleep"]
    environ = {
        "PATH": str(nhc / "bin"),
        "HOSTNAME": HOST,
        "OFFLINE_NODE": str(nhc / "node-mark-offline"),
        "ONLINE_NODE": str(nhc / "node-mark-online"),
        "NHC_SLEEP": sleep,
        **env,
    }
    for name in ("marks", "spied"):
        (nhc / name).unlink(missing_ok=True)
    bash = shutil.which("bash") or "/bin/bash"
    proc = subprocess.run(
        [bash, str(DRIVER), str(conf), str(nhc / "scripts")], env=environ, capture_output=True, text=True, timeout=60
    )
    assert "command not found" not in proc.stderr and "No such file" not in proc.stderr, proc.stderr

    def lines_of(name: str) -> list[str]:
        path = nhc / name
        return path.read_text().splitlines() if path.exists() else []

    return Ran(proc.returncode, proc.stdout + proc.stderr, lines_of("marks"), lines_of("spied"))


def _status(nhc: Path, text: str) -> Path:
    path = nhc / "envaudit-health.status"
    path.write_text(text)
    return path


def _fresh(rc: int | str, line: str, age: float = 0) -> str:
    return f"{rc} {int(time.time() - age)}\n{line}\n"


@pytest.mark.parametrize(
    ("text", "args", "note"),
    [
        (lambda: _fresh(1, FAIL_LINE), "", f"check_envaudit:  {FAIL_LINE}"),
        (
            lambda: _fresh(2, "envaudit ERROR: no probe 'x'; `envaudit probes` lists them"),
            "",
            "check_envaudit:  envaudit could not check this node (exit 2, bad usage):  envaudit ERROR: no probe 'x'",
        ),
        (
            lambda: _fresh(3, "envaudit ERROR: terminated (SIGTERM): the audit did not complete"),
            "",
            "check_envaudit:  envaudit could not complete (exit 3):  envaudit ERROR: terminated (SIGTERM)",
        ),
        (lambda: _fresh(0, OK_LINE, age=1000), "", "s old (more than 900s): is its timer running?"),
        (lambda: _fresh(0, OK_LINE, age=4000), "-a 3600", "s old (more than 3600s): is its timer running?"),
        (lambda: _fresh(0, OK_LINE, age=-3600), "", "s in the future: is the clock right?"),
        (lambda: "x garbage\nenvaudit OK\n", "", "check_envaudit:  unreadable envaudit status file"),
        (lambda: "", "", "unreadable envaudit status file"),
        (lambda: f"0 {int(time.time())} 7\n{OK_LINE}\n", "", "unreadable envaudit status file"),
        (lambda: _fresh(0, OK_LINE), "-a ten", "max age \"ten\" is not a number of seconds"),
        (lambda: _fresh(0, OK_LINE), "-x", "check_envaudit:  Invalid option:  -x"),
        (lambda: _fresh(0, OK_LINE), "-f", "check_envaudit:  Option -f requires an argument."),
    ],
    ids=["fail", "usage", "incomplete", "stale", "stale-max-age", "future", "garbage", "empty", "extra", "bad-age",
         "bad-option", "no-argument"],
)  # fmt: skip
def test_the_check_fails_with_a_note_for_every_result_but_a_fresh_ok(
    nhc: Path, text: Callable[[], str], args: str, note: str
) -> None:
    status = _status(nhc, text())  # made now: the ages are the file's age when the check reads it
    ran = _run(nhc, f"* || check_envaudit -f {status} {args}".rstrip() if args != "-f" else "* || check_envaudit -f")
    assert ran.code == 1, ran.out
    (mark,) = ran.marks
    assert mark.startswith(f"offline {HOST}: ") and note in mark, ran.marks
    assert f"ERROR:  nhc:  Health check failed:  {mark.split(': ', 1)[1]}" in ran.out
    assert ran.spied == []


@pytest.mark.parametrize("args", ["", "-a 3600"])
def test_a_fresh_ok_passes_and_the_node_is_marked_online(nhc: Path, args: str) -> None:
    status = _status(nhc, _fresh(0, OK_LINE, age=5))
    ran = _run(nhc, f"* || check_envaudit -f {status} {args}")
    assert (ran.code, ran.marks, ran.spied) == (0, [f"online {HOST}"], []), ran.out


def test_the_status_file_set_in_nhc_conf_is_the_default(nhc: Path) -> None:
    status = _status(nhc, _fresh(1, FAIL_LINE))
    ran = _run(nhc, f"* || ENVAUDIT_STATUS_FILE={status}", "* || check_envaudit")
    assert ran.code == 1 and FAIL_LINE in ran.marks[0]


@pytest.mark.parametrize("kind", ["missing", "fifo", "directory", "not-ours", "unreadable-line"])
def test_a_status_file_that_cannot_be_trusted_fails_without_blocking(nhc: Path, kind: str) -> None:
    """A FIFO would block the read past the watchdog; a file another user owns could say anything."""
    path = nhc / "envaudit-health.status"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "not-ours":
        _status(nhc, _fresh(0, OK_LINE))
        os.chown(path, 65534, 65534)
    elif kind == "unreadable-line":
        _status(nhc, "0" * 100000 + f" {int(time.time())}\n{OK_LINE}\n")  # the read is bounded
    ran = _run(nhc, f"* || check_envaudit -f {path}")
    assert ran.code == 1 and len(ran.marks) == 1 and ran.spied == [], ran.out
    expected = {
        "missing": "no envaudit result",
        "unreadable-line": "unreadable envaudit status file",
    }.get(kind, "is not a readable regular file of this user's")
    assert expected in ran.marks[0], ran.marks


def test_a_check_for_other_hosts_does_not_run_here(nhc: Path) -> None:
    ran = _run(nhc, f"other* || check_envaudit -f {nhc / 'missing'}", "gpu-0* || check_envaudit -f /dev/null/x")
    assert ran.code == 1 and "no envaudit result (/dev/null/x missing)" in ran.marks[0]  # only the second ran


def test_with_nhc_check_all_a_failure_is_counted_and_the_checks_after_it_run(nhc: Path) -> None:
    failing = _status(nhc, _fresh(1, FAIL_LINE))
    ran = _run(nhc, f"* || check_envaudit -f {failing}", f"* || check_envaudit -f {nhc / 'nope'}", NHC_CHECK_ALL="1")
    assert ran.code == 2 and len(ran.marks) == 2 and "2 health checks failed" in ran.out, ran.out


def test_a_check_that_hangs_is_stopped_by_the_watchdog(nhc: Path) -> None:
    """The stand-in's watchdog is the driver's: the timeout note names the check (what a slow check would get)."""
    never = nhc / "never-written"
    os.mkfifo(never)
    (nhc / "scripts" / "slow.nhc").write_text(f"function check_slow() {{ read -r -t 30 _ <>{never}; }}\n")
    ran = _run(nhc, "* || check_slow", TIMEOUT="1")
    assert ran.code == 142 and 'Script timed out while executing "check_slow".' in ran.marks[0], ran.out


@pytest.mark.jax
@pytest.mark.parametrize("fault", [False, True], ids=["healthy", "faulty"])
def test_the_status_file_of_a_real_health_run_decides_the_check(
    nhc: Path, child_env: dict[str, str], fault: bool
) -> None:
    status = nhc / "state" / "envaudit-health.status"
    status.parent.mkdir()
    env = {**child_env, "PYTHONPATH": os.pathsep.join([*([str(FAULT)] if fault else []), str(ROOT)])}
    probe = "conv_chain" if fault else "dense_chain"
    proc = envaudit_run(PYTHON, "health", "--probe", probe, "--status-file", str(status), env=env, timeout=180)
    assert proc.returncode == (1 if fault else 0), proc.stdout + proc.stderr
    line = proc.stdout.rstrip("\n")

    ran = _run(nhc, f"* || check_envaudit -f {status} -a 900")

    if fault:
        assert (ran.code, ran.marks) == (1, [f"offline {HOST}: check_envaudit:  {line}"]), ran.out
        assert line.startswith("envaudit FAIL probe-conv-chain")
    else:
        assert (ran.code, ran.marks) == (0, [f"online {HOST}"]), ran.out


def _unit(name: str) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment, method-assign]  # systemd's keys are case-sensitive
    unit.read(NHC / name)
    return unit


def test_the_timer_runs_health_with_the_status_file_the_check_reads_often_enough(tmp_path: Path) -> None:
    service, timer = _unit("envaudit-health.service"), _unit("envaudit-health.timer")
    argv = service["Service"]["ExecStart"].split()
    default = re.search(r'ENVAUDIT_STATUS_FILE="\$\{ENVAUDIT_STATUS_FILE:-([^}]+)\}"', CHECK.read_text())
    max_age = re.search(r'ENVAUDIT_MAX_AGE="\$\{ENVAUDIT_MAX_AGE:-(\d+)\}"', CHECK.read_text())
    assert default and max_age
    assert argv[1:5] == ["-P", "-m", "envaudit", "health"]
    assert argv[argv.index("--status-file") + 1] == default[1]
    assert Path(default[1]).parent == Path("/var/lib") / service["Service"]["StateDirectory"]
    interval = int(timer["Timer"]["OnUnitActiveSec"].removesuffix("s"))
    assert 3 * interval <= int(max_age[1])  # one run that did not finish is not yet a stale result

    # systemd's own parser, with the audited Python pointed at this one (it checks that the program exists)
    analyze = _support.ensure_programs(["systemd-analyze"])["systemd-analyze"]
    for name in ("envaudit-health.service", "envaudit-health.timer"):
        (tmp_path / name).write_text((NHC / name).read_text().replace(argv[0], PYTHON))
    proc = subprocess.run(
        [analyze, "verify", *(str(tmp_path / n) for n in ("envaudit-health.service", "envaudit-health.timer"))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and not proc.stdout.strip() and not proc.stderr.strip(), proc.stdout + proc.stderr


def test_the_nhc_files_are_shellcheck_clean() -> None:
    shellcheck = _support.ensure_programs(["shellcheck"])["shellcheck"]
    proc = subprocess.run([shellcheck, str(CHECK), str(DRIVER)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
