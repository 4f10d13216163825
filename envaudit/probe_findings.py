"""Turns probe results into findings, with the evidence and a fix chosen from the facts.

A probe knows that a number is wrong; the facts often know why. A batch-dependent error on a jaxlib built for
CUDA 10 points to the neural-tangents#122 fix; lost precision on a GPU of compute capability 8.0 or newer points
to TF32 and `jax_default_matmul_precision`. The fixes and references come from the rules of those causes (one
place for each fact), so a hint never cites a URL that the knowledge base does not.
"""

from __future__ import annotations

from envaudit.formats.summary import metrics_line
from envaudit.model import Facts, Finding, ProbeResult
from envaudit.rules import derive, engine

GENERIC_FIX = "envaudit probes {name} --script > repro.py; run it, and attach it and this report to an upstream issue"
GENERIC_REFS = ("https://github.com/jax-ml/jax/issues",)
# probe -> rule whose fix and references apply whenever that probe finds a wrong answer
CAUSE = {
    "flax_dtype": "flax-param-dtype-float32-under-x64",
    "determinism": "gpu-nondeterministic-by-default",
    "ntk_nt": "nt-065-jax-060-import",
}
BATCH_PROBES = ("dense_chain", "conv_chain", "ntk", "ntk_nt")


def _rule(rule_id: str) -> engine.Rule | None:
    return next((r for r in engine.load_rules() if r.id == rule_id), None)


def _cause(result: ProbeResult, facts: Facts) -> engine.Rule | None:
    base = result.name.split("[")[0]
    cuda = derive.cuda(facts)
    if base in BATCH_PROBES and cuda is not None and cuda.bounds()[1].major < 11:
        return _rule("nt-122-cuda10-batched-ntk")
    caps = derive.compute_capabilities(facts) or []
    lost_precision = any("bits" in k or k.startswith("rel_err") for k in result.metrics)
    if lost_precision and any(derive.version_or_none(c) and float(c) >= 8.0 for c in caps):
        return _rule("tf32-default-matmul-precision")
    if base == "ntk_nt" and "import_error" not in result.metrics:
        return None
    return _rule(CAUSE[base]) if base in CAUSE else None


def _evidence(result: ProbeResult) -> str:
    return "; ".join(filter(None, [result.message, metrics_line(result.metrics, limit=8)]))


TITLES = {
    "fail": "probe {name} computed a wrong answer",
    "crash": "probe {name} crashed the process",
    "timeout": "probe {name} did not finish in time",
    "error": "probe {name} could not run",
}


def findings(results: list[ProbeResult], facts: Facts) -> list[Finding]:
    found = []
    for result in results:
        if result.status not in TITLES:
            continue  # pass and skip are results, not findings
        cause = _cause(result, facts)
        fix = cause.fix if cause else GENERIC_FIX.format(name=result.name.split("[")[0])
        refs = cause.references if cause else GENERIC_REFS
        probe_id = f"probe-{result.name.split('[')[0].replace('_', '-')}"
        rule_id = probe_id if result.status == "fail" else f"{probe_id}-{result.status}"
        title = TITLES[result.status].format(name=result.name)
        found.append(Finding(rule_id, "fail", title, _evidence(result), fix, refs, "probe"))
    return found
