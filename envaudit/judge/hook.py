"""What the import hook warns of: the rules evaluated on the static facts and on jax's configuration as
imported (or the exception its import raised), each root cause as a small dict the hook caches and prints.

No jax child and no probe run here: the hook costs a few stat calls on a cache hit, and this on a miss.
"""

from __future__ import annotations

from typing import Any

from envaudit import rules
from envaudit.collect import snapshot
from envaudit.judge import causes
from envaudit.model.facts import JaxFacts
from envaudit.rules.registry import registry


def evaluate_now(jax_config: Any, failure: BaseException | None = None) -> list[dict[str, str]]:
    """The cold path: static facts (no jax child, no probe), jax's x64 flag and matmul precision as imported (or
    the exception its import raised), and every fail/warn root cause as a small dict for the cache."""
    jax_facts = JaxFacts(status="unknown")  # no child ran: what the rules know of jax is what its config says
    if failure is not None:  # what the audit's jax child would report: jax-broken, and the rules that explain it
        jax_facts = {"status": "import_error", "stage": "import", "message": f"{type(failure).__name__}: {failure}"}
    elif jax_config is not None:
        jax_facts["x64"] = bool(getattr(jax_config, "jax_enable_x64", False))
        precision = getattr(jax_config, "jax_default_matmul_precision", None)
        jax_facts["default_matmul_precision"] = None if precision is None else str(precision)
    facts = snapshot(jax_facts, nvml_s=5.0, origin="hook")
    evaluated = rules.evaluate(facts)
    return [
        {
            "id": f.id,
            "severity": f.severity,
            "title": f.title,
            "fix": f.fix,
            "detail": f.detail if f.subject.kind == "check" else "",
        }
        for f in causes.link(evaluated.findings, evaluated)
        if f.severity in ("fail", "warn")
        and not f.caused_by
        and f.id not in registry().board  # a GPU's health is `health`'s to judge
    ]


def explain_failure(failure: BaseException) -> str:
    """The lines the hook prints when importing jax (or flax) raised: each root cause, as its warnings read."""
    return "".join(
        f"envaudit: [{f['id']}] {f['title']}{': ' + f['detail'] if f['detail'] else ''}. Fix: {f['fix']}\n"
        for f in evaluate_now(None, failure)
    )


def cacheable(found: list[dict[str, str]]) -> list[dict[str, str]]:
    """What the hook may remember for this environment: not a moment's state (a driver that hung just now)."""
    return [f for f in found if f["id"] not in registry().transient]
