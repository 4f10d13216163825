"""What is audited: the distributions and the environment variables that decide what jax computes.

Standard library only and import-cheap, because the import-time hook reads it on every `import jax`; the
collectors and the hook share it, so both see the same stack.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

# The audited stack: exact names, and patterns for the families whose names carry a CUDA/ROCm major.
RELEVANT_NAMES = frozenset(
    {
        "jax", "jaxlib", "libtpu", "libtpu-nightly", "flax", "neural-tangents", "numpy", "scipy", "ml-dtypes",
        "optax", "orbax-checkpoint", "tensorflow", "tensorflow-cpu", "tf2jax", "opt-einsum", "chex",
        "frozendict", "envaudit",
    }
)  # fmt: skip
# jax's GPU plugins and their PJRT packages, released in lockstep with jaxlib: jax-cuda12-plugin, jax-rocm60-pjrt...
PLUGIN = re.compile(r"^jax-(?P<kind>cuda|rocm)(?P<major>\d+)-(plugin|pjrt)$")
RELEVANT_PATTERN = re.compile(r"^(jax-cuda\d+-(plugin|pjrt)|jax-rocm\d+-(plugin|pjrt)|jax-tpu.*|nvidia-.+)$")

# Variables that change numerics, devices or where CUDA libraries come from (docs/architecture.md: facts.env).
ENV_PREFIXES = ("JAX_", "XLA_", "TF_CUDNN_", "TF_XLA_", "ENVAUDIT_")
ENV_NAMES = frozenset(
    {"NVIDIA_TF32_OVERRIDE", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
     "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT",
     "CUDA_MODULE_LOADING", "CUBLAS_WORKSPACE_CONFIG", "NCCL_ALGO", "NCCL_PROTO", "TF_DETERMINISTIC_OPS",
     "OMP_NUM_THREADS"}
)  # fmt: skip


def canonicalize_name(name: str) -> str:
    """PEP 503 normalisation (what packaging.utils.canonicalize_name does, without importing packaging.tags)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_relevant(name: str) -> bool:
    norm = canonicalize_name(name)
    return norm in RELEVANT_NAMES or bool(RELEVANT_PATTERN.match(norm))


def cuda_library_path_entries(ld_library_path: str) -> list[str]:
    """The LD_LIBRARY_PATH entries that can shadow the CUDA libraries of the pip wheels."""
    keys = ("cuda", "cudnn", "nvidia", "cublas", "nccl")
    return [p for p in ld_library_path.split(os.pathsep) if p and any(k in p.lower() for k in keys)]


# Reports travel (Markdown is meant for public bug reports), so what may be a secret never enters the facts: the
# value of a variable whose name looks secret, and the value of any XLA_FLAGS argument not known to matter to
# numerics here (--xla_dump_to=/home/alice/..., a token passed to a plugin).
REDACTED = "<redacted>"
SECRET_WORDS = ("TOKEN", "SECRET", "PASSW", "CREDENTIAL", "API_KEY", "APIKEY", "AUTH", "PRIVATE", "COOKIE")
KNOWN_XLA_FLAGS = frozenset(
    {"--xla_cpu_enable_fast_math", "--xla_cpu_fast_math_honor_nans", "--xla_cpu_fast_math_honor_infs",
     "--xla_cpu_fast_math_honor_division", "--xla_cpu_fast_math_honor_functions", "--xla_gpu_deterministic_ops",
     "--xla_gpu_exclude_nondeterministic_ops", "--xla_gpu_enable_scatter_determinism_expander",
     "--xla_gpu_enable_triton_gemm", "--xla_gpu_enable_cublaslt", "--xla_gpu_autotune_level",
     "--xla_gpu_cublas_fallback", "--xla_force_host_platform_device_count", "--xla_gpu_enable_fast_min_max",
     "--xla_backend_optimization_level", "--xla_gpu_enable_latency_hiding_scheduler"}
)  # fmt: skip


def redact_xla_flags(value: str) -> str:
    """Each `--flag=value` argument keeps its value only if the flag is known here; bare flags are kept."""
    kept = []
    for token in value.split():
        name, sep, _ = token.partition("=")
        kept.append(token if not sep or name in KNOWN_XLA_FLAGS else f"{name}={REDACTED}")
    return " ".join(kept)


def redact(name: str, value: str) -> str:
    if any(word in name.upper() for word in SECRET_WORDS):
        return REDACTED
    return redact_xla_flags(value) if name == "XLA_FLAGS" else value


def select_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The relevant subset of an environment mapping, with possible secrets redacted (pure)."""
    chosen = {k: redact(k, v) for k, v in environ.items() if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}
    cuda_paths = cuda_library_path_entries(environ.get("LD_LIBRARY_PATH", ""))
    if cuda_paths:
        chosen["LD_LIBRARY_PATH"] = os.pathsep.join(cuda_paths)
    return dict(sorted(chosen.items()))
