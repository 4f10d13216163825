"""What a cause declares it explains (its `explains`, in a rule's TOML or a check's entry), read once into values.

An entry is a finding id (a check another check's fault makes fire: "jax-broken"), or a problem as
"subject:kind": a probe's problem ("conv_chain:rerun", "ntk:rel_err_full", "*:crash"), the problem of any probe
that needs a distribution ("@flax:error": a broken flax breaks every probe that imports it, whichever they are, and
its own import fails; "@flax:call": its smoke call fails), or
how the jax child ended ("jax:import_error", "jax:*"). It is parsed here, where the declared text is read, and
matched as a value after.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from envaudit.files import probefiles


@dataclass(frozen=True)
class Names:
    finding: str = ""  # a finding id, for an entry without a colon
    subject: str = ""  # a probe's name, "jax", or "*"
    kind: str = ""  # a problem's kind, a probe's status, a metric, how jax ended, or "*"

    def names_finding(self, finding_id: str) -> bool:
        return bool(self.finding) and self.finding == finding_id

    def names_failure_of(self, distribution: str, kind: str = "error") -> bool:
        """Whether it names the failure of a distribution itself, as a check that has one finding per distribution
        finds it: "@flax:error" its import raising (check import-fails), "@flax:call" its smoke call raising (check
        call-fails), "@flax:*" either."""
        return self.subject == f"@{distribution}" and self.kind in ("*", kind)

    def names_problem(self, subject: str, *kinds: str) -> bool:
        """Whether it names this problem of `subject`, known by any of `kinds` (a kind, and its metric)."""
        if self.finding or self.kind not in ("*", *kinds):
            return False
        if self.subject.startswith("@"):
            return self.subject[1:] in _needs(subject)
        return self.subject in ("*", subject)


@functools.cache
def _needs(probe: str) -> tuple[str, ...]:
    """The distributions a probe needs, as it declares them (read once, only when a probe's problem is matched)."""
    path = probefiles.available().get(probe)
    return probefiles.requires(path) if path is not None else ()


@functools.cache
def parse(entries: tuple[str, ...]) -> tuple[Names, ...]:
    """Each declared entry as the value it names (engine.parse_rule has checked it holds one colon at most)."""
    found = []
    for entry in entries:
        subject, colon, kind = entry.partition(":")
        found.append(Names(subject=subject, kind=kind) if colon else Names(finding=entry))
    return tuple(found)
