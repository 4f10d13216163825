"""The exit-code contract that schedulers read (docs/architecture.md): one place, so no module invents its own.

node-problem-detector reads 0 as OK, 1 as NonOK and anything else as Unknown; the Slurm wrapper drains on 1 only.
"""

from enum import IntEnum


class BadInput(Exception):
    """Bad usage or bad input, said in one line (exit USAGE): every module's own error of that kind derives from it,
    so that the command line answers all of them in one place without importing the modules that raise them."""


class UsageError(BadInput):
    """Bad usage: a command's arguments, or argparse's complaint, in one line."""


class Terminated(BaseException):
    """SIGTERM (Slurm and Kubernetes stop a check so): unwinds like Ctrl-C, so the runner kills its child."""


class Exit(IntEnum):
    OK = 0  # no finding of severity fail (with --strict: no warn either)
    FINDINGS = 1  # at least one fail finding
    USAGE = 2  # bad usage or bad input; one clear line on stderr
    INTERNAL = 3  # the audit itself could not complete
    INTERRUPTED = 130  # `fix` stopped by Ctrl-C (the shell's 128 + SIGINT), after its installer could roll back
