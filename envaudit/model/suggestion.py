"""What `envaudit suggest` answers: the jax install command for one machine, the release it resolves to, and why.

A value between the judge (`judge/suggestion.py`, which chooses) and the renderers (`commands/suggest/render.py`):
every sentence is made once, when it is chosen, and rendered as it is; nothing here is parsed back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Installer = Literal["pip", "uv"]
INSTALLERS: tuple[Installer, ...] = ("pip", "uv")
Accelerator = Literal["cpu", "cuda", "rocm", "tpu"]


@dataclass(frozen=True)
class Way:
    """What would install where nothing does for the machine's accelerator: a change to the machine (the driver to
    upgrade to), or another build (jax on the CPU), with its command and release where it is one."""

    said: str
    command: str = ""
    release: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"said": self.said, "command": self.command, "release": self.release}


@dataclass(frozen=True)
class Suggestion:
    """The install command for a machine. `command` is empty where no release of jax installs for its accelerator;
    `otherwise` then says what would."""

    accelerator: Accelerator  # what the machine computes on, as its facts say
    machine: tuple[str, ...]  # what was read of it, one line each (the driver, the GPUs, the Python, the system)
    installer: Installer
    extra: str  # the jax extra chosen ("cuda12", "tpu"; "" for jax alone, the CPU build)
    release: str  # the jax release the command resolves to ("" where nothing installs)
    command: str  # as jax's installation guide writes it for that extra, pinned where a newer release exists
    reasons: tuple[str, ...]  # why this extra and this release, and why not the newer ones: one line each
    otherwise: tuple[Way, ...] = ()  # where nothing installs: what would
    knowledge: str = ""  # the newest jax release the tables know (coverage.toml)

    @property
    def installs(self) -> bool:
        return bool(self.command)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "envaudit/suggestion/v1",
            "accelerator": self.accelerator,
            "machine": list(self.machine),
            "installer": self.installer,
            "installs": self.installs,
            "extra": self.extra,
            "release": self.release,
            "command": self.command,
            "reasons": list(self.reasons),
            "otherwise": [way.to_dict() for way in self.otherwise],
            "knowledge": self.knowledge,
        }
