"""orbax-checkpoint: a small pytree saved and restored in a temporary directory, as orbax's checkpointing page
shows it (https://orbax.readthedocs.io/en/latest/guides/checkpoint/checkpointing_pytrees.html):
`checkpointer = ocp.StandardCheckpointer()`, `checkpointer.save(path, state)`, `checkpointer.restore(path)`.
StandardCheckpointer where the release has it (0.12.8 does; its save is asynchronous: `wait_until_finished`, where
the checkpointer has it, before the restore), else PyTreeCheckpointer's save and restore, which older releases show.

Measured: 0.23 s after the import, compiling included (0.12 s called again) (orbax-checkpoint 0.12.8, jax 0.10.1,
a 2-core CPU).
"""

from __future__ import annotations

DISTRIBUTION = "orbax-checkpoint"
CALL = "orbax.checkpoint.StandardCheckpointer.save/restore"


def run() -> None:
    import os
    import tempfile

    import jax.numpy as jnp
    import numpy as np
    import orbax.checkpoint as ocp

    state = {"w": jnp.arange(6.0).reshape(2, 3), "step": jnp.asarray(3)}
    make = getattr(ocp, "StandardCheckpointer", None) or ocp.PyTreeCheckpointer
    checkpointer = make()
    try:
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "state")
            checkpointer.save(path, state)
            if hasattr(checkpointer, "wait_until_finished"):
                checkpointer.wait_until_finished()
            restored = checkpointer.restore(path)
    finally:
        if hasattr(checkpointer, "close"):
            checkpointer.close()
    if not np.array_equal(np.asarray(restored["w"]), np.asarray(state["w"])):
        raise AssertionError(f"restored {restored!r}, not what was saved")
