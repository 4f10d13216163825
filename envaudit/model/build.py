"""What a plan measured where its stack installs here: the report's `build` section, declared as types.

`plan` answers from the tables; where the planned stack installs on this machine it is also built in a throwaway
environment and the imports probe runs there (`collect/build.py`), and, where the report has a fix, the state the
fix leaves is built too. What importing showed joins the facts (`facts.jax.imports`, and jax's own failure), where
the rules judge it as an audit's; this section says what was built, how, and whether the fix plan is proven. It is
written, never read back (`check` judges a saved report's facts again, as it plans again).
"""

from __future__ import annotations

from typing import Literal, TypedDict

from envaudit.model.facts import JaxStatus

# built: installed, and the imports probe ran in it; not_installable: the installer refused (its own reason);
# offline: the package index could not be reached; no_python: the Python it is for is not here and could not be
# fetched; skipped: it cannot be built here (another system or machine, a GPU-only package); timeout: the bound
# ran out before it was measured; error: anything else (the environment could not be made)
BuildStatus = Literal["built", "not_installable", "offline", "no_python", "skipped", "timeout", "error"]
Proof = Literal["proven", "unproven"]


class Measurement(TypedDict, total=False):
    """One stack built and measured here (or why it was not)."""

    status: BuildStatus
    reason: str  # why it was not measured: the installer's own one-line reason, or what is missing here
    python: str  # the Python it was built for ("3.11.7")
    requirements: list[str]  # what the installer was asked for (the CPU twin's pins)
    left_out: list[str]  # what the CPU twin leaves out of the stack (jax's GPU and TPU plugins, CUDA wheels)
    installed: dict[str, str]  # what the installer installed (canonical name -> version), resolved here today
    # a fix's state made as its command is run: the environment's pins installed, then these commands over them
    applied: list[str]
    # the distributions those commands moved, or that require one they moved: imported there too, and each that no
    # longer imports where it did before them is the fix's failure
    bystanders: list[str]
    build_s: float  # seconds to make the environment and install the stack
    probe_s: float  # seconds the imports probe took there (jax's start included)
    jax: JaxStatus  # how `import jax` ended there
    jax_message: str  # what jax raised there, where it failed
    tried: int  # the modules the imports probe tried there
    called: int  # the smoke calls it made there (probes/calls/)
    failed: list[str]  # each import or call that raised: "flax: `import flax` raises AttributeError: ..."
    # those of a fix's state that raised in the environment before the fix too: left as they were, not its failure
    failing_before: list[str]
    reused: bool  # what an earlier build of the same request or installed set measured here (envaudit's cache)


class BuildDocument(TypedDict, total=False):
    """The report's `build`: what `plan` built and measured here, and whether its fix plan is proven."""

    measured: bool  # whether the planned stack was built and measured here (false: the report is the tables' alone)
    reason: str  # where it was not: why (--no-build, ENVAUDIT_NO_BUILD, no uv, offline, another machine)
    planned: Measurement  # the stack as planned
    fixed: Measurement  # the state the fix plan leaves, built in turn (absent where the plan has no fix)
    proof: Proof  # proven: the state the plan leads to (the stack itself, where nothing is to fix) built and
    # imported here without an error; unproven: it was not built, or it failed (`proof_reason`)
    proof_reason: str
