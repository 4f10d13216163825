"""Broken environments as users build them, from the package index: each one's recipe, root cause and program.

One entry per environment (the one place to add one). `steps` are pip argument lists run in order in a fresh
virtualenv ({stale} is a directory inside it, for installs outside the environment); `env` is what the user's
shell sets; `root` is the finding that must stand alone as the cause; `program` is what the user wanted to run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

JAX_PROGRAM = "import jax.numpy as jnp; assert float((jnp.ones(3) + 1).sum()) == 6.0; print('ok')"
FLAX_PROGRAM = (
    "import jax, jax.numpy as jnp, flax.linen as nn; x = jnp.ones((2, 4)); m = nn.Dense(3); "
    "v = m.init(jax.random.PRNGKey(0), x); assert m.apply(v, x).shape == (2, 3); print('ok')"
)
NT_PROGRAM = (
    "import jax.numpy as jnp; from neural_tangents import stax; init, apply, kernel = stax.serial(stax.Dense(2), "
    "stax.Relu(), stax.Dense(1)); assert kernel(jnp.ones((2, 3)), None, 'ntk').shape == (2, 2); print('ok')"
)
REGRESSION_PROGRAM = (  # jax#39103's program: jaxlib 0.10.2 gets the last row wrong on the CPU
    "import jax, jax.numpy as jnp; i = jnp.arange(32769.0); x = jnp.stack((i, 0 * i, 0 * i), axis=1); "
    "m = jnp.eye(3); y = jax.jit(jax.vmap(lambda r: jnp.sum((m @ r) ** 2)))(x); "
    "assert float(y[-1]) == 32768.0 ** 2, float(y[-1]); print('ok')"
)
ENVAUDIT_DEPS = ["packaging", "psutil"]  # envaudit itself runs from the checkout (a .pth file)


@dataclass(frozen=True)
class Broken:
    name: str
    steps: tuple[tuple[str, ...], ...]
    root: str
    program: str = JAX_PROGRAM
    env: dict[str, str] = field(default_factory=dict)
    damage: tuple[str, ...] = ()  # a command run on the copy before the audit ({site}: its site-packages)
    maker: str = "venv"  # what makes it and installs its steps: "venv" (python -m venv, then pip) or "uv" (no pip)
    severity: str = "fail"  # the root's: a warn is an audit that exits 0 yet has a fix to print
    also: tuple[str, ...] = ()  # other root causes of the same severity the environment has (one plan fixes all)
    cost_s: int = 0  # about what its test takes where it is long (CI, a clean clone): the longest start first
    outside: bool = False  # also audited from outside (--python), which must give the same roots and fixes

    def param(self) -> object:
        """It as a test parameter, with its cost for the scheduler (tests/conftest.py)."""
        return pytest.param(self, id=self.name, marks=[pytest.mark.cost(self.cost_s)] if self.cost_s else [])


BROKEN = (
    # jaxlib 0.4.25 was built against NumPy 1; pip accepts NumPy 2 beside it (jax declares numpy>=1.22). No
    # workaround set: the plan must also get it past xla#13054 (jax 0.4.29 fixes both, in one command)
    Broken(
        "numpy2-jax0425",
        (("jax==0.4.25", "jaxlib==0.4.25", "numpy==2.0.2", *ENVAUDIT_DEPS),),
        "numpy2-with-jaxlib-before-0426",
        outside=True,
        also=("jaxlib-0424-cpu-onednn-dot-fusion",),  # jax cannot start: no probe ran xla#13054's case, so it fails
    ),
    # jax upgraded alone (--no-deps, or a second pip install): jaxlib stays behind its minimum
    Broken(
        "jax0430-jaxlib0425",
        (("jax==0.4.25", "jaxlib==0.4.25", "numpy<2", *ENVAUDIT_DEPS), ("--no-deps", "jax==0.4.30")),
        "jax-jaxlib-coupling",
        also=("jaxlib-0424-cpu-onednn-dot-fusion",),  # jax cannot start: no probe ran xla#13054's case, so it fails
        maker="uv",  # pip's fixes are the other cases': uv here keeps the suite within CI's time
    ),
    # jaxlib upgraded alone: jax 0.4.25's metadata does not pin jaxlib (jax's setup.py does from 0.4.30), so pip is
    # satisfied, and `import jax` raises "jaxlib version 0.4.26 is newer than and incompatible with jax version 0.4.25"
    Broken(
        "jaxlib-newer-than-jax",
        (("jax==0.4.25", "jaxlib==0.4.26", "numpy<2", *ENVAUDIT_DEPS),),
        "jax-jaxlib-coupling",
        also=("jaxlib-0424-cpu-onednn-dot-fusion",),  # jax cannot start: no probe ran xla#13054's case, so it fails
        maker="uv",  # pip's fixes are the other cases': uv here keeps the suite within CI's time
    ),
    # a healthy environment, and an old jax installed elsewhere (pip install --target) and put on PYTHONPATH
    Broken(
        "stale-jax-on-pythonpath",
        (("jax==0.10.1", "jaxlib==0.10.1", *ENVAUDIT_DEPS), ("--no-deps", "--target", "{stale}", "jax==0.4.30")),
        "pythonpath-shadows",
        env={"PYTHONPATH": "{stale}"},
        outside=True,
    ),
    # the seed's stack today: neural-tangents 0.6.5 beside a current jax (0.10.1: pip's pick on Python 3.11, 0.10.2, has
    # the CPU regression of jax#39103) and TensorFlow 2.21, which NT cannot import; the fix moves jax to the newest
    # release below 0.6.0 (0.5.3, NumPy 2 kept) and the libraries that need a newer jax to releases that accept it;
    # no variable (implementation=3's warning from jax 0.4.26 is left out, not forced)
    Broken(
        "nt065-jax0101",
        (("neural-tangents==0.6.5", "jax==0.10.1", "jaxlib==0.10.1", "flax", *ENVAUDIT_DEPS),),
        "nt-065-jax-060-import",
        NT_PROGRAM,
        maker="uv",  # its fix installs TensorFlow: this test took 36 s with uv against 51 s with pip, idle, here
        cost_s=60,  # its fix lands on jax 0.5.3, where neural-tangents imports TensorFlow (the imports probe)
    ),
    # ml_dtypes moved back alone (--no-deps): jax 0.10.1 raises at import, "requires ml_dtypes version 0.5 or newer"
    Broken(
        "ml-dtypes-too-old",
        (("jax==0.10.1", "jaxlib==0.10.1", *ENVAUDIT_DEPS), ("--no-deps", "ml-dtypes==0.4.1")),
        "jax-requirement-unsatisfied",
        maker="uv",  # pip's fixes are the other cases': uv here keeps the suite within CI's time
    ),
    # a jax upgrade under an orbax that pip keeps (it declares jax>=0.5.0): jax 0.7.0 renamed DeviceLocalLayout, and
    # orbax-checkpoint 0.11.16 names it in an annotation read at import; the fix must not move jax back or forward
    Broken(
        "orbax01116-jax070",
        (("orbax-checkpoint==0.11.16", "jax==0.7.0", "jaxlib==0.7.0", *ENVAUDIT_DEPS),),
        "removed-jax-api-in-orbax-checkpoint",
        "import orbax.checkpoint; print('ok')",
        maker="uv",  # pip's fixes are the other cases': uv here keeps the suite within CI's time
    ),
    # the release pip and uv pick on Python 3.11 today: XLA:CPU gets a vmapped matvec + sum wrong (jax#39103); the
    # version rule warns, the known_regressions probe measures it here, so the finding fails, and 0.10.1 is right. In a
    # uv venv, as uv users make one: there is no pip in it, so the fix must be uv's (a pip venv's fix of a jaxlib:
    # numpy2-jax0425, jax0430-jaxlib0425)
    Broken(
        "uv-jaxlib-0102",
        (("jax==0.10.2", "jaxlib==0.10.2", *ENVAUDIT_DEPS),),
        "jaxlib-0102-cpu-vmap-matvec-sum",
        REGRESSION_PROGRAM,
        maker="uv",
        outside=True,
    ),
    # `pip install "jax[cuda12]"` on a machine without an NVIDIA driver (the plugin alone here: its CUDA wheels are
    # gigabytes and change nothing of it): every `import jax` logs a plugin traceback, jax computes on the CPU
    Broken(
        "cuda-plugin-no-driver",
        (
            (
                "jax==0.10.1",
                "jaxlib==0.10.1",
                "jax-cuda12-plugin==0.10.1",
                "jax-cuda12-pjrt==0.10.1",
                "nvidia-ml-py",  # envaudit's own: NVML says there is no driver
                *ENVAUDIT_DEPS,
            ),
        ),
        "cuda-plugin-without-driver",
        severity="warn",
    ),
    # pip install chex==0.1.82 beside jax 0.10.2: chex uses a removed jax API, and jaxlib 0.10.2 miscompiles here;
    # their fixes were two contradicting commands (chex's held the jaxlib the other condemns), now one plan
    Broken(
        "chex0182-jax0102",
        (("chex==0.1.82", "jax==0.10.2", "jaxlib==0.10.2", *ENVAUDIT_DEPS),),
        "removed-jax-api-in-chex",
        "import chex, jax.numpy as jnp; chex.assert_shape(jnp.ones(3), (3,)); print('ok')",
        also=("jaxlib-0102-cpu-vmap-matvec-sum",),
    ),
    # jaxlib moved to 0.10.2 and its CUDA plugin left at 0.10.1, on a machine without a driver: moving the plugins
    # forward and jax back were two fixes that undid each other; one plan moves jax back and removes the plugins
    Broken(
        "plugins-behind-jaxlib0102",
        (
            ("jax==0.10.2", "jaxlib==0.10.2", "nvidia-ml-py", *ENVAUDIT_DEPS),
            ("--no-deps", "jax-cuda12-plugin==0.10.1", "jax-cuda12-pjrt==0.10.1"),
        ),
        "plugin-jaxlib-mismatch",
        REGRESSION_PROGRAM,
        also=("jaxlib-0102-cpu-vmap-matvec-sum",),
    ),
    # an old flax kept while jax moved on, in a uv venv: flax 0.8.5 beside jax 0.10.2 (uv is satisfied: flax declares
    # jax>=0.4.27), Module.init raises; flax's fix and the regression's must be one uv command, with no pip in sight (a
    # pip venv's fix of a library: chex0182-jax0102, orbax01116-jax070, tfp0250-jax0101)
    Broken(
        "uv-flax085-jax0102",
        (("flax==0.8.5", "jax==0.10.2", "jaxlib==0.10.2", *ENVAUDIT_DEPS),),
        "flax-trace-level-jax-0436",
        FLAX_PROGRAM,
        maker="uv",
        also=("jaxlib-0102-cpu-vmap-matvec-sum",),
    ),
    # jax 0.4.20 after the NumPy fix (numpy<2), beside the SciPy pip picks (jax declares scipy>=1.9, no bound): jax
    # wraps scipy.linalg.tril at import, which SciPy 1.13 removed; only importing jax.scipy.linalg shows it
    Broken(
        "jax0420-scipy117",
        (("jax==0.4.20", "jaxlib==0.4.20", "numpy<2", "scipy==1.17.1", *ENVAUDIT_DEPS),),
        "jax-scipy-tril-scipy-113",
        "import jax.scipy.linalg as l, jax.numpy as jnp; assert float(l.det(jnp.eye(2))) == 1.0; print('ok')",
        maker="uv",
    ),
    # dm-haiku 0.0.12 beside jax 0.10.1: pip is satisfied, `import haiku` raises (transform.py reads
    # jax.interpreters.xla.xe at module level); measured: 0.0.13 and 0.0.14 raise too (jax.lib.xla_extension),
    # 0.0.15 imports and runs
    Broken(
        "haiku0012-jax0101",
        (("dm-haiku==0.0.12", "jax==0.10.1", "jaxlib==0.10.1", *ENVAUDIT_DEPS),),
        "removed-jax-api-in-dm-haiku",
        "import haiku as hk, jax, jax.numpy as jnp; f = hk.transform(lambda x: hk.Linear(2)(x)); x = jnp.ones((1, 3)); "
        "p = f.init(jax.random.PRNGKey(0), x); assert f.apply(p, None, x).shape == (1, 2); print('ok')",
        maker="uv",
    ),
    # tensorflow-probability 0.25.0 (its newest release) beside jax 0.10.1: `import tensorflow_probability` works
    # (lazily), `tensorflow_probability.substrates.jax`, which its JAX users import, raises (pytype_aval_mappings,
    # removed from jax.interpreters.xla in jax 0.7.0); measured: with jax 0.6.2 it imports and computes
    Broken(
        "tfp0250-jax0101",
        (("tensorflow-probability==0.25.0", "jax==0.10.1", "jaxlib==0.10.1", *ENVAUDIT_DEPS),),
        "removed-jax-api-in-tensorflow-probability",
        "import tensorflow_probability.substrates.jax as tfp; "
        "assert abs(float(tfp.distributions.Normal(0.0, 1.0).log_prob(0.0)) + 0.9189385) < 1e-6; print('ok')",
        maker="uv",  # pip's fixes are the other cases': uv here keeps the suite within CI's time
    ),
    # JAX_PLATFORMS asks for a TPU on a machine without one (a list with cpu fails too): the variable is the cause
    Broken(
        "jax-platforms-tpu",
        (("jax==0.10.1", "jaxlib==0.10.1", *ENVAUDIT_DEPS),),
        "jax-platforms-unavailable",
        env={"JAX_PLATFORMS": "tpu,cpu"},
        outside=True,
    ),
    # an XLA_FLAGS entry no flag of this jaxlib takes: XLA ends the process at jax's first use
    Broken(
        "xla-flags-unknown",
        (("jax==0.10.1", "jaxlib==0.10.1", *ENVAUDIT_DEPS),),
        "xla-flags-invalid",
        env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2 --xla_no_such_flag=1"},
    ),
    # an interrupted download or a full disk: jaxlib's main library cut short (here: SIGBUS while importing jax)
    Broken(
        "truncated-jaxlib",
        (("jax==0.10.1", "jaxlib==0.10.1", *ENVAUDIT_DEPS),),
        "jax-broken",
        damage=("truncate", "-s", "1000000", "{site}/jaxlib/libjax_common.so"),
    ),
)
