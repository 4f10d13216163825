"""Shared test helpers: a sample report built from real-looking facts, and child-process environments."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import DirectoryBasedExampleDatabase

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.report import Finding, ProbeResult, Report, Subject

ROOT = Path(__file__).resolve().parent.parent
# The environments the suite builds (neural-tangents', tests/realenv's) are kept outside the checkout, where a cache
# belongs: ENVAUDIT_TEST_ENVS, else the user's cache directory; each named by what makes it, so a changed recipe
# builds anew and two checkouts never share one that points into the other.
USER_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
TEST_ENVS = Path(os.environ.get("ENVAUDIT_TEST_ENVS") or USER_CACHE / "envaudit-tests")
NT_RECIPE = hashlib.sha256((ROOT / "scripts" / "make-nt-env.sh").read_bytes() + sys.version.encode()).hexdigest()[:12]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# An accelerator here (an NVIDIA driver, or a TPU runtime): tests marked cpu_only assert what only a CPU-only machine
# gives (no NVML, platform cpu, float32 at the default precision, bitwise scatter-adds) and are skipped with that
# reason, instead of failing for the wrong one.
ACCELERATOR = Path("/proc/driver/nvidia/version").exists() or Path("/dev/accel0").exists()
# What the suite imports is compiled once and kept where Python keeps it (__pycache__ beside the source: ignored by git
# in the checkout, and the environments' own elsewhere), also where PYTHONDONTWRITEBYTECODE is set, as on CI's
# machine: there each worker rewrote every test module at collection (4.6 s of the fast loop's 30), and every audit of
# an environment the suite builds with uv compiled jax anew (6.2 s an audit against 3.4 s; TensorFlow's import 10.2 s
# against 5.5 s). For this process (pytest's rewritten test modules) and every child it starts.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reads or writes the real ~/.cache/envaudit: one cache for the session (its compilation cache
    saves every later audit the compilations of the first), in this process and in every child it starts."""
    os.environ["ENVAUDIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("envaudit-cache"))


@pytest.fixture(autouse=True)
def _shared_builds(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests that build real environments (`realenv`) share one envaudit cache across tests and runs, in
    TEST_ENVS beside the environments themselves: a stack one of them built and measured is remembered
    (files/buildmemory.py), keyed by everything the measurement depends on, the code that builds and measures it
    included, so a change to that code builds anew; what judges a measurement runs every time."""
    if request.node.get_closest_marker("realenv") is None:
        return
    shared = TEST_ENVS / "envaudit-cache"
    shared.mkdir(mode=0o700, parents=True, exist_ok=True)
    monkeypatch.setenv("ENVAUDIT_CACHE_DIR", str(shared))


def compiled() -> dict[str, str]:
    """For a test's own jax subprocess (a probe run alone, a bench child): the session's compilation cache, every
    program kept, as an audit's child keeps them (child/state.child_env). A fault that changes a program changes
    its key; one that changes results after the run is applied after a cached program all the same."""
    return {
        "JAX_COMPILATION_CACHE_DIR": os.path.join(os.environ["ENVAUDIT_CACHE_DIR"], "jax-compilation-cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }


@pytest.fixture(autouse=True, scope="session")
def _no_build() -> None:
    """`plan` builds its stack where uv is here (envaudit/commands/plan/building.py): no unit test does, in this
    process or a child it starts; the tests that build do so on purpose (tests/realenv/test_build.py)."""
    os.environ["ENVAUDIT_NO_BUILD"] = "1"


@contextlib.contextmanager
def sharing_the_machine(factory: pytest.TempPathFactory, *, alone: bool = False) -> Iterator[None]:
    """With pytest-xdist, what runs in a test or builds a fixture holds a shared lock, and a test that measures the
    machine's own load takes it exclusively: it announces itself (so no new test starts), then waits for the others
    to finish. Without xdist there is nothing beside it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    shared = factory.getbasetemp().parent  # one directory for all the workers of this run
    waiting = shared / "alone.waiting"
    with (shared / "alone.lock").open("a") as lock:
        if alone:
            while True:
                waiting.touch()  # again on every try: another alone test may have removed it when it got the lock
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(0.05)
            waiting.unlink(missing_ok=True)
        else:
            while waiting.exists():
                time.sleep(0.05)
            fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def interrupted_when(ready: Path, within: float = 60.0) -> Iterator[None]:
    """A Ctrl-C for this (the main) thread once `ready` exists: what a command under test writes when it has set
    itself up, so that the interrupt meets it running however busy the machine is (a fixed delay does not)."""
    import signal
    import threading

    main, done = threading.main_thread().ident, threading.Event()
    # a suite started in the background by a shell without job control (`(pytest ... &)`) inherits SIGINT ignored,
    # and the Ctrl-C sent below would never arrive (both interrupt tests "DID NOT RAISE" in such a CI run): Python's
    # own handler for the block, as a terminal's foreground job has it
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def watch() -> None:
        end = time.monotonic() + within
        while not done.is_set() and time.monotonic() < end:
            if ready.exists():
                assert main is not None
                signal.pthread_kill(main, signal.SIGINT)
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def _alone(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A test marked `alone` (it measures idle CPUs or a child's share of one) runs with no other test beside it."""
    with sharing_the_machine(tmp_path_factory, alone=request.node.get_closest_marker("alone") is not None):
        yield


CHECKED: set[tuple[str, str]] = set()  # (command, interpreter) found to be a command, in this worker


@pytest.fixture(autouse=True, scope="session")
def _every_fix_is_a_command() -> Iterator[None]:
    """Every fix of every report the suite assembles (each finding's and the plan's) is a command a shell runs as it
    is (tests/shell.py): the report that holds one that is not fails the test that made it, with the command."""
    from envaudit.judge import assemble
    from tests.shell import problems

    original = assemble.assemble

    def checked(*args: Any, **kwargs: Any) -> Report:
        report = original(*args, **kwargs)
        fixes = [f.remedy for f in report.findings if not f.remedy.saved] + [report.plan.fix]
        python = str(report.facts.python.get("executable") or "python")
        for command in {fix.command for fix in fixes} - {c for c, p in CHECKED if p == python}:
            wrong = problems(command, report.facts)
            assert not wrong, f"a printed fix is not a command: {command!r}: {wrong}"
            CHECKED.add((command, python))
        return report

    assemble.assemble = checked
    try:
        yield
    finally:
        assemble.assemble = original


@pytest.fixture(autouse=True, scope="session")
def _every_document_matches_its_schema() -> Iterator[None]:
    """Every report and triage the suite makes in this process is valid against `envaudit schema`
    (tests/schemacheck.py); what is not fails the test that made it, at its teardown."""
    from tests import schemacheck

    with schemacheck.watching():
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """The documents in-process and those the test's directory holds (read before tmp_path is removed)."""
    from tests import schemacheck

    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    found = schemacheck.written(tmp_path) if isinstance(tmp_path, Path) else []
    yield
    found = schemacheck.taken(item.nodeid) + found
    if found:
        pytest.fail("\n".join(found), pytrace=False)


# hypothesis keeps its examples outside the checkout too (it writes .hypothesis/ in the working directory otherwise)
set_hypothesis_home_dir(str(TEST_ENVS / "hypothesis"))  # its examples and the constants it caches
settings.register_profile("envaudit", database=DirectoryBasedExampleDatabase(str(TEST_ENVS / "hypothesis")))
settings.load_profile("envaudit")
# what Python and pytest write for themselves: the only paths a run may add to the checkout
OWN_CACHES = ("__pycache__", ".pytest_cache")


def _checkout_paths() -> set[str] | None:
    """The checkout's untracked and ignored paths, as git lists them (None where git cannot say)."""
    try:
        listed = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    found = {line[3:] for line in listed.stdout.splitlines() if line[:2] in ("??", "!!")}
    return {p for p in found if not any(part in OWN_CACHES for part in Path(p).parts)}


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the controller, or a run without workers
        session.config.stash[_BEFORE] = _checkout_paths()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Tests leave nothing in the checkout: a run that added a path to it fails, naming the paths."""
    if hasattr(session.config, "workerinput"):
        return
    before = session.config.stash.get(_BEFORE, None)
    after = _checkout_paths()
    if before is None or after is None:
        return
    added = sorted(after - before)
    if added:
        print(f"\nthe tests left {len(added)} path(s) in the checkout: {', '.join(added[:10])}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_BEFORE = pytest.StashKey[set[str] | None]()
INTEGRATION = os.environ.get("ENVAUDIT_INTEGRATION") == "1"  # .ci/run sets it: those tests install system packages


@pytest.hookimpl(optionalhook=True)  # xdist's hook: a run without xdist (`-p no:xdist`) does not know it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: a worker for each CPU this process may use, and one more. About a sixth of the whole suite's time its
    tests wait on children (a bound waited out, an install, a daemon) with their CPU idle, and the extra worker
    computes meanwhile: the whole suite took 665 s with 3 workers against 732 s with 2 on this project's 2-core
    machine; the fast loop takes the same either way. PYTEST_XDIST_AUTO_NUM_WORKERS, where set, decides (xdist's
    own hook reads it)."""
    del config
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The tests that install Debian's packages as root run only where asked (ENVAUDIT_INTEGRATION=1, as CI does):
    # deselected elsewhere, and counted as such, so a contributor's run of the README's command changes no system
    if not INTEGRATION:
        left_out = [item for item in items if item.get_closest_marker("integration")]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if not item.get_closest_marker("integration")]
    # The tests that need the machine to themselves run first: later, each waited for whatever ran beside it to end
    # (a real environment built in a clean clone takes minutes) while its own worker sat idle (6 minutes in all)
    # and then the real environments, whose tests take 5-70 s each: started early, none is left running alone at the
    # end while the other workers sit idle; among them, those that declare a cost start longest first
    items.sort(
        key=lambda item: (
            item.get_closest_marker("alone") is None,
            item.get_closest_marker("realenv") is None,
            -_cost(item),
        )
    )
    for item in items:
        if ACCELERATOR and item.get_closest_marker("cpu_only"):
            item.add_marker(pytest.mark.skip(reason="asserts CPU-only behaviour; this machine has an accelerator"))


def _cost(item: pytest.Item) -> int:
    marker = item.get_closest_marker("cost")
    return int(marker.args[0]) if marker else 0


def facts_from(fragment: dict[str, Any]) -> Facts:
    """A Facts value from a fragment (as in rule examples); missing parts are 'unknown'."""
    full: dict[str, Any] = {
        "packages": {},
        "python": {},
        "platform": {},
        "nvidia": {"status": "unknown"},
        "jax": {"status": "unknown"},
        "env": {},
    }
    full.update(fragment)
    return Facts.from_dict(full)


def sample_report() -> Report:
    facts = facts_from(
        {
            "packages": {"jax": "0.4.25", "jaxlib": "0.4.25", "neural-tangents": "0.6.5"},
            "python": {"version": "3.11.7", "implementation": "CPython", "virtualenv": True},
            "platform": {"system": "Linux", "machine": "x86_64", "memory_total_bytes": 2**34},
            "nvidia": {"status": "absent", "message": "NVML Shared Library Not Found", "gpus": []},
            "jax": {
                "status": "ok",
                "platform": "cpu",
                "jax_version": "0.4.25",
                "devices": [{"device_kind": "cpu"}],
            },
            "env": {"XLA_FLAGS": 'a "quoted" \\ flag'},
        }
    )
    return Report(
        facts=facts,
        findings=(
            Finding(
                Subject("rule", "demo-fail"),
                "fail",
                "a failing | finding",
                "detail",
                Fix(saved="pip install x"),
                ("https://example.org/a",),
            ),
            Finding(Subject("rule", "demo-warn"), "warn", "a warning", "", Fix(), ("https://example.org/b",), "probe"),
        ),
        probes=(ProbeResult("dense_chain", "pass", {"rel_err": 8.2e-7, "bitwise_equal": True}, 0.4),),
        created="2026-11-29T12:00:00Z",
        host={"hostname": "node01"},
        envaudit_version="0.1.0",
    )


@pytest.fixture
def child_env(tmp_path: Path) -> dict[str, str]:
    """The environment for envaudit subprocesses: this checkout importable, no colour."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.pop("NO_COLOR", None)
    return env


PYTHON = sys.executable
# A plan assumes this machine, and a release that computes wrong numbers there fails it (no probe runs in a plan):
# on x86-64 jaxlib 0.4.24-0.4.28's oneDNN miscompile, anywhere jaxlib 0.10.2's YNN fusion. The tests of other rules
# that plan those releases plan them beside both: on a machine without oneDNN, with the YNN workaround set.
BESIDE_MISCOMPILES = ("--machine", "aarch64", "--env", "XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=")


def envaudit_run(
    python: str | Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float,
    cwd: str | Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m envaudit ARGS` as a user runs it: its exit status, standard output and error as text; bounded."""
    return subprocess.run(
        [str(python), "-m", "envaudit", *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


NT_PYTHON = TEST_ENVS / f"venv-nt-{NT_RECIPE}" / "bin" / "python"


@pytest.fixture(scope="session")
def nt_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The second environment, where neural-tangents 0.6.5 imports (jax 0.4.25, numpy 1.26, TensorFlow); built by
    scripts/make-nt-env.sh on first use (about 15 s with uv, from PyPI) and kept in TEST_ENVS for later runs."""
    import subprocess

    home = NT_PYTHON.parent.parent
    TEST_ENVS.mkdir(parents=True, exist_ok=True)
    with sharing_the_machine(tmp_path_factory), (TEST_ENVS / "venv-nt.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # pytest-xdist: one worker builds it, the others wait for it
        if not NT_PYTHON.exists():  # built elsewhere and renamed into place, so an interrupted build is never used
            building = home.with_name(f".venv-nt.building.{os.getpid()}")
            subprocess.run(["rm", "-rf", str(building)], check=True)
            subprocess.run(
                ["bash", str(ROOT / "scripts" / "make-nt-env.sh"), str(building)],
                check=True,
                env={**os.environ, "PYTHON": sys.executable},
            )
            building.rename(home)
    return NT_PYTHON


# The last jax neural-tangents 0.6.5 fully runs with (implementation 3 raises from 0.4.26), 0.4.25, has XLA:CPU's
# oneDNN miscompile on x86-64 (openxla/xla#13054; the known_regressions probe measures it here): healthy is that
# stack as its users run it, with the workaround rule jaxlib-0424-cpu-onednn-dot-fusion names.
WORKAROUND_13054 = "--xla_disable_hlo_passes=onednn-matmul-rewriter"


@pytest.fixture
def nt_env(child_env: dict[str, str]) -> dict[str, str]:
    """The environment for envaudit run in the neural-tangents environment: child_env with the oneDNN workaround."""
    return {**child_env, "XLA_FLAGS": WORKAROUND_13054}


@pytest.fixture(scope="session")
def nt065(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """neural-tangents 0.6.5 installed for real, --no-deps, beside the current jax: pip is satisfied, import is not."""
    import subprocess

    target = tmp_path_factory.mktemp("nt065")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), "neural-tangents==0.6.5"],
        check=True,
        capture_output=True,
    )
    return target


# What released wheels hold, as derive/wheels.py keeps it (whole files, each checked against PyPI's sha256
# when read; the METADATA and members ranged out of them), by file name: a release's files never change
RELEASED = ("files", "metadata", "members")


def derive_cache(tmp_path: Path) -> Path:
    """Where a test that re-derives from real wheels works: ENVAUDIT_DERIVE_CACHE where set (one cache shared with
    derive/, its derivations included), else a fresh one under the test's own directory, so that every test
    derives anew, whose released files are kept in TEST_ENVS/released for later runs (fetching them was 18 of the
    19 s the haiku and flax sample took here)."""
    shared = os.environ.get("ENVAUDIT_DERIVE_CACHE")
    if shared:
        return Path(shared)
    cache = tmp_path / "cache"
    cache.mkdir()
    for kind in RELEASED:
        kept = TEST_ENVS / "released" / kind
        kept.mkdir(parents=True, exist_ok=True)
        (cache / kind).symlink_to(kept, target_is_directory=True)
    return cache
