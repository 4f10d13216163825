"""keras: a Sequential Dense model compiled and fitted one epoch on 8 samples, on the jax backend only, as Keras's
getting-started page shows it (https://keras.io/getting_started/intro_to_keras_for_engineers/): `model.compile(
optimizer=..., loss=...)`, `model.fit(x, y, epochs=...)`. On another backend Keras does not run jax: skipped.

Measured: 1.6 s after the import, compiling included (0.45 s called again) (keras 3.15.1, jax 0.10.1, a 2-core CPU).
"""

from __future__ import annotations

DISTRIBUTION = "keras"
CALL = "keras.Model.fit"


def skipped() -> str:
    import keras

    backend = str(keras.backend.backend())
    return "" if backend == "jax" else f"Keras runs on its {backend} backend here, not jax"


def run() -> None:
    import keras
    import numpy as np

    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((8, 3), dtype="float32")
    history = model.fit(x, np.zeros((8, 1), dtype="float32"), epochs=1, batch_size=4, verbose=0)
    loss = history.history["loss"][-1]
    if not np.isfinite(loss):
        raise AssertionError(f"fit gave loss {loss}")
