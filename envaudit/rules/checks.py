"""Checks that are code rather than data, because data cannot say them: version couplings between installed
packages, what `pip check` would say, how the jax child ended, and GPU health counters from NVML.

Each check is registered with the same metadata as a data rule (id, severity, title, fix, references), so
`envaudit rules` lists both and the tests hold both to the same standard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from envaudit import fixes
from envaudit.facts import Facts, Unsatisfied
from envaudit.model import Finding, Severity
from envaudit.rules import cuda_builds, tables
from envaudit.rules import environment as env
from envaudit.rules.accessors import release
from envaudit.rules.node import ecc, gpu_busy, nvml_hung, per_gpu, remap_failed, reset_pending, slowdown, starved
from envaudit.scope import PLUGIN

JEP_9419 = "https://docs.jax.dev/en/latest/jep/9419-jax-versioning.html"
INSTALL = "https://docs.jax.dev/en/latest/installation.html"
MEM_ERRORS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
PYTHONPATH = "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONPATH"
# From jax 0.5.3 jaxlib skips such a plugin with a RuntimeWarning ("JAX plugin {name} version {v} is installed, but
# it is not compatible with the installed jaxlib version {jaxlib}, so it will not be used."): jax runs without it.
PLUGIN_CHECK = "https://github.com/jax-ml/jax/blob/jax-v0.5.3/jaxlib/plugin_support.py"
JAX_CONFIG = "https://github.com/jax-ml/jax/blob/main/jax/_src/config.py"  # bool_env(), optional_enum_state()
CUDA_CHECK = "https://github.com/jax-ml/jax/blob/jax-v0.4.23/jax/_src/xla_bridge.py"  # _check_cuda_versions
CUDA_PINS = "https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/plugin_setup.py"  # the with-cuda extra
XID = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


@dataclass(frozen=True)
class Check:
    id: str
    severity: Severity
    title: str
    fix: str
    references: tuple[str, ...]
    run: Callable[[Facts], list[str]]  # the details of each occurrence; empty when the check passes
    exact_fix: Callable[[Facts, str], str] | None = None  # the command for one occurrence here (else `fix`)
    transient: bool = False  # the state of a moment (a GPU's counters, a hung driver), not of the environment
    explains: tuple[str, ...] = ()  # what its fault makes fail too (envaudit/causes.py): "probe:kind" or an id

    def findings(self, facts: Facts) -> list[Finding]:
        found = []
        for detail in self.run(facts):
            command = self.exact_fix(facts, detail) if self.exact_fix else ""
            said = f"{detail} (the fix: {self.fix})" if command else detail  # the command alone, pasteable
            fix = command or self.fix
            found.append(Finding(self.id, self.severity, self.title, said, fix, self.references, "rule"))
        return found


def _is_coupling(req: Unsatisfied) -> bool:
    return env.coupled(str(req.get("package"))) and env.coupled(env.target(str(req.get("requires", ""))))


def coupling(facts: Facts) -> list[str]:
    """jax's own pins as pip reads them, or, where pip has none to read (a plan; jax < 0.4.30, whose metadata does
    not pin jaxlib), the check jax makes at import from its table: one finding either way."""
    return [env.describe(r) for r in facts.requirements if _is_coupling(r)] or tables.import_coupling(facts)


def unsatisfied(facts: Facts) -> list[str]:
    """Every unmet requirement but jax's own (those are `jax-requirement-unsatisfied`, a failure)."""
    return [
        env.describe(r) for r in facts.requirements if not _is_coupling(r) and not env.coupled(str(r.get("package")))
    ]


def plugins(facts: Facts) -> list[str]:
    jaxlib = facts.packages.get("jaxlib")
    if jaxlib is None:
        return []
    return [
        f"{name} {version} beside jaxlib {jaxlib}"
        for name, version in sorted(facts.packages.items())
        if PLUGIN.match(name) and release(version) != release(jaxlib)
    ]


def plugin_fix(facts: Facts, detail: str) -> str:
    """'jax-cuda12-plugin 0.9.2 beside jaxlib 0.9.0.1' -> <python> -m pip install 'jax-cuda12-plugin==0.9.0.1'."""
    name, jaxlib = detail.split(" ")[0], detail.rsplit(" ", 1)[-1]
    return fixes.pip_install(facts, [f"{name}=={jaxlib}"])


def duplicates(facts: Facts) -> list[str]:
    return [
        f"{d.get('name')}: versions {', '.join(d.get('versions') or [])} at {', '.join(d.get('locations') or [])}"
        for d in facts.duplicates
    ]


def _jax_slow(facts: Facts) -> bool:
    return facts.jax.get("status") == "timeout" and starved(facts.jax, facts)


def jax_slow(facts: Facts) -> list[str]:
    if not _jax_slow(facts):
        return []
    idle = facts.jax.get("idle_cpus")
    spare = f", {idle:g} CPUs idle" if isinstance(idle, int | float) else ""
    return [f"{facts.jax.get('message')} (it used {facts.jax.get('cpu_fraction'):.0%} of a CPU{spare})"]


def jax_broken(facts: Facts) -> list[str]:
    status = facts.jax.get("status")
    if status in ("import_error", "crash", "timeout", "error") and not _jax_slow(facts):
        stage = facts.jax.get("stage")
        return [f"{status} (stage {stage}): {facts.jax.get('message')}"]
    return []


def not_imported(facts: Facts) -> list[str]:
    """Quick mode looks at metadata only: say so, so that its OK is never read as "jax works"."""
    return [str(facts.jax.get("message") or "jax was not started")] if facts.jax.get("status") == "skipped" else []


def nothing_to_audit(facts: Facts) -> list[str]:
    """An interpreter without jax (a fresh virtualenv after `pip install envaudit`): its OK would mean nothing."""
    python = facts.python.get("executable")
    return [f"jax is not installed in {python}"] if python and "jax" not in facts.packages else []


CHECKS: tuple[Check, ...] = (
    Check(
        "pythonpath-shadows",
        "fail",
        "PYTHONPATH puts another copy of an audited package before the environment's",
        "remove that directory from PYTHONPATH (pip cannot uninstall what lies outside the environment)",
        (PYTHONPATH,),
        env.pythonpath_shadows,
        env.pythonpath_fix,
        explains=(
            "duplicate-distribution",
            "jax-jaxlib-coupling",
            "plugin-jaxlib-mismatch",
            "requirement-unsatisfied",
            "jax-requirement-unsatisfied",
            "jax:*",
        ),
    ),
    Check(
        "user-site-shadows",
        "fail",
        "the user site-packages holds another version of an audited package",
        "set PYTHONNOUSERSITE=1, or uninstall the user site's copy (python -m pip uninstall NAME)",
        ("https://docs.python.org/3/library/site.html#site.ENABLE_USER_SITE",),
        env.user_site_shadows,
        env.user_site_fix,
        explains=(
            "duplicate-distribution",
            "jax-jaxlib-coupling",
            "plugin-jaxlib-mismatch",
            "requirement-unsatisfied",
            "jax-requirement-unsatisfied",
            "jax:*",
        ),
    ),
    Check(
        "jax-platforms-unavailable",
        "fail",
        "JAX_PLATFORMS names only platforms this machine does not have",
        "unset JAX_PLATFORMS (or install the platform's plugin)",
        ("https://docs.jax.dev/en/latest/installation.html",),
        env.platforms_unavailable,
        env.platforms_fix,
        explains=("jax:*",),
    ),
    Check(
        "jax-env-invalid",
        "fail",
        "a JAX_* variable has a value jax refuses: `import jax` raises ValueError",
        "set it to a value jax accepts (JAX_ENABLE_X64=1 or 0; JAX_DEFAULT_MATMUL_PRECISION=float32, in lower "
        "case), or unset it",
        (JAX_CONFIG,),
        tables.invalid_env,
        explains=("jax-broken", "jax:*"),
    ),
    Check(
        "jax-jaxlib-coupling",
        "fail",
        "jax, jaxlib and the GPU plugins do not satisfy each other's version pins",
        "install jaxlib and the plugins of the installed jax's release",
        (JEP_9419, "https://github.com/jax-ml/jax/issues/24901"),
        coupling,
        env.coupling_fix,
        explains=("jax:*",),
    ),
    Check(
        "jax-requirement-unsatisfied",
        "fail",
        "jax or jaxlib declares a requirement not met: jax may not import",
        "install what jax and jaxlib declare they need",
        ("https://pip.pypa.io/en/stable/cli/pip_check/",),
        env.jax_requirements,
        env.jax_requirements_fix,
        explains=("jax:*",),
    ),
    Check(
        "plugin-jaxlib-mismatch",
        "fail",
        "a jax CUDA/ROCm plugin or PJRT package differs from the jaxlib version",
        "pip install the plugin and pjrt at the jaxlib version",
        (JEP_9419, "https://github.com/jax-ml/jax/issues/24901", PLUGIN_CHECK),
        plugins,
        plugin_fix,
        explains=("jax:*",),
    ),
    Check(
        "cuda-library-older-than-jaxlib-build",
        "fail",
        "a CUDA library is older than the one this jaxlib was built against: jax refuses it and computes on the CPU",
        "install the CUDA wheels jax's cuda12_pip extra pins",
        (CUDA_CHECK, "https://github.com/jax-ml/jax/issues/19121"),
        cuda_builds.refused,
        cuda_builds.refused_fix,
        explains=("gpu-present-jax-on-cpu",),
    ),
    *(
        Check(
            f"{wheel}-outside-jax-pin",
            "warn",
            f"{wheel} is outside the version jax's CUDA plugin pins for it",
            "install the version the plugin's CUDA extra pins",
            (CUDA_PINS,),
            cuda_builds.outside_pin(wheel),
            cuda_builds.outside_pin_fix,
        )
        for wheel in cuda_builds.pinned_wheels()
    ),
    Check(
        "no-jaxlib-wheel-for-python",
        "warn",
        "the planned jaxlib has no wheel for the planned Python: pip cannot install it",
        "pin a jaxlib released for that Python (or plan another Python)",
        ("https://pypi.org/project/jaxlib/#files",),
        tables.no_wheel,
    ),
    *(
        Check(
            f"removed-jax-api-in-{name}",
            "fail",
            f"{name} uses a jax API that the installed jax does not have",
            "upgrade it to a release that no longer uses it, or keep jax below the removal",
            ("https://github.com/jax-ml/jax/blob/main/CHANGELOG.md", JEP_9419),
            tables.removed_api_uses(name),
            tables.removed_api_fix,
        )
        for name in tables.removal_packages()
    ),
    Check(
        "requirement-unsatisfied",
        "warn",
        "an installed package declares a requirement that is not met",
        "pip install the required version shown, or run `pip check` and resolve what it names",
        ("https://pip.pypa.io/en/stable/cli/pip_check/",),
        unsatisfied,
    ),
    Check(
        "duplicate-distribution",
        "warn",
        "a package is installed twice; import and metadata can disagree",
        "pip uninstall the copy you do not want (run it until pip reports nothing left), then reinstall once",
        ("https://packaging.python.org/en/latest/specifications/recording-installed-packages/",),
        duplicates,
    ),
    Check(
        "jax-slow",
        "warn",
        "jax did not finish starting in time while it was computing: the machine was too busy",
        "give it more time (--timeout S), or audit the node when it is idle",
        (INSTALL,),
        jax_slow,
        transient=True,
        explains=("*:timeout",),
    ),
    Check(
        "jax-broken",
        "fail",
        "jax cannot be imported or crashes on its first computation",
        "reinstall the installed jax release",
        (INSTALL,),
        jax_broken,
        env.broken_fix,
        explains=("*:error", "*:crash", "*:timeout"),
    ),
    Check(
        "nothing-to-audit",
        "warn",
        "nothing to audit: jax is not installed in this environment",
        "audit the environment that has jax: envaudit audit --python PATH (its interpreter, or its directory)",
        (INSTALL,),
        nothing_to_audit,
    ),
    Check(
        "jax-not-imported",
        "info",
        "not checked: jax was not imported and no probe ran (quick mode), so an "
        "import failure or wrong numbers cannot show here",
        "run the full audit: envaudit audit",
        (INSTALL,),
        not_imported,
    ),
    Check(
        "nvml-hung",
        "fail",
        "the NVIDIA driver does not answer (NVML hangs)",
        "drain the node; look for Xid errors in the kernel log (dmesg | grep -i xid; Xid 79: a GPU has fallen off "
        "the bus) and reset or power-cycle the GPU",
        (XID,),
        nvml_hung,
        transient=True,
    ),
    Check(
        "gpu-uncorrected-ecc",
        "fail",
        "a GPU reports uncorrected ECC memory errors",
        "drain the node, reset the GPU (nvidia-smi -r -i N) and replace it if errors recur",
        (MEM_ERRORS,),
        per_gpu(ecc),
        transient=True,
    ),
    Check(
        "gpu-remap-failure",
        "fail",
        "a GPU failed to remap a faulty memory row",
        "drain the node and return the GPU (RMA): row remapping failed",
        (MEM_ERRORS,),
        per_gpu(remap_failed),
        transient=True,
    ),
    Check(
        "gpu-reset-pending",
        "warn",
        "a GPU needs a reset to retire or remap memory",
        "drain the node and reset the GPU (nvidia-smi -r -i N) when idle",
        (MEM_ERRORS,),
        per_gpu(reset_pending),
        transient=True,
    ),
    Check(
        "gpu-clocks-slowdown",
        "warn",
        "a GPU's clocks are held down by a hardware or thermal slowdown",
        "check cooling and power; nvidia-smi -q -d PERFORMANCE shows the active reasons",
        ("https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",),
        per_gpu(slowdown),
        transient=True,
    ),
    Check(
        "gpu-busy",
        "info",
        "a GPU runs other jobs' compute processes: the probes share it, and their times with it",
        "audit the node while it is idle (a Slurm epilog, or drained), if a probe timed out or was slow",
        ("https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html",),
        gpu_busy,
        transient=True,
    ),
)


TRANSIENT = frozenset(c.id for c in CHECKS if c.transient)  # never cached (the hook): true now, maybe not later


def evaluate(facts: Facts) -> list[Finding]:
    return [finding for check in CHECKS for finding in check.findings(facts)]
