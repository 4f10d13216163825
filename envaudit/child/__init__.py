"""The child processes that run the audited stack, and their line protocol, in one place.

`_main.py` (run by path, by the interpreter being audited) reports what jax says (`_jaxfacts.py`) and runs the
probes; `runner` starts it and follows its events under every bound; `state` holds what a run was asked and has
learnt; `jaxfacts` turns the facts stages into `facts.jax`. Nothing else in envaudit starts jax. This package
imports nothing itself: the import hook's cold path reads `_jaxfacts.decode_cuda` (through the NVML collector)
without loading the runner.
"""
