"""The fast-math rule against the jax installed here: for each XLA_FLAGS of the rule's examples, jax itself is run
and must lose NaN or Inf semantics exactly when the rule says so (fast math alone keeps them: the honour flags
decide, as XLA's defaults say)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from envaudit.rules import engine
from tests.conftest import facts_from

RULE = next(r for r in engine.load_rules() if r.id == "xla-cpu-fast-math-enabled")
PROGRAM = (
    "import json, jax, jax.numpy as jnp; x = jnp.zeros(1); "
    "nan, inf = jax.jit(lambda x: (jnp.isnan(x / x), jnp.isinf(jnp.exp(x + 100.0))))(x); "
    "print(json.dumps([bool(nan[0]), bool(inf[0])]))"
)


@pytest.mark.jax
@pytest.mark.parametrize("example", RULE.examples, ids=lambda e: e["facts"]["env"]["XLA_FLAGS"])
def test_jax_loses_nan_or_inf_exactly_when_the_rule_matches(example: dict[str, object]) -> None:
    flags = example["facts"]["env"]["XLA_FLAGS"]  # type: ignore[index]
    env = {**os.environ, "XLA_FLAGS": str(flags), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    nan_kept, inf_kept = json.loads(done.stdout.splitlines()[-1])
    matched = RULE.evaluate(facts_from({"env": {"XLA_FLAGS": str(flags)}}))[0]
    assert bool(matched) is (not (nan_kept and inf_kept)), (flags, nan_kept, inf_kept)
