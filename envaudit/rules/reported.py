"""What a pasted bug report shows that no rule reads: an error line no signature matched (`facts.errors`, read by
triage). An error of the environment's shape (rules/raised.py: an import, a backend, the runtime, a crash) is a
failure, whether or not a rule explains it: it is quoted, with what to try next and what the reporter should state,
so that an unknown failure is a question, not a clean bill of health; one that only says a backend or a plugin's
library did not load (jax goes on, on the CPU) is a warning. An error of the program's shape (a value or type
refused, a backend failing after the program chose jax's platforms) is quoted as information: where no rule finds the
stack at fault, the program is what a maintainer asks about first."""

from __future__ import annotations

import re

from envaudit.model.facts import ErrorShape, Facts, Message
from envaudit.rules import raised
from envaudit.rules.check import Check, Occurrence

SHOWN = 3  # error lines quoted in the finding (the rest are counted)


def _quoted(errors: list[Message]) -> str:
    quoted = "; ".join(f"line {e['line']}: '{e['text']}'" for e in errors[:SHOWN])
    return quoted + (f" (and {len(errors) - SHOWN} more)" if len(errors) > SHOWN else "")


def unexplained(facts: Facts) -> list[Occurrence]:
    """The report's environment-shaped error lines no rule reads: a failure where one says an exception stopped what
    ran (a failed import, a runtime error), a warning where each only says a backend or a plugin's library did not
    load, after which jax goes on, on the CPU (a CUDA jaxlib on a machine without a GPU says so too)."""
    found = [e for e in facts.errors if e.get("shape", "environment") == "environment"]
    if not found:
        return []
    stopped = any(raised.exception(e["text"]) and not NOT_LOADED.search(e["text"]) for e in found)
    return [Occurrence(_quoted(found), severity=None if stopped else "warn")]


# a backend or a plugin's library that did not load: jax says so and carries on with the others (the CPU)
NOT_LOADED = re.compile(raised.BACKEND.pattern + r"|Unable to load \w+\. Is it installed\?")


# what each of the other shapes means, said after the quote
SAID: dict[ErrorShape, str] = {
    "program": "a value or a type that the program, or a library's check of its arguments, refused; no stated fact "
    "points at the environment",
    "configuration": "a jax backend that did not start after the program chose jax's platforms itself; jax reads "
    "that choice once, when its first backend starts, and 'gpu' asks for every GPU backend",
}


def by_program(facts: Facts) -> list[Occurrence]:
    occurrences = []
    for kind, meaning in SAID.items():
        if found := [e for e in facts.errors if e.get("shape") == kind]:
            occurrences.append(Occurrence(f"{_quoted(found)}: {meaning}", about=kind))
    return occurrences


UNEXPLAINED_ERROR = Check(
    id="unexplained-error",
    # what the report's program ran failed in its environment (an import, a backend, the runtime, a crash): a
    # failure, as the audit's own import-fails and call-fails are, whether or not a rule says why (triage of 170
    # unseen reports: 18 of the 19 whose only cause was such an unexplained error were failures by their threads'
    # own record, and said WARN here); the cause stays unexplained, and what to state next is the fix
    severity="fail",
    title="the report shows an error that no rule of envaudit explains",
    fix="state the output of python -c 'import jax; jax.print_environment_info()', pip list (or conda list) and "
    "the whole traceback with the program that raised it; try the newest release (pip install -U jax jaxlib and "
    "the library that raised) to see whether it is fixed upstream",
    references=("https://github.com/jax-ml/jax/issues/new/choose",),
    run=unexplained,
)


PROGRAM_ERROR = Check(
    id="program-error",
    severity="info",
    title="the report's error is what the program asked for, not a fault of its environment",
    fix="read the error as the program's: for a value or type refused, the library's documentation of the call "
    "(or its maintainers, with the smallest program that raises it); for a backend after a platform choice, set "
    "JAX_PLATFORMS before jax starts (in the shell, or before import jax) and name the backend exactly (cpu, cuda, "
    "rocm, tpu)",
    references=("https://docs.jax.dev/en/latest/errors.html", "https://docs.jax.dev/en/latest/config_options.html"),
    run=by_program,
)
