"""What a cause declares it explains (its `explains`, in a rule's TOML or a check's entry), read once into values.

An entry is a finding id (a check another check's fault makes fire: "jax-broken"), or a problem as
"subject:kind": a probe's problem ("conv_chain:rerun", "ntk:rel_err_full", "*:crash"), or how the jax child ended
("jax:import_error", "jax:*"). It is parsed here, where the declared text is read, and matched as a value after.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Names:
    finding: str = ""  # a finding id, for an entry without a colon
    subject: str = ""  # a probe's name, "jax", or "*"
    kind: str = ""  # a problem's kind, a probe's status, a metric, how jax ended, or "*"

    def names_finding(self, finding_id: str) -> bool:
        return bool(self.finding) and self.finding == finding_id

    def names_problem(self, subject: str, *kinds: str) -> bool:
        """Whether it names this problem of `subject`, known by any of `kinds` (a kind, and its metric)."""
        return not self.finding and self.subject in ("*", subject) and self.kind in ("*", *kinds)


@functools.cache
def parse(entries: tuple[str, ...]) -> tuple[Names, ...]:
    """Each declared entry as the value it names (engine.parse_rule has checked it holds one colon at most)."""
    found = []
    for entry in entries:
        subject, colon, kind = entry.partition(":")
        found.append(Names(subject=subject, kind=kind) if colon else Names(finding=entry))
    return tuple(found)
