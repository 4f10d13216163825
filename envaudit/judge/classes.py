"""What the facts say a healthy machine computes: the precision class of the default run, and whether reruns may
differ by design. Pure functions of a facts snapshot, so a saved report is judged as the live machine was.

Sources (envaudit/rules/REFERENCES.md has the quotes): jax's ``lax.Precision`` docstring ("DEFAULT ... On TPU:
performs float32 computations in bfloat16. On GPU: uses tensorfloat32 if available (e.g. on A100 and H100 GPUs),
otherwise standard float32 (e.g. on V100 GPUs)"; HIGH also uses TF32 on GPUs; HIGHEST is float32); the names
``jax_default_matmul_precision`` accepts ('bfloat16' is DEFAULT, 'tensorfloat32' HIGH, 'float32' HIGHEST, and the
dot-algorithm presets); XLA's docs/determinism.md ("non-deterministic on operations like scatter,
select-and-scatter, GEMMs, convolutions" unless --xla_gpu_exclude_nondeterministic_ops, which
--xla_gpu_deterministic_ops implies).
"""

from __future__ import annotations

from envaudit.model import versions
from envaudit.model.facts import Facts
from envaudit.rules import accessors

# Settings of jax_default_matmul_precision (lower-cased) under which float32 matmuls are float32 on every platform.
FLOAT32_SETTINGS = frozenset(
    {"highest", "float32", "f32_f32_f32", "f64_f64_f64", "bf16_bf16_f32_x6", "bf16_bf16_f32_x9"}
)
# Dot-algorithm presets that ask for reduced precision by name, on any accelerator: the class they give. (The float8
# presets are not here: they keep 2-3 mantissa bits, beyond every class, and fall to the platform's.)
PRESET_CLASSES = {
    "f16_f16_f16": "tf32",
    "f16_f16_f32": "tf32",
    "tf32_tf32_f32": "tf32",
    "tf32_tf32_f32_x3": "tf32",
    "bf16_bf16_f32_x3": "tf32",
    "bf16_bf16_bf16": "bf16",
    "bf16_bf16_f32": "bf16",
}


def _accelerator(facts: Facts) -> str | None:
    """cuda, rocm, tpu, cpu, or None when the facts do not say (then a GPU that NVML sees counts as cuda)."""
    platform = accessors.platform(facts)
    if platform is None and (accessors.gpu_count(facts) or 0) > 0:
        return "cuda"
    return platform


def precision_class(facts: Facts, dtype: str) -> str:
    """The class (a key of metrics.toml's [class]) of a default-precision run in `dtype` on this machine. Where
    the facts leave a choice open, the class is the least precise one possible: a healthy machine must never be
    failed for the precision its platform documents."""
    if dtype == "float64":
        return "float64"
    platform = _accelerator(facts)
    setting = accessors.matmul_precision(facts) or "default"
    if platform == "cpu" or setting in FLOAT32_SETTINGS:
        return "float32"  # the CPU ignores every precision setting (measured: DEFAULT and HIGHEST are bit-identical)
    if setting in PRESET_CLASSES:
        return PRESET_CLASSES[setting]
    if platform == "tpu":
        return "bf16" if setting in ("default", "bfloat16") else "tf32"  # HIGH: three bfloat16 passes
    if platform == "cuda":
        caps = accessors.compute_capabilities(facts)
        known = [versions.version_or_none(c) for c in caps or []]
        if known and all(v is not None and v.major < 8 for v in known):
            return "float32"  # no TF32 tensor cores before Ampere: DEFAULT is float32 there
    return "tf32"  # NVIDIA >= 8.0, an unknown compute capability, ROCm, or an unknown platform with a GPU


def platform_class(facts: Facts) -> str:
    """cpu, gpu (CUDA or ROCm), tpu, or other where the facts do not say: the key of a platform_error's bound."""
    platform = _accelerator(facts)
    if platform in ("cuda", "rocm"):
        return "gpu"
    return platform if platform in ("cpu", "tpu") else "other"


def nondeterminism_allowed(facts: Facts) -> bool:
    """Reruns may differ by design: a GPU without deterministic ops requested. On a CPU or a TPU, or with them,
    the same program on the same input must give the same bits."""
    return _accelerator(facts) in ("cuda", "rocm") and not accessors.deterministic_ops(facts)
