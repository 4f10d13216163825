"""The Slurm health-check wrapper (scripts/slurm/envaudit-healthcheck.sh) runs as root: attacked by a real unprivileged
user (uid 65534) who owns the log's directory or one above it, by a log name swapped for a link while the check runs
(done deterministically by the fake envaudit, between the wrapper's check of the log and its writes), started from a
directory that user writes, and checked for the modes of what it leaves: its log root's alone, envaudit's metrics
readable by node_exporter."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import PYTHON, ROOT

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root, as slurmd runs the wrapper, and an attacker")

WRAPPER = ROOT / "scripts" / "slurm" / "envaudit-healthcheck.sh"
NOBODY = 65534
AS_NOBODY = f"setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups"
NODE = "ci-node"
FAIL_LINE = "envaudit FAIL probe-conv-chain: probe conv_chain computed a wrong answer"
DRAIN = f"update nodename={NODE} state=drain reason=envaudit: {FAIL_LINE}"
SECRET = "root only\n"


@dataclass
class Node:
    base: Path  # root's, mode 0755, under /tmp: the attacker can reach what is in it
    victim: Path  # a root-only file the attacker wants root to append to
    env_file: Path

    def configure(self, **settings: object) -> None:
        values = {
            "ENVAUDIT_PYTHON": self.base / "python",
            "SCONTROL": self.base / "scontrol",
            "ENVAUDIT_LOG_FILE": self.base / "log",
            "ENVAUDIT_LOCK_FILE": self.base / "lock",
            "SLURM_CONF_PATH": self.base / "slurm.conf",
            **settings,
        }
        self.env_file.write_text("".join(f"{k}={shlex.quote(str(v))}\n" for k, v in values.items()))

    def during_audit(self, script: str) -> None:
        """A shell script the fake envaudit runs (as root) while the wrapper waits for it: after the log's check."""
        (self.base / "during").write_text(script)

    def run(self, cwd: Path | None = None) -> tuple[int, list[str], str]:
        """Run the wrapper once, as slurmd does (root, umask 022), with envaudit failing, in `cwd` if given: (exit
        code, scontrol updates, stderr)."""
        calls = self.base / "calls"
        calls.write_text("")
        env = {
            "ENVAUDIT_HEALTHCHECK_ENV": str(self.env_file),
            "SLURMD_NODENAME": NODE,
            "ENVAUDIT_CACHE_DIR": os.environ.get("ENVAUDIT_CACHE_DIR", str(self.base / "cache")),
        }
        proc = subprocess.run(
            ["/bin/bash", "-c", 'umask 022; exec /bin/bash "$0"', str(WRAPPER)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=cwd,
        )
        return proc.returncode, calls.read_text().splitlines(), proc.stderr


@pytest.fixture
def node() -> Iterator[Node]:
    base = Path(tempfile.mkdtemp(prefix="envaudit-wrapper-"))
    base.chmod(0o755)
    victim = base / "secret"
    victim.write_text(SECRET)
    victim.chmod(0o600)
    d = shlex.quote(str(base))
    scontrol = base / "scontrol"
    scontrol.write_text(f"""#!/bin/bash
if [ "$1" = show ]; then
    echo "NodeName=$3 Arch=x86_64"
    echo "   State=IDLE ThreadsPerCore=1"
    exit 0
fi
echo "$*" >>{d}/calls
echo "scontrol said something"
""")
    python = base / "python"
    python.write_text(f"""#!/bin/bash
if [ -f {d}/during ]; then /bin/bash {d}/during; fi
echo "envaudit wrote this to stderr" >&2
echo {shlex.quote(FAIL_LINE)}
exit 1
""")
    for exe in (scontrol, python):
        exe.chmod(0o755)
    n = Node(base, victim, base / "healthcheck.env")
    n.configure()
    yield n
    subprocess.run(["rm", "-rf", str(base)], check=False)


def _nobodys(path: Path) -> Path:
    path.mkdir(mode=0o755)
    os.chown(path, NOBODY, NOBODY)
    return path


@pytest.mark.parametrize("where", ["its directory", "a directory above"])
def test_a_log_directory_another_user_owns_is_not_used(node: Node, where: str) -> None:
    """Debian's /var/log/slurm belongs to the slurm user: mode 0755 does not keep that user from replacing root's
    log with a link to a root-only file. The wrapper does not use such a log; its lines go to stderr."""
    owned = _nobodys(node.base / "slurm")
    if where == "its directory":
        log = owned / "envaudit.log"
        swap = f"{AS_NOBODY} sh -c 'rm -f {log}; ln -s {node.victim} {log}'"
    else:
        inner = owned / "root"
        inner.mkdir(mode=0o755)  # root's, mode 0755, but the attacker can rename it away and put another in its place
        log = inner / "envaudit.log"
        swap = f"{AS_NOBODY} sh -c 'mv {inner} {owned}/old; mkdir {inner}; ln -s {node.victim} {log}'"
    node.configure(ENVAUDIT_LOG_FILE=log)
    node.during_audit(swap)

    rc, calls, stderr = node.run()

    assert (rc, calls) == (1, [DRAIN]), stderr  # the decision does not depend on the log
    assert node.victim.read_text() == SECRET
    assert f"not logging to {log}" in stderr and f"{NODE} rc=1 FAIL; drained: {FAIL_LINE}" in stderr, stderr
    assert not any(p.is_file() and not p.is_symlink() and p.stat().st_uid == 0 for p in owned.rglob("*"))


@pytest.mark.parametrize("target", ["a root-only file", "a missing file (as /etc/nologin)"])
def test_a_log_swapped_for_a_link_after_the_check_is_never_followed(node: Node, target: str) -> None:
    """The log is checked, then opened once: every line (the wrapper's, envaudit's stderr, scontrol's output) goes
    through that descriptor, so a link put at the log's name afterwards is never followed, never creates a file."""
    victim = node.victim if target == "a root-only file" else node.base / "nologin"
    log = node.base / "log"
    node.during_audit(f"mv {log} {log}.checked; ln -s {victim} {log}")

    rc, calls, stderr = node.run()

    assert (rc, calls) == (1, [DRAIN]), stderr
    assert node.victim.read_text() == SECRET and not (node.base / "nologin").exists()
    written = (node.base / "log.checked").read_text()
    assert "envaudit wrote this to stderr" in written and "scontrol said something" in written, written
    assert f"{NODE} rc=1 FAIL; drained: {FAIL_LINE}" in written, written


def test_a_lock_directory_another_user_owns_is_not_used(node: Node) -> None:
    """Root opening (creating) a lock at a name another user controls could create a file anywhere: refused."""
    owned = _nobodys(node.base / "run")
    node.configure(ENVAUDIT_LOCK_FILE=owned / "envaudit.lock")

    rc, calls, stderr = node.run()

    assert (rc, calls) == (3, []), stderr  # could not check: neither drain nor resume
    assert f"unsafe lock file {owned}/envaudit.lock" in (node.base / "log").read_text()
    assert list(owned.iterdir()) == []


def forged_envaudit(where: Path, marker: Path) -> Path:
    """A directory another user owns, holding a package named envaudit whose __main__ says the node is healthy and
    leaves `marker` (with the uid that ran it) behind."""
    home = _nobodys(where)
    package = home / "envaudit"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(
        f"import os\nopen({str(marker)!r}, 'w').write(str(os.getuid()))\nprint('envaudit OK: forged')\n"
    )
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(home)], check=True)
    return home


def test_started_in_a_directory_another_user_writes_root_runs_the_installed_envaudit(node: Node) -> None:
    """`python -m envaudit` puts the working directory first on sys.path: started from a user's directory, the
    wrapper ran (as root) that user's envaudit/__main__.py, and its forged OK resumed or kept the node. The real
    envaudit, given an option it does not know, answers exit 2 in one line (no audit, no jax)."""
    marker = node.base / "forged-ran"
    home = forged_envaudit(node.base / "home", marker)
    node.configure(ENVAUDIT_PYTHON=PYTHON, ENVAUDIT_PYTHONPATH=ROOT, ENVAUDIT_HEALTH_ARGS="--no-such-option")

    rc, calls, stderr = node.run(cwd=home)

    log = (node.base / "log").read_text()
    assert not marker.exists(), f"root ran the forged envaudit (uid {marker.read_text()})"
    assert (rc, calls) == (2, []), f"{stderr}\n{log}"
    assert "envaudit: error:" in log and "forged" not in log, log  # the installed envaudit's own line


@pytest.mark.slow
def test_metrics_are_readable_by_node_exporter_and_the_log_is_roots_alone(node: Node) -> None:
    """The restrictive umask is the log's and the lock's only: the real `envaudit health --prometheus-dir` runs with
    the caller's umask (022), so node_exporter, another user, can read the textfile and the report."""
    prom = node.base / "prom"
    prom.mkdir(mode=0o755)
    node.configure(
        ENVAUDIT_PYTHON=PYTHON,
        ENVAUDIT_PYTHONPATH=ROOT,
        ENVAUDIT_HEALTH_ARGS="--probe dense_chain",
        ENVAUDIT_PROMETHEUS_DIR=prom,
    )

    rc, calls, stderr = node.run()

    assert (rc, calls) == (0, []), f"{stderr}\n{(node.base / 'log').read_text()}"
    for name in ("envaudit.prom", "envaudit-report.json"):
        assert stat.S_IMODE((prom / name).stat().st_mode) == 0o644, name
    for name in ("log", "lock"):
        assert stat.S_IMODE((node.base / name).stat().st_mode) == 0o600, name
    assert f"{NODE} rc=0 OK: envaudit OK" in (node.base / "log").read_text()
