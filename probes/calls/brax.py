"""brax: an environment made as brax's README shows it (https://github.com/google/brax#colab-notebooks: its "Brax
Training" notebook begins `env = envs.get_environment(env_name=env_name, backend=backend)`), the ant of its
environments. Making one loads the robot's MJCF through MuJoCo (`brax.io.mjcf.load`): where brax and the installed
mujoco disagree (brax 0.9.1 reads `MjOption.collision`, which mujoco 3.0.0 does not have) or brax calls a jax name the
installed jax lacks there (brax 0.12.1's `jax.tree.map`, first in jax 0.4.25), the call raises as the user's first
line does (fix-pass-8's jaxirl). Not stepped: jitting the ant's step took 58.7 s on a 2-core CPU.

Measured: 1.1 s after the import (brax 0.14.2, mujoco 4.0.1, jax 0.10.2, a 2-core CPU).
"""

from __future__ import annotations

DISTRIBUTION = "brax"
CALL = "brax.envs.get_environment"


def run() -> None:
    from brax import envs

    env = envs.get_environment("ant")
    if env.action_size <= 0:
        raise AssertionError(f"the ant has {env.action_size} actuators")
