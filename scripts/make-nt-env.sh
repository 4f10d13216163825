#!/usr/bin/env bash
# make-nt-env.sh DIR: create a virtual environment in DIR where neural-tangents 0.6.5 imports and runs
# implementations 1, 2 and 3, for the ntk_nt probe (python DIR/bin/python probes/ntk_nt.py).
#
# Why these pins (measured on Python 3.11): neural-tangents 0.6.5 fails to import from jax 0.6.0 (`cannot import
# name 'Jaxpr' from 'jax.core'`), its implementation=3 raises from jax 0.4.26, and jax 0.4.2x segfaults on the
# first array operation with numpy 2 -- so jax/jaxlib 0.4.25 with numpy 1.26. neural-tangents imports TensorFlow
# (through neural_tangents.experimental, tf2jax); tensorflow-cpu 2.16 is the newest release built for numpy<2.
# flax 0.8.4 is the newest that accepts jax 0.4.25; chex/optax/orbax-checkpoint are what pip resolved for it.
# packaging, psutil and nvidia-ml-py let envaudit itself run there from the checkout (PYTHONPATH=.).
# Recommended DIR: .venv-nt at the repository root (ignored by git). PYTHON picks the interpreter (python3.11).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir=$1
python=${PYTHON:-python3}

"$python" -m venv "$dir"
"$dir/bin/python" -m pip install --quiet --upgrade pip
packages=(
    "jax==0.4.25" "jaxlib==0.4.25" "numpy==1.26.4" "ml-dtypes==0.3.2"
    "neural-tangents==0.6.5" "frozendict==2.5.1" "tf2jax==0.3.6" "tensorflow-cpu==2.16.2"
    "flax==0.8.4" "chex==0.1.86" "optax==0.2.2" "orbax-checkpoint==0.5.18"
    packaging psutil nvidia-ml-py pytest
)
# uv, where the interpreter has it (the test extra installs it), puts the same pins in place from the package index
# in 14 s here against pip's 100 s, which the test suite waits for. uv reads neither pip.conf nor PIP_* variables:
# where it cannot install them (an index only pip is configured for), pip does. The venv has its pip either way.
if ! { "$python" -m uv --version >/dev/null 2>&1 &&
    "$python" -m uv pip install --quiet --python "$dir/bin/python" "${packages[@]}"; }; then
    "$dir/bin/python" -m pip install --quiet "${packages[@]}"
fi
"$dir/bin/python" -c 'import jax, neural_tangents, flax; print("jax", jax.__version__, "neural-tangents", neural_tangents.__version__, "flax", flax.__version__)'
