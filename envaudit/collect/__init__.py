"""Fact collection: cheap, never raising, and without importing the audited stack into this process.

Each collector returns plain JSON-serialisable data of its type in `envaudit/model/facts.py`; a collector that fails
reports `status: absent|error` with a message. `snapshot` is the one place a `Facts` of this machine is put
together (for the audit, and for the import hook, which has no jax child); `collect` decides what a mode runs.
"""

from __future__ import annotations

from envaudit.model.facts import Facts, JaxFacts, Origin


def collect(*, timeout: float = 60.0, python: str | None = None) -> Facts:
    """Facts of this machine but what jax says (the audit's child reports that, and `--quick` starts no jax): no
    jax import anywhere, in well under a second. `python`: the interpreter whose environment is audited, when it is
    not this one (`--python`)."""
    skipped = JaxFacts(status="skipped", message="--quick does not start jax")
    if python is not None:
        skipped["other_python"] = python
    return snapshot(skipped, python=python, timeout=timeout)


def snapshot(
    jax: JaxFacts,
    *,
    python: str | None = None,
    timeout: float = 60.0,
    nvml_s: float | None = None,
    origin: Origin = "live",
) -> Facts:
    """Every fact but jax's, collected here, with `jax` as given. The collectors are imported here, not at module
    level, so that importing one collector (the import hook reads `envaudit.collect.packages`) loads no other."""
    from envaudit.collect import nvml, packages, system, xlaflags

    nvidia = nvml.Asking(nvml_s or nvml.NVML_TIMEOUT_S)  # its child starts while the others collect
    if python is None:
        python_facts, (versions, unsatisfied, duplicates, requires, installers, requested) = (
            system.get_python(),
            packages.get_packages(),
        )
    else:
        from envaudit.collect import outside

        python_facts, (versions, unsatisfied, duplicates, requires, installers, requested) = outside.facts(
            python, timeout
        )
    return Facts(
        packages=versions,
        python=python_facts,
        platform=system.get_platform(),
        nvidia=nvidia.answer(),
        jax=jax,
        env=system.get_env(),
        requirements=unsatisfied,
        duplicates=duplicates,
        requires=requires,
        origin=origin,
        installers=installers,
        requested=requested,
        xla_flags=xlaflags.get(python=None if python is None else python_facts),
    )
