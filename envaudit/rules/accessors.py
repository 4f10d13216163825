"""The rule accessors: what rules condition on ("the CUDA version"), read from a snapshot in one place (pure).

Rules speak of "the CUDA version", "the platform", "the cuDNN version"; a snapshot knows them from several
sources of different authority: what jax reports at run time, a `jax-cuda12-plugin` name, a jaxlib local label
such as `+cuda102` or `+cuda11.cudnn82`, the `nvidia-*` wheels. A source that only tells the major version (a
plugin name) yields a `Partial` version, and conditions on it are unknown unless the whole range agrees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from packaging.version import Version

from envaudit.model.facts import Facts, JaxFacts
from envaudit.model.redact import REDACTED
from envaudit.model.scope import PLUGIN, TPU_PACKAGES
from envaudit.rules.jax_env import env_flag

_LABEL = re.compile(r"cuda(?P<cuda>\d+)(?:\.cudnn(?P<cudnn>\d+))?")
_WHEEL = re.compile(r"^nvidia-(?P<lib>.+?)(-cu(?P<cu>\d+))?$")


@dataclass(frozen=True)
class Partial:
    """A version known only down to `text` ("12", or "8.2"): every version that starts so is possible."""

    text: str
    source: str

    def bounds(self) -> tuple[Version, Version]:
        return Version(self.text), Version(self.text + ".99999")


@dataclass(frozen=True)
class Exact:
    text: str
    source: str

    def bounds(self) -> tuple[Version, Version]:
        return Version(self.text), Version(self.text)


Known = Exact | Partial


def parse_local_label(version: str) -> tuple[Known | None, Known | None]:
    """(CUDA, cuDNN) from a jaxlib local label: +cuda102 -> 10.2; +cuda11.cudnn82 -> 11 and 8.2."""
    _, _, local = version.partition("+")
    match = _LABEL.search(local)
    if not match:
        return None, None
    digits, cudnn = match["cuda"], match["cudnn"]
    src = f"jaxlib local label +{local}"
    if cudnn is not None:  # cudnn82 -> 8.2, cudnn805 -> 8.0.5
        return Partial(digits, src), Partial(".".join(filter(None, (cudnn[:1], cudnn[1:2], cudnn[2:]))), src)
    if len(digits) < 2 or 10 < int(digits) < 20:  # +cuda12 is CUDA 12 (no CUDA 1.2 existed), +cuda92 is 9.2
        return Partial(digits, src), None
    return Partial(f"{digits[:-1]}.{digits[-1]}", src), None


def _cuda_plugin(name: str) -> re.Match[str] | None:
    match = PLUGIN.match(name)
    return match if match and match["kind"] == "cuda" else None


def _jax(facts: Facts) -> JaxFacts:
    """What jax reported, or what a plan, a bug report or the hook states of it; nothing from a child that failed."""
    return facts.jax if facts.jax.get("status") == "ok" or facts.origin != "live" else JaxFacts()


def reported_platform(facts: Facts) -> str | None:
    """The platform jax itself reported (or a plan, a report, the hook stated), None where it did not say."""
    reported = _jax(facts).get("platform")
    return reported if isinstance(reported, str) and reported else None


def platform(facts: Facts) -> str | None:
    reported = _jax(facts).get("platform")
    if isinstance(reported, str) and reported:
        return reported
    names = facts.packages
    jaxlib = names.get("jaxlib", "")
    if any(_cuda_plugin(n) for n in names) or "+cuda" in jaxlib:  # without a driver, jax falls back to the CPU
        return "cpu" if facts.nvidia.get("status") == "absent" else "cuda"
    if any(n.startswith("jax-rocm") for n in names) or "+rocm" in jaxlib:
        return "rocm"
    if any(name in names for name in TPU_PACKAGES):
        return "tpu"
    return "cpu" if jaxlib else None


def default_backend(facts: Facts) -> str:
    """The backend jax computes on by default here: what jax reported where it was imported; where it was not (the
    quick mode, the hook before jax starts, a plan), an accelerator the facts show present with its runtime
    installed (TPU chips whose device files this process sees, beside libtpu; NVIDIA GPUs, beside a CUDA build of
    jax); "" where the facts do not say (never a guess from the packages alone: libtpu on a CPU machine computes
    on the CPU)."""
    reported = _jax(facts).get("platform")
    if isinstance(reported, str) and reported:
        return reported
    if _jax(facts).get("status") == "ok":
        return ""
    tpu = facts.platform.get("tpu") or {}
    if tpu.get("device_files") and any(name in facts.packages for name in TPU_PACKAGES):
        return "tpu"
    cuda_build = any(_cuda_plugin(n) for n in facts.packages) or "+cuda" in facts.packages.get("jaxlib", "")
    if cuda_build and facts.nvidia.get("status") == "ok" and facts.nvidia.get("gpus"):
        return "cuda"
    return ""


def cuda(facts: Facts) -> Known | None:
    reported = _jax(facts).get("cuda_version")
    if isinstance(reported, str) and reported:
        return Exact(reported, "jax") if reported.count(".") else Partial(reported, "jax")
    majors = {m["major"] for n in facts.packages if (m := _cuda_plugin(n))}
    if len(majors) == 1:
        major = majors.pop()
        return Partial(major, f"jax-cuda{major} plugin")
    return parse_local_label(facts.packages.get("jaxlib", ""))[0]


def libraries(facts: Facts) -> dict[str, Known]:
    """CUDA library versions from the nvidia-* wheels (cublas, cudnn, nvcc, nccl, nvjitlink, ...), and the
    version of the first ptxas on PATH as "path-ptxas" (collect/toolkit.py)."""
    found: dict[str, Known] = {}
    ptxas = facts.platform.get("ptxas") or {}
    if ptxas.get("version"):
        found["path-ptxas"] = Exact(str(ptxas["version"]), f"{ptxas.get('path')} on PATH")
    for name, version in facts.packages.items():
        match = _WHEEL.match(name)
        if not match or name == "nvidia-ml-py":
            continue
        lib = match["lib"]
        lib = lib[len("cuda-") :] if lib in ("cuda-nvcc", "cuda-cupti", "cuda-nvrtc") else lib
        found[lib] = Exact(version, f"{name} wheel")
    return found


def cudnn(facts: Facts) -> Known | None:
    reported = _jax(facts).get("cudnn_version")
    if isinstance(reported, str) and reported:
        return Exact(reported, "jax")
    wheel = libraries(facts).get("cudnn")
    return wheel if wheel is not None else parse_local_label(facts.packages.get("jaxlib", ""))[1]


def nvidia_value(facts: Facts, key: Literal["driver_version", "cuda_driver_version"]) -> Known | None:
    value = facts.nvidia.get(key) if facts.nvidia.get("status") == "ok" else None
    return Exact(str(value), "NVML") if value else None


def gpu_count(facts: Facts) -> int | None:
    status = facts.nvidia.get("status")
    if status == "absent":
        return 0
    if status == "ok" and facts.nvidia.get("gpus_exact", True):
        return len(facts.nvidia.get("gpus") or [])
    return None


def compute_capabilities(facts: Facts) -> list[str] | None:
    if gpu_count(facts) == 0:
        return []
    caps = [str(g["compute_capability"]) for g in facts.nvidia.get("gpus") or [] if g.get("compute_capability")]
    caps += [str(d["compute_capability"]) for d in _jax(facts).get("devices") or [] if d.get("compute_capability")]
    return sorted(set(caps)) or None


def x64(facts: Facts) -> bool | None:
    reported = _jax(facts).get("x64")
    return reported if isinstance(reported, bool) else env_flag(facts.env.get("JAX_ENABLE_X64"))


def matmul_precision(facts: Facts) -> str | None:
    jax = _jax(facts)
    if jax.get("status") == "ok" or "default_matmul_precision" in jax:
        return str(jax.get("default_matmul_precision") or "default").lower()
    value = facts.env.get("JAX_DEFAULT_MATMUL_PRECISION")
    return value.lower() if value else None


DETERMINISM_FLAGS = ("--xla_gpu_deterministic_ops", "--xla_gpu_exclude_nondeterministic_ops")


def jax_computed(facts: Facts) -> bool:
    """Whether jax was seen computing here (the audit's child ran its first computation): never unknown, so that a
    rule about a failure jax would show can hold it false for a plan or a bug report, and true only where seen."""
    return _jax(facts).get("status") == "ok"


def machine(facts: Facts) -> str | None:
    """The CPU architecture (platform.machine(): x86_64, AMD64 on Windows, aarch64, arm64 on macOS), if known."""
    value = facts.platform.get("machine")
    return value.lower() if isinstance(value, str) and value else None


def xla_flag(facts: Facts, name: str) -> str | None:
    """One flag's value in XLA_FLAGS as XLA takes it: the last occurrence; "" for --flag=, "true" for a bare
    --flag, None when absent; unknown (as hidden) where a bug report does not state XLA_FLAGS."""
    if facts.origin == "triage" and "XLA_FLAGS" not in facts.env:
        return REDACTED
    return _xla_values(facts).get(name)


def _xla_values(facts: Facts) -> dict[str, str]:
    """XLA_FLAGS as flag -> its last value as given ("" for --flag=, "true" for a bare --flag)."""
    found: dict[str, str] = {}
    for token in facts.env.get("XLA_FLAGS", "").split():
        name, sep, value = token.partition("=")
        found[name] = value if sep else "true"
    return found


def xla_flags(facts: Facts) -> dict[str, str]:
    """XLA_FLAGS as flag -> value, lower case, for boolean flags: a flag given twice keeps its last value, a bare
    flag (or an empty value) means true."""
    return {name: value.lower() or "true" for name, value in _xla_values(facts).items()}


def deterministic_ops(facts: Facts) -> bool | None:
    """Whether XLA_FLAGS asks XLA:GPU for deterministic implementations (the second flag exists from jaxlib 0.4.29;
    the first implies it); unknown for a bug report's facts, which do not state the environment."""
    if facts.origin == "triage":
        return None
    flags = xla_flags(facts)
    return any(flags.get(name) in ("true", "1") for name in DETERMINISM_FLAGS)


def cpu_fast_math_unsafe(facts: Facts) -> bool | None:
    """Whether XLA:CPU drops NaN or Inf semantics: fast math on *and* an honour flag off. XLA's defaults are fast
    math off and every honour flag on (debug_options_flags.cc), so fast math alone keeps NaN and Inf (measured,
    jaxlib 0.4.25 and 0.10.2: jnp.isnan(0/0) stays True); unknown for a bug report, which does not state XLA_FLAGS."""
    if facts.origin == "triage":
        return None
    flags = xla_flags(facts)
    honoured = (flags.get(f"--xla_cpu_fast_math_honor_{kind}", "true") in ("true", "1") for kind in ("nans", "infs"))
    return flags.get("--xla_cpu_enable_fast_math") in ("true", "1") and not all(honoured)
