"""The child-process runner: the protocol parsed, odd children survived, interrupts and bounds enforced, and the
environment the child gets (what envaudit changes in it, and what it never changes)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from envaudit.child import state
from envaudit.files import probefiles
from envaudit.model.report import ProbeRun
from tests.conftest import PYTHON, envaudit_run

TASK = state.Task(ProbeRun("x"), "float32", Path("x.py"))


def test_parse_result_distinguishes_unreadable_and_import_errors() -> None:
    assert state.parse_result(TASK, {"event": "result", "result": "garbage"}).metrics == {"error_kind": "unreadable"}
    imp = state.parse_result(TASK, {"event": "error", "kind": "import", "error": "ImportError: no jax"})
    assert (imp.status, imp.metrics["error_kind"], imp.message) == ("error", "import", "ImportError: no jax")
    ok = state.parse_result(TASK, {"event": "result", "result": {"status": "pass", "metrics": {"a": 1.0}}})
    assert (ok.status, ok.metrics) == ("pass", {"a": 1.0})


@pytest.mark.parametrize("name", sorted(probefiles.available()))
def test_probe_summaries(name: str) -> None:
    assert probefiles.summary(probefiles.available()[name]).startswith(f"Probe {name}")


RUNNER = """
import sys
from pathlib import Path
from envaudit.files import probefiles
from envaudit.child import runner, state
probefiles.probes_dir = lambda: Path(sys.argv[1])  # a directory of test probes instead of the shipped ones
outcome = runner.run(state.Options(("odd",), timeout=5, total=30, facts=False))
print([(r.run.label, r.status, r.message) for r in outcome.results])
"""


@pytest.mark.parametrize(
    ("body", "status"),
    [
        # a probe that answers, then keeps the interpreter alive at exit (a non-daemon thread, an atexit hang)
        ("import threading, time\nthreading.Thread(target=time.sleep, args=(3600,)).start()\n", "pass"),
        # bytes that are not UTF-8 on stderr, then enough output to fill a pipe nobody drains
        ("import os\nos.write(2, b'\\xff\\xfe' * 10 + b'x' * 400000)\n", "pass"),
    ],
)
def test_runner_survives_odd_children(tmp_path: Path, child_env: dict[str, str], body: str, status: str) -> None:
    (tmp_path / "odd.py").write_text(
        f"NAME = 'odd'\n\ndef run(precision='auto'):\n{textwrap.indent(body, '    ')}"
        "    return {'name': 'odd', 'status': 'pass', 'metrics': {}}\n"
    )
    proc = subprocess.run(
        [PYTHON, "-c", RUNNER, str(tmp_path)], env=child_env, capture_output=True, text=True, timeout=120
    )  # a runner that waited on the lingering child would hit this
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.startswith(f"[('odd', '{status}'")


FORKED = RUNNER.replace("timeout=5, total=30", "timeout=600, total=600")


def test_a_forked_helper_holding_the_pipes_neither_stalls_the_run_nor_outlives_it(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """The child said `done` and exited; a helper it forked still holds the protocol pipe. The runner must not
    wait for the end of output (the per-probe bound here is 600 s, so waiting would hit this test's timeout),
    and the helper is killed with the child's process group."""
    (tmp_path / "odd.py").write_text(
        "NAME = 'odd'\n\ndef run(precision='auto'):\n    import os, time\n"
        "    if os.fork() == 0:\n        time.sleep(3600)\n"
        "    return {'name': 'odd', 'status': 'pass', 'metrics': {}}\n"
    )
    proc = subprocess.run(
        [PYTHON, "-c", FORKED, str(tmp_path)], env=child_env, capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.startswith("[('odd', 'pass'"), proc.stderr
    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path / "odd.py")], capture_output=True, text=True)
    assert leftovers.stdout == "", "a process the probe left behind outlived the audit"


INTERRUPTED = """
import signal, sys
from pathlib import Path
import psutil
from envaudit.files import probefiles
from envaudit.child import runner, state
probefiles.probes_dir = lambda: Path(sys.argv[1])
def interrupt(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGALRM, interrupt)
signal.alarm(3)  # Ctrl-C while the probe child sleeps
try:
    runner.run(state.Options(("odd",), timeout=60, total=60, facts=False))
except KeyboardInterrupt:
    print("interrupted", [p.cmdline()[-1] for p in psutil.Process().children(recursive=True)])
"""


@pytest.mark.slow
def test_an_interrupt_kills_the_probe_child(tmp_path: Path, child_env: dict[str, str]) -> None:
    """The child runs in its own session (a terminal's Ctrl-C does not reach it), so the runner must kill it."""
    (tmp_path / "odd.py").write_text(
        "NAME = 'odd'\n\ndef run(precision='auto'):\n    import time\n    time.sleep(3600)\n"
    )
    proc = subprocess.run(
        [PYTHON, "-c", INTERRUPTED, str(tmp_path)], env=child_env, capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.strip() == "interrupted []", proc.stderr


def test_the_child_gets_no_gpu_preallocation_unless_the_user_chose() -> None:
    env, changes = state.child_env(cache=False, environ={"PATH": "/bin"})
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and changes["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    user = {"XLA_PYTHON_CLIENT_PREALLOCATE": "true", "CUDA_DEVICE_ORDER": "FASTEST_FIRST"}
    env, changes = state.child_env(cache=False, environ=user)
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true" and changes == {}  # what the user set wins


@pytest.mark.parametrize(("visible", "ordered"), [(None, True), ("GPU-1a2b,GPU-3c4d", True), ("1,0", False)])
def test_devices_are_numbered_in_bus_order_unless_indices_were_chosen(visible: str | None, ordered: bool) -> None:
    """So that jax's device i is the i-th visible GPU by PCI bus id, as NVML names them; but CUDA reads the
    indices of CUDA_VISIBLE_DEVICES in its device order, so changing the order would change which GPUs run."""
    environ = {"CUDA_VISIBLE_DEVICES": visible} if visible else {}
    _, changes = state.child_env(cache=False, environ=environ)
    assert (changes.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID") is ordered


ENVIRONMENT = """
import json, os, sys
from pathlib import Path
from envaudit.files import probefiles
from envaudit.child import runner, state
probefiles.probes_dir = lambda: Path(sys.argv[1])
outcome = runner.run(state.Options(("env",), timeout=60, total=60, cache=False))
print(json.dumps({"metrics": outcome.results[0].metrics, "jax": outcome.jax}))
"""


@pytest.mark.jax
def test_the_child_really_runs_with_that_environment(tmp_path: Path, child_env: dict[str, str]) -> None:
    """A probe that reports the variable: the running child has it, and facts.jax says envaudit set it."""
    (tmp_path / "env.py").write_text(
        "import os\n\ndef run(precision='auto'):\n    value = os.environ.get("
        "'XLA_PYTHON_CLIENT_PREALLOCATE')\n    return {'name': 'env', 'status': 'pass',"
        " 'metrics': {'preallocate': value}}\n"
    )
    for user, seen in ((None, "false"), ("true", "true")):
        env = {k: v for k, v in child_env.items() if k != "XLA_PYTHON_CLIENT_PREALLOCATE"}
        env |= {"XLA_PYTHON_CLIENT_PREALLOCATE": user} if user else {}
        proc = subprocess.run(
            [PYTHON, "-c", ENVIRONMENT, str(tmp_path)], env=env, capture_output=True, text=True, timeout=120
        )
        out = json.loads(proc.stdout)
        assert out["metrics"] == {"preallocate": seen}, proc.stderr
        assert out["jax"]["child_env"].get("XLA_PYTHON_CLIENT_PREALLOCATE") == (None if user else "false")
        assert out["jax"]["status"] == "ok" and out["jax"]["returncode"] == 0


def test_device_memory_statistics_are_kept_with_the_larger_peak() -> None:
    run = state.Run(state.Options(), deadline=0.0)
    run.remember_memory([{"id": 0, "peak_bytes_in_use": 300, "bytes_in_use": 10, "bytes_limit": 1000}])
    run.remember_memory([{"id": 0, "peak_bytes_in_use": 200, "bytes_in_use": 20}, {"id": "x"}, "junk"])
    run.finish_facts(ended=None, timed_out=False, seconds=0.0)
    facts = run.outcome().jax
    assert facts is not None and facts["device_memory"] == [
        {"id": 0, "peak_bytes_in_use": 300, "bytes_in_use": 20, "bytes_limit": 1000}
    ]


@pytest.mark.parametrize("total", [0.5, 2.0, 10.0, 35.0, 100.0])
def test_a_budgeted_run_takes_what_fits_its_bound_in_order_and_says_what_it_left_out(total: float) -> None:
    known = probefiles.available()
    names = tuple(known)
    opts = state.Options(names, precision="both", timeout=1.0, total=total, budget=True)
    todo, skipped = state.plan(opts)
    spent, budget = 0.0, state.budget(opts)
    assert budget == max(min(total * state.BUDGET_SHARE, total - state.JAX_START_S), 0)  # the CPU's start
    for label in state.labels(opts):  # first fit, in the order asked for
        cost = probefiles.cost(known[label.partition("[")[0]])
        run = [t for t in todo if t.label == label]
        assert bool(run) == (spent + cost <= budget), (label, spent, cost, budget)
        if run:
            spent += cost
            assert run[0].timeout == max(opts.timeout, 2 * cost)  # never less than twice what it declares
        else:
            left = next(r for r in skipped if r.run.label == label)
            assert left.status == "skip" and "--total-timeout" in left.message
            assert left.metrics["declared_cost_s"] == cost
    assert len(todo) + len(skipped) == 2 * len(names)
    unbudgeted, none_skipped = state.plan(state.Options(names, total=total))
    assert len(unbudgeted) == len(names) and none_skipped == []  # audit runs everything asked for


@pytest.mark.jax
def test_health_says_which_probes_its_bound_left_out(
    tmp_path: Path, child_env: dict[str, str], nt_env: dict[str, str], nt_python: Path
) -> None:
    """A real node check with a bound too small for the costliest probe: the rest run, and that one is a skip
    that names the bound (and a warning), never a timeout that would drain the node; where what it needs is
    installed (neural-tangents: the nt environment), since elsewhere no bound would run it. Named with --probe,
    it runs whatever its cost: the user chose it. A bound that holds no probe at all is a usage error."""
    known = probefiles.available()
    costly = max(known, key=lambda n: probefiles.cost(known[n]))
    cheap = min(known, key=lambda n: probefiles.cost(known[n]))
    total = 20.0  # time enough for jax to start on a slow machine, not for the costliest probe
    assert probefiles.cost(known[cheap]) <= state.budget(state.Options(total=total)) < probefiles.cost(known[costly])
    others = [arg for name in known if name not in (cheap, costly) for arg in ("--skip-probe", name)]

    def health(*argv: str, python: str = PYTHON) -> tuple[subprocess.CompletedProcess[str], dict[str, dict]]:  # type: ignore[type-arg]
        env = nt_env if python != PYTHON else child_env
        proc = envaudit_run(python, "health", "--prometheus-dir", str(tmp_path), *argv, env=env, timeout=300)
        report = json.loads((tmp_path / "envaudit-report.json").read_text()) if proc.returncode != 2 else {}
        return proc, report

    proc, report = health(*others, "--total-timeout", str(total), python=str(nt_python))
    found = {p["name"]: p for p in report["probes"]}
    assert proc.returncode == 0 and proc.stdout.startswith("envaudit OK"), proc.stdout + proc.stderr
    assert found[cheap]["status"] == "pass" and found[costly]["status"] == "skip"
    assert "--total-timeout" in found[costly]["message"]
    assert {f["id"]: f["severity"] for f in report["findings"]}.get(
        f"probe-{costly.replace('_', '-')}-not-run"
    ) == "warn"  # said, never a failure: the node is not drained for a bound
    _, named = health("--probe", costly, "--total-timeout", str(total))
    assert "--total-timeout" not in named["probes"][0]["message"]  # it ran (here: skipped for its own reason)
    usage, _ = health(*others, "--skip-probe", cheap, "--total-timeout", str(total))
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1 and "holds none" in usage.stderr


LATE_READER = RUNNER.replace(
    "outcome = runner.run(",
    "pump = runner._pump\n"
    "def late(stream, sink, *rest):  # the stderr reader thread runs late, as it does on a loaded machine\n"
    "    import collections, time\n"
    "    if isinstance(sink, collections.deque):\n"
    "        time.sleep(0.5)\n"
    "    pump(stream, sink, *rest)\n"
    "runner._pump = late\n"
    "outcome = runner.run(",
)


def test_a_crashed_childs_last_words_are_kept_however_late_their_reader(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """Its last words were read from the stderr tail without waiting for the thread that reads them."""
    (tmp_path / "odd.py").write_text(
        "NAME = 'odd'\n\ndef run(precision='auto'):\n"
        "    import os, signal, sys\n"
        "    sys.stderr.write('CUDA_ERROR_ILLEGAL_ADDRESS in the last kernel\\n')\n"
        "    sys.stderr.flush()\n"
        "    os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    proc = subprocess.run(
        [PYTHON, "-c", LATE_READER, str(tmp_path)], env=child_env, capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.startswith("[('odd', 'crash'"), proc.stdout + proc.stderr
    assert "SIGSEGV while running odd: CUDA_ERROR_ILLEGAL_ADDRESS in the last kernel" in proc.stdout


def test_a_chip_is_known_by_its_device_file(tmp_path: Path) -> None:
    from envaudit.child import runner

    assert not runner.accelerator_here(tmp_path)  # this CI's kind of machine: nothing runs beside
    (tmp_path / "vfio").mkdir()
    (tmp_path / "vfio" / "vfio").touch()  # the container's control file alone is no chip
    assert not runner.accelerator_here(tmp_path)
    (tmp_path / "vfio" / "3").touch()  # the TPU v5e host lent here: its one chip's group
    assert runner.accelerator_here(tmp_path)
    assert runner.accelerator_here(_with(tmp_path / "n", "nvidia0")) and runner.accelerator_here(
        _with(tmp_path / "k", "kfd")
    )
    assert any(probefiles.off_device(p) for p in probefiles.available().values())  # the imports probe, at least


def _with(dev: Path, name: str) -> Path:
    dev.mkdir()
    (dev / name).touch()
    return dev


@pytest.mark.jax
def test_what_computes_on_no_device_runs_beside_on_the_cpu(tmp_path: Path) -> None:
    """Where a chip is, the imports probe runs in a second child with JAX_PLATFORMS=cpu while the first holds the
    chip: asked for a platform this machine lacks, the first child's jax fails and the second's imports still run;
    the results come back in the order asked for, the imports joined to the jax facts."""
    import os

    from envaudit.child import runner

    environ = {**os.environ, "JAX_PLATFORMS": "tpu", "ENVAUDIT_CACHE_DIR": str(tmp_path)}
    names = ("imports", "dense_chain")
    opts = state.Options(names, timeout=120, total=240, facts=True, beside=("imports",), environ=environ)
    outcome = runner.run(opts)
    assert [r.run.probe for r in outcome.results] == list(names)
    by = {r.run.probe: r for r in outcome.results}
    assert outcome.jax is not None and outcome.jax.get("status") != "ok"  # no TPU here: the first child's jax fails
    assert by["dense_chain"].status == "error" and by["imports"].status == "pass", by["imports"].message
    assert outcome.jax.get("imports") and outcome.jax["imports"] == outcome.probe_facts["imports"]


@pytest.mark.parametrize(
    ("files", "environ", "platform"),
    [
        ((), {}, "cpu"),
        (("accel0",), {}, "tpu"),
        (("vfio/3",), {}, "tpu"),
        (("nvidia0",), {}, "gpu"),
        (("kfd",), {}, "gpu"),
        (("accel0",), {"JAX_PLATFORMS": "cpu"}, "cpu"),
        (("accel0",), {"JAX_PLATFORMS": "tpu,cpu"}, "tpu"),
        (("nvidia0",), {"JAX_PLATFORMS": "cuda"}, "gpu"),
    ],
)
def test_the_platform_class_the_probes_run_on_is_read_from_the_chips_device_files(
    tmp_path: Path, files: tuple[str, ...], environ: dict[str, str], platform: str
) -> None:
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    from envaudit.child import runner

    assert runner.platform_here(tmp_path, environ) == platform


def test_on_a_tpu_the_declared_costs_are_a_tpu_s_and_a_warm_cache_s_costs_run_them_all() -> None:
    """A fresh TPU node compiles each program for seconds (conv_chain 4.8 s, fft 4.6-4.9 s cold on a v5e, 0.3-0.6 s
    warm): its health check plans with the TPU's declared costs and jax's start there, so it leaves out up front
    what cannot fit (a skip that says so) instead of starting probes the bound then cuts; the next check, with the
    times the first measured here, runs every probe."""
    known = probefiles.available()
    names = tuple(known)
    assert any(probefiles.cost(known[n], "tpu") > 2 * probefiles.cost(known[n]) for n in names)  # measured apart
    assert all(probefiles.cost(known[n], "gpu") == probefiles.cost(known[n]) for n in names)  # none measured: CPU's
    cold = state.Options(names, total=21.5, budget=True, platform="tpu")
    assert state.budget(cold) == pytest.approx(21.5 - state.jax_start("tpu"))
    todo, skipped = state.plan(cold)
    assert todo and skipped and _span(todo, "tpu").seconds <= state.budget(cold)
    assert all("its declared cost on a TPU" in r.message for r in skipped)
    warm = replace(cold, costs=tuple((t, 0.3) for t in state.labels(cold)))
    warm_todo, warm_skipped = state.plan(warm)
    assert not warm_skipped and len(warm_todo) == len(names) and {t.cost for t in warm_todo} == {0.3}
    on_cpu = state.plan(replace(cold, platform="cpu"))
    assert len(on_cpu[0]) > len(todo)  # the same bound holds more on a CPU, which compiles each in a fraction


def _span(tasks: list[state.Task], platform: str) -> state.Span:
    span = state.Span()
    for index, task in enumerate(tasks):
        span = span.then(task.cost, platform != "cpu" and index > 0 and probefiles.compiles_first(task.path))
    return span


def test_on_an_accelerator_the_probes_compiled_ahead_are_charged_their_runs_not_their_compiles_in_turn() -> None:
    """A fresh TPU v5e node's check charged each probe's cold cost one after another and left out 6 of the 11 that
    apply, yet all 11 ran cold in 17.4 s of its 25 s bound (2026-12-08): the child compiles the programs of the
    probes after the first that reach their compile first (`COMPILES_FIRST`) at once, in the kit's pool, while the
    others run. Those are charged their runs in their turns, and the longest of their compiles beside the turns."""
    known = probefiles.available()
    names = tuple(n for n in known if n not in ("imports", "ntk_nt"))  # the chip's child: imports runs beside
    ahead = [n for n in names[1:] if probefiles.compiles_first(known[n])]
    assert len(ahead) >= 3  # what the model is about
    every = state.Options(names, total=600.0, platform="tpu")
    serial = sum(probefiles.cost(known[n], "tpu") for n in names)
    span = _span(state.plan(every)[0], "tpu")
    longest = max(probefiles.cost(known[n], "tpu") for n in ahead)
    turns = serial - sum(probefiles.cost(known[n], "tpu") for n in ahead)
    assert span.seconds == pytest.approx(max(turns, longest) + state.AHEAD_RUN_S * len(ahead))
    assert span.seconds < serial - 3.0  # seconds less than one after another: what a node's bound now holds
    bound = state.Options(names, total=turns + 0.5 * len(ahead) + state.jax_start("tpu"), budget=True, platform="tpu")
    assert not state.plan(bound)[1]  # under a bound the serial sum exceeds, every probe runs
    assert sum(probefiles.cost(known[n], "tpu") for n in names) > state.budget(bound)
    # on the CPU nothing is compiled ahead: the costs add up as before; a cost measured here is its turn's
    on_cpu = replace(bound, platform="cpu")
    cpu_todo = state.plan(on_cpu)[0]
    assert sum(t.cost for t in cpu_todo) <= state.budget(on_cpu)
    measured = replace(bound, total=state.jax_start("tpu") + 6.5, costs=tuple((n, 2.0) for n in names))
    assert state.budget(measured) == pytest.approx(6.5) and len(state.plan(measured)[0]) == 3
