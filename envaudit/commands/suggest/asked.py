"""What `envaudit suggest` is asked: the machine, described or not, and the format (read once from argparse)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SuggestOptions:
    """The machine to suggest for: this one, a saved report's, or described; and how the answer is written."""

    driver: str | None = None
    compute_capability: str | None = None
    tpu: str | None = None
    rocm: str | None = None
    cpu: bool = False
    python: str | None = None
    installer: str | None = None
    facts: Path | None = None
    format: str = "text"

    @property
    def described(self) -> bool:
        """Whether the options name the accelerator: then the facts' own (NVML's, the PCI bus's) are not read."""
        return bool(self.driver or self.compute_capability or self.tpu or self.rocm or self.cpu)
