"""Checks that are code rather than data, because data cannot say them: version couplings between installed
packages, what `pip check` would say, how the jax child ended, and GPU health counters from NVML.

Each check is registered with the same metadata as a data rule (id, severity, title, fix, references), so
`envaudit rules` lists both and the tests hold both to the same standard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from envaudit.model import fixes
from envaudit.model.facts import Facts, Unsatisfied
from envaudit.model.report import Finding, Severity, Subject
from envaudit.model.scope import PLUGIN
from envaudit.rules import (
    cuda_archs,
    cuda_builds,
    cuda_minimums,
    declared,
    imports,
    numpy_builds,
    platforms,
    tables,
    tpu_pins,
    xlaflags,
)
from envaudit.rules import environment as env
from envaudit.rules.accessors import release
from envaudit.rules.node import (
    ecc,
    gpu_busy,
    nvml_crashed,
    nvml_hung,
    per_gpu,
    remap_failed,
    reset_pending,
    slowdown,
    starved,
)
from envaudit.rules.occurrence import Occurrence
from envaudit.rules.signatures import Signature

JEP_9419 = "https://docs.jax.dev/en/latest/jep/9419-jax-versioning.html"
INSTALL = "https://docs.jax.dev/en/latest/installation.html"
MEM_ERRORS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
PYTHONPATH = "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONPATH"
# From jax 0.5.3 jaxlib skips such a plugin with a RuntimeWarning ("JAX plugin {name} version {v} is installed, but
# it is not compatible with the installed jaxlib version {jaxlib}, so it will not be used."): jax runs without it.
PLUGIN_CHECK = "https://github.com/jax-ml/jax/blob/jax-v0.5.3/jaxlib/plugin_support.py"
JAX_CONFIG = "https://github.com/jax-ml/jax/blob/main/jax/_src/config.py"  # bool_env(), optional_enum_state()
CUDA_CHECK = "https://github.com/jax-ml/jax/blob/jax-v0.4.23/jax/_src/xla_bridge.py"  # _check_cuda_versions
CUDA_MINIMUMS = "https://github.com/jax-ml/jax/blob/jax-v0.10.1/jax_plugins/cuda/__init__.py#L148"  # from 0.6.1
CUDA_MINIMUMS_BEFORE = "https://github.com/jax-ml/jax/blob/jax-v0.4.26/jax/_src/xla_bridge.py#L272"  # single-package
CUDA_PINS = "https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/plugin_setup.py"  # the with-cuda extra
XID = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
XLA_BRIDGE = "https://github.com/jax-ml/jax/blob/jax-v0.10.1/jax/_src/xla_bridge.py"  # backends()
XLA_REVISION = "001918b7024cf5f020051a9d25d2dd57a5896aaa"  # where the parser was read (collect/xlaflags.py)
PARSE_FLAGS = f"https://github.com/openxla/xla/blob/{XLA_REVISION}/xla/parse_flags_from_env.cc"
TSL_FLAGS = f"https://github.com/openxla/xla/blob/{XLA_REVISION}/third_party/tsl/tsl/util/command_line_flags.cc"
JAX_LIB = "https://github.com/jax-ml/jax/blob/{}/jax{}/lib/__init__.py#L{}"  # check_jaxlib_version, at a tag
XLA_AT_JAX = "https://github.com/openxla/xla/blob/{}/xla/{}#L{}"  # at the XLA commit a jax release pins
XLA_0419, XLA_0414 = "ecb73da4b7b2e3b54aa6d6b7f08a5c662bb19c6e", "9f26b9390f5a5c565a13925731de749be8a760be"


@dataclass(frozen=True)
class Check:
    id: str
    severity: Severity
    title: str
    fix: str
    references: tuple[str, ...]
    run: Callable[[Facts], list[Occurrence]]  # each occurrence, with its own fix where it has one; empty: passes
    transient: bool = False  # the state of a moment (a GPU's counters, a hung driver), not of the environment
    board: bool = False  # a GPU board's health: `health` judges it, the import hook leaves it alone
    explains: tuple[str, ...] = ()  # what its fault makes fail too (envaudit/judge/causes.py): "probe:kind" or an id
    signatures: tuple[Signature, ...] = ()  # the messages users see when it bites (rules/signatures.py)

    def findings(self, facts: Facts) -> list[Finding]:
        found = []
        for occurrence in self.run(facts):
            # a command, or none: advice is said in the detail, never run
            fix, cost = tables.on_this_python(facts, occurrence.fix, occurrence.fix.install)
            said = f"{occurrence.detail} ({'the fix' if fix else 'what to do'}: {self.fix}{cost})"
            severity = occurrence.severity or self.severity
            subject = Subject("check", self.id, occurrence.about)
            found.append(Finding(subject, severity, self.title, said, fix, self.references, "rule"))
        return found

    def seen(self, facts: Facts) -> Finding:
        """Its finding where its message is seen, whatever the facts say: what to do, no command (the facts that
        would choose one are the message's, not the environment's)."""
        said = f"its message is seen (what to do: {self.fix})"
        return Finding(Subject("check", self.id), self.severity, self.title, said, fixes.Fix(), self.references)


def _is_coupling(req: Unsatisfied) -> bool:
    return env.coupled(str(req.get("package"))) and env.coupled(env.target(str(req.get("requires", ""))))


def coupling(facts: Facts) -> list[Occurrence]:
    """jax's own pins as pip reads them, or, where pip has none to read (a plan; jax < 0.4.30, whose metadata does
    not pin jaxlib), the check jax makes at import from its table: one finding either way."""
    said = [env.describe(r) for r in facts.requirements if _is_coupling(r)] or tables.import_coupling(facts)
    return [Occurrence(detail, env.coupling_fix(facts)) for detail in said]


def unsatisfied(facts: Facts) -> list[Occurrence]:
    """Every unmet requirement but jax's own (those are `jax-requirement-unsatisfied`, a failure) and those on a
    package jax's own unmet ones move anyway (ml_dtypes too old for jax and for a library: one cause, jax's fix; the
    plan asks again on the state it leaves)."""
    return _others_unmet(facts, facts.requirements, "installed")


def refused(facts: Facts) -> list[Occurrence]:
    """A plan's releases that declare a requirement another pin breaks (the tables', rules/declared.py): pip refuses
    to install them together. Those `unsatisfied` leaves out are left out here too."""
    return _others_unmet(facts, declared.unmet(facts), "planned")


def _others_unmet(facts: Facts, unmet: list[Unsatisfied], said: str) -> list[Occurrence]:
    """Each unmet requirement of a package other than jax's own, on a package jax's own unmet ones do not move,
    fixed by installing what it requires (less its marker)."""
    moved = {env.target(str(r.get("requires"))) for r in env.jax_unmet(facts)}
    return [
        Occurrence(env.describe(r, said), fixes.install(facts, [str(r.get("requires")).split(";")[0].strip()]))
        for r in unmet
        if not env.coupled(str(r.get("package"))) and env.target(str(r.get("requires"))) not in moved
    ]


def plugins(facts: Facts) -> list[Occurrence]:
    """The plugins of another release than jaxlib's, moved to jaxlib's together (one cause: they were left behind
    when jaxlib moved, or moved without it): <python> -m pip install 'NAME==JAXLIB' for each."""
    jaxlib = facts.packages.get("jaxlib")
    behind = [
        (name, version)
        for name, version in sorted(facts.packages.items())
        if jaxlib is not None and PLUGIN.match(name) and release(version) != release(jaxlib)
    ]
    if not behind:
        return []
    said = ", ".join(f"{name} {version}" for name, version in behind) + f" beside jaxlib {jaxlib}"
    return [Occurrence(said, fixes.install(facts, [f"{name}=={jaxlib}" for name, _ in behind]))]


def duplicates(facts: Facts) -> list[Occurrence]:
    return [
        Occurrence(
            f"{d.get('name')}: versions {', '.join(d.get('versions') or [])} at {', '.join(d.get('locations') or [])}"
        )
        for d in facts.duplicates
    ]


def _jax_slow(facts: Facts) -> bool:
    return facts.jax.get("status") == "timeout" and starved(facts.jax, facts)


def jax_slow(facts: Facts) -> list[Occurrence]:
    if not _jax_slow(facts):
        return []
    idle, quota = facts.jax.get("idle_cpus"), facts.jax.get("throttled_fraction")
    spare = f", {idle:g} of its CPUs idle" if isinstance(idle, int | float) else ""
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
    return [Occurrence(str(facts.jax.get("message") or "jax was not started"))]


def nothing_to_audit(facts: Facts) -> list[Occurrence]:
    """An interpreter without jax (a fresh virtualenv after `pip install envaudit`): its OK would mean nothing."""
    python = facts.python.get("executable")
    return [Occurrence(f"jax is not installed in {python}")] if python and "jax" not in facts.packages else []


# what the libraries' tables say of the jax that another copy shadows: gone with the copy
SHADOWED_JAX = tuple(f"removed-jax-api-in-{name}" for name in tables.removal_packages())

CHECKS: tuple[Check, ...] = (
    Check(
        id="pythonpath-shadows",
        severity="fail",
        title="PYTHONPATH puts another copy of an audited package before the environment's",
        fix="remove that directory from PYTHONPATH (pip cannot uninstall what lies outside the environment)",
        references=(PYTHONPATH,),
        run=env.pythonpath_shadows,
        explains=(
            "duplicate-distribution",
            "jax-jaxlib-coupling",
            "plugin-jaxlib-mismatch",
            "requirement-unsatisfied",
            "jax-requirement-unsatisfied",
            "jax:*",
            *SHADOWED_JAX,
        ),
    ),
    Check(
        id="user-site-shadows",
        severity="fail",
        title="the user site-packages holds another version of an audited package",
        fix="set PYTHONNOUSERSITE=1, or uninstall the user site's copy (python -m pip uninstall NAME)",
        references=("https://docs.python.org/3/library/site.html#site.ENABLE_USER_SITE",),
        run=env.user_site_shadows,
        explains=(
            "duplicate-distribution",
            "jax-jaxlib-coupling",
            "plugin-jaxlib-mismatch",
            "requirement-unsatisfied",
            "jax-requirement-unsatisfied",
            "jax:*",
            *SHADOWED_JAX,
        ),
    ),
    Check(
        id="jax-platforms-unavailable",
        severity="fail",
        title="JAX_PLATFORMS names a platform this machine does not have: jax fails at its first use",
        fix="export JAX_PLATFORMS with only the platforms this machine has, or unset it (or install the platform's "
        "plugin)",
        references=(INSTALL, XLA_BRIDGE, "https://github.com/jax-ml/jax/pull/22703"),
        run=platforms.unavailable,
        explains=("jax:*",),
        signatures=(  # raised, with this advice, only where JAX_PLATFORMS is set (jax-v0.4.13 to jax-v0.11.0)
            Signature(
                "Unable to initialize backend '{name}': {any} (set JAX_PLATFORMS='' to automatically choose an "
                "available backend)",
                "https://github.com/jax-ml/jax/blob/jax-v0.11.0/jax/_src/xla_bridge.py#L833",  # the advice: #L839
            ),
            Signature(  # logged at info where it is not raised: jax tried a backend it does not have, as it does
                "Unable to initialize backend '{name}': {any}",
                "https://github.com/jax-ml/jax/blob/jax-v0.3.14/jax/_src/lib/xla_bridge.py#L328",
                fires=False,
            ),
        ),
    ),
    Check(
        id="xla-flags-invalid",
        severity="fail",
        title="XLA_FLAGS holds an argument XLA refuses: jax ends at its first use",
        fix="export XLA_FLAGS without the arguments named, or unset it",
        references=(PARSE_FLAGS, TSL_FLAGS),
        run=xlaflags.refused,
        explains=("jax-broken", "jax:*"),
        signatures=(
            Signature("Unknown flag in XLA_FLAGS: {any}", XLA_AT_JAX.format(XLA_0414, "parse_flags_from_env.cc", 210)),
            Signature("Unknown flags in XLA_FLAGS: {any}", XLA_AT_JAX.format(XLA_0414, "parse_flags_from_env.cc", 210)),
        ),
    ),
    Check(
        id="jax-env-invalid",
        severity="fail",
        title="a JAX_* variable has a value jax refuses: `import jax` raises ValueError",
        fix="the value jax accepts (JAX_DEFAULT_MATMUL_PRECISION=float32, in lower case), or the variable unset "
        "(JAX_ENABLE_X64 takes 1 or 0)",
        references=(JAX_CONFIG,),
        run=tables.invalid_env,
        explains=("jax-broken", "jax:*"),
    ),
    Check(
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
    ),
    Check(
        id="jax-requirement-unsatisfied",
        severity="fail",
        title="jax or jaxlib declares a requirement not met: jax may not import",
        fix="install what jax and jaxlib declare they need",
        references=("https://pip.pypa.io/en/stable/cli/pip_check/",),
        run=env.jax_requirements,
        explains=("jax:*",),
    ),
    Check(
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
                "Mismatched PJRT plugin PJRT API major version ({number}) and framework PJRT API major version "
                "{number}).",
                XLA_AT_JAX.format(XLA_0419, "pjrt/pjrt_api.cc", 156),  # with ENABLE_PJRT_COMPATIBILITY
            ),
        ),
    ),
    Check(
        id="cuda-plugin-without-driver",
        severity="warn",
        title="a jax CUDA plugin is installed on a machine without an NVIDIA driver: jax warns at every import and "
        "computes on the CPU",
        fix="remove the plugin and its PJRT package (or install the NVIDIA driver, where the machine has a GPU)",
        references=(
            "https://github.com/jax-ml/jax/blob/jax-v0.10.1/jax/_src/xla_bridge.py",
            "https://docs.jax.dev/en/latest/installation.html",
        ),
        run=env.plugin_without_driver,
    ),
    Check(
        id="cuda-library-older-than-jaxlib-build",
        severity="fail",
        title=(
            "a CUDA library is older than the one this jaxlib was built against: jax refuses it and computes on the CPU"
        ),
        fix="install the CUDA wheels jax's CUDA extra pins for the build (cuda12_pip, cuda11_pip)",
        references=(CUDA_CHECK, "https://github.com/jax-ml/jax/issues/19121"),
        run=cuda_builds.refused,
        explains=("gpu-present-jax-on-cpu", "cuda-backend-failed-jax-on-cpu"),
        signatures=(
            Signature(
                "Loaded runtime CuDNN library: {cudnn} but source was compiled with: {built}.  CuDNN library needs "
                "to have matching major version and equal or higher minor version.",
                XLA_AT_JAX.format(XLA_0419, "stream_executor/cuda/cuda_dnn.cc", 440),
            ),
            Signature(
                "Loaded runtime CuDNN library: {cudnn} but source was compiled with: {built}.  CuDNN library major "
                "and minor version needs to match or have higher minor version",
                "https://github.com/tensorflow/tensorflow/blob/011a5fda98834803bc103084d86335f9645a473a/"
                "tensorflow/stream_executor/cuda/cuda_dnn.cc",  # TensorFlow's, before XLA's own
            ),
            Signature(
                "Found {name} version {number}, but JAX was built against version {number}, which is newer.",
                "https://github.com/jax-ml/jax/blob/jax-v0.4.17/jax/_src/xla_bridge.py#L198",  # to jax-v0.4.25
            ),
            Signature(
                "Outdated {name} installation found.\nVersion JAX was built against: {number}\n"
                "Minimum supported: {number}\nInstalled version: {number}",
                "https://github.com/jax-ml/jax/blob/jax-v0.4.26/jax/_src/xla_bridge.py#L293",  # jax_plugins/cuda
                # /__init__.py from jax-v0.6.1 (#L106), unchanged to jax-v0.11.0
            ),
        ),
    ),
    *(
        Check(
            id=f"{wheel}-outside-jax-pin",
            severity="warn",
            title=f"{wheel} is outside the version jax's CUDA plugin pins for it",
            fix="install the version the plugin's CUDA extra pins",
            references=(CUDA_PINS,),
            run=cuda_builds.outside_pin(wheel),
        )
        for wheel in cuda_builds.pinned_wheels()
    ),
    *(
        Check(
            id=cuda_minimums.check_id(library),
            severity="fail",
            title=f"{library} is below the minimum jax's CUDA check accepts: jax refuses it and computes on the CPU",
            fix=f"install a {cuda_minimums.wheel_of(library)} release that meets it, jax and its plugins held",
            references=(CUDA_MINIMUMS, CUDA_MINIMUMS_BEFORE),
            run=cuda_minimums.below_minimum(library),
            # jax's own pin on the same wheel, and the GPU jax then leaves unused: one cause, one finding
            explains=(
                f"{cuda_minimums.wheel_of(library)}-outside-jax-pin",
                "gpu-present-jax-on-cpu",
                "cuda-backend-failed-jax-on-cpu",
            ),
        )
        for library in cuda_minimums.libraries()
    ),
    Check(
        id="gpu-architecture-not-in-jax-build",
        severity="fail",
        title="a GPU here that the jax CUDA build carries no code for: jax lists it and dies on its first kernel",
        fix="install the jax CUDA release the detail names, built with code for every GPU here (or compute on the "
        "CPU where none is)",
        references=(
            "https://github.com/jax-ml/jax/blob/jax-v0.10.2/.bazelrc#L195",  # the capabilities of each CUDA build
            "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility",
            "https://threedots.ovh/blog/2022/04/cuda-on-nvidia-jetson-just-not-the-same/",  # Tegra's exception
            "https://github.com/jax-ml/jax/issues/22723",
            "https://github.com/jax-ml/jax/issues/40487",
            "https://github.com/jax-ml/jax/issues/14546",
        ),
        run=cuda_archs.missing,
        # jax dies on its first kernel (the child's computation, the probes); the install guide's rules on the same
        # GPUs say what this computes, without the release that has the code: one cause, this fix
        explains=("jax-broken", "jax:*", "cuda13-compute-capability-below-75", "cuda12-kepler-gpu"),
    ),
    Check(
        id="libtpu-outside-jax-pin",
        severity="warn",
        title="libtpu is not the build jax's tpu extra pins for the installed jax",
        fix="install the libtpu the installed jax's tpu extra pins, jax and jaxlib held where they are",
        references=(
            "https://github.com/jax-ml/jax/blob/jax-v0.10.2/setup.py#L26",
            "https://github.com/jax-ml/jax/issues/20148",
            "https://github.com/jax-ml/jax/issues/24987",
        ),
        run=tpu_pins.outside,
    ),
    Check(
        id="no-jaxlib-wheel-for-python",
        severity="warn",
        title="the planned jaxlib has no wheel for the planned Python: pip cannot install it",
        fix="pin a jaxlib released for that Python (or plan another Python)",
        references=("https://pypi.org/project/jaxlib/#files",),
        run=tables.no_wheel,
    ),
    *(
        Check(
            id=f"removed-jax-api-in-{name}",
            severity="fail",
            title=f"{name} uses a jax API that the installed jax does not have (a warning where only functions "
            "off the everyday path call it)",
            fix="upgrade it to a release that no longer uses it, or keep jax below the removal",
            references=("https://github.com/jax-ml/jax/blob/main/CHANGELOG.md", JEP_9419),
            run=tables.removed_api_uses(name),
            explains=(f"@{name}:error", "jax-api-missing"),  # a probe that imports it ends in its error
        )
        for name in tables.removal_packages()
    ),
    Check(
        id=imports.CHECK,
        severity="fail",
        title="an installed library that depends on jax raises when it is imported",
        fix="the release of it, or of jax, that the detail names",
        references=("https://docs.python.org/3/reference/import.html", JEP_9419),
        run=imports.failures,
    ),
    Check(
        id="requirement-unsatisfied",
        severity="warn",
        title="an installed package declares a requirement that is not met",
        fix="the required version installed",
        references=("https://pip.pypa.io/en/stable/cli/pip_check/",),
        run=unsatisfied,
    ),
    Check(
        id="numpy2-with-numpy1-build",
        severity="fail",
        title="a release built against NumPy 1 beside NumPy 2: its import fails, although pip accepts them together",
        fix="upgrade it to the first release built against NumPy 2 (or keep NumPy below 2)",
        references=(
            "https://github.com/numpy/numpy/blob/v2.0.0/numpy/core/_multiarray_umath.py#L22",
            "https://numpy.org/devdocs/dev/depending_on_numpy.html",
        ),
        run=numpy_builds.numpy1_builds,
        explains=("jax:*", "*:crash", "numpy2-module-built-for-numpy1", "imports:*"),
    ),
    Check(
        id="planned-requirement-refused",
        severity="fail",
        title="a planned release declares a requirement that another pin of the plan breaks: pip refuses the install",
        fix="pin what the release declares it needs (or a release of it that accepts the other pin)",
        references=(
            "https://pip.pypa.io/en/stable/topics/dependency-resolution/",
            "https://packaging.python.org/en/latest/specifications/core-metadata/#requires-dist-multiple-use",
        ),
        run=refused,
    ),
    Check(
        id="duplicate-distribution",
        severity="warn",
        title="a package is installed twice; import and metadata can disagree",
        fix="pip uninstall the copy you do not want (run it until pip reports nothing left), then reinstall once",
        references=("https://packaging.python.org/en/latest/specifications/recording-installed-packages/",),
        run=duplicates,
    ),
    Check(
        id="jax-slow",
        severity="warn",
        title="jax did not finish starting in time while it was computing: the machine was too busy",
        fix="give it more time (--timeout S), or audit the node when it is idle",
        references=(INSTALL,),
        run=jax_slow,
        transient=True,
        explains=("*:timeout",),
    ),
    Check(
        id="jax-broken",
        severity="fail",
        title="jax cannot be imported or crashes on its first computation",
        fix="reinstall the installed jax release",
        references=(INSTALL,),
        run=jax_broken,
        explains=("*:error", "*:crash", "*:timeout"),
    ),
    Check(
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
    ),
    Check(
        id="jax-not-imported",
        severity="info",
        title="not checked: jax was not imported and no probe ran (quick mode), so an "
        "import failure or wrong numbers cannot show here",
        fix="run the full audit: envaudit audit",
        references=(INSTALL,),
        run=not_imported,
    ),
    Check(
        id="nvml-hung",
        severity="fail",
        title="the NVIDIA driver does not answer (NVML hangs)",
        fix="drain the node; look for Xid errors in the kernel log (dmesg | grep -i xid; Xid 79: a GPU has fallen off "
        "the bus) and reset or power-cycle the GPU",
        references=(XID,),
        run=nvml_hung,
        transient=True,
    ),
    Check(
        id="nvml-crashed",
        severity="fail",
        title="the NVIDIA driver's management library crashes (asking NVML killed the process)",
        fix="drain the node; run nvidia-smi, which uses the same library: if it crashes too, look for Xid errors in "
        "the kernel log (dmesg | grep -i xid) and reinstall the driver or power-cycle the node; if it does not, "
        "reinstall nvidia-ml-py (the pynvml envaudit asks NVML through)",
        references=(XID,),
        run=nvml_crashed,
        transient=True,
    ),
    Check(
        id="gpu-uncorrected-ecc",
        severity="fail",
        title="a GPU reports uncorrected ECC memory errors",
        fix="drain the node, reset the GPU (nvidia-smi -r -i N) and replace it if errors recur",
        references=(MEM_ERRORS,),
        run=per_gpu(ecc),
        transient=True,
        board=True,
    ),
    Check(
        id="gpu-remap-failure",
        severity="fail",
        title="a GPU failed to remap a faulty memory row",
        fix="drain the node and return the GPU (RMA): row remapping failed",
        references=(MEM_ERRORS,),
        run=per_gpu(remap_failed),
        transient=True,
        board=True,
    ),
    Check(
        id="gpu-reset-pending",
        severity="warn",
        title="a GPU needs a reset to retire or remap memory",
        fix="drain the node and reset the GPU (nvidia-smi -r -i N) when idle",
        references=(MEM_ERRORS,),
        run=per_gpu(reset_pending),
        transient=True,
        board=True,
    ),
    Check(
        id="gpu-clocks-slowdown",
        severity="warn",
        title="a GPU's clocks are held down by a hardware or thermal slowdown",
        fix="check cooling and power; nvidia-smi -q -d PERFORMANCE shows the active reasons",
        references=("https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",),
        run=per_gpu(slowdown),
        transient=True,
        board=True,
    ),
    Check(
        id="gpu-busy",
        severity="info",
        title="a GPU runs other jobs' compute processes: the probes share it, and their times with it",
        fix="audit the node while it is idle (a Slurm epilog, or drained), if a probe timed out or was slow",
        references=("https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html",),
        run=gpu_busy,
        transient=True,
        board=True,
    ),
)


TRANSIENT = frozenset(c.id for c in CHECKS if c.transient)  # never cached (the hook): true now, maybe not later
BOARD = frozenset(c.id for c in CHECKS if c.board)  # a GPU's health, for `health` to judge


def evaluate(facts: Facts) -> list[Finding]:
    return [finding for check in CHECKS for finding in check.findings(facts)]
