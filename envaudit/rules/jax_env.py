"""The values jax's config.py accepts for the JAX_* variables envaudit reads (`jax-env.toml`): a value it refuses
makes `import jax` raise, a failure that explains jax-broken.
"""

from __future__ import annotations

import functools
from typing import TypedDict

from envaudit.model.facts import Facts
from envaudit.model.redact import REDACTED
from envaudit.rules import fixing
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.references import JAX_CONFIG
from envaudit.rules.releases import covers, is_release, numbers
from envaudit.rules.table import Span, Table, span


class BoolVariables(TypedDict):
    variables: list[str]
    true: list[str]
    false: list[str]
    message: str


class EnumVariable(TypedDict):
    flag: str
    message: str
    legacy: list[str]
    since: dict[str, list[str]]  # jax release -> values accepted from it


class JaxEnv(Span):  # jax-env.toml: the values jax's config.py accepts
    bool: BoolVariables
    enum: dict[str, EnumVariable]


JAX_ENV = Table("jax-env.toml", JaxEnv, jax=span)


@functools.cache
def _truth_words() -> tuple[frozenset[str], frozenset[str]]:
    """jax's bool_env() words, from the table read at the tags (rules/tables/jax-env.toml), read once."""
    words = JAX_ENV.load()["bool"]
    return frozenset(words["true"]), frozenset(words["false"])


def env_flag(value: str | None) -> bool | None:
    """As jax's bool_env() reads it: lower-cased, not stripped; None when unset or refused ("", " true")."""
    if value is None:
        return None
    word, (true, false) = value.lower(), _truth_words()
    return True if word in true else False if word in false else None


def _accepted(enum: EnumVariable, jax: str) -> set[str]:
    """The values a jax release accepts for an enum variable."""
    added = [v for since, values in enum["since"].items() if numbers(jax) >= numbers(since) for v in values]
    return {*enum["legacy"], *added}


def invalid_env(facts: Facts) -> list[Occurrence]:
    """The variables whose value makes `import jax` raise, read as jax reads them (case and blanks count), for a
    jax release the table covers; where jax imported, it accepted them, whatever the table says."""
    table, jax = JAX_ENV.load(), facts.packages.get("jax", "")
    if not is_release(jax) or not covers(table, jax):
        return []  # no jax, a nightly, or a release the table does not cover: unknown
    if facts.jax.get("status") == "ok":
        return []
    found = []
    for name, value in sorted(facts.env.items()):
        if value == REDACTED:
            continue
        if name in table["bool"]["variables"] and env_flag(value) is None:
            said = table["bool"]["message"].format(value=value.lower(), name=name)
            found.append(Occurrence(f"{name}={value!r}: {said}", fixing.unset(facts, name)))  # jax's default then
        enum = table["enum"].get(name)
        if enum and value not in _accepted(enum, jax):
            said = enum["message"].format(value=value, flag=enum["flag"])
            meant = value.strip().lower()  # jax reads the value as it is: FLOAT32 is refused, float32 accepted
            fix = fixing.export(facts, name, meant) if meant in _accepted(enum, jax) else fixing.unset(facts, name)
            found.append(Occurrence(f"{name}={value!r}: {said}", fix))
    return found


JAX_ENV_INVALID = Check(
    id="jax-env-invalid",
    severity="fail",
    title="a JAX_* variable has a value jax refuses: `import jax` raises ValueError",
    fix="the value jax accepts (JAX_DEFAULT_MATMUL_PRECISION=float32, in lower case), or the variable unset "
    "(JAX_ENABLE_X64 takes 1 or 0)",
    references=(JAX_CONFIG,),
    run=invalid_env,
    explains=("jax-broken", "jax:*"),
)
