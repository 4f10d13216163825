"""The exit-code contract that schedulers read (docs/architecture.md): one place, so no module invents its own.

node-problem-detector reads 0 as OK, 1 as NonOK and anything else as Unknown; the Slurm wrapper drains on 1 only.
"""

from collections.abc import Mapping
from enum import IntEnum
from types import MappingProxyType


class BadInput(Exception):
    """Bad usage or bad input, said in one line (exit USAGE): every module's own error of that kind derives from it,
    so that the command line answers all of them in one place without importing the modules that raise them."""


class UsageError(BadInput):
    """Bad usage: a command's arguments, or argparse's complaint, in one line."""


class Terminated(BaseException):
    """SIGTERM (Slurm and Kubernetes stop a check so): unwinds like Ctrl-C, so the runner kills its child."""


class Exit(IntEnum):
    """Each code's meaning is MEANING's (what `--help` prints)."""

    OK = 0
    FINDINGS = 1
    USAGE = 2
    INTERNAL = 3
    INTERRUPTED = 130  # the shell's 128 + SIGINT


MEANING: Mapping[Exit, str] = MappingProxyType(
    {
        Exit.OK: "no fail finding (with --strict: no warn either)",
        Exit.FINDINGS: "at least one fail finding",
        Exit.USAGE: "bad usage or bad input; one line on stderr",
        Exit.INTERNAL: "the audit itself could not complete (an internal error, Ctrl-C, SIGTERM)",
        Exit.INTERRUPTED: "fix stopped by Ctrl-C, after its installer could roll back",
    }
)
JUDGING = (Exit.OK, Exit.FINDINGS, Exit.USAGE, Exit.INTERNAL)  # what a verb that judges exits with
SHOWING = (Exit.OK, Exit.USAGE, Exit.INTERNAL)  # what a verb that only lists or prints exits with


def meaning(code: Exit, said: Mapping[Exit, str] | None = None) -> str:
    """What `code` means: a verb's own words for it where it has them (`said`), else the contract's."""
    return (said or {}).get(code) or MEANING[code]
