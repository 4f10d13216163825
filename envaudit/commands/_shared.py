"""What the verbs that audit (`audit`, `health`, `fix`) and that write a report (`check`, `plan`) share: the audit
run end to end under its bounds (`run_audit`, `audited`), the probes' request and bounds, the interpreter audited,
and the report written with its exit code (`emit`).

The judge loads while the child imports jax (`run_audit`), so this module imports the stages after `collect`
where they are used: the verdict is `judge.assemble`'s, whichever verb collected the facts.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from envaudit.child import state
from envaudit.collect import collect
from envaudit.commands import terminal, written
from envaudit.commands.options import Judging, Output, Probing
from envaudit.files import probefiles
from envaudit.model.exitcodes import UsageError

if TYPE_CHECKING:
    from envaudit.model.facts import Facts
    from envaudit.model.report import ProbeResult, Report


def emit(report: Report, output: Output, judging: Judging) -> int:
    """The report in its format, to stdout or --output; the exit code its verdict gives."""
    from envaudit.formats import render
    from envaudit.judge.assemble import exit_code
    from envaudit.model.report import Settings

    style = terminal.style(
        sys.stdout,
        os.environ,
        to_file=output.output is not None,
        mode=output.color,
        verbose=output.verbose,
        show_host=output.show_host,
    )
    if judging.source is not None or judging.untrusted:
        report = replace(report, settings=Settings(file=str(judging.source or ""), ignored=judging.untrusted))
    written.deliver(
        render(report, judging.format, style=style), output.output, quiet=output.quiet, verdict=report.verdict
    )
    return exit_code(report, strict=judging.strict)


# What a run bounded as a whole (health) keeps of its bound after the probes' deadline: a child killed there may
# take child/bounded.REAP_S to exit (a TPU's runtime tears down), then the judge and the writers. Measured on a TPU
# v5e host (cold and warm): the report assembled 2.0-2.9 s after the probes' deadline, written within 0.3 s more.
FINISH_S = 3.5


STARTING_S = 10.0  # a process older than this when the audit starts was not started for it (main() called in a
# running process: a test, a library): its age is no part of this command, whose bound then counts from here


def process_age() -> float:
    """Seconds since this process started (the interpreter's own start and envaudit's imports: 1.2 s on a TPU
    host); 0.0 where the system does not say, or where the process is older than a command's start (STARTING_S)."""
    try:
        import psutil

        age = max(time.time() - float(psutil.Process().create_time()), 0.0)
    except Exception:  # a container without /proc: the bound then counts from here, as it did
        return 0.0
    return age if age <= STARTING_S else 0.0


def audited(probing: Probing, quiet: bool, judging: Judging, *, quick: bool, budget: bool = False) -> Report:
    """The audit, its progress on a terminal's stderr from the first second (-q: none), the line erased after.
    `budget` (health): --total-timeout bounds the whole command, from its process's start to its last write, so
    what the process spent before and what it needs after the probes are taken from the probes' share."""
    line = terminal.Line(sys.stderr, os.environ, shown=not quiet)
    try:
        line.say("collecting facts")
        reserve = FINISH_S if budget else 0.0
        bounds = bounded(
            probing, line, quick=quick, budget=budget, reserve=reserve, spent=process_age() if budget else 0
        )
        return run_audit(
            quick=quick,
            timeout=bounds.timeout,
            probes=bounds.probes,
            python=bounds.python,
            ignore=judging.ignored,
            keep=judging.keep,
        )
    finally:
        line.clear()


@dataclass(frozen=True)
class Bounds:
    """The probes' request (None with --quick), the audited interpreter and the bound of each stage."""

    probes: state.Options | None
    python: str | None
    timeout: float


def probe_request(
    probing: Probing, line: terminal.Line | None = None, *, budget: bool = False, given: float | None = None
) -> state.Options:
    """The probe child's request. `budget`: run what fits the total bound (health; probes named with --probe
    always run: the user chose them); a bound that holds none of them is bad usage, said of the bound the user
    gave (`given`, where the request's is what is left of it)."""
    from envaudit.child import runner  # what follows the child: an audit that probes loads it, --quick never

    known = probefiles.available()
    platform = runner.platform_here()
    if probing.total_timeout < state.JAX_START_S:  # every child starts jax first: a hang could not be told from it
        raise UsageError(
            f"--total-timeout {probing.total_timeout:g} is less than jax's start ({state.JAX_START_S:g} s declared)"
        )
    for name in [*probing.probe, *probing.skip_probe]:
        if name not in known:
            raise UsageError(f"no probe {name!r}; `envaudit probes` lists them")
    names = tuple(dict.fromkeys(n for n in (probing.probe or tuple(known)) if n not in probing.skip_probe))
    request = state.Options(
        names,
        probing.precision,
        probing.timeout,
        probing.total_timeout,
        probing.cache,
        progress=line if line is not None and line.shown else None,
        devices=probing.device,
        budget=budget and not probing.probe,
        # where a chip is, what computes on none runs beside the child that holds it (one accelerator start)
        beside=tuple(n for n in names if probefiles.off_device(known[n])) if runner.accelerator_here() else (),
        platform=platform,
    )
    if request.budget and names and not state.plan(request)[0]:
        said = probing.total_timeout if given is None else given
        raise UsageError(f"--total-timeout {said:g} holds none of the probes' declared costs")
    return request


def _warm(request: state.Options) -> state.Options:
    """The request with what each probe run took the last time it ended in this interpreter on this platform with
    the compilation cache (files/probecosts.py): their costs now, for the cache is warm."""
    if not request.cache:
        return request
    from envaudit.files import probecosts

    known = probecosts.remembered(probecosts.key(request.python, request.platform))
    return replace(request, costs=tuple(known.items()))


def _remember(request: state.Options, results: Sequence[ProbeResult]) -> None:
    """Keep what each probe run took where it ran to its end with the compilation cache; forget the others' times."""
    if not request.cache:
        return
    from envaudit.files import probecosts

    ended = {r.run.label: (r.duration_s, r.compile_s) for r in results if r.status in ("pass", "fail")}
    cut = [r.run.label for r in results if r.status in ("timeout", "crash", "error")]
    probecosts.remember(probecosts.key(request.python, request.platform), ended, cut)


def bounded(
    probing: Probing,
    line: terminal.Line | None = None,
    *,
    quick: bool,
    budget: bool = False,
    reserve: float = 0.0,
    spent: float = 0.0,
) -> Bounds:
    """Every stage under one total bound: the time --python's interpreter takes to answer is spent from
    --total-timeout, and no stage waits longer than what is left of it. `reserve`: what the bound must keep beyond
    the probes (health: the judge and the writers after), `spent`: what it spent before (health: the process's own
    start); both are taken from the probes' share, never below jax's declared start."""
    started = time.monotonic()
    share = max(probing.total_timeout - reserve, min(probing.total_timeout, state.JAX_START_S))
    # bad usage is judged of the bound the user gave, never of what a slow start left of it: on a loaded machine
    # the probes that no longer fit skip, each saying so
    asked = replace(probing, total_timeout=share)
    probes = None if quick else probe_request(asked, line, budget=budget, given=probing.total_timeout)
    python = interpreter(probing.python, min(probing.timeout, probing.total_timeout))
    share = max(share - spent, min(share, state.JAX_START_S))
    left = max(share - (time.monotonic() - started), 0.0)
    return Bounds(None if probes is None else replace(probes, total=left), python, min(probing.timeout, left))


def interpreter(python: str | None, timeout: float) -> str | None:
    """--python's interpreter, checked before minutes of probing: it must answer as a Python does, in time."""
    if python is None:
        return None
    from envaudit.collect import outside

    resolved = outside.resolve(python)
    outside.describe(resolved, timeout)
    return resolved


def known_devices(report: Report, probing: Probing) -> Report:
    """--device names jax devices, which only the audited jax can list: one it does not have is bad usage."""
    present = [d.get("id") for d in report.facts.jax.get("devices") or [] if isinstance(d, dict)]
    missing = [n for n in probing.device if n not in present]
    if missing and present:
        shown = ", ".join(map(str, present))
        raise UsageError(f"no jax device {', '.join(map(str, missing))} here (--device; the devices: {shown})")
    return report


def _host_facts(timeout: float, python: str | None) -> Facts:
    """Every fact but jax's (no jax import here), collected while the child imports jax; the modules that judge
    them are imported here too, for the same reason: the child starts before they load."""
    from envaudit.judge import assemble  # noqa: F401
    from envaudit.rules.registry import registry

    facts = collect(timeout=timeout, python=python)
    _ = registry().signatures  # the rules read and the signatures compiled while jax still imports (cached)
    return facts


def run_audit(
    *,
    quick: bool,
    timeout: float,
    probes: state.Options | None = None,
    python: str | None = None,
    ignore: Mapping[str, str] | None = None,
    keep: Sequence[str] = (),
) -> Report:
    """Collect facts and run probes. One child reports what jax says and runs the probes (one jax import for
    both); the other collectors need no jax, so they run in a thread while the child imports jax; the judge needs
    both, so it comes last. The child is followed from this thread, so that an interrupt reaches the runner, which
    kills it. Without probes, the child reports the jax facts alone. `python`: the interpreter whose environment
    is audited (--python), when it is not this one; it runs the child too. `ignore`, `keep`: as `assemble`'s. The report
    says how long it took (`duration_s`: from here to the assembled report)."""
    started = time.monotonic()
    if quick:
        facts = collect(timeout=timeout, python=python)
        from envaudit.judge.assemble import assemble

        return _timed(assemble(facts, mode="quick", ignore=ignore, keep=keep), started)
    from envaudit.child import runner

    child = _warm(
        replace(probes or state.Options(timeout=timeout, total=timeout), python=python or sys.executable, facts=True)
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        host_facts = pool.submit(_host_facts, timeout, python)
        outcome = runner.run(child)
        facts = host_facts.result()
    _remember(child, outcome.results)
    assert outcome.jax is not None  # run() always finishes the facts it was asked for (child.facts)
    from envaudit.judge.assemble import judged

    audited = replace(facts, jax=outcome.jax)
    return _timed(judged(audited, outcome.results, mode="audit", ignore=ignore, keep=keep), started)


def _timed(report: Report, started: float) -> Report:
    return replace(report, duration_s=time.monotonic() - started)
