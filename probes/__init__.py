"""Known-answer probes: standalone programs that check that JAX (and flax, neural-tangents) compute right numbers.

Each module here imports only the standard library, numpy and the library it tests -- never envaudit -- so it
can be run alone (``python probes/dense_chain.py [--precision float32|float64|auto]``) or attached to an upstream
bug report. Every probe module has:

- ``NAME``: the probe's name;
- ``run(precision="auto", seed=0) -> dict``: ``{"name", "status": "pass"|"fail"|"skip", "metrics", "thresholds",
  "message"}``. ``precision`` "auto" means what the user's jax configuration gives (float64 iff
  ``jax_enable_x64`` is on); float64 work turns x64 on only for that computation and restores the setting.
- as a script: exactly one JSON object on stdout; exit 0 pass, 1 wrong answer, 77 skip, 3 the probe itself
  crashed (traceback on stderr, nothing on stdout).

Every numeric threshold is an upper bound on the metric of the same name (a NaN metric fails); a string
threshold is the value the metric must equal. Errors are norm-wise (max|d|/max|ref| or Frobenius), never
element-wise: healthy float32 element-wise errors reach 4e-4 on entries near zero.

Because each probe is one self-contained file, a few small helpers (``_x64``, ``_resolve``, ``_rel``, ``_judge``,
``_finite``, ``main``) are repeated in every probe on purpose; tests/probes/test_probe_helpers.py fails unless all
copies are identical, so a fix to one must be made to all.
"""
