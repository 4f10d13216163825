"""XLA_FLAGS that XLA refuses: an argument no flag of the installed jaxlib takes, a value its flag cannot take, or a
file of flags that cannot be opened. XLA then ends the process at jax's first use (`Unknown flag in XLA_FLAGS:
...`, status 1: collect/xlaflags.py says how it was measured), which the child reports as a broken jax; the cause
is the variable, and reinstalling jax changes nothing. The fix exports the flags XLA reads without the refused
ones (or unsets the variable when none is left), so every flag that worked still does.

Only what the facts say is judged: the arguments as collect/xlaflags.py read them from the variable that `env`
shows (facts of another value, a plan's and a pasted report's have none, say nothing), and an argument whose
flags could not be read is unknown. Where jax ran here, XLA accepted its flags, whatever the facts say.
"""

from __future__ import annotations

from envaudit.model.facts import Facts, XlaFlag
from envaudit.model.fixes import Fix
from envaudit.model.redact import REDACTED
from envaudit.rules import fixing
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import PARSE_FLAGS, TSL_FLAGS, XLA_0414, XLA_AT_JAX
from envaudit.rules.signatures import Signature

VARIABLE = "XLA_FLAGS"


def _refused(entry: XlaFlag) -> str:
    """Why XLA refuses an argument ("" where it does not, or the facts cannot say)."""
    shown = str(entry.get("shown") or "?")
    if entry.get("defined") is False:
        if not entry.get("name"):
            return f"{shown} names no flag (XLA takes --NAME or --NAME=VALUE)"
        if str(entry.get("name")) not in shown:  # a word the report hides (it may be a secret): nor its name
            return f"{shown}: an argument that names no flag of the installed jaxlib"
        return f"{shown}: the installed jaxlib has no flag {entry.get('name')}"
    if entry.get("value_ok") is False:
        kind = str(entry.get("kind") or "?")
        needs = "nothing, or =true, =false, =1 or =0" if kind == "bool" else "=N, an integer"
        return f"{shown}: {entry.get('name')} is {'an' if kind[0] in 'aeiou' else 'a'} {kind} flag, which takes {needs}"
    return ""


def _fix(facts: Facts, kept: list[XlaFlag]) -> Fix:
    """The variable without the refused arguments, as the report shows them: none left, unset; where a kept one
    is shown hidden (a value that may be a secret), no command can be printed, and the detail says what to drop."""
    if not kept:
        return fixing.unset(facts, VARIABLE)
    shown = [str(e.get("shown") or "") for e in kept]
    if any(REDACTED in s or not s for s in shown):
        return Fix()
    return fixing.export(facts, VARIABLE, " ".join(shown))


def _described(facts: Facts) -> bool:
    """Whether the XLA_FLAGS facts were read here (by the audit or the import hook) from the variable that the
    environment facts show."""
    xla = facts.xla_flags
    if facts.origin not in ("live", "hook") or xla.get("status") != "ok":
        return False
    return facts.env.get(VARIABLE, "") == (xla.get("variable") or "")


def refused(facts: Facts) -> list[Occurrence]:
    """One occurrence for the variable: every argument XLA refuses, and the flags without them."""
    if not _described(facts) or facts.jax.get("status") == "ok":
        return []
    xla = facts.xla_flags
    if xla.get("source") == "file" and xla.get("file_opens") is False:
        said = (
            f"{VARIABLE}={facts.env.get(VARIABLE, '')!r} does not start with '-', so XLA reads its flags from a "
            "file of that name, which it cannot open: jax ends at its first use (Could not open file ... to read "
            f'flags for environment variable "{VARIABLE}")'
        )
        return [Occurrence(said, fixing.unset(facts, VARIABLE))]
    found = xla.get("entries") or []
    why = [(e, _refused(e)) for e in found]
    bad = [said for _, said in why if said]
    if not bad:
        return []
    kept = [e for e, said in why if not said]
    ignored = int(xla.get("ignored") or 0)
    rest = f"; XLA never reads the {ignored} word(s) after its last flag (it stops at one not starting with '-')"
    where = " (read from the file it names)" if xla.get("source") == "file" else ""
    said = f"XLA refuses {VARIABLE}{where}: {'; '.join(bad)}: jax ends at its first use{rest if ignored else ''}"
    fix = _fix(facts, kept)
    if not fix:
        said += "; a value it keeps is hidden in this report, so no command can print it"
    return [Occurrence(said, fix)]


# The checks this module finds, each declared beside its function (rules/registry.py lists them)
XLA_FLAGS_INVALID = Check(
    id="xla-flags-invalid",
    severity="fail",
    title="XLA_FLAGS holds an argument XLA refuses: jax ends at its first use",
    fix="export XLA_FLAGS without the arguments named, or unset it",
    references=(PARSE_FLAGS, TSL_FLAGS),
    run=refused,
    explains=("jax-broken", "jax:*"),
    signatures=(
        Signature("Unknown flag in XLA_FLAGS: {any}", XLA_AT_JAX.format(XLA_0414, "parse_flags_from_env.cc", 210)),
        Signature("Unknown flags in XLA_FLAGS: {any}", XLA_AT_JAX.format(XLA_0414, "parse_flags_from_env.cc", 210)),
    ),
)
