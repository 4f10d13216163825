"""One registry of causes, as ruff keeps its rules: every data rule (`data/*.toml`, one file each) and every code
check (declared beside its function, listed here, one line each), behind one `Cause` protocol.

The registry answers by id, says which rules explain a probe's problem and what each cause declares it explains,
holds the compiled signatures of all of them, lists them for `envaudit rules` and evaluates them on facts. The judge
asks a finding's cause (`Registry.cause`) what it needs of it (`Cause`'s queries: a workaround, another way out,
whether its fault is off jax's default backend here, the library it holds jax back for, whether it is wrong numbers);
a code check and a retired id answer with the defaults (`check.Defaults`). A retired id stays known (a saved report,
an `--ignore` or a `[tool.envaudit]` that names it still reads), is listed as retired with what replaced it, and
never fires.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.report import Finding, Severity
from envaudit.rules import (
    api_removals,
    calls,
    checks,
    cuda_archs,
    cuda_builds,
    cuda_minimums,
    engine,
    environment,
    explains,
    imports,
    jax_env,
    jax_extras,
    jax_messages,
    knowledge,
    node,
    numpy_builds,
    platform_wheels,
    platforms,
    reported,
    tpu_node,
    tpu_pins,
    wheels,
    xlaflags,
)
from envaudit.rules.check import Check, Defaults, Lifecycle
from envaudit.rules.explains import Names
from envaudit.rules.signatures import Catalogue, Match, Signature

# Every code check, in the order their findings are listed within a severity: one line a check (or a family of
# them, one per wheel, library or package a table names).
CHECKS: tuple[Check, ...] = (
    environment.PYTHONPATH_SHADOWS,
    environment.USER_SITE_SHADOWS,
    platforms.JAX_PLATFORMS_UNAVAILABLE,
    platforms.JAX_PLATFORM_NAME_UNAVAILABLE,
    xlaflags.XLA_FLAGS_INVALID,
    jax_env.JAX_ENV_INVALID,
    checks.JAX_JAXLIB_COUPLING,
    environment.JAX_REQUIREMENT_UNSATISFIED,
    checks.PLUGIN_JAXLIB_MISMATCH,
    environment.CUDA_PLUGIN_WITHOUT_DRIVER,
    cuda_builds.CUDA_LIBRARY_OLDER_THAN_JAXLIB_BUILD,
    *cuda_builds.OUTSIDE_PIN,
    *cuda_minimums.BELOW_MINIMUM,
    cuda_archs.GPU_ARCHITECTURE_NOT_IN_JAX_BUILD,
    tpu_pins.LIBTPU_OUTSIDE_JAX_PIN,
    wheels.NO_JAXLIB_WHEEL_FOR_PYTHON,
    platform_wheels.NO_WHEEL_FOR_PLATFORM,
    knowledge.JAX_NEWER_THAN_KNOWLEDGE,
    *api_removals.REMOVED_API,
    api_removals.CONTRADICTED,
    imports.IMPORT_FAILS,
    calls.CALL_FAILS,
    calls.CALL_HANGS,
    checks.REQUIREMENT_UNSATISFIED,
    numpy_builds.NUMPY2_WITH_NUMPY1_BUILD,
    checks.PLANNED_REQUIREMENT_REFUSED,
    checks.PLAN_DOES_NOT_INSTALL,
    checks.DUPLICATE_DISTRIBUTION,
    checks.PIP_LEFTOVERS,
    checks.JAX_SLOW,
    checks.JAX_BROKEN,
    checks.NOTHING_TO_AUDIT,
    checks.JAX_NOT_IMPORTED,
    jax_messages.JAX_ENVIRONMENT_MESSAGE,
    reported.UNEXPLAINED_ERROR,
    reported.PROGRAM_ERROR,
    jax_extras.JAX_EXTRA_UNDEFINED,
    node.NVML_HUNG,
    node.NVML_CRASHED,
    node.NVML_ERROR,
    node.GPU_LOST,
    node.GPU_UNCORRECTED_ECC,
    node.GPU_REMAP_FAILURE,
    node.GPU_RESET_PENDING,
    node.GPU_CLOCKS_SLOWDOWN,
    node.GPU_BUSY,
    tpu_node.TPU_HELD,
    tpu_node.TPU_CHIPS_UNSEEN,
    tpu_node.TPU_HUGEPAGES_OFF,
)


class Cause(Protocol):
    """What a data rule and a code check both are: an id with its metadata, what it explains, the messages users
    see when it bites, and its findings on facts; and what the judge asks of a finding's cause (the last five, each
    with its default on `check.Defaults`: a data rule's own answers, from its file)."""

    @property
    def id(self) -> str: ...
    @property
    def severity(self) -> Severity: ...
    @property
    def title(self) -> str: ...
    @property
    def fix(self) -> str: ...
    @property
    def references(self) -> tuple[str, ...]: ...
    @property
    def kind(self) -> Literal["rule", "check"]: ...
    @property
    def lifecycle(self) -> Lifecycle: ...
    @property
    def explains(self) -> tuple[str, ...]: ...
    @property
    def signatures(self) -> tuple[Signature, ...]: ...
    @property
    def symptom(self) -> str: ...
    @property
    def notes(self) -> str: ...
    @property
    def pins(self) -> tuple[str, ...]: ...
    @property
    def transient(self) -> bool: ...
    @property
    def board(self) -> bool: ...
    def findings(self, facts: Facts) -> list[Finding]: ...
    def seen(self, facts: Facts, matches: Sequence[Match] = ()) -> Finding | None: ...
    @property
    def wrong_numbers(self) -> bool: ...  # wrong numbers the known_regressions probe measures (judge/assemble.py)
    def workaround(self, facts: Facts) -> Fix: ...  # variables that avoid it, the plan's way out of a loop
    def other_way(self, facts: Facts) -> Fix: ...  # another way out than its fix (judge/fixplan.py weighs both)
    def off_default(self, facts: Facts) -> str: ...  # jax's default backend here, where its fault is in another
    def holds_back(self) -> str: ...  # the library it holds jax back for ("" none)


@dataclass(frozen=True)
class Retired(Defaults):
    """An id no longer found: what replaced it and why. It satisfies `Cause` and never fires."""

    id: str
    replaced_by: tuple[str, ...]
    why: str
    kind: Literal["rule", "check"] = "rule"
    lifecycle: Lifecycle = "retired"
    severity: Severity = "info"
    fix: str = ""
    references: tuple[str, ...] = ()
    explains: tuple[str, ...] = ()
    signatures: tuple[Signature, ...] = ()
    symptom: str = ""
    notes: str = ""
    pins: tuple[str, ...] = ()
    transient: bool = False
    board: bool = False

    @property
    def title(self) -> str:
        return f"retired: {self.why}; see {', '.join(self.replaced_by)}"

    def findings(self, facts: Facts) -> list[Finding]:
        return []

    def seen(self, facts: Facts, matches: Sequence[Match] = ()) -> Finding | None:  # it carries no signature
        raise LookupError(f"{self.id} is retired")


# what `Registry.cause` answers for an id no cause is declared by (a probe's finding, a device's, a check's finding of
# one thing): never fires, answers every query with its default, and warns (what a finding of no known cause is)
UNDECLARED = Retired("", (), "no rule or check is declared by this id", severity="warn")

RETIRED: tuple[Retired, ...] = (
    Retired(
        "cuda12-compute-capability-below-52",
        ("cuda12-kepler-gpu", "gpu-architecture-not-in-jax-build"),
        "the builds carry sm_50 code from jaxlib 0.4.21 (tables/cuda-archs.toml), against the install guide's 5.2",
    ),
    Retired(
        "cudnn-below-91-jax-0431",
        ("cudnn-below-91-jaxlib-0429", "cudnn9-with-cudnn89-build"),
        "the cuDNN 9.1 minimum holds from jaxlib 0.4.29, the first cuDNN 9.1 build",
    ),
)


@dataclass(frozen=True)
class Registry:
    causes: tuple[Cause, ...]  # every data rule, then every check, then the retired ids

    @functools.cached_property
    def by_id(self) -> dict[str, Cause]:
        return {c.id: c for c in self.causes}

    @functools.cached_property
    def active(self) -> tuple[Cause, ...]:
        return tuple(c for c in self.causes if c.lifecycle == "active")

    @functools.cached_property
    def rules(self) -> tuple[engine.Rule, ...]:
        return tuple(c for c in self.active if isinstance(c, engine.Rule))

    @functools.cached_property
    def declared(self) -> dict[str, tuple[Names, ...]]:
        """What each cause declares it explains, by id, as the values it names."""
        return {c.id: explains.parse(c.explains) for c in self.active}

    @functools.cached_property
    def transient(self) -> frozenset[str]:
        """The causes of a moment's state (never cached by the hook): true now, maybe not later."""
        return frozenset(c.id for c in self.active if c.transient)

    @functools.cached_property
    def of_jax(self) -> frozenset[str]:
        """The causes that declare themselves a cause of jax's failure (`jax:*`, or jax-broken): fixing one may fix
        what the audit measured of jax."""
        broken = checks.JAX_BROKEN.id
        return frozenset(
            c for c, named in self.declared.items() if any(e.names_finding(broken) or e.subject == "jax" for e in named)
        )

    @functools.cached_property
    def board(self) -> frozenset[str]:
        """The causes that are a GPU board's health, for `health` to judge (the import hook leaves them alone)."""
        return frozenset(c.id for c in self.active if c.board)

    @functools.cached_property
    def signatures(self) -> Catalogue:
        """Every message the causes carry, compiled once."""
        return Catalogue(self.active)

    def get(self, cause_id: str) -> Cause | None:
        return self.by_id.get(cause_id)

    def cause(self, finding_id: str) -> Cause:
        """The cause a finding is of, to ask what the judge needs of it (`Cause`'s queries): the rule or check of its
        id, else UNDECLARED, whose answers are the defaults."""
        return self.by_id.get(finding_id, UNDECLARED)

    def explaining(self, probe: str, kind: str, metric: str = "") -> list[engine.Rule]:
        """The data rules whose `explains` names this problem of a probe ("probe:kind", or "probe:metric")."""
        return [r for r in self.rules if any(e.names_problem(probe, kind, metric) for e in self.declared[r.id])]

    def evaluate(self, facts: Facts, causes: Sequence[Cause] | None = None) -> list[Finding]:
        """The findings of the active causes (or of these) on the facts, each fix priced for this Python."""
        return [priced(f, facts) for c in (self.active if causes is None else causes) for f in c.findings(facts)]

    def evaluate_checks(self, facts: Facts) -> list[Finding]:
        """The code checks' findings alone (what the checks' own tests read)."""
        return self.evaluate(facts, [c for c in CHECKS if c.lifecycle == "active"])

    def seen(self, cause_id: str, facts: Facts, matches: Sequence[Match] = ()) -> Finding | None:
        """A cause's finding where its firing message is seen (these matches of it), whatever the facts say; None
        where the cause makes nothing of them here."""
        found = self.by_id[cause_id].seen(facts, matches)
        return None if found is None else priced(found, facts)

    @functools.cached_property
    def deferring(self) -> frozenset[str]:
        """The causes whose signatures are general words: another cause's message on the same line speaks first."""
        return frozenset(c.id for c in self.active if isinstance(c, Check) and c.defers)


def priced(finding: Finding, facts: Facts) -> Finding:
    """A finding's fix as this Python can take it (none where the jaxlib it pins has no wheel for it: pip would
    refuse the command), and its advice saying what it costs in Pythons."""
    if finding.advice is None:
        return finding
    fix, cost = wheels.on_this_python(facts, finding.remedy, finding.advice.pins)
    return replace(finding, remedy=fix, advice=replace(finding.advice, cost=cost, command=bool(fix)))


@functools.cache
def registry() -> Registry:
    """Every cause: the data rules, the checks (jax's own messages owned where no other signature reads them:
    jax_messages.owning), the retired ids."""
    rules = engine.load_rules()
    owner = jax_messages.JAX_ENVIRONMENT_MESSAGE
    others: tuple[engine.Rule | Check, ...] = (*rules, *(c for c in CHECKS if c is not owner))
    checks_ = tuple(jax_messages.owning(c, others) if c is owner else c for c in CHECKS)
    return Registry((*rules, *checks_, *RETIRED))
