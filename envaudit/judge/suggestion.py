"""The jax install command for a machine (`envaudit suggest`): the extra its accelerator needs and the newest release
the tables know that installs and works there, judged as the planner judges a plan.

Each candidate, `jax[EXTRA]==V`, newest first, is asked the tables' questions (a jaxlib wheel for this Python,
`jaxlib-wheels.toml`; a wheel of jaxlib and of the extra's plugin for this system, `platform-wheels.toml`, whose
`newest` says a plugin release that does not exist), then made the facts of a plan (what the extra installs,
`extras.inferred`, on this machine's Python, system, GPUs and driver) and judged by every rule and check, as
`envaudit plan` judges it: a `fail` finding (the driver below CUDA 13's minimum, a GPU the build has no code for)
rejects it, in the rule's own title. The first that passes for each extra is its answer; between the extras of one
accelerator the newest release wins, CUDA 13 before CUDA 12 at the same release, as jax's guide recommends.

The machine's environment variables are left out of the candidates: they are the audit's business (an
LD_LIBRARY_PATH that shadows the CUDA wheels is fixed by unsetting it, not by another install). Where no release of
any extra installs, the rules that rejected them say what would (a driver at least their bound), and jax on the CPU
is the other way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envaudit.model.facts import Facts, JaxFacts, PythonFacts
from envaudit.model.suggestion import Accelerator, Installer, Suggestion, Way
from envaudit.model.versions import version_or_none
from envaudit.rules import cuda_archs, declared, extras, platform_wheels, tpu_pins
from envaudit.rules.releases import listed, numbers
from envaudit.rules.wheels import WHEELS, python_of

# jax's installation guide, at jax-v0.11.0 (docs/installation.md, lines 12-28, the summary): `pip install -U jax`
# on the CPU, `pip install -U "jax[cuda13]"` (CUDA 12: "jax[cuda12]", lines 112-115), `pip install -U
# "jax[rocm7-local]"` (ROCm installed on the host, lines 260-266), `pip install -U "jax[tpu]"`. The guide's form for
# any extra is the same: `pip install -U "jax[EXTRA]"`; with uv, `uv pip install` takes the same arguments.
GUIDE = "https://github.com/jax-ml/jax/blob/jax-v0.11.0/docs/installation.md"
CUDA_EXTRA = re.compile(r"^cuda(?P<major>\d+)$")  # jax[cuda12], jax[cuda13]: CUDA from NVIDIA's wheels
UNUSED = {"cuda": "NVIDIA GPU", "rocm": "AMD GPU", "tpu": "TPU", "cpu": "CPU"}
SHOWN = 4  # the groups of rejected releases said per extra; the rest are counted


@dataclass(frozen=True)
class Machine:
    """The machine a suggestion is for: its facts (collected here, a saved report's, or described), the installer,
    and what no collector reads (the ROCm installed, as described)."""

    facts: Facts
    installer: Installer = "pip"
    rocm: str | None = None  # "7", "6.2": the ROCm release installed on the host
    cpu: bool = False  # --cpu: jax on the CPU, whatever accelerator the facts name


@dataclass(frozen=True)
class _Rejected:
    release: str
    why: str  # one line, the same for every release it rejects for the same cause (grouped when said)
    rule: str = ""  # the rule or check whose `fail` rejected it


@dataclass(frozen=True)
class _Answer:
    extra: str
    release: str | None  # the newest that passes; None: none does
    rejected: tuple[_Rejected, ...]  # the releases newer than it that do not, newest first


def accelerator(machine: Machine) -> Accelerator:
    """What the machine computes on: ROCm where it is described, a TPU on the PCI bus or the one jax reported, an
    NVIDIA GPU or driver that NVML reported (or a plan states), else the CPU."""
    facts = machine.facts
    if machine.cpu:
        return "cpu"
    if machine.rocm:
        return "rocm"
    devices = facts.jax.get("devices") or []
    if (
        facts.platform.get("tpu")
        or facts.jax.get("platform") == "tpu"
        or any(d.get("platform") == "tpu" for d in devices)
    ):
        return "tpu"
    nvidia = facts.nvidia
    if nvidia.get("status") == "ok" and (nvidia.get("gpus") or nvidia.get("driver_version")):
        return "cuda"
    return "cpu"


def suggest(machine: Machine) -> Suggestion:
    """The install command for the machine, the release it resolves to and why; where no release installs for its
    accelerator, what would."""
    kind = accelerator(machine)
    answers = [_answer(machine, kind, extra) for extra in _extras(machine, kind)]
    chosen = _best(answers)
    described = _described(machine, kind)
    knowledge = _knowledge()
    if chosen is None or chosen.release is None:
        reasons = tuple(line for answer in answers for line in _rejections(answer))
        if not answers:
            reasons = (f"the tables know no jax extra for {_accelerator_said(machine, kind)}",)
        return Suggestion(
            kind, described, machine.installer, "", "", "", reasons, _otherwise(machine, kind, answers), knowledge
        )
    release = chosen.release
    reasons = (
        *_why(machine, kind, chosen.extra, release),
        *(line for answer in answers for line in _rejections(answer)),
        *_latest(chosen, knowledge),
    )
    command = _command(machine.installer, chosen.extra, release, pinned=_newer_exists(chosen.extra, release))
    return Suggestion(kind, described, machine.installer, chosen.extra, release, command, reasons, (), knowledge)


def _extras(machine: Machine, kind: Accelerator) -> list[str]:
    """The jax extras that install for the accelerator, the guide's preferred first: the newest CUDA's; ROCm
    installed on the host (`-local`) before the extra that brings ROCm's wheels; jax alone on the CPU."""
    if kind == "cpu":
        return [""]
    if kind == "tpu":
        return ["tpu"]
    names = extras.names()
    if kind == "cuda":
        return sorted((n for n in names if CUDA_EXTRA.match(n)), key=lambda n: -int(n[4:]))
    major = _rocm_major(machine.rocm or "")
    fits = [n for n in names if n == "rocm" or re.fullmatch(rf"rocm{major}(-local)?", n)]
    return sorted(fits, key=lambda n: (not n.endswith("-local"), n))


def _releases(extra: str) -> list[str]:
    """The releases of jax the tables say the extra installs at, newest first (for jax alone: those of jaxlib's
    wheel table); pre-releases and yanked releases are no suggestion."""
    if extra == "":
        table = WHEELS.load()
        found = {v for versions in table["versions"].values() for v in versions} - set(table.get("yanked", []))
    elif extra == "tpu":
        found = set(tpu_pins.releases())
    else:
        found = set(extras.releases(extra))
    final = [v for v in found if (parsed := version_or_none(v)) is not None and not parsed.is_prerelease]
    return sorted(final, key=lambda v: Version(v), reverse=True)


def _answer(machine: Machine, kind: Accelerator, extra: str) -> _Answer:
    rejected: list[_Rejected] = []
    for release in _releases(extra):
        found = _rejection(machine, kind, extra, release)
        if found is None:
            return _Answer(extra, release, tuple(rejected))
        rejected.append(found)
    return _Answer(extra, None, tuple(rejected))


def _best(answers: Sequence[_Answer]) -> _Answer | None:
    """The newest release any extra installs; at the same release, the extra listed first (the guide's choice)."""
    passing = [(Version(a.release), -i, a) for i, a in enumerate(answers) if a.release is not None]
    return max(passing, key=lambda t: (t[0], t[1]))[2] if passing else None


def planned(machine: Machine, extra: str, release: str) -> Facts:
    """The facts of a plan of `jax[EXTRA]==release` on this machine: what the extra installs (its METADATA, as the
    planner reads `jax[cuda12]==V`), the platform and CUDA major it fixes, the machine's Python, system and
    accelerators; no environment variable, and jax's defaults."""
    facts = machine.facts
    found = extras.inferred(release, {extra} if extra else set())
    packages = {"jax": release, "jaxlib": release, **found.installs}
    jax = JaxFacts(status="unknown", platform=found.platform or "cpu", x64=False, default_matmul_precision=None)
    if found.cuda_version is not None:
        jax["cuda_version"] = found.cuda_version
    version = facts.python.get("version")
    plan = Facts(
        packages=dict(sorted(packages.items())),
        python=PythonFacts(version=version) if version else PythonFacts(),
        platform=facts.platform,
        nvidia=facts.nvidia,
        jax=jax,
        origin="plan",
    )
    return replace(plan, requires=declared.requires(plan, plan.packages))


def _rejection(machine: Machine, kind: Accelerator, extra: str, release: str) -> _Rejected | None:
    """Why `jax[EXTRA]==release` does not install or work here, the tables' questions first; None: it does."""
    installs = {"jaxlib": release, **extras.implied(release, {extra} if extra else set())}
    why = _no_python_wheel(machine.facts, installs["jaxlib"]) or _no_platform_wheel(machine.facts, installs)
    if why is None and kind == "rocm":
        why = _other_rocm(machine, installs)
    if why is not None:
        return _Rejected(release, why)
    from envaudit import rules  # lazily: the knowledge base

    failing = [f for f in rules.evaluate(planned(machine, extra, release)).findings if f.severity == "fail"]
    if failing:
        return _Rejected(release, f"{failing[0].title} (rule {failing[0].id})", failing[0].id)
    return None


def _no_python_wheel(facts: Facts, jaxlib: str) -> str | None:
    python, table = python_of(facts), WHEELS.load()
    found = table["versions"].get(python or "")
    if python is None or not found or not (numbers(table["covers_from"]) <= numbers(jaxlib)):
        return None  # a Python the table does not list, or a release before it: unknown
    if listed(jaxlib, table.get("yanked", [])):
        return f"jaxlib {jaxlib} was yanked from the package index"
    if listed(jaxlib, found) or numbers(jaxlib) > numbers(table["covers_to"]):
        return None
    if numbers(jaxlib) < numbers(found[0]):
        return f"Python {python} has no jaxlib wheel before {found[0]}"
    if numbers(jaxlib) > numbers(found[-1]):
        return f"Python {python} has no jaxlib wheel after {found[-1]}"
    return f"Python {python} has no wheel of this jaxlib release (jaxlib-wheels.toml)"


def _no_platform_wheel(facts: Facts, installs: dict[str, str]) -> str | None:
    """jaxlib or the extra's plugin without a wheel for the machine's system, or a plugin release the index does
    not have (past the newest the table read: jax 0.12.1's cuda12 extra asks for a jax-cuda12-plugin 0.12.1)."""
    where, newest = platform_wheels.family(facts), platform_wheels.PLATFORM_WHEELS.load()["newest"]
    for package, version in sorted(installs.items()):
        found = platform_wheels.platforms_of(package, version)
        if found is None:
            if package in newest and numbers(version) > numbers(newest[package]):
                return f"{package} has no such release (the newest is {newest[package]})"
            continue
        if where is not None and where not in found:
            return f"{package} has no wheel for {where} (its wheels: {', '.join(found)})"
    return None


def _rocm_major(text: str) -> str:
    return text.split(".")[0]


def _rocm_of(plugin: str) -> str | None:
    """The ROCm major a jax ROCm plugin is built for: jax-rocm60-plugin 6 (ROCm 6.0), jax-rocm7-plugin 7."""
    found = re.match(r"^jax-rocm(\d+)-(plugin|pjrt)$", plugin)
    if found is None:
        return None
    digits = found[1]
    return digits[0] if len(digits) == 2 and digits[1] == "0" and digits[0] != "1" else digits


def _other_rocm(machine: Machine, installs: dict[str, str]) -> str | None:
    """A ROCm plugin built for another ROCm than the host's: jax's guide says the installed ROCm must match it."""
    wanted = _rocm_major(machine.rocm or "")
    built = {b for package in installs if (b := _rocm_of(package)) is not None} - {wanted}
    return f"its ROCm plugin is built for ROCm {min(built)}, not ROCm {wanted}" if built else None


def _why(machine: Machine, kind: Accelerator, extra: str, release: str) -> list[str]:
    """Why the chosen release installs and works here: one line per question the candidate was asked."""
    facts, found = machine.facts, []
    plan = planned(machine, extra, release)
    if kind == "cuda":
        found += _driver_said(facts, extra)
        found += _code_said(plan, extra)
    if kind == "tpu":
        pins = tpu_pins.pins(release) or ()
        chip = _tpu_said(facts)
        found.append(f"{chip}: jax[tpu]=={release} installs {', '.join(pins) or 'libtpu'}, the build released with it")
    if kind == "rocm":
        plugins = [p for p in plan.packages if _rocm_of(p) is not None]
        found.append(
            f"ROCm {machine.rocm}: jax[{extra}]=={release} installs {', '.join(plugins)}, built for ROCm "
            f"{_rocm_major(machine.rocm or '')}; the extra brings no ROCm of its own (jax's guide)"
        )
    python, table = python_of(facts), WHEELS.load()
    wheels = table["versions"].get(python or "")
    if python is not None and wheels:
        found.append(f"Python {python}: jaxlib has wheels for it from {wheels[0]} to {wheels[-1]}")
    where = platform_wheels.family(facts)
    if where is not None:
        found.append(f"{where}: jaxlib {release}{_plugins_said(plan)} {_have(plan)} wheels for it")
    from envaudit import rules

    warned = sorted({f.id for f in rules.evaluate(plan).findings if f.severity == "warn"})
    found.append(
        f"no rule fails jax{_bracket(extra)}=={release} on this machine"
        + (f" (warnings: {', '.join(warned)}; `envaudit plan` says more)" if warned else "")
    )
    return found


def _have(plan: Facts) -> str:
    return "have" if any(n.endswith("-plugin") for n in plan.packages) else "has"


def _plugins_said(plan: Facts) -> str:
    plugins = [f"{n} {v}" for n, v in plan.packages.items() if n.endswith("-plugin")]
    return f" and {', '.join(plugins)}" if plugins else ""


@functools.cache
def _driver_minimums() -> dict[int, tuple[str, str]]:
    """CUDA major -> (the least driver, the rule that says it): the rules that fail a CUDA build below a driver
    (`cuda = ">=12,<13"`, `driver = "<525.60.13"`), read from their conditions, the planner's knowledge."""
    from envaudit.rules.registry import registry

    found: dict[int, tuple[str, str]] = {}
    for rule in registry().rules:
        cuda, driver = rule.when.get("cuda"), rule.when.get("driver")
        if not isinstance(cuda, str) or not isinstance(driver, str) or not driver.startswith("<"):
            continue
        try:
            spec = SpecifierSet(cuda)
        except InvalidSpecifier:
            continue
        for major in range(1, 100):
            if spec.contains(f"{major}.0"):
                found[major] = (driver.lstrip("<="), rule.id)
    return found


def _driver_floor(rule_id: str) -> str | None:
    """The driver a rule that rejected a release asks for, where its condition is a driver below a bound."""
    return next((least for least, rule in _driver_minimums().values() if rule == rule_id), None)


def _driver_said(facts: Facts, extra: str) -> list[str]:
    major = int(extra[4:]) if CUDA_EXTRA.match(extra) else None
    driver, supports = facts.nvidia.get("driver_version"), facts.nvidia.get("cuda_driver_version")
    minimum = _driver_minimums().get(major) if major is not None else None
    found = []
    if driver and supports:
        found.append(f"NVIDIA driver {driver} supports CUDA up to {supports} (NVML)")
    if minimum is not None:
        least, rule = minimum
        found.append(
            f"driver {driver} meets CUDA {major}'s minimum, {least} (rule {rule})"
            if driver
            else f"the driver is not known: CUDA {major} needs {least} or newer (rule {rule})"
        )
    return found


def _capabilities(facts: Facts) -> list[int]:
    found = [cuda_archs.capability(str(g.get("compute_capability") or "")) for g in facts.nvidia.get("gpus") or []]
    return sorted({cc for cc in found if cc is not None})


def _code_said(plan: Facts, extra: str) -> list[str]:
    """The GPUs' compute capability against the code the chosen build carries (cuda-archs.toml), and the first
    release of that plugin whose code runs on all of them."""
    built, ccs = cuda_archs.build(plan), _capabilities(plan)
    if built is None or not ccs:
        return []
    package, version, row = built
    said = ", ".join(f"{cc // 10}.{cc % 10}" for cc in ccs)
    first = next(
        (
            v
            for v in sorted(extras.releases(extra), key=Version)
            if (b := cuda_archs.build(replace(plan, packages=_at(plan.packages, v)))) is not None
            and all(cuda_archs.runs(b[2], cc) for cc in ccs)
        ),
        None,
    )
    since = f"; the wheels carry code for it from {first}" if first else ""
    return [f"compute capability {said}: {package} {version} carries {cuda_archs.targets(row)}{since}"]


def _at(packages: dict[str, str], release: str) -> dict[str, str]:
    """jax's own packages moved to another release (jaxlib and its plugins, released together)."""
    return {n: release if n == "jaxlib" or n.startswith("jax-") else v for n, v in packages.items()}


def _tpu_said(facts: Facts) -> str:
    host = facts.platform.get("tpu") or {}
    if host.get("version"):
        chips = host.get("chips")
        return f"TPU {host['version']}" + (f" ({chips} chip{'s' if chips != 1 else ''})" if chips else "")
    kinds = sorted({str(d.get("device_kind")) for d in facts.jax.get("devices") or [] if d.get("device_kind")})
    return f"TPU ({', '.join(kinds)})" if kinds else "TPU"


def _rejections(answer: _Answer) -> list[str]:
    """The releases of an extra newer than its answer that do not install or work here, grouped by why."""
    groups: list[tuple[str, list[str]]] = []
    for found in answer.rejected:
        if groups and groups[-1][0] == found.why:
            groups[-1][1].append(found.release)
        else:
            groups.append((found.why, [found.release]))
    name = f"jax{_bracket(answer.extra)}"
    lines = []
    for why, releases in groups[:SHOWN]:
        span = releases[0] if len(releases) == 1 else f"{releases[-1]} to {releases[0]} ({len(releases)} releases)"
        lines.append(f"not {name} {span}: {why}")
    if len(groups) > SHOWN:
        rest = sum(len(r) for _, r in groups[SHOWN:])
        lines.append(f"not {name}: {rest} older releases, for other causes")
    return lines


def _otherwise(machine: Machine, kind: Accelerator, answers: Sequence[_Answer]) -> tuple[Way, ...]:
    """Where nothing installs for the accelerator: the driver the rules that rejected the releases ask for, then
    jax on the CPU (its own suggestion, on the same Python and system). Another rule's own fix is not repeated: it
    may name an extra that is rejected here too (cuda13-compute-capability-below-75's "use CUDA 12" on a Kepler)."""
    ways: dict[str, Way] = {}
    for answer in answers:
        name = f"jax{_bracket(answer.extra)}"
        floors = [(f, r.rule) for r in answer.rejected if (f := _driver_floor(r.rule)) is not None]
        if floors:
            floor, rule = max(floors, key=lambda t: numbers(t[0]))
            said = f"upgrade the NVIDIA driver to {floor} or newer: {name} then installs (rule {rule})"
            ways.setdefault(said, Way(said))
    if kind != "cpu":
        cpu = suggest(replace(machine, cpu=True))
        if cpu.installs:
            said = f"jax on the CPU instead, which leaves the {UNUSED[kind]} unused"
            ways[said] = Way(said, cpu.command, cpu.release)
    return tuple(ways.values())


def _newer_exists(extra: str, release: str) -> bool:
    return any(Version(v) > Version(release) for v in _releases(extra))


def _latest(answer: _Answer, knowledge: str) -> list[str]:
    name = f"jax{_bracket(answer.extra)}"
    if answer.release is None or _newer_exists(answer.extra, answer.release):
        return [f"pinned: {name} has newer releases that do not install or work here (above)"]
    return [f"jax {answer.release} is the newest release of {name} the tables know (they reach jax {knowledge})"]


def _bracket(extra: str) -> str:
    return f"[{extra}]" if extra else ""


def _command(installer: Installer, extra: str, release: str, *, pinned: bool) -> str:
    """The guide's command for the extra (`pip install -U "jax[cuda12]"`), by uv where it is the installer, pinned
    to the release where a newer one would not install here."""
    requirement = f"jax{_bracket(extra)}" + (f"=={release}" if pinned else "")
    quoted = f'"{requirement}"' if extra else requirement
    return " ".join([*(["uv", "pip"] if installer == "uv" else ["pip"]), "install", "-U", quoted])


def _knowledge() -> str:
    from envaudit.rules.knowledge import COVERAGE

    return str(COVERAGE.load()["jax"])


def _described(machine: Machine, kind: Accelerator) -> tuple[str, ...]:
    facts = machine.facts
    lines = [_accelerator_said(machine, kind)]
    if python := python_of(facts):
        lines.append(f"Python {python}")
    system, arch = facts.platform.get("system"), facts.platform.get("machine")
    if system or arch:
        lines.append(" ".join(str(p) for p in (system, arch) if p))
    lines.append(f"installer: {machine.installer}")
    return tuple(lines)


def _accelerator_said(machine: Machine, kind: Accelerator) -> str:
    facts = machine.facts
    if kind == "tpu":
        return _tpu_said(facts)
    if kind == "rocm":
        return f"AMD GPU, ROCm {machine.rocm}"
    if kind == "cuda":
        driver, ccs = facts.nvidia.get("driver_version"), _capabilities(facts)
        gpus = facts.nvidia.get("gpus") or []
        names = sorted({str(g.get("name")) for g in gpus if g.get("name")})
        said = [f"NVIDIA driver {driver}" if driver else "NVIDIA driver not known"]
        if gpus:
            count = (
                f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}" if facts.nvidia.get("gpus_exact", True) else "GPUs"
            )
            shown = f" ({', '.join(names)})" if names else ""
            ccs_said = ", ".join(f"{cc // 10}.{cc % 10}" for cc in ccs) or "not known"
            said.append(f"{count}{shown}, compute capability {ccs_said}")
        return "; ".join(said)
    return "CPU (--cpu)" if machine.cpu else "no accelerator: CPU"
