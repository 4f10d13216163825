"""The PEP 508 marker environment of a Python on a platform: what a requirement's marker is evaluated against where
no interpreter exists to ask (a plan, and what the tables say a release declares). Linux x86_64 CPython unless a
recorded environment says otherwise; what nothing says stays empty (`platform_release`), so a marker on it does not
hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# the marker variables (PEP 508) that are not the Python's version, for the platform a plan is of by default
LINUX_X86_64 = {
    "os_name": "posix",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "implementation_name": "cpython",
    "platform_release": "",
    "platform_version": "",
}
PYTHON_KEYS = ("python_version", "python_full_version", "implementation_version")
PYTHONS = tuple(f"3.{minor}" for minor in range(9, 16))  # those a plan that names none is evaluated for


@dataclass(frozen=True)
class Target:
    """The environment a plan is of: its Python ("3.12", "3.11.7") and the other marker variables."""

    python: str
    platform: tuple[tuple[str, str], ...] = tuple(LINUX_X86_64.items())

    @property
    def full_python(self) -> str:
        return self.python if self.python.count(".") >= 2 else f"{self.python}.0"

    def environment(self) -> dict[str, str]:
        """Every PEP 508 marker variable, so that packaging never fills one in from the interpreter running envaudit."""
        short = ".".join(self.python.split(".")[:2])
        full = self.full_python
        return dict(self.platform) | {
            "python_version": short,
            "python_full_version": full,
            "implementation_version": full,
        }


def target(python: str, recorded: Mapping[str, str] | None = None) -> Target:
    """The plan's environment for this Python, its platform the one a pip report records (`recorded`) or Linux
    x86_64."""
    platform = LINUX_X86_64 | {k: v for k, v in (recorded or {}).items() if k in LINUX_X86_64}
    return Target(python, tuple(sorted(platform.items())))
