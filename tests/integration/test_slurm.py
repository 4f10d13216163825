"""A real single-node Slurm (Debian's slurmctld, slurmd, munge) runs scripts/slurm/envaudit-healthcheck.sh.

The module fixture starts munged, slurmctld and slurmd on 127.0.0.1 with every file under a temporary directory and
``HealthCheckProgram`` set to a shim that calls the wrapper with this test's env file; the tests switch the env file
between a healthy audit (``--probe dense_chain``) and a faulty one (the conv_batch_scale fault first on PYTHONPATH,
``--probe conv_chain``) and watch the node's state through ``scontrol``. Teardown stops every daemon and checks that
no process is left behind. All waits are bounded polls; nothing asserts on wall-clock speed. The wrapper's decisions
are also tested one by one, fast, against a fake scontrol and a fake envaudit, and audit-nodes.sh's remote command
against a fake srun.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration import _support

pytestmark = pytest.mark.integration

WRAPPER = ROOT / "scripts" / "slurm" / "envaudit-healthcheck.sh"
AUDIT_NODES = ROOT / "scripts" / "slurm" / "audit-nodes.sh"
FAULT = ROOT / "tests" / "faults" / "conv_batch_scale"
NODE = "ci-node"
HEALTH_INTERVAL_S = 3
CHECK_TIMEOUT_S = 150.0  # several health checks (each a few seconds of audit) fit in it with room to spare
PROGRAMS = ("munged", "mungekey", "slurmctld", "slurmd", "scontrol", "srun", "flock", "timeout")

HEALTHY = {"ENVAUDIT_PYTHONPATH": str(ROOT), "ENVAUDIT_HEALTH_ARGS": "--probe dense_chain"}
FAULTY = {"ENVAUDIT_PYTHONPATH": f"{FAULT}{os.pathsep}{ROOT}", "ENVAUDIT_HEALTH_ARGS": "--probe conv_chain"}
LOG_LINE = re.compile(rf"^\S+ {NODE} rc=(\d+) (.*)$")


@dataclass
class Cluster:
    root: Path
    conf: Path
    env_file: Path
    check_log: Path
    prom_dir: Path
    programs: dict[str, str]
    client_env: dict[str, str]

    def scontrol(self, *args: str) -> str:
        proc = subprocess.run(
            [self.programs["scontrol"], *args], env=self.client_env, capture_output=True, text=True, timeout=30
        )
        assert proc.returncode == 0, f"scontrol {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def node(self) -> tuple[str, str]:
        """The node's State and Reason (without Slurm's ``[user@time]`` suffix)."""
        out = self.scontrol("show", "node", NODE)
        state = re.search(r"\bState=(\S+)", out)
        reason = re.search(r"^\s*Reason=(.*?)(?: \[[^\]]*\])?$", out, re.MULTILINE)
        return (state.group(1) if state else "", reason.group(1) if reason else "")

    def set_env(self, settings: dict[str, str]) -> None:
        """Rewrite the wrapper's env file atomically (the next health check reads it)."""
        values = {
            "ENVAUDIT_PYTHON": sys.executable,
            "ENVAUDIT_PROMETHEUS_DIR": str(self.prom_dir),
            "ENVAUDIT_LOG_FILE": str(self.check_log),
            "ENVAUDIT_LOCK_FILE": str(self.root / "healthcheck.lock"),
            "ENVAUDIT_TIMEOUT_S": "50",
            "SCONTROL": self.programs["scontrol"],
            "FLOCK_BIN": self.programs["flock"],
            "TIMEOUT_BIN": self.programs["timeout"],
            "SLURM_CONF_PATH": str(self.conf),
            **settings,
        }
        tmp = self.env_file.with_suffix(".tmp")
        tmp.write_text("".join(f"{key}={shlex.quote(value)}\n" for key, value in values.items()))
        tmp.replace(self.env_file)

    def checks_since(self, offset: int) -> list[tuple[int, str]]:
        """(exit code, message) of every health check the wrapper logged after byte ``offset`` of its log."""
        try:
            with self.check_log.open("rb") as handle:
                handle.seek(offset)
                text = handle.read().decode(errors="replace")
        except FileNotFoundError:
            return []
        return [(int(m.group(1)), m.group(2)) for m in map(LOG_LINE.match, text.splitlines()) if m]

    def log_offset(self) -> int:
        try:
            return self.check_log.stat().st_size
        except FileNotFoundError:
            return 0

    def logs(self) -> str:
        state = ""
        try:
            state = self.scontrol("show", "node", NODE)
        except AssertionError as exc:
            state = str(exc)
        names = ("healthcheck.log", "slurmd.log", "slurmctld.log", "munged.log")
        return "\n".join([state, *(_support.tail(self.root / name) for name in names)])


def _slurm_conf(root: Path) -> str:
    ctld_port, slurmd_port = _support.free_port(), _support.free_port()
    return f"""\
ClusterName=envaudit-ci
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket.2
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
HealthCheckProgram={root}/healthcheck-shim.sh
HealthCheckInterval={HEALTH_INTERVAL_S}
HealthCheckNodeState=ANY
NodeName={NODE} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 State=UNKNOWN
PartitionName=ci Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    programs = _support.ensure_programs(PROGRAMS)
    started = time.monotonic()
    # A short path of our own: the munge socket path must fit in sun_path (108 bytes); also the tag of every process.
    root = Path(tempfile.mkdtemp(prefix="envaudit-slurm-", dir="/tmp"))
    tag = str(root)
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        for sub in ("state", "spool", "prom"):
            (root / sub).mkdir()
        (root / "munge").mkdir(mode=0o755)
        os.chmod(root / "munge", 0o755)  # munged refuses a socket directory of mode 0700
        os.chmod(root, 0o755)
        conf = root / "slurm.conf"
        conf.write_text(_slurm_conf(root))
        env_file = root / "healthcheck.env"
        shim = root / "healthcheck-shim.sh"
        shim.write_text(
            "#!/bin/sh\n"
            f"ENVAUDIT_HEALTHCHECK_ENV={shlex.quote(str(env_file))}\n"
            "export ENVAUDIT_HEALTHCHECK_ENV\n"
            f"exec /bin/bash {shlex.quote(str(WRAPPER))}\n"
        )
        shim.chmod(0o755)
        base_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "ENVAUDIT_IT_TAG": tag}
        client_env = {**os.environ, "SLURM_CONF": str(conf), "ENVAUDIT_IT_TAG": tag}
        for var in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_NODELIST"):
            client_env.pop(var, None)
        c = Cluster(root, conf, env_file, root / "healthcheck.log", root / "prom", programs, client_env)
        c.set_env(HEALTHY)

        key = root / "munge.key"
        subprocess.run([programs["mungekey"], "-c", "-f", "-k", str(key)], check=True, timeout=30, capture_output=True)
        key.chmod(0o600)
        daemons.append(
            _start(
                [
                    programs["munged"],
                    "-F",
                    "--force",
                    f"--socket={root}/munge/munge.socket.2",
                    f"--key-file={key}",
                    f"--pid-file={root}/munged.pid",
                    f"--log-file={root}/munged.log",
                    f"--seed-file={root}/munged.seed",
                ],
                base_env,
                root / "munged.out",
            )
        )
        _support.wait_for("the munge socket", lambda: (root / "munge" / "munge.socket.2").exists(), 30, context=c.logs)
        daemon_env = {**base_env, "SLURM_CONF": str(conf)}
        daemons.append(_start([programs["slurmctld"], "-D", "-c", "-f", str(conf)], daemon_env, root / "slurmctld.out"))
        daemons.append(_start([programs["slurmd"], "-D", "-N", NODE, "-f", str(conf)], daemon_env, root / "slurmd.out"))

        def ready() -> bool:
            for name, proc in zip(("munged", "slurmctld", "slurmd"), daemons, strict=True):
                assert proc.poll() is None, f"{name} exited with {proc.returncode}\n{c.logs()}"
            try:
                state, _ = c.node()
            except (AssertionError, subprocess.TimeoutExpired):
                return False
            return state.startswith("IDLE")

        _support.wait_for("the node to register as IDLE", ready, 90, interval=0.5, context=c.logs)
        print(f"\nslurm cluster up in {time.monotonic() - started:.1f} s under {root}")
        yield c
    finally:
        for proc in reversed(daemons):
            _support.stop(proc)
        for name, expect in (("slurmd.pid", "slurmd"), ("slurmctld.pid", "slurmctld"), ("munged.pid", "munged")):
            pid = _support.pid_from_file(root / name)
            if pid is not None:
                _support.kill_pid(pid, expect)
        left = _support.reap_tagged(tag)
        logs = "\n".join(_support.tail(root / n, 15) for n in ("healthcheck.log", "slurmd.log", "slurmctld.log"))
        shutil.rmtree(root, ignore_errors=True)
        print(f"\nslurm fixture: {time.monotonic() - started:.1f} s from start to teardown")
        assert not left, f"processes left behind: {left}\n{logs}"


def _wait_checks(c: Cluster, offset: int, what: str, want: int = 1, rc: int | None = None) -> list[tuple[int, str]]:
    """Wait until ``want`` health checks (with exit code ``rc`` if given) were logged after ``offset``."""

    def enough() -> list[tuple[int, str]] | None:
        checks = [chk for chk in c.checks_since(offset) if rc is None or chk[0] == rc]
        return checks if len(checks) >= want else None

    return _support.wait_for(what, enough, CHECK_TIMEOUT_S, interval=0.5, context=c.logs)


def test_healthy_node_stays_idle(cluster: Cluster) -> None:
    cluster.set_env(HEALTHY)
    offset = cluster.log_offset()
    states = []

    def two_passes() -> bool:
        states.append(cluster.node()[0])
        return len([chk for chk in cluster.checks_since(offset) if chk[0] == 0]) >= 2

    _support.wait_for("two passing health checks", two_passes, CHECK_TIMEOUT_S, interval=0.5, context=cluster.logs)
    assert states and all("DRAIN" not in s for s in states), states
    assert cluster.node()[0].startswith("IDLE")
    assert all(rc == 0 and msg.startswith("OK") for rc, msg in cluster.checks_since(offset)), cluster.logs()
    # The wrapper passes --prometheus-dir: the metrics and the report are beside each other.
    report = json.loads((cluster.prom_dir / "envaudit-report.json").read_text())
    assert report["schema"] == "envaudit/report/v1" and report["verdict"] in ("ok", "warn")
    assert 'envaudit_verdict{verdict="fail"} 0' in (cluster.prom_dir / "envaudit.prom").read_text()


def audit_nodes(
    out: Path, python: str, audit_args: str, *srun_args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """scripts/slurm/audit-nodes.sh: reports into `out`, envaudit run by `python` with `audit_args`, srun given the
    rest."""
    argv = ["bash", str(AUDIT_NODES), "-o", str(out), "-p", python, "-a", audit_args]
    return subprocess.run(
        [*argv, *(["--", *srun_args] if srun_args else [])],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_audit_nodes_collects_one_report_per_node(cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    env = {**cluster.client_env, "PYTHONPATH": str(ROOT)}
    proc = audit_nodes(out, sys.executable, "--probe dense_chain", "-N", "1", "-w", NODE, "--time", "5", env=env)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{_support.tail(out / 'srun.err')}"
    reports = sorted(p.name for p in out.glob("*.json"))
    assert reports == [f"{socket.gethostname().split('.')[0]}.json"], reports
    report = json.loads((out / reports[0]).read_text())
    assert report["schema"] == "envaudit/report/v1"
    assert [p["name"] for p in report["probes"]] == ["dense_chain"]
    assert "1 report(s)" in proc.stdout


def test_fault_drains_with_envaudit_reason_then_pass_resumes(cluster: Cluster) -> None:
    cluster.set_env(FAULTY)

    def drained() -> str | None:
        state, reason = cluster.node()
        return reason if "DRAIN" in state and reason.startswith("envaudit:") else None

    reason = _support.wait_for(
        "the node drained by envaudit", drained, CHECK_TIMEOUT_S, interval=0.5, context=cluster.logs
    )
    assert "FAIL" in reason and len(reason) <= len("envaudit: ") + 80, reason
    # The faulty stack's report and metrics say the same.
    assert 'envaudit_verdict{verdict="fail"} 1' in (cluster.prom_dir / "envaudit.prom").read_text()

    cluster.set_env(HEALTHY)

    def resumed() -> bool:
        state, _ = cluster.node()
        return "DRAIN" not in state and state.startswith("IDLE")

    _support.wait_for(
        "the node resumed after the fault was removed", resumed, CHECK_TIMEOUT_S, interval=0.5, context=cluster.logs
    )
    # the wrapper logs its resume after slurmctld has it: the node can show IDLE a moment before the line is written
    _support.wait_for(
        "the resume logged",
        lambda: any(rc == 0 and "resumed" in msg for rc, msg in cluster.checks_since(0)),
        CHECK_TIMEOUT_S,
        context=cluster.logs,
    )


def test_operator_drain_is_never_resumed_nor_overwritten(cluster: Cluster) -> None:
    cluster.set_env(HEALTHY)
    cluster.scontrol("update", f"nodename={NODE}", "state=drain", "reason=maintenance")
    try:
        offset = cluster.log_offset()
        checks = _wait_checks(cluster, offset, "two passing checks on the operator-drained node", want=2, rc=0)
        state, reason = cluster.node()
        assert "DRAIN" in state and reason == "maintenance", (state, reason, checks)
        assert any("not ours" in msg for _, msg in checks), checks

        # A failing check does not replace the operator's reason either.
        cluster.set_env(FAULTY)
        offset = cluster.log_offset()
        _wait_checks(cluster, offset, "a failing check on the operator-drained node", rc=1)
        state, reason = cluster.node()
        assert "DRAIN" in state and reason == "maintenance", (state, reason)
    finally:
        # Checks run one at a time: once a passing one is logged after the switch, no faulty one is left in flight
        # that could drain the node after the operator resumes it.
        cluster.set_env(HEALTHY)
        _wait_checks(cluster, cluster.log_offset(), "a passing check after the fault was removed", rc=0)
        cluster.scontrol("update", f"nodename={NODE}", "state=resume")


# ---- the wrapper's decisions, with a fake scontrol and a fake envaudit (no daemons; fast) ----------------------------


@dataclass
class Fakes:
    root: Path
    env_file: Path

    def run(self, rc: int, line: str, state: str, reason: str = "") -> tuple[int, list[str]]:
        """Run the wrapper once with envaudit answering (rc, line) on a node in (state, reason); scontrol updates."""
        (self.root / "rc").write_text(str(rc))
        (self.root / "line").write_text(line)
        (self.root / "state").write_text(state)
        (self.root / "reason").write_text(reason)
        calls = self.root / "calls"
        calls.write_text("")
        proc = subprocess.run(
            ["/bin/bash", str(WRAPPER)],
            env={"ENVAUDIT_HEALTHCHECK_ENV": str(self.env_file), "SLURMD_NODENAME": NODE},
            capture_output=True,
            text=True,
            timeout=60,
        )
        return proc.returncode, calls.read_text().splitlines()


@pytest.fixture
def fakes(tmp_path: Path) -> Fakes:
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f"""#!/bin/bash
d={shlex.quote(str(tmp_path))}
if [ "$1" = show ]; then
    echo "NodeName=$3 Arch=x86_64"
    echo "   State=$(cat "$d/state") ThreadsPerCore=1"
    if [ -s "$d/reason" ]; then echo "   Reason=$(cat "$d/reason") [root@2026-01-01T00:00:00]"; fi
    exit 0
fi
echo "$*" >>"$d/calls"
""")
    python = tmp_path / "python"
    d = shlex.quote(str(tmp_path))
    python.write_text(f'#!/bin/bash\ncat {d}/line\nexit "$(cat {d}/rc)"\n')
    for exe in (scontrol, python):
        exe.chmod(0o755)
    env_file = tmp_path / "healthcheck.env"
    settings = {
        "ENVAUDIT_PYTHON": python,
        "SCONTROL": scontrol,
        "ENVAUDIT_LOG_FILE": tmp_path / "log",
        "ENVAUDIT_LOCK_FILE": tmp_path / "lock",
        "SLURM_CONF_PATH": tmp_path / "slurm.conf",
    }
    env_file.write_text("".join(f"{k}={shlex.quote(str(v))}\n" for k, v in settings.items()))
    return Fakes(tmp_path, env_file)


FAIL_LINE = "envaudit FAIL probe-conv-chain: probe conv_chain computed a wrong answer"
OK_LINE = "envaudit OK: 0 fail, 0 warn; 1/1 probes pass"
DRAIN = f"update nodename={NODE} state=drain reason=envaudit: {FAIL_LINE}"


@pytest.mark.parametrize(
    ("rc", "line", "state", "reason", "want_rc", "want_calls"),
    [
        (0, OK_LINE, "IDLE", "", 0, []),
        (1, FAIL_LINE, "IDLE", "", 1, [DRAIN]),
        (1, FAIL_LINE, "MIXED", "", 1, [DRAIN]),
        (1, FAIL_LINE, "IDLE+DRAIN", f"envaudit: {FAIL_LINE}", 1, []),  # already drained with this reason
        (1, FAIL_LINE, "IDLE+DRAIN", "envaudit: envaudit FAIL x: y", 1, [DRAIN]),  # our older reason: updated
        (1, FAIL_LINE, "IDLE+DRAIN", "maintenance", 1, []),  # an operator's drain keeps its reason
        (0, OK_LINE, "IDLE+DRAIN", f"envaudit: {FAIL_LINE}", 0, [f"update nodename={NODE} state=resume"]),
        (0, OK_LINE, "ALLOCATED+DRAIN", "envaudit: old", 0, [f"update nodename={NODE} state=resume"]),
        (0, OK_LINE, "IDLE+DRAIN", "maintenance", 0, []),  # never resume someone else's drain
        (0, OK_LINE, "IDLE+DRAIN", "maintenance, see envaudit: x", 0, []),
        (0, OK_LINE, "DOWN", "Not responding", 0, []),
        (2, "", "IDLE", "", 2, []),  # bad usage: Unknown
        (3, "envaudit ERROR: the audit could not complete", "IDLE", "", 3, []),
        (1, "", "IDLE", "", 3, []),  # python died before envaudit printed its line: not a verdict
        (1, "Traceback (most recent call last):", "IDLE", "", 3, []),
    ],
)
def test_wrapper_decisions(
    fakes: Fakes, rc: int, line: str, state: str, reason: str, want_rc: int, want_calls: list[str]
) -> None:
    assert fakes.run(rc, line, state, reason) == (want_rc, want_calls), _support.tail(fakes.root / "log")


def test_wrapper_without_a_writable_log_still_decides(fakes: Fakes) -> None:
    with fakes.env_file.open("a") as handle:
        handle.write(f"ENVAUDIT_LOG_FILE={fakes.root}/no/such/dir/log\n")
    assert fakes.run(1, FAIL_LINE, "IDLE") == (1, [DRAIN])
    assert fakes.run(0, OK_LINE, "IDLE+DRAIN", "envaudit: x") == (0, [f"update nodename={NODE} state=resume"])


def test_wrapper_skips_while_another_check_runs(fakes: Fakes) -> None:
    with (fakes.root / "lock").open("w") as lock:
        subprocess.run(["flock", "-n", str(lock.fileno())], pass_fds=(lock.fileno(),), check=True, timeout=10)
        assert fakes.run(1, FAIL_LINE, "IDLE") == (0, [])
    assert "skipped" in (fakes.root / "log").read_text()


@pytest.mark.parametrize("planted", ["a link to a secret", "an open directory"])
def test_wrapper_as_root_never_appends_through_a_planted_link(fakes: Fakes, tmp_path: Path, planted: str) -> None:
    """The wrapper runs as root: a log path someone could plant a link at (or in a directory others can write to)
    is not used; its lines go to stderr instead, and the decision is the same."""
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # (mkdir's mode is cut by the umask)
    log = shared / "envaudit.log" if planted == "an open directory" else fakes.root / "planted.log"
    if planted == "a link to a secret":
        log.symlink_to(secret)
    with fakes.env_file.open("a") as handle:
        handle.write(f"ENVAUDIT_LOG_FILE={shlex.quote(str(log))}\n")
    assert fakes.run(1, FAIL_LINE, "IDLE") == (1, [DRAIN])
    assert secret.read_text() == "root only\n" and not (shared / "envaudit.log").exists()


# ---- audit-nodes.sh's remote command, with a fake srun that runs the one task here (no daemons; fast) ---------------


def _fake_srun(where: Path) -> Path:
    """Runs the task command srun is given (what follows its options) once, here, labelled as task 0."""
    srun = where / "srun"
    srun.write_text(
        '#!/bin/bash\nwhile [ "$#" -gt 0 ] && [ "$1" != /bin/bash ]; do shift; done\n"$@" | sed "s/^/0: /"\n'
    )
    srun.chmod(0o755)
    return srun


@pytest.mark.parametrize("python", ["absolute", "relative"])
def test_audit_nodes_runs_the_installed_envaudit_whatever_its_working_directory(tmp_path: Path, python: str) -> None:
    """srun starts each task in the directory audit-nodes.sh was started in: `python -m envaudit` there put that
    directory first on sys.path, so an envaudit/ package in it (another user's, when root runs this from /tmp)
    answered for every node. The installed envaudit, given an option it does not know, exits 2: no report. A
    relative -p PYTHON is still found, in that directory."""
    workdir = tmp_path / "workdir"
    (workdir / "envaudit").mkdir(parents=True)
    marker = tmp_path / "forged-ran"
    (workdir / "envaudit" / "__init__.py").write_text("")
    (workdir / "envaudit" / "__main__.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nprint('{{\"schema\": \"envaudit/report/v1\"}}')\n"
    )
    (workdir / "bin").mkdir()
    (workdir / "bin" / "python").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    (workdir / "bin" / "python").chmod(0o755)
    out = tmp_path / "reports"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SRUN": str(_fake_srun(tmp_path))}
    interpreter = str(workdir / "bin" / "python") if python == "absolute" else "bin/python"
    proc = audit_nodes(out, interpreter, "--no-such-option", env=env, cwd=workdir)
    assert not marker.exists(), proc
    assert proc.returncode == 1 and "0 report(s)" in proc.stdout, proc
    assert "envaudit: error:" in (out / "srun.err").read_text()  # the installed envaudit's own line
