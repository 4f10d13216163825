"""How the state after a fix is modelled where an extra asks for a release that was never made: pip backtracks to
the newest jax whose extra's requirements all exist (jax 0.12.1 keeps a cuda12 extra whose jax-cuda12-plugin==0.12.1
PyPI never had: CUDA 12 stops at 0.12.0.1, platform-wheels.toml)."""

from __future__ import annotations

from envaudit.model.fixes import Fix
from envaudit.rules import installing
from envaudit.rules.platform_wheels import PLATFORM_WHEELS
from envaudit.rules.wheels import WHEELS
from tests.conftest import facts_from

CUDA12_STACK = {"jax": "0.4.38", "jaxlib": "0.4.38", "jax-cuda12-plugin": "0.4.38", "jax-cuda12-pjrt": "0.4.38"}


def newest_plugin(name: str) -> str:
    return PLATFORM_WHEELS.load()["newest"][name]


def test_a_range_through_an_extra_lands_on_the_newest_jax_whose_extra_installs() -> None:
    facts = facts_from({"packages": CUDA12_STACK, "python": {"version": "3.12.3"}})
    after = installing.after(facts, Fix(install=("jax[cuda12]>=0.6.0", "jaxlib>=0.6.0"))).packages
    cuda12 = newest_plugin("jax-cuda12-plugin")
    assert after["jax"] == after["jaxlib"] == after["jax-cuda12-plugin"] == after["jax-cuda12-pjrt"] == cuda12
    cuda13 = {n.replace("12", "13"): v for n, v in CUDA12_STACK.items()}
    later = installing.after(
        facts_from({"packages": cuda13, "python": {"version": "3.12.3"}}), Fix(install=("jax[cuda13]>=0.8.0",))
    )
    assert later.packages["jax"] == newest_plugin("jax-cuda13-plugin") == WHEELS.load()["covers_to"]


def test_a_reinstall_installs_what_was_missing_too() -> None:
    """`pip install --force-reinstall --no-deps jax==0.4.13 jaxlib==0.4.13` where jaxlib is not installed (a
    `datasets[jax]`-style install that brought jax alone: "jax requires jaxlib to be installed") leaves jaxlib
    0.4.13: the state the plan's twin is built from holds it (fix-pass-4's datasets and equinox cases had a twin
    without it, so a plan that works was refused as unproven)."""
    facts = facts_from({"packages": {"jax": "0.4.13", "numpy": "1.26.4"}})
    state = installing.after(facts, Fix(reinstall=("jax==0.4.13", "jaxlib==0.4.13")))
    assert state.packages["jaxlib"] == "0.4.13" and state.packages["jax"] == "0.4.13"
    kept = installing.after(
        facts_from({"packages": {"jax": "0.4.13", "jaxlib": "0.4.13"}}), Fix(reinstall=("jax==0.4.13",))
    )
    assert kept.packages == {"jax": "0.4.13", "jaxlib": "0.4.13"}  # a reinstall moves nothing that is there
