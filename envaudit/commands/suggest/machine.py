"""The machine `suggest` answers for, from its options: a saved report's facts, or this machine's (collected as
`--quick` collects them, jax not started), with what the options describe put in place of what the facts say."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, cast

from envaudit.model.facts import GPU, Facts, NvidiaFacts, PlatformFacts, PythonFacts, TpuHost
from envaudit.model.suggestion import Installer

if TYPE_CHECKING:
    from envaudit.commands.suggest.asked import SuggestOptions
    from envaudit.judge.suggestion import Machine


def of(o: SuggestOptions) -> Machine:
    from envaudit.judge.suggestion import Machine

    facts = described(o, _base(o))
    return Machine(facts, installer=_installer(o, facts), rocm=o.rocm, cpu=o.cpu)


def _base(o: SuggestOptions) -> Facts:
    """The saved report's facts; else this machine's: every collector but jax's where the options leave the
    accelerator to the facts, the Python and the system alone where they describe it (NVML is not asked)."""
    if o.facts is not None:
        from envaudit.files import reportfile

        return reportfile.read_report(o.facts).facts
    if not o.described:
        from envaudit.collect import collect

        return collect()
    from envaudit.collect import system

    return Facts(python=system.get_python(), platform=system.get_platform())


def described(o: SuggestOptions, facts: Facts) -> Facts:
    """The facts with the options' description in place: the accelerator they name replaces every one the facts
    name (NVML's GPUs, the TPU chips, the platform jax reported), and --python the Python's version."""
    if o.python:
        facts = replace(facts, python=PythonFacts(**{**facts.python, "version": o.python}))
    if not o.described:
        return facts
    platform = PlatformFacts(**{k: v for k, v in facts.platform.items() if k != "tpu"})  # type: ignore[typeddict-item]
    if o.tpu:
        platform["tpu"] = TpuHost(version=o.tpu)
    nvidia: NvidiaFacts = {"status": "absent", "message": "not described"}
    if o.driver or o.compute_capability:
        gpus: list[GPU] = [{"index": 0, "compute_capability": o.compute_capability}] if o.compute_capability else []
        nvidia = {"status": "ok", "driver_version": o.driver, "gpus": gpus, "gpus_exact": False}
    return replace(facts, platform=platform, nvidia=nvidia, jax={"status": "unknown"})


def _installer(o: SuggestOptions, facts: Facts) -> Installer:
    """--installer, else what installs into the facts' environment (a uv venv: uv; model/fixes.target)."""
    if o.installer is not None:
        return cast(Installer, o.installer)
    from envaudit.model.fixes import target

    return "uv" if target(facts).tool == "uv" else "pip"
