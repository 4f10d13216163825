"""Checks of how the environment is put together, and the exact fix for each: the causes that pip cannot see.

A jax that fails to import is often not broken itself: an older copy earlier on PYTHONPATH shadows it (pip then
refuses to uninstall it, being outside the environment), JAX_PLATFORMS asks for a platform this machine lacks
(rules/platforms.py), jaxlib is of another release, or one of jax's own requirements is unmet. Each
is a finding of its own, registered in `registry.CHECKS` with what it `explains`, so the failures it causes fold
under it (envaudit/judge/causes.py), and each fix names the real cause and is built for this environment
(envaudit/model/fixes.py): reinstalling jax never helps against a variable.
"""

from __future__ import annotations

import os

from envaudit.model import fixes
from envaudit.model.facts import Duplicate, Facts, Unsatisfied
from envaudit.model.fixes import Fix
from envaudit.model.scope import PLUGIN, coupled
from envaudit.rules import accessors, api_removals, declared, fixing
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import PYTHONPATH


def _pythonpath(facts: Facts) -> str:
    return str(facts.python.get("pythonpath") or "")


def _entries(facts: Facts, where: str) -> list[str]:
    """The sys.path entries that `where` ("PYTHONPATH", or "user site") puts before the environment's own."""
    if where == "PYTHONPATH":
        return [os.path.normpath(e) for e in _pythonpath(facts).split(os.pathsep) if e]
    user = str(facts.python.get("user_site") or "")
    return [os.path.normpath(user)] if user else []


def _shadowing(facts: Facts, where: str = "PYTHONPATH") -> list[tuple[Duplicate, str]]:
    """Each duplicated distribution whose first copy (the one imported) lies in one of those entries, at a
    version other than the environment's (a copy of the same version changes nothing imported)."""
    entries = _entries(facts, where)
    found = []
    for dup in facts.duplicates:
        locations = [str(p) for p in dup.get("locations") or []]
        parent = os.path.normpath(os.path.dirname(locations[0])) if locations else ""
        versions = [str(v) for v in dup.get("versions") or []] if isinstance(dup.get("versions"), list) else []
        if parent in entries and len(set(versions)) > 1:
            found.append((dup, parent))
    return found


def _shadows(facts: Facts, where: str, fix: Fix) -> list[Occurrence]:
    found = []
    for dup, entry in _shadowing(facts, where):
        versions = [str(v) for v in dup.get("versions") or []]
        others = ", ".join(versions[1:]) or "?"
        said = (
            f"{dup.get('name')} {versions[0] if versions else '?'} in {entry} ({where}) is imported "
            f"instead of the environment's {others}"
        )
        found.append(Occurrence(said, fix))
    return found


def pythonpath_shadows(facts: Facts) -> list[Occurrence]:
    return _shadows(facts, "PYTHONPATH", pythonpath_fix(facts))


def user_site_shadows(facts: Facts) -> list[Occurrence]:
    # the alternative, uninstalling the user site's copies, is the check's own fix text
    return _shadows(facts, "user site", fixing.export(facts, "PYTHONNOUSERSITE", "1"))


def pythonpath_fix(facts: Facts) -> Fix:
    shadow = {entry for _, entry in _shadowing(facts)}
    kept = [e for e in _pythonpath(facts).split(os.pathsep) if e and os.path.normpath(e) not in shadow]
    if not kept:
        return fixing.unset(facts, "PYTHONPATH")
    return fixing.export(facts, "PYTHONPATH", os.pathsep.join(kept))


# jax-v0.10.1 jax/_src/xla_bridge.py, discover_pjrt_plugins: logger.exception("Jax plugin configuration error:
# Exception when calling %s.initialize()"); the CUDA plugin's initialize() then raises "Unable to load CUDA. Is it
# installed?" (jax_plugins/xla_cuda12/__init__.py). Measured here with jax, jaxlib and the CUDA 12 plugin 0.10.1 on a
# machine without a driver: that traceback at every `import jax`, then [CpuDevice(id=0)].
PLUGIN_NO_DRIVER = "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda{major}.initialize()"


def plugin_without_driver(facts: Facts) -> list[Occurrence]:
    """A CUDA plugin on a machine without an NVIDIA driver (NVML's library is not there): jax logs a traceback at
    every import and computes on the CPU; the plugin and its PJRT package are what to remove (or the driver to
    install, where the machine has a GPU: said, not run)."""
    if facts.nvidia.get("status") != "absent" or accessors.reported_platform(facts) == "cuda":
        return []
    plugins = [(n, m["major"]) for n in sorted(facts.packages) if (m := PLUGIN.match(n)) and m["kind"] == "cuda"]
    if not plugins:
        return []
    names = ", ".join(f"{n} {facts.packages[n]}" for n, _ in plugins)
    said = (
        f"{names} installed and no NVIDIA driver ({facts.nvidia.get('message')}): every `import jax` logs "
        f"'{PLUGIN_NO_DRIVER.format(major=plugins[0][1])}' with a traceback, and jax computes on the CPU; the "
        "nvidia-* wheels the plugin's extra brought can go too, if nothing else needs them (or, on a machine with a "
        "GPU, install its driver instead)"
    )
    return [Occurrence(said, fixing.uninstall(facts, [n for n, _ in plugins]))]


def jax_unmet(facts: Facts) -> list[Unsatisfied]:
    """jax's and jaxlib's unmet requirements but those on each other: pip's, or for a plan, the table's."""
    return [
        r
        for r in facts.requirements or declared.unmet(facts)
        if coupled(str(r.get("package"))) and not coupled(target(str(r.get("requires"))))
    ]


def target(requirement: str) -> str:
    """The distribution a requirement names ('jaxlib<=0.4.30,>=0.4.27' -> 'jaxlib')."""
    return fixes.named(requirement)


def describe(req: Unsatisfied, said: str = "installed") -> str:
    """One unmet requirement, as `pip check` says it (`said`: "planned" for a plan's versions)."""
    return f"{req.get('package')} requires {req.get('requires')}, {said}: {req.get('installed') or 'nothing'}"


def jax_requirements(facts: Facts) -> list[Occurrence]:
    """One finding for all of them (jax and jaxlib requiring the same ml_dtypes are one cause), fixed by installing
    what they require."""
    said = "installed" if facts.requirements else "planned"  # pip's word, or the table's on a plan
    unmet = jax_unmet(facts)
    if not unmet:
        return []
    pins = [str(r.get("requires")).split(";")[0].strip() for r in unmet]  # a requirement, less its marker
    return [Occurrence("; ".join(describe(r, said) for r in unmet), fixing.install(facts, pins))]


def coupling_fix(facts: Facts) -> Fix:
    """jaxlib (and the plugin) to the installed jax's release, for this platform."""
    jaxlib = facts.packages.get("jaxlib", "")
    if "+" in jaxlib and "jax" in facts.packages:  # a local CUDA build (+cuda12.cudnn89) is not on PyPI: move jax to it
        return fixing.install(facts, [f"jax=={jaxlib.split('+')[0]}"])
    version = facts.packages.get("jax") or jaxlib
    if not version:
        return Fix()
    return fixing.install(facts, fixing.jax_release(facts, version))


def broken_fix(facts: Facts) -> Fix:
    """No known cause: reinstall the installed release's files (a truncated library), nothing else moved."""
    version = facts.packages.get("jax")
    if version is None:
        return fixing.install(facts, ["jax"])
    plugins = [f"{name}=={v}" for name, v in sorted(facts.packages.items()) if PLUGIN.match(name)]
    return fixing.reinstall(facts, [f"jax=={version}", f"jaxlib=={version}", *plugins])


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
# what the libraries' tables say of the jax that another copy shadows: gone with the copy
SHADOWED_JAX = tuple(f"removed-jax-api-in-{name}" for name in api_removals.removal_packages())
PYTHONPATH_SHADOWS = Check(
    id="pythonpath-shadows",
    severity="fail",
    title="PYTHONPATH puts another copy of an audited package before the environment's",
    fix="remove that directory from PYTHONPATH (pip cannot uninstall what lies outside the environment)",
    references=(PYTHONPATH,),
    run=pythonpath_shadows,
    explains=(
        "duplicate-distribution",
        "jax-jaxlib-coupling",
        "plugin-jaxlib-mismatch",
        "requirement-unsatisfied",
        "jax-requirement-unsatisfied",
        "jax:*",
        *SHADOWED_JAX,
    ),
)
USER_SITE_SHADOWS = Check(
    id="user-site-shadows",
    severity="fail",
    title="the user site-packages holds another version of an audited package",
    fix="set PYTHONNOUSERSITE=1, or uninstall the user site's copy (python -m pip uninstall NAME)",
    references=("https://docs.python.org/3/library/site.html#site.ENABLE_USER_SITE",),
    run=user_site_shadows,
    explains=(
        "duplicate-distribution",
        "jax-jaxlib-coupling",
        "plugin-jaxlib-mismatch",
        "requirement-unsatisfied",
        "jax-requirement-unsatisfied",
        "jax:*",
        *SHADOWED_JAX,
    ),
)
JAX_REQUIREMENT_UNSATISFIED = Check(
    id="jax-requirement-unsatisfied",
    severity="fail",
    title="jax or jaxlib declares a requirement not met: jax may not import",
    fix="install what jax and jaxlib declare they need",
    references=("https://pip.pypa.io/en/stable/cli/pip_check/",),
    run=jax_requirements,
    explains=("jax:*",),
)
CUDA_PLUGIN_WITHOUT_DRIVER = Check(
    id="cuda-plugin-without-driver",
    severity="warn",
    title="a jax CUDA plugin is installed on a machine without an NVIDIA driver: jax warns at every import and "
    "computes on the CPU",
    fix="remove the plugin and its PJRT package (or install the NVIDIA driver, where the machine has a GPU)",
    references=(
        "https://github.com/jax-ml/jax/blob/jax-v0.10.1/jax/_src/xla_bridge.py",
        "https://docs.jax.dev/en/latest/installation.html",
    ),
    run=plugin_without_driver,
)
