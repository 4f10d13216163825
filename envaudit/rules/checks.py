"""The checks of how jax's own packages agree and how its child ended: version couplings between jax, jaxlib and
the plugins, what `pip check` would say of the rest, packages installed twice, and jax broken, slow or not imported.

The other checks are declared in the modules that hold what they know (environment, platforms, the tables, node);
the registry (rules/registry.py) lists every one.
"""

from __future__ import annotations

import shlex

from envaudit.model import fixes
from envaudit.model.facts import Facts, Unsatisfied
from envaudit.model.scope import PLUGIN, PROVIDED_BY, coupled
from envaudit.model.versions import release
from envaudit.rules import declared, fixing, jax_pins, rocm_plugins
from envaudit.rules import environment as env
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.node import starved
from envaudit.rules.references import INSTALL, JAX_LIB, JEP_9419, PLUGIN_CHECK, XLA_0419, XLA_AT_JAX
from envaudit.rules.signatures import Signature


def _is_coupling(req: Unsatisfied) -> bool:
    return coupled(str(req.get("package"))) and coupled(env.target(str(req.get("requires", ""))))


def coupling(facts: Facts) -> list[Occurrence]:
    """jax's own pins as pip reads them, or, where pip has none to read (a plan; jax < 0.4.30, whose metadata does
    not pin jaxlib), the check jax makes at import from its table: one finding either way."""
    said = [env.describe(r) for r in facts.requirements if _is_coupling(r)] or jax_pins.import_coupling(facts)
    said = said or declared.unpinned_jaxlib(facts)  # a plan of an old jax and no jaxlib: what the installer leaves
    return [Occurrence(detail, env.coupling_fix(facts)) for detail in said]


def unsatisfied(facts: Facts) -> list[Occurrence]:
    """Every unmet requirement but jax's own (those are `jax-requirement-unsatisfied`, a failure) and those on a
    package jax's own unmet ones move anyway (ml_dtypes too old for jax and for a library: one cause, jax's fix; the
    plan asks again on the state it leaves)."""
    return _others_unmet(facts, facts.requirements, "installed")


def refused(facts: Facts) -> list[Occurrence]:
    """A plan's releases that declare a requirement another pin breaks (the tables', rules/declared.py): pip refuses
    to install them together. Those `unsatisfied` leaves out are left out here too. And a requirement on what the plan
    does not pin that no release of it the tables list can meet beside the pins (`declared.unresolvable`: a library
    that requires equinox>=0.11.5 beside jax 0.4.27, which every such equinox excludes): the resolver finds none."""
    direct = _others_unmet(facts, declared.unmet(facts), "planned")
    return direct + [Occurrence(said, fixing.install(facts, [pin])) for said, pin in declared.unresolvable(facts)]


def install_refused(facts: Facts) -> list[Occurrence]:
    """A plan's stack that the installer refused when it was built here (collect/build.py): a conflict no table
    knows (two libraries' pins), a release with no wheel for the Pythons here, in the installer's own words."""
    install = facts.install
    if facts.origin != "plan" or install.get("status") != "refused":
        return []
    on = f" for Python {install['python']}" if install.get("python") else ""
    said = f"{install.get('installer') or 'the installer'} refused the plan's stack here{on}: {install.get('message')}"
    return [Occurrence(said)]


def _others_unmet(facts: Facts, unmet: list[Unsatisfied], said: str) -> list[Occurrence]:
    """Each unmet requirement of a package other than jax's own, on a package jax's own unmet ones do not move,
    fixed by installing what it requires (less its marker)."""
    moved = {env.target(str(r.get("requires"))) for r in env.jax_unmet(facts)}
    return [
        Occurrence(env.describe(r, said), fixing.install(facts, [str(r.get("requires")).split(";")[0].strip()]))
        for r in unmet
        if not coupled(str(r.get("package")))
        and env.target(str(r.get("requires"))) not in moved
        and not _provided(facts, str(r.get("requires")))
    ]


def _provided(facts: Facts, requirement: str) -> bool:
    """A requirement on a distribution that is not installed, met by another that installs the same module at a
    version it allows (neural-tangents requires `tensorflow`, tensorflow-cpu is installed): pip check names it, the
    import works, and installing the named one beside it would put two TensorFlows in one environment."""
    from packaging.specifiers import SpecifierSet

    name, spec = fixes.parse(requirement.split(";")[0].strip())
    if name in facts.packages:
        return False
    return any(
        other in facts.packages and SpecifierSet(spec).contains(facts.packages[other], prereleases=True)
        for other in PROVIDED_BY.get(name, ())
    )


def plugins(facts: Facts) -> list[Occurrence]:
    """The plugins of another release than jaxlib's, moved to jaxlib's together (one cause: they were left behind
    when jaxlib moved, or moved without it): <python> -m pip install 'NAME==JAXLIB' for each."""
    jaxlib = facts.packages.get("jaxlib")
    behind = [
        (name, version)
        for name, version in sorted(facts.packages.items())
        if jaxlib is not None and (plugin := PLUGIN.match(name)) and release(version) != release(jaxlib)
        if plugin["kind"] != "rocm" or rocm_plugins.compatible(version, jaxlib) is False  # AMD's own cycle
    ]
    if not behind:
        return []
    said = ", ".join(f"{name} {version}" for name, version in behind) + f" beside jaxlib {jaxlib}"
    return [Occurrence(said, fixing.install(facts, [f"{name}=={jaxlib}" for name, _ in behind]))]


def duplicates(facts: Facts) -> list[Occurrence]:
    return [
        Occurrence(
            f"{d.get('name')}: versions {', '.join(d.get('versions') or [])} at {', '.join(d.get('locations') or [])}"
        )
        for d in facts.duplicates
    ]


def leftovers(facts: Facts) -> list[Occurrence]:
    """pip's stashes of an interrupted install (killed mid-way: an OOM, a closed SSH session): `~axlib/` and
    `~axlib-0.10.2.dist-info` beside the distribution, or instead of it. No installer removes them (pip uninstall
    sees no such distribution), pip warns of them at every run, and a reader of the directory takes the stash for
    jaxlib 0.10.2; they are deleted by path. What the interrupted install left missing is another finding's."""
    said = facts.python.get("leftovers") or []
    fix = fixing.delete(facts, said)
    if not fix:
        return []
    return [Occurrence(f"{len(fix.delete)} left by an interrupted pip: {', '.join(fix.delete)}", fix)]


def _jax_slow(facts: Facts) -> bool:
    return facts.jax.get("status") == "timeout" and starved(facts.jax, facts)


def jax_slow(facts: Facts) -> list[Occurrence]:
    if not _jax_slow(facts):
        return []
    idle, quota, waited = (
        facts.jax.get("idle_cpus"),
        facts.jax.get("throttled_fraction"),
        facts.jax.get("wait_fraction"),
    )
    spare = f", waiting for a CPU {waited:.0%} of the time" if isinstance(waited, int | float) else ""
    spare += f", {idle:g} of its CPUs idle" if isinstance(idle, int | float) else ""
    spare += f", held by a CPU quota {quota:.0%} of the time" if isinstance(quota, int | float) and quota else ""
    return [Occurrence(f"{facts.jax.get('message')} (it used {facts.jax.get('cpu_fraction'):.0%} of a CPU{spare})")]


def jax_broken(facts: Facts) -> list[Occurrence]:
    status = facts.jax.get("status")
    if status in ("import_error", "crash", "timeout", "error") and not _jax_slow(facts):
        stage = facts.jax.get("stage")
        return [Occurrence(f"{status} (stage {stage}): {facts.jax.get('message')}", env.broken_fix(facts))]
    return []


def not_imported(facts: Facts) -> list[Occurrence]:
    """Quick mode looks at metadata only: say so, so that its OK is never read as "jax works"."""
    if facts.jax.get("status") != "skipped":
        return []
    other = facts.jax.get("other_python")
    todo = f"run the full audit: envaudit audit --python {shlex.quote(other)}" if other else ""
    return [Occurrence(str(facts.jax.get("message") or "jax was not started"), todo=todo)]


def nothing_to_audit(facts: Facts) -> list[Occurrence]:
    """An interpreter without jax (a fresh virtualenv after `pip install envaudit`): its OK would mean nothing. Where
    a library there imports jax anyway (jaxns 2.6.4 declares no requirement), its failed import is the finding."""
    python = facts.python.get("executable")
    imports = facts.jax.get("imports") or []
    if not python or "jax" in facts.packages or any(o.get("status") == "error" for o in imports):
        return []
    return [Occurrence(f"jax is not installed in {python}")]


# The checks this module finds (rules/registry.py lists them)
JAX_JAXLIB_COUPLING = Check(
    id="jax-jaxlib-coupling",
    severity="fail",
    title="jax, jaxlib and the GPU plugins do not satisfy each other's version pins",
    fix="install jaxlib and the plugins of the installed jax's release",
    references=(JEP_9419, "https://github.com/jax-ml/jax/issues/24901"),
    run=coupling,
    explains=("jax:*",),
    signatures=(
        Signature(
            "jaxlib is version {jaxlib}, but this version of jax requires version >= {required}.",
            JAX_LIB.format("jax-v0.3.0", "/_src", 74),  # unchanged to jax-v0.11.0 (#L65)
        ),
        Signature(
            "jaxlib is version {jaxlib}, but this version of jax requires version {required}.",
            JAX_LIB.format("jax-v0.1.49", "", 33),  # a ValueError, to jax-v0.2.28
        ),
        Signature(
            "jaxlib version {jaxlib} is newer than and incompatible with jax version {jax}.",
            JAX_LIB.format("jax-v0.3.0", "/_src", 79),  # unchanged to jax-v0.11.0 (#L71)
        ),
    ),
)
PLUGIN_JAXLIB_MISMATCH = Check(
    id="plugin-jaxlib-mismatch",
    severity="fail",
    title="a jax CUDA/ROCm plugin or PJRT package differs from the jaxlib version",
    fix="pip install the plugin and pjrt at the jaxlib version",
    references=(JEP_9419, "https://github.com/jax-ml/jax/issues/24901", PLUGIN_CHECK),
    run=plugins,
    explains=("jax:*", "cuda-backend-failed-jax-on-cpu"),  # jax skips the plugin: on the CPU beside the GPU
    signatures=(
        Signature(
            "JAX plugin {package} version {version} is installed, but it is not compatible with the installed "
            "jaxlib version {jaxlib}, so it will not be used.",
            f"{PLUGIN_CHECK}#L72",  # a RuntimeWarning from jax-v0.5.3, unchanged to jax-v0.11.0 (#L93)
        ),
        Signature(
            "Mismatched PJRT plugin PJRT API version ({number}.{number}) and framework PJRT API version "
            "{number}.{number}).",
            XLA_AT_JAX.format(XLA_0419, "pjrt/pjrt_api.cc", 171),  # from jaxlib 0.4.19
        ),
        Signature(
            "Mismatched PJRT plugin PJRT API major version ({number}) and framework PJRT API major version {number}).",
            XLA_AT_JAX.format(XLA_0419, "pjrt/pjrt_api.cc", 156),  # with ENABLE_PJRT_COMPATIBILITY
        ),
    ),
)
REQUIREMENT_UNSATISFIED = Check(
    id="requirement-unsatisfied",
    severity="warn",
    title="an installed package declares a requirement that is not met",
    fix="the required version installed",
    references=("https://pip.pypa.io/en/stable/cli/pip_check/",),
    run=unsatisfied,
)
PLANNED_REQUIREMENT_REFUSED = Check(
    id="planned-requirement-refused",
    severity="fail",
    title="a planned release declares a requirement that another pin of the plan breaks: pip refuses the install",
    fix="pin what the release declares it needs (or a release of it that accepts the other pin)",
    references=(
        "https://pip.pypa.io/en/stable/topics/dependency-resolution/",
        "https://packaging.python.org/en/latest/specifications/core-metadata/#requires-dist-multiple-use",
    ),
    run=refused,
    explains=("plan-does-not-install",),  # what the installer says when the plan is built here
)
PLAN_DOES_NOT_INSTALL = Check(
    id="plan-does-not-install",
    severity="fail",
    title="the plan's stack does not install here: the installer refused it when the plan was built",
    fix="change the pins the installer's reason names (a release of one that accepts the other's)",
    references=("https://docs.astral.sh/uv/concepts/resolution/",),
    run=install_refused,
)
DUPLICATE_DISTRIBUTION = Check(
    id="duplicate-distribution",
    severity="warn",
    title="a package is installed twice; import and metadata can disagree",
    fix="pip uninstall the copy you do not want (run it until pip reports nothing left), then reinstall once",
    references=("https://packaging.python.org/en/latest/specifications/recording-installed-packages/",),
    run=duplicates,
)
PIP_LEFTOVERS = Check(
    id="pip-leftovers",
    severity="warn",
    title="an interrupted pip left its stashes (~ directories) in the environment: no installer removes them",
    fix="delete the ~ directories pip left in site-packages (pip uninstall cannot: they are no distribution)",
    references=("https://github.com/pypa/pip/issues/11849", "https://github.com/pypa/pip/issues/10452"),
    run=leftovers,
)
JAX_SLOW = Check(
    id="jax-slow",
    severity="warn",
    title="jax did not finish starting in time while it was computing: the machine was too busy",
    fix="give it more time (--timeout S), or audit the node when it is idle",
    references=(INSTALL,),
    run=jax_slow,
    transient=True,
    explains=("*:timeout",),
)
JAX_BROKEN = Check(
    id="jax-broken",
    severity="fail",
    title="jax cannot be imported or crashes on its first computation",
    fix="reinstall the installed jax release",
    references=(INSTALL,),
    run=jax_broken,
    explains=("*:error", "*:crash", "*:timeout"),
)
NOTHING_TO_AUDIT = Check(
    id="nothing-to-audit",
    severity="warn",
    title="nothing to audit: jax is not installed in this environment",
    # advice, no command: which environment has jax (PATH) is the user's to say, and whether this one should get
    # jax (half a gigabyte installed on the CPU, a CUDA build on a GPU machine) is theirs, not `envaudit fix`'s
    fix="audit the environment that has jax: envaudit audit --python PATH (its interpreter, or its directory); "
    "or install jax into this one: from envaudit's checkout, pip install '.[jax]' leaves out the releases "
    "envaudit fails",
    references=(INSTALL,),
    run=nothing_to_audit,
)
JAX_NOT_IMPORTED = Check(
    id="jax-not-imported",
    severity="info",
    title="not checked: jax was not imported and no probe ran (quick mode), so an "
    "import failure or wrong numbers cannot show here",
    fix="run the full audit: envaudit audit",
    references=(INSTALL,),
    run=not_imported,
)
