"""JAX_PLATFORMS naming a platform this machine cannot give: jax fails at its first use, even when the list also
names cpu.

How jax reads the variable (`backends()` in jax/_src/xla_bridge.py, the same from
https://github.com/jax-ml/jax/blob/jax-v0.4.20/jax/_src/xla_bridge.py to
https://github.com/jax-ml/jax/blob/jax-v0.10.1/jax/_src/xla_bridge.py, and in jax/_src/lib/xla_bridge.py at
jax-v0.4.1): the value is split at commas as written, so a blank or a capital makes a name no backend has (" cpu",
"TPU", the empty name after "cpu,"); "gpu" stands for cuda and rocm (and oneapi from jax 0.10.1); then every
platform named is initialized, and the first that fails ends it: "If the user specified a list of platforms
explicitly, always fail loudly". From jax 0.4.31 (https://github.com/jax-ml/jax/pull/22703) cuda is skipped, not
failed, where no NVIDIA device file exists (/dev/nvidia0, /dev/nvidiactl, /dev/dxg; read here as no driver
answering NVML): `cuda,cpu` then runs on the CPU and `cuda` alone fails with a bare AssertionError. Measured with
jax 0.10.1 on a CPU-only Linux machine (`import jax; jax.devices()`, exit status 1 each):
- tpu, tpu,cpu, cpu,tpu: RuntimeError: Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so:
  libtpu.so: cannot open shared object file: No such file or directory (set JAX_PLATFORMS='' to automatically
  choose an available backend)
- rocm, rocm,cpu, gpu: RuntimeError: Unable to initialize backend 'rocm': Backend 'rocm' is not in the list of known
  backends: ['cpu', 'tpu']. (set JAX_PLATFORMS='' ...); metal, TPU, " cpu" and "cpu," the same for their names
- cuda: AssertionError (`assert _default_backend is not None`); cuda,cpu: [CpuDevice(id=0)], status 0.
The fix keeps what this machine can give, in the order written (the first is jax's default), or unsets the
variable where nothing is left; where only the CUDA plugin is missing beside a driver that answers, it installs it.
A platform whose package the facts cannot see (a plugin registered under another name, libtpu without a TPU chip,
a pasted report's partial package list) is not judged.
"""

from __future__ import annotations

from typing import Literal

from envaudit.model.facts import Facts
from envaudit.model.fixes import Fix
from envaudit.model.scope import PLUGIN, TPU_PACKAGES
from envaudit.model.versions import release
from envaudit.rules import fixing
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import INSTALL, XLA_BRIDGE
from envaudit.rules.signatures import Signature

VARIABLE = "JAX_PLATFORMS"
# ok: it starts here; maybe: the facts cannot say; fails: jax raises; skipped: jax passes over it; lost: skipped or
# fails, the facts cannot say which (either way it gives jax nothing)
State = Literal["ok", "maybe", "fails", "skipped", "lost"]
NAMES = ("cpu", "tpu", "cuda", "rocm", "gpu", "metal", "oneapi")  # the names jax and its plugins give platforms
CUDA_SKIPPED_SINCE = (0, 4, 31)  # jax PR #22703
ONEAPI_SINCE = (0, 10, 1)  # "oneapi": "gpu" in _platform_aliases, first at jax-v0.10.1
NO_PLUGIN = "no jax {kind} plugin (jax: Backend '{name}' is not in the list of known backends)"


def expand(name: str, jax: str) -> list[str]:
    """The platforms one name stands for, as expand_platform_alias() gives them for this jax release."""
    if name != "gpu":
        return [name]
    found = release(jax)
    return ["cuda", "rocm", *(["oneapi"] if found is not None and found >= ONEAPI_SINCE else [])]


def without_cuda(facts: Facts) -> bool:
    """JAX_PLATFORMS set and naming no platform that is CUDA (as jax expands its aliases: `gpu` is one): jax does not
    start its CUDA backend at all."""
    value, jax = facts.env.get(VARIABLE, ""), facts.packages.get("jax", "")
    return bool(value) and "cuda" not in {m for name in value.split(",") for m in expand(name, jax)}


def _plugin(facts: Facts, kind: str) -> bool:
    """A jax plugin (or PJRT package) for `kind` installed, or a jaxlib with it built in (0.4.23+cuda12.cudnn89)."""
    built_in = f"+{kind}" in facts.packages.get("jaxlib", "")
    return built_in or any((m := PLUGIN.match(n)) is not None and m["kind"] == kind for n in facts.packages)


def _cuda(facts: Facts, partial: bool) -> tuple[State, str]:
    plugin, driver = _plugin(facts, "cuda"), facts.nvidia.get("status")
    found = release(facts.packages.get("jax", ""))
    skips = None if found is None else found >= CUDA_SKIPPED_SINCE
    if driver == "ok":
        if plugin or partial:
            return ("ok" if plugin else "maybe"), ""
        return "fails", NO_PLUGIN.format(kind="CUDA", name="cuda")
    if driver in ("absent", "error"):  # no NVML library (no driver), or NVML's error (no driver loaded, a mismatch)
        why = "no NVIDIA driver" if driver == "absent" else "the NVIDIA driver answers NVML with an error"
        if skips is False:
            return "fails", why  # jax before 0.4.31 starts cuda wherever it is named
        if skips and driver == "absent":
            return "skipped", f"{why}, so jax passes over it"
        return "lost", why  # passed over without a device file, failing with one
    if plugin or partial:
        return "maybe", ""  # a hung driver, or none measured (a plan): a GPU may be there
    return ("lost" if skips is not False else "fails"), NO_PLUGIN.format(kind="CUDA", name="cuda")


def state(facts: Facts, platform: str) -> tuple[State, str]:
    """Whether jax can start `platform` here, and why not."""
    partial = facts.origin == "triage"  # a pasted report's package list: what it leaves out may be installed
    if platform == "cpu":
        return "ok", ""
    if not platform or (platform.strip().lower() in NAMES and platform.strip().lower() != platform):
        return "fails", "no backend has this name (jax reads the names as written)"
    if platform == "tpu":
        if partial or "TPU_LIBRARY_PATH" in facts.env or any(p in facts.packages for p in TPU_PACKAGES):
            return "maybe", ""  # libtpu is there: whether a TPU is, the facts do not say
        return "fails", "no libtpu (jax: Failed to open libtpu.so)"
    if platform == "cuda":
        return _cuda(facts, partial)
    if platform == "rocm":
        if _plugin(facts, "rocm"):
            return "ok", ""
        return ("maybe", "") if partial else ("fails", NO_PLUGIN.format(kind="ROCm", name="rocm"))
    system = facts.platform.get("system")
    if platform == "metal" and system and system != "Darwin":
        return "fails", f"jax-metal, the Metal plugin, has wheels for macOS only, not {system}"
    return "maybe", ""  # a plugin this audit cannot see may register the name (oneapi, metal on a Mac, mps...)


def unavailable(facts: Facts) -> list[Occurrence]:
    """One occurrence when jax cannot start with JAX_PLATFORMS: a platform it names fails, or all it names are
    passed over; with the fix that keeps what this machine can give."""
    value = facts.env.get(VARIABLE, "")
    if not value or (facts.origin == "live" and facts.jax.get("status") == "ok"):
        return []  # unset; or jax started here with it
    jax = facts.packages.get("jax", "")
    names = value.split(",")
    judged = [(name, member, *state(facts, member)) for name in names for member in expand(name, jax)]
    if not any(found == "fails" for *_, found, _ in judged) and any(
        found in ("ok", "maybe") for *_, found, _ in judged
    ):
        return []
    failing = [(name, member, why) for name, member, found, why in judged if found == "fails"]
    shown = failing or [(name, member, why) for name, member, found, why in judged if found in ("skipped", "lost")]
    said = "; ".join(f"{member!r}{'' if member == name else f' (of {name!r})'}: {why}" for name, member, why in shown)
    ending = "jax fails at its first use" if failing else "nothing it names can start: jax fails at its first use"
    detail = f"{VARIABLE}={value!r}: {said}; {ending}"
    return [Occurrence(detail, _fix(facts, names, [member for _, member, _ in failing]))]


def usable(facts: Facts, name: str) -> list[str]:
    """What of one name in the list jax can start here: the name itself; of an alias, its platforms known to start;
    of a misspelt name (" cpu", "TPU"), the name jax knows, if it can start."""
    members = expand(name, facts.packages.get("jax", ""))
    states = [(member, state(facts, member)[0]) for member in members]
    if members != [name]:
        return [member for member, found in states if found == "ok"]
    if states[0][1] in ("ok", "maybe"):
        return [name]
    known = name.strip().lower()
    return usable(facts, known) if known != name and known in NAMES else []


def _fix(facts: Facts, names: list[str], failing: list[str]) -> Fix:
    """The CUDA plugin where it is all that fails beside a driver that answers; else the names that can start, in
    order; else the variable unset (jax then chooses for itself)."""
    if failing == ["cuda"] and facts.nvidia.get("status") == "ok" and "jax" in facts.packages:
        return fixing.install(facts, fixing.jax_release(facts, facts.packages["jax"]))
    kept = list(dict.fromkeys(platform for name in names for platform in usable(facts, name)))
    return fixing.export(facts, VARIABLE, ",".join(kept)) if kept else fixing.unset(facts, VARIABLE)


NAME_VARIABLE = "JAX_PLATFORM_NAME"  # jax_platform_name: deprecated for JAX_PLATFORMS, still read (lowercased)


def unnamed(facts: Facts) -> list[Occurrence]:
    """JAX_PLATFORM_NAME naming a platform jax cannot start here. jax reads it lowercased as the default backend's
    name (`_get_backend_uncached`, jax-v0.4.20 to jax-v0.11.0), so the first computation raises: "Unknown backend:
    'gpu' requested, but no platforms that are instances of gpu are present" (an alias), or "Unknown backend tpu"
    (measured with jax 0.10.x on this CPU machine: JAX_PLATFORM_NAME=gpu). Reinstalling jax changes nothing; the
    fix is the variable: unset (jax picks its default), or the CUDA plugin where only it is missing beside a
    driver that answers."""
    value = facts.env.get(NAME_VARIABLE, "").lower()
    if not value or (facts.origin == "live" and facts.jax.get("status") == "ok"):
        return []
    members = expand(value, facts.packages.get("jax", ""))
    judged = [(member, *state(facts, member)) for member in members]
    failed = facts.origin == "live" and facts.jax.get("status") not in (None, "ok", "skipped", "unknown")
    if any(found == "ok" or (found == "maybe" and not failed) for _, found, _ in judged):
        return []  # a platform it may name is there (where jax failed to start here, a maybe was not)
    said = "; ".join(f"{member!r}: {why}" for member, _, why in judged if why)
    detail = f"{NAME_VARIABLE}={facts.env[NAME_VARIABLE]!r}: {said}; jax fails at its first computation"
    failing = [member for member, found, _ in judged if found == "fails"]
    if failing == ["cuda"] and facts.nvidia.get("status") == "ok" and "jax" in facts.packages:
        return [Occurrence(detail, fixing.install(facts, fixing.jax_release(facts, facts.packages["jax"])))]
    return [Occurrence(detail, fixing.unset(facts, NAME_VARIABLE))]


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
JAX_PLATFORMS_UNAVAILABLE = Check(
    id="jax-platforms-unavailable",
    severity="fail",
    title="JAX_PLATFORMS names a platform this machine does not have: jax fails at its first use",
    fix="export JAX_PLATFORMS with only the platforms this machine has, or unset it (or install the platform's plugin)",
    references=(INSTALL, XLA_BRIDGE, "https://github.com/jax-ml/jax/pull/22703"),
    run=unavailable,
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
)
JAX_PLATFORM_NAME_UNAVAILABLE = Check(
    id="jax-platform-name-unavailable",
    severity="fail",
    title="JAX_PLATFORM_NAME names a platform this machine does not have: jax fails at its first computation",
    fix="unset JAX_PLATFORM_NAME (deprecated: JAX_PLATFORMS lists the platforms to use), or install the platform's "
    "plugin",
    references=(
        INSTALL,
        "https://github.com/jax-ml/jax/blob/jax-v0.11.0/jax/_src/xla_bridge.py#L935",
        "https://github.com/jax-ml/jax/blob/jax-v0.11.0/jax/_src/xla_bridge.py#L76",
    ),
    run=unnamed,
    explains=("jax:*",),
    signatures=(
        Signature(
            "Unknown backend: '{name}' requested, but no platforms that are instances of {name} are present. "
            "Platforms present are: {any}",
            "https://github.com/jax-ml/jax/blob/jax-v0.11.0/jax/_src/xla_bridge.py#L745",  # jax-v0.4.20: #L565
            fires=False,  # jax.devices('gpu') raises it too, with no variable set: the facts decide
        ),
    ),
)
