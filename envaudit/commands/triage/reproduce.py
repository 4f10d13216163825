"""A report's stack reproduced here: what the text states built as `plan` builds a stack, and measured.

A table proposes, a measurement decides. Where a report states jax's version, the stack it states is built in a
throwaway environment (its CPU twin: jax's GPU and TPU packages and the CUDA wheels left out, a `+cuda` jaxlib as
its CPU wheel), for the Python it states, and the imports probe runs there: jax, each library the text names that
envaudit knows, their smoke calls. The rest of a pasted list constrains the install (a library's dependency is the
release the report has) but is never installed for its own sake; what the text does not state is resolved among the
releases uploaded while its jax was the newest (uv's --exclude-newer: a report of jax 0.4.27 is not built with
today's SciPy, which that jax never met). What it measured joins the environment's facts,
where the rules read it as an audit's (an import that raises is that library's failure, a transitive library's
optional call is not), and the reply says "reproduced here" or "not reproduced here" beside the verdict.

A stack that does not install here says nothing of the reporter's machine (another system, a wheel gone from the
index): it is "not built", never a finding. Nothing is built where the build is off (`--no-build`,
ENVAUDIT_NO_BUILD, as for `plan`) or uv is not here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from envaudit.collect import build
from envaudit.commands.triage.extract import known
from envaudit.judge import measured, twin
from envaudit.model.build import Measurement
from envaudit.model.facts import Facts
from envaudit.model.versions import public
from envaudit.rules import knowledge

Status = Literal["reproduced", "not_reproduced", "not_built"]
WHICH = "the stack the report states"


@dataclass(frozen=True)
class Reproduction:
    status: Status
    reason: str  # what raised there, what ran there, or why nothing was built: a sentence of values
    measured: Measurement | None = None  # the build's own document, where one ran


def reproduce(
    facts: Facts, *, no_build: bool, timeout: float, say: Callable[[str], None]
) -> tuple[Facts, Reproduction]:
    """The environment's facts with what building its stated stack here measured, and what that showed."""
    if "jax" not in facts.packages:
        return facts, Reproduction("not_built", "the text states no jax version: no stack to build")
    if why := twin.off(no_build):
        return facts, Reproduction("not_built", f"nothing was built ({why})")
    uv = build.uv_command()
    if uv is None:
        return facts, Reproduction("not_built", "uv is not installed here (pip install uv)")
    installs, constraints = _split(facts.packages)
    # a jax that imported had a jaxlib, never a newer one (jax refuses it: "jaxlib version X is newer than and
    # incompatible with jax version Y"): where the text does not state it, the newest the installer took then
    ranges = {} if "jaxlib" in installs else {"jaxlib": f"jaxlib<={public(facts.packages['jax'])}"}
    stated = replace(facts, packages={**installs, **dict.fromkeys(ranges, "")})
    as_of = knowledge.superseded(facts.packages["jax"]) or ""  # what it does not pin, as of its jax's time
    stack = replace(twin.stack(stated), constraints=constraints, as_of=as_of, ranges=ranges)
    built = build.measure(stack, timeout=timeout, uv=uv, say=say)
    document = built.document
    if document["status"] != "built" or not built.jax:
        why = str(document.get("reason") or document["status"])
        return facts, Reproduction("not_built", f"{WHICH} was not built here: {why}", document)
    proof, said = measured.verdict(document, WHICH)
    status: Status = "not_reproduced" if proof == "proven" else "reproduced"
    return measured.joined(facts, built), Reproduction(status, said, document)


def _split(packages: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """What the twin installs (jax and what envaudit knows: the audited stack, the libraries on and around jax) and
    what only constrains it (the rest of a list); a package only a GPU runs, or a local build (`torch 2.3.0+cu121`:
    its label is the reporter's machine's, no index's) but jaxlib's, is neither."""
    installs: dict[str, str] = {}
    constraints: dict[str, str] = {}
    for name, version in packages.items():
        if build.GPU_ONLY.match(name) or ("+" in version and name != "jaxlib"):
            continue  # no CPU build of it (jaxlib's the twin takes): it runs without it, as without the CUDA wheels
        if known(name):
            installs[name] = version
        elif not build.ACCELERATOR.match(name):
            constraints[name] = version
    return installs, constraints
