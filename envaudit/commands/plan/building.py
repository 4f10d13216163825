"""A plan's report with what building its stack here measured: the stack as planned, then the state its fix leaves.

Where uv is here and the build is not turned off (`--no-build`, or ENVAUDIT_NO_BUILD set, as the test suite's unit
tests do), the planned stack is built in a throwaway environment and measured (collect/build.py); the measurement
joins the facts (judge/measured.py), the report is assembled from them, and where it has a fix, the state that fix
leaves is built in turn: the report says whether the fix plan is proven. One bound (`--build-timeout`) holds for
both builds together; progress is said on stderr, a line a step (-q: none). Where nothing is built, the report is
the tables' alone and says why.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

from envaudit.collect import build
from envaudit.judge import fixplan, measured, twin
from envaudit.judge.assemble import assemble, candidates
from envaudit.model import fixes
from envaudit.model.build import BuildDocument, Measurement, Proof
from envaudit.model.facts import Facts
from envaudit.model.fixes import Plan
from envaudit.model.report import Report
from envaudit.rules import api_removals, imports, jax_pins
from envaudit.rules.messages import STACK

MIN_FIXED_S = 5.0  # what must be left of the bound to build the fixed state: jax's start and an import or two
CANDIDATES = 4  # plans tried, best first, until one is proven (each a build of seconds from uv's cache)


def _installer(no_build: bool) -> tuple[tuple[str, ...] | None, str]:
    """The uv that builds stacks here, or None and why nothing is built (asked, turned off, no uv)."""
    why_not = twin.off(no_build)
    uv = None if why_not else build.uv_command()
    return uv, why_not or ("uv is not installed here (pip install uv)" if uv is None else "")


def report(
    facts: Facts,
    *,
    target: fixes.Target | None,
    ignore: Mapping[str, str],
    no_build: bool,
    timeout: float,
    quiet: bool,
    admitted: Sequence[str] = (),
    keep: Sequence[str] = (),
    sources: Sequence[str] = (),
) -> Report:
    """The plan's report, built and measured where it can be (`keep`: what the plan never moves). Not where the
    inputs take an audited distribution from elsewhere than the package index (`sources`: an index of their own,
    links, a URL, a path): the build installs from the user's own index only (a file's sources are the file's to
    choose, not envaudit's to trust), so it would measure other files than theirs."""
    uv, why_not = _installer(no_build)
    if uv is not None and sources:
        more = f" (and {len(sources) - 1} more)" if len(sources) > 1 else ""
        why_not = (
            f"the inputs take distributions from elsewhere than your package index ({sources[0]}{more}); the build"
            " installs from yours only, so it would measure other files than theirs"
        )
        uv = None
    if uv is None:
        return _unmeasured(
            assemble(facts, mode="plan", ignore=ignore, target=target, keep=keep),
            f"{why_not}: the report is the tables' alone",
        )
    say = _progress(quiet)
    deadline = time.monotonic() + timeout
    planned = build.measure(twin.stack(facts, admitted), timeout=timeout, uv=uv, say=say)
    if planned.status not in ("built", "not_installable"):
        say(f"not measured ({planned.status}): {planned.document.get('reason', '')}")
        why = f"{planned.status}: {planned.document.get('reason', '')}: the report is the tables' alone"
        base = assemble(facts, mode="plan", ignore=ignore, target=target, keep=keep)
        return _unmeasured(base, why, planned.document)
    joined = measured.joined(facts, planned)
    options = candidates(joined, mode="plan", ignore=ignore, target=target, limit=CANDIDATES, keep=keep)
    made, fixed, refused = _tried(options, planned, deadline, timeout, admitted, uv, say, ignore, keep)
    proof, reason = measured.proof(made.plan, planned, fixed)
    if refused:
        reason += f"; before it, {len(refused)} plan(s) the tables ranked higher: " + "; ".join(refused)
    document: BuildDocument = {"measured": True, "planned": planned.document}
    if fixed is not None:
        document["fixed"] = fixed.document
    say(f"{proof}: {reason}")
    return replace(made, build=document | {"proof": proof, "proof_reason": reason})


def _tried(
    options: Sequence[Report],
    planned: build.Built,
    deadline: float,
    timeout: float,
    admitted: Sequence[str],
    uv: Sequence[str],
    say: Callable[[str], None],
    ignore: Mapping[str, str],
    keep: Sequence[str] = (),
) -> tuple[Report, build.Built | None, list[str]]:
    """The report whose fix is printed, the build of the state it leaves, and what refused the ones before it.
    The plans the tables propose are tried best first, each after its least moves and the first's other ways after
    them (`_least_first`, as `fix`'s search): the state each leaves is built (the installer resolves it,
    then jax and the libraries are imported and called there, the modules the tables name in the stack as planned
    among them) and judged again with what it measured (`fixplan.settled`: no failure, no fix of its own); the
    first proven one is printed. Where none is proven, the first is, unproven, with what its own build said."""
    first = options[0]
    if not first.plan.steps:
        return first, None, []
    refused: list[str] = []
    fixed_first: build.Built | None = None
    # as `fix` searches: each plan's least moves first, then the other ways
    for option in _least_first(options, uv, keep):
        if option is not first and not option.plan.steps:
            continue
        left = deadline - time.monotonic()
        if left < MIN_FIXED_S:
            why = f"the bound ({timeout:g} s, --build-timeout) was spent before it could be built"
            fixed_first = fixed_first or build.Built({"status": "timeout", "reason": why})
            break
        say("building the state the fix leaves, to prove it" if option is first else "trying the next plan")
        state = fixplan.outcome(option.facts, option.plan.steps)
        carried = api_removals.claimed_modules(option.facts)
        made = replace(twin.stack(state, admitted, carried), ranges=written(option.plan))
        fixed = measured.as_before(build.measure(made, timeout=left, uv=uv, say=say), planned.jax)
        proof, why = measured.proof(option.plan, planned, fixed)
        joined = measured.joined(state, fixed)
        if proof == "proven" and (
            unsettled := fixplan.settled(option.facts, option.findings, joined, ignore, keep, plan=option.plan)
        ):
            proof, why = "unproven", unsettled
        if proof == "proven":
            return option, fixed, refused
        fixed_first = fixed_first or fixed
        refused.append(f"{_command(option)}: {why}")
    return first, fixed_first, []


def _command(report: Report) -> str:
    """A plan's command, short, for the reason a later one was printed instead."""
    return " ".join(report.plan.fix.install) or "(no install)"


def prove(
    audited: Report,
    *,
    no_build: bool,
    timeout: float,
    quiet: bool,
    keep: Sequence[str] = (),
    installed: Mapping[str, str] | None = None,
) -> tuple[Proof, str, build.Built | None]:
    """Whether the state a live environment's plan leaves runs, measured on its twin: the environment's
    distributions (`installed`: every one it has, else those audited) with the plan's commands run over them,
    built here in a throwaway environment for the same Python, jax and every library imported there and their smoke
    calls made (`envaudit fix` applies only a proven plan), and what the twin measured (None where nothing was
    built). Unproven, with why, where nothing could be built (turned off, no uv, the index unreachable) or the twin
    did not install or run."""
    facts, plan, findings = audited.facts, audited.plan, audited.findings
    uv, why_not = _installer(no_build)
    if uv is None:
        return "unproven", f"nothing was built: {why_not}", None
    say = _progress(quiet)
    say("building the state the fix leaves, to prove it")
    state = fixplan.outcome(facts, plan.steps)
    made = replace(
        twin.stack(state, (), api_removals.claimed_modules(facts)),
        ranges=written(plan),
        before=twin.whole(facts, installed or {}),
        applied=twin.applied(plan.fix),
        installer="uv" if plan.fix.target.tool == "uv" else "pip",
    )
    claimed, reads = fixplan.claimed_distributions(findings, plan), fixplan.claimed_calls(findings, plan)
    pulled = sorted(imports.unasked(facts))
    made = replace(made, claimed=tuple(sorted(claimed)), reads=tuple(sorted(reads)), pulled=tuple(pulled))
    made = replace(made, parts=imports.parts(facts))
    measure = build.measure(made, timeout=timeout, uv=uv, say=say)
    fixed = measured.as_before(measure, facts.jax, claimed, reads, pulled)
    proof, why = measured.verdict(fixed.document, "the state the fix leaves (a twin of this environment)")
    made_state = measured.joined(measured.as_installed(state, fixed), fixed)
    if proof == "proven" and (unsettled := fixplan.settled(facts, findings, made_state, keep=keep, plan=plan)):
        return "unproven", unsettled, fixed
    return proof, why, fixed


def searched(
    options: Sequence[Report],
    *,
    no_build: bool,
    timeout: float,
    quiet: bool,
    keep: Sequence[str] = (),
    installed: Mapping[str, str] | None = None,
) -> tuple[Report, Proof, str]:
    """The first of a live environment's plans (the audit's first, then the others the tables propose) whose state,
    made on a twin of the environment by the plan's own commands, installs, runs and is judged settled; where none
    is, the first, with why it is not proven. One bound for all of them."""
    first = options[0]
    deadline = time.monotonic() + timeout
    refused: list[str] = []
    found: tuple[Proof, str] | None = None
    uv, _ = _installer(no_build)
    queue = _least_first(options, uv, keep)
    refinements: list[Report] = []  # the plans a twin's measurement adds to, tried before the rest
    accepted: tuple[Report, str] | None = None  # the first plan the installer took, where none is proven
    first_refused = False
    while (option := refinements.pop(0) if refinements else next(queue, None)) is not None:
        if option is not first and not option.plan.fix:
            continue
        left = deadline - time.monotonic()
        if found is not None and left < MIN_FIXED_S:
            break
        if option is not first:
            _progress(quiet)(f"trying the next plan: {option.plan.fix.command}")
        proof, why, fixed = prove(option, no_build=no_build, timeout=left, quiet=quiet, keep=keep, installed=installed)
        if proof == "proven":
            before = f"; {len(refused)} plan(s) tried before it, not proven: " if refused else ""
            return option, proof, why + before + "; ".join(refused)
        found = (proof, why) if option is first else found or (proof, why)  # the first plan's own, where tried
        taken = fixed is None or fixed.status != "not_installable"
        first_refused = first_refused or (option is first and not taken)
        if accepted is None and taken:
            accepted = (option, why)
        _progress(quiet)(f"not proven: {why}")
        if why.startswith("nothing was built"):
            break  # nor would any other plan be
        refused.append(f"{_command(option)}: {why}")
        if fixed is not None and (forgot := fixplan.forgotten(option.plan, fixed.jax)):
            refinements.append(replace(option, plan=fixplan.added(option.plan, forgot)))
        moved = fixed.document.get("installed") if fixed is not None else None
        if moved and (held := fixplan.unheld_jax(option.plan, option.facts, moved)):
            refinements.append(replace(option, plan=fixplan.added(option.plan, held)))
    assert found is not None  # the first plan is always tried
    if first_refused and accepted is not None:
        # a plan the installer refuses is never printed as the fix: the first it took is, unproven, and why
        option, why = accepted
        return option, "unproven", f"{why}; the installer refused the first plan: {refused[0]}"
    return first, *found


FOLLOWING = 2  # releases after a floor tried, each before the plan itself (the least move, then the next)


def _least_first(options: Sequence[Report], uv: Sequence[str] | None, keep: Sequence[str] = ()) -> Iterator[Report]:
    """The plans in order, each preceded by its least moves: its libraries' floors made releases, the first the
    installer's index has after each (`fixplan.floors`, `build.following`, asked of uv for the environment's
    Python), then the next, and a floor the tables name made that release (`fixplan.least`); the first plan stays
    `first` (what is said where none is proven). Then, the other ways of the first plan (`_other_ways`), and the
    libraries it fails or warns of at their releases of the installed jax's time (`_of_its_time`). Each is asked of
    the index only when the search reaches it."""
    for option in options:
        asked = fixplan.floors(option.plan) if uv is not None else {}
        after = {name: build.following(req, _python(option), FOLLOWING, uv) for name, req in asked.items()}
        variants = []
        for index in range(max(map(len, after.values()), default=0)):
            moved = fixplan.pinned(
                option.plan, {n: found_[index] for n, found_ in after.items() if len(found_) > index}
            )
            variants.append(fixplan.least(moved) or moved)
        if not variants and (narrowed := fixplan.least(option.plan)) is not None:
            variants.append(narrowed)
        yield from (replace(option, plan=v) for v in variants if v.fix.install != option.plan.fix.install)
        yield option
    if options and uv is not None:
        yield from _other_ways(options[0], uv)
        yield from _of_its_time(options[0], uv, keep)


def _of_its_time(option: Report, uv: Sequence[str], keep: Sequence[str] = ()) -> Iterator[Report]:
    """Each library the report fails or warns of (`fixplan.struggling`) at its newest release uploaded before the
    jax release after the installed one (`jax_pins.succeeded`, uv's --exclude-newer): what its authors made and
    tested with that jax. Tried last, where the nearest releases fail too: brax 0.12.1 beside a paper's jax 0.4.13
    calls jax.tree (first in jax 0.4.25), as 0.12.0 and 0.11.0 do; brax of jax 0.4.13's time (before 0.4.14, of
    2023-07-27) is 0.9.1. The same way up: diffusers 0.18.2 reads jax.random.KeyArray, gone in jax 0.4.24, as
    0.19 does; the newest dropped its Flax part; diffusers of jax 0.4.31's time is 0.30.2. Then, where the
    environment's other pins are of a later day than jax's time (`_environment_day`), the libraries as of that day:
    brax 0.9.1 reads MjOption.collision, which the paper's mujoco 3.0.0 no longer has; brax of 2023-11-12 is 0.9.3."""
    python, facts = _python(option), option.facts
    struggling = fixplan.struggling(option.findings, keep)
    jax_day = jax_pins.succeeded(facts.packages.get("jax", ""))
    if not jax_day or not struggling:
        return  # jax past the table, or the newest: no later time to stand before

    def as_of(day: str) -> dict[str, str]:
        moves: dict[str, str] = {}
        for name in struggling:
            installed = facts.packages.get(name) or imports.version_of(facts, name)
            found = build.following(name, python, 1, uv, before=day)
            if found and installed and found[0] != installed:
                moves[name] = found[0]
        return moves

    tried: list[dict[str, str]] = []

    def fresh(ways: Iterable[dict[str, str]]) -> Iterator[Report]:
        for way in ways:
            if way and way not in tried and len(tried) < MAX_TIME_WAYS:
                tried.append(way)
                yield replace(option, plan=fixplan.pinned(option.plan, way, add=True))

    # all of them at once first: a state judged again must fail nothing (jaxirl's orbax-checkpoint beside brax)
    at_jax = as_of(jax_day)
    yield from fresh([at_jax])
    later = _environment_day(option, struggling, python, uv)
    at_env = as_of(later) if later > jax_day else {}
    yield from fresh([at_env])
    # then each library at either day (jaxirl: orbax-checkpoint of jax's time, brax of the pins' day), and alone
    choices = [[(n, r) for r in dict.fromkeys(x for x in (at_jax.get(n), at_env.get(n)) if x)] for n in struggling]
    mixed = (dict(combo) for combo in itertools.product(*(c for c in choices if c)))
    yield from fresh(mixed)
    yield from fresh({name: release} for choice in choices for name, release in choice)


MAX_TIME_WAYS = 8  # the plans of a library's time tried at most: each is a twin's build


def _environment_day(option: Report, struggling: Sequence[str], python: str, uv: Sequence[str]) -> str:
    """The day the environment's own choices were made: the newest upload among the releases installed by name
    (REQUESTED) but the struggling libraries' and jax's own (`build.published`): a paper's pins with its main
    library left open (jaxirl pins jax 0.4.13, of 2023-06-23, numpy 1.26.1 and tensorstore 0.1.49, of 2023-11-12,
    and leaves brax open: pip took 0.12.1, of 2024-12-11). "" where nothing is known."""
    facts = option.facts
    # jax's own packages are left out: jax's time is its table's, and uv says a release's newest upload (jaxlib
    # 0.4.13's is of 2025-12-05, a wheel added long after)
    pins = {
        n: facts.packages[n]
        for n in imports.asked_for(facts)
        if n in facts.packages and n not in struggling and not STACK.match(n)
    }
    return max(build.published(pins, python, uv).values(), default="")


def _other_ways(option: Report, uv: Sequence[str]) -> Iterator[Report]:
    """Where the plan moves a library to a newer release with jax held (`qax>0.3.1`, no release the tables name),
    the two other ways, each at the releases the installer's index has, nearest first: the library down (qax 0.3.1
    beside a cluster's pinned jax 0.4.13 imports jax.extend.linear_util, which that jax does not have yet; 0.2.0
    does not), and jax up with the library held (evermore 0.2.10 calls jax.tree, first in jax 0.4.25). Tried after
    the tables' plans, each on a twin, before "no plan is proven"."""
    python, jax = _python(option), option.facts.packages.get("jax", "")
    above: list[str] | None = None  # jax's releases after the installed one: asked once, where a library needs them
    for name in fixplan.floors(option.plan):
        installed = option.facts.packages.get(name) or imports.version_of(option.facts, name)
        below = build.following(f"{name}<{installed}", python, FOLLOWING, uv) if installed else []
        found = [fixplan.pinned(option.plan, {name: release}) for release in below]
        if above is None:
            above = build.following(f"jax>{jax}", python, FOLLOWING, uv) if jax else []
        found += [fixplan.jax_moved(option.plan, name, release) for release in above]
        yield from (replace(option, plan=p) for p in found if p.fix.install)


def _python(report: Report) -> str:
    """The environment's Python as X.Y, what the index is asked for ("" where the facts do not say)."""
    return ".".join(str(report.facts.python.get("version") or "").split(".")[:2])


def written(plan: Plan) -> dict[str, str]:
    """The ranges the plan's command installs, by canonical name (`scipy<1.13`, `orbax-checkpoint<0.4.8`): its
    state's twin installs them as written, so the installer chooses the release the user's will (a model of it
    chose 1.12.999 below 1.13, which no index has, or an older release than pip takes). Exact pins, extras and
    markers stay the state's."""
    found: dict[str, str] = {}
    for text in plan.fix.install:
        if (ranged := fixes.ranged(text)) is not None:
            name, spec = ranged
            found[name] = f"{name}{spec}"
    return found


def _unmeasured(report: Report, why: str, planned: Measurement | None = None) -> Report:
    document: BuildDocument = {"measured": False, "reason": why}
    if planned is not None:
        document["planned"] = planned
    return replace(report, build=document | {"proof": "unproven", "proof_reason": f"nothing was measured: {why}"})


def _progress(quiet: bool) -> Callable[[str], None]:
    """A line on stderr a step: a build takes seconds to minutes, on a terminal or in a CI log alike."""

    def say(text: str) -> None:
        if not quiet:
            print(f"envaudit: plan: {text}", file=sys.stderr, flush=True)

    return say
