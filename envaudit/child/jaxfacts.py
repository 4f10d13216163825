"""`facts.jax` from the child's jax facts stages: what jax itself reported, and how the child ended.

`parse` is pure and tested with captured stages. An import error, a crash by signal, a timeout and a wrong first
computation are different statuses, each with its text. The child's real exit status is kept as `returncode`
(negative: killed by that signal), whether it ended during the stages or later, in a probe. The message, and every
string a stage reports, is scrubbed (`redact.scrub`) of what facts.env redacts and of any URL's credentials and
query: XLA quotes XLA_FLAGS back on stderr (`Unknown flag in XLA_FLAGS: --xla_plugin_token=..`), and that line, the
child's last words, is the message of an early exit; an import error may quote an index URL with its token.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from typing import Any, cast

from envaudit.model import typecheck
from envaudit.model.facts import JaxFacts
from envaudit.model.redact import scrub, scrub_all

ORDER = ("environment_info", "first_use", "devices", "imported", "import", "start")  # the stages, latest first
DOING = {
    "start": "while importing jax",
    "import": "while importing jax",
    "imported": "while listing its devices",
    "devices": "during its first computation",
    "first_use": "while asking jax.print_environment_info()",
    "environment_info": "after its facts",
}  # after each stage


def signal_name(returncode: int) -> str | None:
    """SIGSEGV for -11 (the child was killed by a signal), None for a normal exit."""
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def parse(
    events: Sequence[dict[str, Any]],
    *,
    ended: int | None,
    timed_out: bool,
    duration_s: float,
    last_words: str = "",
    environ: Mapping[str, str] | None = None,
) -> JaxFacts:
    """facts.jax from the `fact` events (each with its `stage`); `ended` is the exit status when the child ended
    before reporting every stage (None when it finished them), `last_words` the last line of its stderr; `environ`
    (os.environ by default) is the environment whose redacted values the message may not carry."""
    stages: dict[str, dict[str, Any]] = {}
    for event in events:
        if isinstance(event.get("stage"), str):
            stages[event["stage"]] = {k: v for k, v in event.items() if k not in ("stage", "event")}
    facts: JaxFacts = {"status": "ok", "message": None, "duration_s": round(duration_s, 3)}
    for stage in ("imported", "devices", "environment_info"):
        facts.update(scrub_all(declared(stages.get(stage, {})), environ))  # a library's error text, the backend's
    reached = next((s for s in ORDER if s in stages), None)
    facts["stage"] = reached
    error = next((stages[s]["error"] for s in ("import", "devices", "first_use") if "error" in stages.get(s, {})), None)

    if timed_out:
        facts.update({"status": "timeout", "message": f"no answer within {duration_s:.0f} s (last stage: {reached})"})
    elif ended is not None and ended < 0:
        name = signal_name(ended) or f"signal {-ended}"  # a negative status is a signal
        doing = DOING.get(reached or "start", f"after stage {reached!r}")
        said = f"killed by {name} {doing} (last stage: {reached})"
        facts.update({"status": "crash", "signal": name, "message": said})
    elif stages.get("import", {}).get("absent"):
        facts.update({"status": "absent", "message": stages["import"]["error"]})
    elif "import" in stages:
        facts.update({"status": "import_error", "message": error})
    elif error is not None:
        facts.update({"status": "error", "message": error})
    elif "first_use" not in stages:
        said = f"exited with status {ended} before finishing: {last_words or 'no output'}"
        facts.update({"status": "error", "message": said})
    elif not stages["first_use"].get("ok"):
        said = f"first computation gave {stages['first_use'].get('value')}, not 3920"
        facts.update({"status": "error", "message": said})
    if isinstance(facts["message"], str):  # last_words, or an error the child quoted from XLA
        facts["message"] = scrub(facts["message"], environ)
    return facts


def declared(reported: Mapping[str, Any]) -> JaxFacts:
    """What a stage of the child reported that facts.JaxFacts declares, each value of its declared type (the
    child's word is checked as a loaded document is): nothing else enters the facts."""
    hints = typecheck.hints(JaxFacts)
    return cast(
        JaxFacts,
        {k: v for k, v in reported.items() if k in hints and typecheck.problem(v, hints[k], f"jax.{k}") is None},
    )
