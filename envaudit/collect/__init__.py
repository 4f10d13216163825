"""Fact collection: cheap, never raising, and without importing the audited stack into this process.

Each collector returns plain JSON-serialisable data; a collector that fails reports `status: absent|error` with a
message. `collect()` is the one place that decides which collectors a mode runs.
"""

from __future__ import annotations

import sys

from envaudit.model import Facts


def collect(*, quick: bool, timeout: float = 60.0, python: str | None = None) -> Facts:
    """Facts of this machine. `quick` skips the jax child: no jax import anywhere, in well under a second.
    `python`: the interpreter whose environment is audited, when it is not this one (`--python`).

    The collectors are imported here, not at module level, so that importing one collector (the import hook
    reads `envaudit.collect.packages`) does not import them all."""
    from envaudit.collect import nvml, packages, system

    if python is None:
        python_facts, (versions, unsatisfied, duplicates, requires) = system.get_python(), packages.get_packages()
    else:
        from envaudit.collect import outside

        python_facts, (versions, unsatisfied, duplicates, requires) = outside.facts(python, timeout)
    if quick:
        jax_facts = {"status": "skipped", "message": "--quick does not start jax"}
    else:
        from envaudit.child import runner

        jax_facts = runner.jax_facts(timeout, python or sys.executable)
    return Facts(
        packages=versions,
        python=python_facts,
        platform=system.get_platform(),
        nvidia=nvml.get_nvidia_within(),
        jax=jax_facts,
        env=system.get_env(),
        requirements=unsatisfied,
        duplicates=duplicates,
        requires=requires,
    )
