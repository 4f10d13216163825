"""What a pasted bug report shows that no rule reads: an error line no signature matched (`facts.errors`, read by
triage). Its answer is never `ok`: the error is quoted, with what to try next and what the reporter should state,
so that an unknown failure is a question, not a clean bill of health."""

from __future__ import annotations

from envaudit.model.facts import Facts
from envaudit.rules.check import Check, Occurrence

SHOWN = 3  # error lines quoted in the finding (the rest are counted)


def unexplained(facts: Facts) -> list[Occurrence]:
    if not facts.errors:
        return []
    quoted = "; ".join(f"line {e['line']}: '{e['text']}'" for e in facts.errors[:SHOWN])
    more = f" (and {len(facts.errors) - SHOWN} more)" if len(facts.errors) > SHOWN else ""
    return [Occurrence(f"{quoted}{more}")]


UNEXPLAINED_ERROR = Check(
    id="unexplained-error",
    severity="warn",
    title="the report shows an error that no rule of envaudit explains",
    fix="state the output of python -c 'import jax; jax.print_environment_info()', pip list (or conda list) and "
    "the whole traceback with the program that raised it; try the newest release (pip install -U jax jaxlib and "
    "the library that raised) to see whether it is fixed upstream",
    references=("https://github.com/jax-ml/jax/issues/new/choose",),
    run=unexplained,
)
