"""Fact collection: cheap, never raising, and without importing the audited stack into this process.

Each collector returns plain JSON-serialisable data; a collector that fails reports `status: absent|error` with a
message. `collect()` is the one place that decides which collectors a mode runs.
"""

from __future__ import annotations

from envaudit.model import Facts


def collect(*, quick: bool, timeout: float = 60.0) -> Facts:
    """Facts of this machine. `quick` skips the jax child: no jax import anywhere, in well under a second.

    The collectors are imported here, not at module level, so that importing one collector (the import hook
    reads `envaudit.collect.packages`) does not import them all."""
    from envaudit.collect import nvml, packages, system

    versions, unsatisfied, duplicates, requires = packages.get_packages()
    if quick:
        jax_facts = {"status": "skipped", "message": "--quick does not start jax"}
    else:
        from envaudit.child import runner

        jax_facts = runner.jax_facts(timeout)
    return Facts(
        packages=versions,
        python=system.get_python(),
        platform=system.get_platform(),
        nvidia=nvml.get_nvidia_within(),
        jax=jax_facts,
        env=system.get_env(),
        requirements=unsatisfied,
        duplicates=duplicates,
        requires=requires,
    )
