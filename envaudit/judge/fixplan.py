"""One plan for a report's fixes: each computed on the state the ones before it leave, until none is left.

A fix computed alone on the environment as it is can contradict another one of the same report (a library's fix
holds the jaxlib that a regression's fix moves away from), or loop (neural-tangents 0.6.5 wants jax 0.4.25, whose
oneDNN miscompile wants jax 0.4.29, which neural-tangents 0.6.5 cannot import with). So the report's fixes are
planned together: the first root cause's fix is applied to the facts (`rules/installing.py`: what the installer
would leave), the knowledge base evaluates the state it leaves, the next root's fix is computed there, and so on,
until no root cause with a fix is left. Where a fix leads back to a state already planned, the rule's measured
workaround (`workaround` in its file: variables, not releases) is the other way; the search keeps the state with
the fewest failures, then the fewest fixes left, then the fewest steps (breadth first: each root cause's fix is
tried at each state, so the shortest plan that ends clean is found first). The plan says what stays wrong: failures
no step fixes, and whether the known releases held no clean state at all (`Plan.loop`). What the user ignores
(envaudit/judge/ignoring.py) is no failure in any state, so no step is taken for it.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from packaging.requirements import InvalidRequirement

from envaudit import rules
from envaudit.judge import causes, ignoring
from envaudit.model import fixes
from envaudit.model.facts import Facts, JaxFacts
from envaudit.model.fixes import Fix, Plan, Step
from envaudit.model.report import SEVERITIES, Finding, Severity
from envaudit.model.versions import public, version_or_none
from envaudit.rules import calls, extras, imports, installing
from envaudit.rules.messages import STACK
from envaudit.rules.registry import registry

MAX_STEPS = 8  # a report has a handful of root causes; more steps than this is a plan that does not converge
ALTERNATIVES = 4  # unfinished states at the best plan's depth expanded once more, for the plans a measurement tries
MAX_STATES = 24  # states expanded (each child evaluated, about 2 ms): the search's bound, whatever the report


@dataclass(frozen=True)
class _Holding:
    """The distributions the user keeps where they are (`--keep`), as installed (None: not installed, and kept
    out), and those of them that some way out would have moved (filled by the search)."""

    names: frozenset[str]
    at: Mapping[str, str | None]
    blocked: set[str] = field(default_factory=set)

    def moved(self, state: Facts) -> list[str]:
        return sorted(n for n in self.names if state.packages.get(n) != self.at[n])


@dataclass(frozen=True)
class _Node:
    steps: tuple[Step, ...]
    state: Facts
    findings: tuple[Finding, ...]  # the state's findings, consequences linked to their roots
    path: frozenset[tuple[object, ...]] = frozenset()  # the states on the way here (a way back to one is a loop)

    def roots(self) -> list[Finding]:
        return [f for f in self.findings if not f.caused_by]

    def score(self) -> tuple[int, int, int]:
        """Fewest failures, then fewest fixes still to print, then fewest steps: whether a plan is done."""
        roots = self.roots()
        return sum(f.severity == "fail" for f in roots), sum(bool(f.remedy) for f in roots), len(self.steps)

    def rank(self, start: Facts) -> tuple[int, ...]:
        """The planner's objective (docs/architecture.md, "The one plan"), in order: fewest failures; fewest failures
        still with a fix to print; no variable exported to work around a release where releases reach as far (a
        workaround is the way out of a loop, not a fix); the NumPy major kept; fewest warnings with a fix to
        print (an upgrade or a variable: a warning never forces a downgrade, `_children`); then, of plans that
        fix as much, the fewest of what the user installed by name moved (`imports.asked_for`: their REQUESTED
        marks: the library held and jax moved, where both end clean); then the
        least change: fewest libraries carried into another major (a major may drop what the user imports),
        fewest packages moved down, fewest moved, fewest steps."""
        roots = self.roots()
        fails = [f for f in roots if f.severity == "fail"]
        down, moved = _moves(start, self.state)
        chosen = imports.asked_for(start)
        return (
            len(fails),
            sum(bool(f.remedy) for f in fails),
            sum(bool(s.fix.export) and not s.fix.install for s in self.steps),
            _major(start.packages.get("numpy")) != _major(self.state.packages.get("numpy")),
            sum(bool(f.remedy) for f in roots if f.severity != "fail"),
            sum(start.packages.get(name) != self.state.packages.get(name) for name in chosen),
            _majors(start, self.state),
            down,
            moved,
            len(self.steps),
        )


def plan(
    facts: Facts, findings: Sequence[Finding], ignore: ignoring.Ignores | None = None, keep: Collection[str] = ()
) -> Plan:
    """The plan for a report of these facts and findings. The findings of its probes are the first state's: the
    states after it are judged by the knowledge base, which is what a plan can know, and what the probes found
    with no rule to explain it (a wrong answer, a device) is carried along until a step of its own fixes it."""
    return candidates(facts, findings, ignore, limit=1, keep=keep)[0]


def candidates(
    facts: Facts,
    findings: Sequence[Finding],
    ignore: ignoring.Ignores | None = None,
    *,
    limit: int = 4,
    keep: Collection[str] = (),
) -> list[Plan]:
    """The plans the tables propose, best first by the objective (`_Node.rank`), at most `limit`, each with a
    command of its own: the first is `plan`'s; the others are what a measurement tries where the first does not
    install or run (the resolver and a built twin decide, commands/plan/building.py). Only plans that leave no
    more failures than the first are offered. `keep`: distributions no step may move (`--keep NAME`): a way that
    moves one is not taken, and the plan names those that held a way back (`Plan.kept`)."""
    ignore = ignore or {}
    holding = _Holding(frozenset(keep), {n: facts.packages.get(n) for n in keep})
    findings = ignoring.counted(findings, ignore)
    measured = tuple(f for f in findings if not f.caused_by and f.subject.kind not in ("rule", "check"))
    # wrong-numbers rules a probe ran here: judged by it while jax's packages stay where they were measured
    cleared = _cleared(findings)
    start = _Node((), facts, tuple(findings))
    best, looped = start, False
    seen = {installing.key(facts)}
    queue, explored = deque([start]), 0
    rank = functools.partial(_Node.rank, start=facts)
    ranked: list[_Node] = [start]
    depth = MAX_STEPS  # breadth first: the fewest steps that end clean, and among plans of that many the best
    while queue and explored < MAX_STATES:
        node = queue.popleft()
        if len(node.steps) > depth:
            break  # every plan as short as the first clean one is ranked
        explored += 1
        best = min([best, node], key=rank)
        if len(node.steps) < depth and node.score()[:2] != (0, 0):
            children, back = _children(node, seen, measured, ignore, start, cleared, holding)
            looped = looped or back
            queue.extend(children)
            ranked += children
            best = min([best, *children], key=rank)
        if best.score()[:2] == (0, 0):
            depth = min(depth, len(best.steps))
    if best.score()[:2] != (0, 0):  # the bound was spent first (many roots, each of several ways): go on greedily
        best = min([best, _greedy(best, measured, ignore, start, cleared, holding)], key=rank)
    found = [_planned(facts, best, looped, ignore, cleared, measured, holding)]
    if found[0].steps and _no_op(found[0].fix, facts):  # its steps cancel out: nothing the command does moves
        found = [_planned(facts, start, looped, ignore, cleared, measured, holding)]
    if limit > 1:  # the unfinished states up to the best's length, each expanded once more with every way, the
        # rule's workaround too where the plan, not the user, led to its root: a finding's own one-package fix and the
        # variable of the regression it lands on (AlphaFold's jaxlib==0.4.26 and the oneDNN rule's XLA_FLAGS), where
        # the best moves jax past both and the installer or the twin may refuse that move
        unfinished = [n for n in sorted(ranked, key=rank) if len(n.steps) <= depth and n.score()[:2] != (0, 0)]
        for node in unfinished[:ALTERNATIVES]:
            ranked += _children(node, seen, measured, ignore, start, cleared, holding, workarounds=True)[0]
    for node in sorted(ranked, key=rank) if limit > 1 else ():  # one plan (every report's): nothing more to rank
        if len(found) >= limit:
            break
        if node is best or not node.steps or node.score()[0] > best.score()[0]:
            continue
        other = _planned(facts, node, looped, ignore, cleared, measured, holding)
        if len(other.remaining) <= len(found[0].remaining) and all(other.fix != f.fix for f in found):
            found.append(other)
    return found


def _planned(
    facts: Facts,
    best: _Node,
    looped: bool,
    ignore: ignoring.Ignores,
    cleared: Mapping[str, Severity],
    measured: Sequence[Finding],
    holding: _Holding,
) -> Plan:
    """The plan a searched state makes: its steps as one command, and what that command leaves."""
    steps, reached = _one_command(facts, best)
    done = {s.finding for s in steps}
    left = [f for f in _judged(reached, ignore, cleared) if not f.caused_by]  # what the one command leaves
    left += [f for f in measured if f.id not in done]
    failing = tuple(dict.fromkeys(f.id for f in left if f.severity == "fail"))
    declined = tuple(dict.fromkeys(f.id for f in left if f.severity != "fail" and f.remedy and f.id not in done))
    loop = looped and bool(failing)
    jax = reached.packages.get("jax", "")
    down = _moves({"jax": facts.packages.get("jax", "")}, {"jax": jax})[0] > 0
    held = tuple(dict.fromkeys((lib, jax) for s in steps if down and (lib := registry().cause(s.finding).holds_back())))
    kept = tuple(sorted(holding.blocked)) if failing or declined else ()
    return Plan(
        steps=steps, remaining=failing, loop=loop, fix=one_command(steps), declined=declined, held=held, kept=kept
    )


def leaves(facts: Facts, findings: Sequence[Finding], steps: Sequence[Step]) -> list[Finding]:
    """The root causes of the state the steps' one command leaves, as the knowledge base judges it there (a
    wrong-numbers rule the probes ran keeps their judgement while jax's packages stay where they were measured)."""
    state = outcome(facts, steps)
    return [f for f in _judged(state, {}, _cleared(findings)) if not f.caused_by]


def settled(
    facts: Facts,
    findings: Sequence[Finding],
    state: Facts,
    ignore: ignoring.Ignores | None = None,
    keep: Collection[str] = (),
    plan: Plan | None = None,
) -> str:
    """Why the state a plan leaves (`state`: `outcome`'s, with what a build measured there joined) is no fixed
    point, judged again as a new report would be: "" where it fails nothing and its own plan has no step; else
    what fails there, or the fix a plan of it would print next (a plan is printed only where planning again
    would not change it). With the `plan`, what was wrong before it and is none of its claims (`unclaimed`: a
    library's call that failed before and fails after, which the plan does not say it fixes) is judged neither
    way: the plan is held to what it claims and to breaking nothing, not to what it leaves as it was."""
    ignore = dict(ignore or {}) | dict.fromkeys(unclaimed(findings, plan) if plan else (), UNCLAIMED)
    if plan is not None:  # a path read in a library the plan does not claim: a warning, said, not its failure
        claimed = claimed_calls(findings, plan)
        read = {str(o.get("distribution")) for o in calls.outcomes(state) if o.get("read")}
        ignore |= dict.fromkeys((calls.finding_id(d) for d in sorted(read - claimed)), READ_ELSEWHERE)
        # a library nobody asked for by name, whose call the plan does not claim: said, not the state's failure, as
        # the twin's measurement (build.Stack.pulled) and the audit (rules/calls.py) say it
        pulled = imports.unasked(facts)
        if facts.origin == "live":  # what the plan brought that it does not name: pulled in by what it moved
            named = {fixes.named(r) for fix in (plan.fix, *(s.fix for s in plan.steps)) for r in fix.install}
            pulled |= {d for d in state.packages if d not in facts.packages and d not in named}
        ignore |= dict.fromkeys(
            (calls.finding_id(d) for d in sorted(pulled - claimed_distributions(findings, plan))), PULLED
        )
    found = _judged(state, ignore, _cleared(findings))
    failing = list(dict.fromkeys(f.id for f in found if f.severity == "fail" and f.counts and not f.caused_by))
    if failing:
        return f"judged again, the state it leaves fails {', '.join(failing)}"
    again = candidates(state, found, ignore, limit=1, keep=keep)[0]
    if again.steps:
        return f"judged again, the state it leaves has a fix of its own ({again.fix.command or 'variables'})"
    return ""


UNCLAIMED = "wrong before the plan, which does not claim to fix it"
PULLED = "a call of a library nobody asked for by name, which the plan does not claim to fix"
READ_ELSEWHERE = "a path read in a library the plan does not claim to fix (a warning, not a call made)"


def claimed_distributions(findings: Sequence[Finding], plan: Plan) -> set[str]:
    """The distributions the plan's steps claim to fix: those their findings, and the consequences folded under
    them (an import that fails under jax-api-missing), are about."""
    fixing = _fixing(plan)
    found: set[str] = set()
    for finding in findings:
        if finding.id in fixing or finding.caused_by in fixing:
            found.update(finding.about)
            if finding.subject.kind == "check" and finding.subject.problem:
                found.add(finding.subject.problem)
    return found


def claimed_calls(findings: Sequence[Finding], plan: Plan) -> set[str]:
    """Of `claimed_distributions`, those whose call (made or read) the steps claim to fix: a path read in their code
    after the plan counts against it; one read in a library whose import the plan claims is a warning."""
    return {d for d in claimed_distributions(findings, plan) if _claims(findings, plan, calls.finding_id(d))}


def _claims(findings: Sequence[Finding], plan: Plan, finding_id: str) -> bool:
    fixing = _fixing(plan)
    return finding_id in fixing or any(f.id == finding_id and f.caused_by in fixing for f in findings)


def _fixing(plan: Plan) -> set[str]:
    """The findings a plan's steps fix: each step's own, and those it says it fixes too (`Step.also`)."""
    return {s.finding for s in plan.steps} | {a for s in plan.steps for a in s.also}


def unclaimed(findings: Sequence[Finding], plan: Plan) -> list[str]:
    """The findings before a plan that none of its steps claims (its own finding, one it fixes too, or a consequence
    of either): what the plan leaves as it found it."""
    claimed = _fixing(plan)
    return sorted(
        {f.id for f in findings if f.counts and f.id not in claimed and (not f.caused_by or f.caused_by not in claimed)}
    )


def _cleared(findings: Sequence[Finding]) -> dict[str, Severity]:
    """The wrong-numbers rules a probe ran here (`Cause.wrong_numbers`, the finding no longer unprobed), each with
    the severity its measurement gave it here (a CPU regression the probe measured wrong on this CPU fails, where
    the rule alone says warn: on an accelerator host only CPU-placed work meets it)."""
    return {f.id: f.severity for f in findings if not f.unprobed and registry().cause(f.id).wrong_numbers}


def outcome(facts: Facts, steps: Sequence[Step]) -> Facts:
    """The state the plan's one command leaves (jax replanned where a step is a cause of its failure)."""
    jax_cause = any(causes.explains_jax(s.finding) for s in steps)
    return installing.after(facts, one_command(steps), jax_cause=jax_cause)


def one_command(steps: Sequence[Step]) -> Fix:
    """The steps' fixes as one, an extra dropped where it would reinstall what a later step removes."""
    return fixes.combined([s.fix for s in steps], extras.implied)


def _greedy(
    node: _Node,
    measured: Sequence[Finding],
    ignore: ignoring.Ignores,
    start: _Node,
    cleared: Mapping[str, Severity],
    holding: _Holding,
) -> _Node:
    """From `node`, the best state one step away, again and again, until none is new: one path (what the
    breadth-first search could not reach within its bound), each step chosen among every root's ways."""
    best = node
    while len(node.steps) < MAX_STEPS and node.score()[:2] != (0, 0):
        seen = {installing.key(node.state), *node.path}
        children, _ = _children(node, seen, measured, ignore, start, cleared, holding)
        if not children:
            break
        node = min(children, key=lambda n: n.rank(start.state))
        best = min([best, node], key=lambda n: n.rank(start.state))
    return best


def _one_command(facts: Facts, best: _Node) -> tuple[tuple[Step, ...], Facts]:
    """The steps, with the last one pinning what the combined command would leave elsewhere than the steps did (a
    later range can let an earlier exact pin go: jaxlib==0.7.2, then jaxlib>=0.8.1 leaves the installed 0.10.2,
    where the steps gave 0.8.1), so the one command is made to reach the state that was judged; and the state the
    one command leaves."""
    if not best.steps:
        return (), facts
    reached = outcome(facts, best.steps)
    apart = sorted(n for n, v in best.state.packages.items() if reached.packages.get(n) != v)
    if not apart:
        return best.steps, reached
    *before, last = best.steps
    # a release the model chose below a bound (`_below`'s 1.12.999) is no release to pin: the range that chose it
    # stays the command's, and the installer picks within it
    pinned = tuple(f"{n}=={best.state.packages[n]}" for n in apart if not fixes.placeholder(best.state.packages[n]))
    if not pinned:
        return best.steps, reached
    steps = (*before, Step(last.finding, replace(last.fix, install=(*last.fix.install, *pinned)), last.also))
    return steps, outcome(facts, steps)


def _no_op(fix: Fix, facts: Facts) -> bool:
    """Whether a plan's one command leaves the environment as it is: it only installs exact pins of the releases
    installed (a warning's way up for jax, then a failure's way back to the same jax: `jax==0.5.3` beside jax 0.5.3,
    which the model took for a move, since what was measured there is not carried through a jax move)."""
    if fix.reinstall or fix.uninstall or fix.delete or fix.unset or fix.export or not fix.install:
        return False
    for requirement in fix.install:
        try:
            name, pinned = fixes.parse(requirement)
        except (InvalidRequirement, ValueError):
            return False
        installed = facts.packages.get(name, "")
        if not pinned.startswith("==") or not installed or public(installed) != pinned.removeprefix("=="):
            return False
    return True


def _children(
    node: _Node,
    seen: set[tuple[object, ...]],
    measured: Sequence[Finding],
    ignore: ignoring.Ignores,
    start: _Node,
    cleared: Mapping[str, Severity],
    holding: _Holding,
    workarounds: bool = False,
) -> tuple[list[_Node], bool]:
    """The states each root cause leads to, worst first, by each of its ways (its fix, then the rule's
    workaround where the user's state had that root, or where `workarounds` asks for every one: a variable never
    undoes the plan's own choice in the first plan, but may be a plan a measurement tries); and whether
    a way led back to a state already planned (a loop). A warning's way that moves a package down, or a library into
    another major (which may drop what the user imports), is not taken: warnings break ties, they do not force a
    downgrade or a breaking release (the finding still says its own fix)."""
    back, found = False, []
    path = node.path | {installing.key(node.state)}
    theirs = {f.id for f in start.roots()}
    for root in sorted(node.roots(), key=lambda f: SEVERITIES.index(f.severity)):
        for way in _ways(root, node.state, root.id in theirs or workarounds):
            try:
                state = installing.after(node.state, way, jax_cause=causes.explains_jax(root.id))
            except (InvalidRequirement, ValueError):  # versions no installer reads (a pasted report's): no way
                continue
            if root.severity != "fail" and (_moves(node.state, state)[0] or _majors(node.state, state)):
                continue  # a warning's way down or into a new major: left out (Plan.declined says so)
            if moved := holding.moved(state):
                holding.blocked.update(moved)
                continue  # the user keeps it where it is
            key = installing.key(state)
            back = back or key in path  # back to a state on the way here; another order reaching it is no loop
            if key in seen:
                continue
            seen.add(key)
            done = {s.finding for s in node.steps} | {root.id}
            carried = [f for f in measured if f.id not in done]
            judged = [*_judged(state, ignore, cleared), *carried]
            gone = {f.id for f in node.roots() if f.remedy} - {f.id for f in judged} - {root.id}
            # what the findings it fixes too exclude, its file lines exclude as well (jax>=0.4.24 for SciPy's
            # tril, beside NumPy 2: not 0.4.24 or 0.4.25 either)
            also = [e for f in node.roots() if f.id in gone for e in f.remedy.excluding]
            if also and way.install:
                way = replace(way, excluding=fixes.excluded(way.excluding, also))
            step = Step(root.id, way, also=tuple(sorted(gone)))
            found.append(_Node((*node.steps, step), state, tuple(judged), path))
    return found, back


def _ways(root: Finding, state: Facts, theirs: bool) -> list[Fix]:
    """Its fix, the rule's other way out (jax upgraded where the fix moves NumPy down: the objective chooses), and
    its workaround where the user's state had that root."""
    cause = registry().cause(root.id)
    around = cause.workaround(state) if theirs else Fix()
    other = cause.other_way(state)
    ways = [way for way in (root.remedy, other, around) if way and not way.saved]
    return [kept for way in ways for kept in (_same_major(way, state), way) if kept]


def _same_major(way: Fix, state: Facts) -> Fix:
    """The way with each range that would carry an installed library into a new major held below it, where the
    range's own floor is in the installed major (`transformers>=4.32.0` for 4.30.2 lands on 5.0, which has no Flax
    models at all; `transformers>=4.32.0,<5` is the least change): tried before the way itself, an empty Fix where
    no range crosses a major. A major may drop what the user imports; a build of the state says whether it did."""
    held, changed = [], False
    if not any(fixes.ranged(text) for text in way.install):  # exact pins only (most ways): nothing to hold
        return Fix()
    try:
        reached = installing.after(state, way).packages
    except (InvalidRequirement, ValueError):  # a fix of versions no installer reads (a pasted report's): none held
        return Fix()
    for text in way.install:
        found = fixes.ranged(text)
        if found is None:
            held.append(text)
            continue
        name, spec = found
        was, now = _major(state.packages.get(name)), _major(reached.get(name))
        if was is not None and now is not None and now > was:
            floors = [v for s in spec if s.operator in (">=", ">") and (v := version_or_none(s.version)) is not None]
            if floors and min(floors).major == was:
                held.append(f"{text},<{was + 1}")
                changed = True
                continue
        held.append(text)
    return replace(way, install=tuple(held)) if changed else Fix()


def _moves(before: Facts | dict[str, str], after: Facts | dict[str, str]) -> tuple[int, int]:
    """(packages moved to an older release, packages moved at all, removals included) from one state (or set of
    packages) to another."""
    down = moved = 0
    old_packages = before.packages if isinstance(before, Facts) else before
    new_packages = after.packages if isinstance(after, Facts) else after
    for name, version in old_packages.items():
        now = new_packages.get(name)
        if now == version:
            continue
        moved += 1
        old, new = version_or_none(public(version)), version_or_none(public(now or ""))
        down += old is not None and new is not None and new < old
    return down, moved + sum(name not in old_packages for name in new_packages)


def _majors(before: Facts, after: Facts) -> int:
    """Libraries the state carries into another major release than the one installed (NumPy's is its own term)."""
    return sum(
        _major(version) != _major(after.packages.get(name))
        for name, version in before.packages.items()
        if name != "numpy" and name in after.packages
    )


def _major(version: str | None) -> int | None:
    parsed = version_or_none(public(version or ""))
    return parsed.major if parsed is not None else None


def _judged(state: Facts, ignore: ignoring.Ignores, cleared: Mapping[str, Severity] | None = None) -> list[Finding]:
    """The state's findings; where jax's packages were not moved (jax as measured), a wrong-numbers rule the probe
    ran keeps its measured judgement: the severity it had where it was measured."""
    evaluated = rules.evaluate(state)
    found = list(evaluated.findings)
    if cleared and state.origin != "plan":
        found = [
            replace(f, severity=cleared[f.id], unprobed=False) if f.unprobed and f.id in cleared else f for f in found
        ]
    return ignoring.counted(causes.link(found, evaluated), ignore)


def least(plan: Plan) -> Plan | None:
    """The plan with each library's floor (`name>=X`, X a release) made that release (`name==X`): the least move,
    which `fix` tries before the plan itself. A floor lets the installer take the newest release, which may use
    another name the jax it holds lacks, or be called otherwise: blackjax>=1.2.0 took 1.3, whose
    run_inference_algorithm the program called the old way; ott-jax>=0.4.5 took a release that needs a newer jax's
    register_dataclass; the experts pinned the first fixed release. jax's own packages keep their ranges (their
    pins are the plan's). None where the plan has no such floor."""
    narrowed = rewritten(plan, lambda requirement: [_pinned_floor(requirement)])
    return narrowed if narrowed.fix.install != plan.fix.install else None


def _pinned_floor(requirement: str) -> str:
    ranged = fixes.ranged(requirement)
    if ranged is None or STACK.match(ranged[0]) or len(ranged[1]) != 1:
        return requirement
    (spec,) = tuple(ranged[1])
    release = version_or_none(spec.version)
    if spec.operator != ">=" or release is None or release.is_prerelease or release.local or "*" in spec.version:
        return requirement
    return f"{ranged[0]}=={spec.version}"


def floors(plan: Plan) -> dict[str, str]:
    """A plan's requirements that ask for any release after one (`rlax>0.1.2`: a newer release, jax held), by
    name, but jax's own packages: where the tables know no release that fixes it, the installer takes its newest,
    and the least move is the first that does (`fix` asks the installer's index which follow, `collect/build.py`'s
    `following`)."""
    found = {}
    for requirement in plan.fix.install:
        ranged = fixes.ranged(requirement)
        if ranged is not None and not STACK.match(ranged[0]) and [s.operator for s in ranged[1]] == [">"]:
            found[ranged[0]] = requirement
    return found


def struggling(findings: Sequence[Finding], keep: Collection[str] = ()) -> list[str]:
    """The libraries (not jax's own packages, nor what the user keeps) that the report's failures and warnings are
    most about, in the report's order: where no plan the tables propose runs, each is a library a release of
    another time may fix (brax 0.12.1 calls jax.tree, which a cluster's jax 0.4.13 lacks: no newer brax is without
    it, brax of jax 0.4.13's time is)."""
    found: dict[str, None] = {}
    for finding in findings:
        if finding.ignored is None and finding.severity in ("fail", "warn") and finding.about:
            name = finding.about[0]
            if not STACK.match(name) and name not in keep:
                found[name] = None
    return list(found)


def pinned(plan: Plan, releases: Mapping[str, str], add: bool = False) -> Plan:
    """The plan with each named library's requirement made that release (`rlax>0.1.2` -> `rlax==0.1.5`, `brax==0.12.2`
    -> `brax==0.9.1`); `add`: a library the plan does not install is installed at that release too."""

    def one(requirement: str) -> list[str]:
        name = fixes.named(requirement)
        return [f"{name}=={releases[name]}" if name in releases else requirement]

    made = rewritten(plan, one)
    named = {fixes.named(r) for r in plan.fix.install}
    missing = [f"{name}=={release}" for name, release in releases.items() if add and name not in named]
    return added(made, missing) if missing else made


JAX_STACK = ("jax", "jaxlib")  # what moves with jax where a plan moves it (a plugin's pins: `follow`)


def jax_moved(plan: Plan, library: str, release: str) -> Plan:
    """The other way for a library the plan moves to a newer release with jax held: the library held where it is
    (its requirement left out) and jax and jaxlib at `release` (evermore 0.2.10 calls jax.tree, first in jax
    0.4.25, and declares no jax floor: every newer evermore calls it too, jax 0.4.25 is the fix)."""

    def one(requirement: str) -> list[str]:
        name = fixes.named(requirement)
        if name == library:
            return []
        return [f"{name}=={release}"] if name in JAX_STACK else [requirement]

    moved = unheld(rewritten(plan, one), JAX_STACK)
    wanted = [f"{n}=={release}" for n in JAX_STACK if not any(fixes.named(r) == n for r in moved.fix.install)]
    return added(moved, wanted) if wanted else moved


def unheld(plan: Plan, names: Collection[str]) -> Plan:
    """The plan with these distributions no longer held where they are (`Fix.hold`, which its command names beside
    what it installs): a way that moves jax must not also hold the installed jax (quadax 0.2.7's way up printed
    `jax==0.4.36 ... jax==0.4.35`, which the installer refuses)."""

    def one(fix: Fix) -> Fix:
        return replace(fix, hold=tuple(h for h in fix.hold if fixes.named(h) not in names))

    return replace(plan, steps=tuple(replace(s, fix=one(s.fix)) for s in plan.steps), fix=one(plan.fix))


def added(plan: Plan, requirements: Sequence[str]) -> Plan:
    """The plan with these requirements installed too, by its first step."""
    steps = plan.steps
    if steps:
        first = replace(steps[0], fix=replace(steps[0].fix, install=(*steps[0].fix.install, *requirements)))
        steps = (first, *steps[1:])
    return replace(plan, steps=steps, fix=replace(plan.fix, install=(*plan.fix.install, *requirements)))


MAX_FORGOTTEN = 3  # distributions a twin's imports showed undeclared, added to one plan at most


def unheld_jax(plan: Plan, facts: Facts, installed: Mapping[str, str]) -> list[str]:
    """jax and jaxlib at the environment's releases, where the plan names neither and its twin's installer moved them
    unasked (flax 0.7 brings orbax-checkpoint, whose newest requires a newer jax: pip moved the example's jax 0.4.13
    to 0.6.2 under `flax>=0.6.7,<0.7.5`, and flax and chex then failed to import): the plan is tried again with
    them named at those releases, as the expert types it (`flax==0.6.10 jax==0.4.13 jaxlib==0.4.13`)."""
    if {fixes.named(r) for r in plan.fix.install} & set(JAX_STACK):
        return []
    return [
        f"{name}=={facts.packages[name]}"
        for name in JAX_STACK
        if facts.packages.get(name) and installed.get(name) and installed[name] != facts.packages[name]
    ]


def forgotten(plan: Plan, measured: JaxFacts) -> list[str]:
    """What a plan's twin showed its libraries import, declare nowhere and do not find (the imports probe's
    `undeclared`: jaxns 2.6.4 imports tensorflow_probability, declared by no release of it), where the plan does
    not install it already: added to the plan, the twin is asked again. The measurement, not a table, names it."""
    installs = {fixes.named(r) for r in plan.fix.install}
    found = {str(o["undeclared"]) for o in measured.get("imports") or [] if o.get("undeclared")}
    return sorted(name for name in found if name not in installs)[:MAX_FORGOTTEN]


def rewritten(plan: Plan, each: Callable[[str], list[str]]) -> Plan:
    """The plan with each requirement it installs replaced by what `each` gives for it (none: left out), in its
    steps and in its one command alike."""

    def one(fix: Fix) -> Fix:
        return replace(fix, install=tuple(r for requirement in fix.install for r in each(requirement)))

    return replace(plan, steps=tuple(replace(s, fix=one(s.fix)) for s in plan.steps), fix=one(plan.fix))
