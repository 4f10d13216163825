"""`envaudit suggest`: the jax install command for this machine, or a described one, with the release it resolves
to and why (judge/suggestion.py chooses, with the planner's tables and rules).

The machine is this one (its facts collected as `--quick` collects them: NVML's driver and GPUs, the TPU chips on
the PCI bus, the Python and the installer of this environment), a saved report's facts (`--facts REPORT.json`),
or described: `--driver`, `--compute-capability`, `--tpu`, `--rocm` or `--cpu` replace the accelerator the facts
name, `--python` and `--installer` what they say of those. Exit 0 with a command, 1 where nothing installs for the
machine's accelerator (what would is said), 2 for a value that is not one.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable

from envaudit.commands import options
from envaudit.commands.options import Command
from envaudit.commands.suggest.asked import SuggestOptions
from envaudit.model.exitcodes import Exit, UsageError
from envaudit.model.suggestion import INSTALLERS

# The names of render.RENDERERS, written here: importing that module to read them would load the formats
# (tests/commands/test_suggest.py holds them equal)
FORMATS = ("text", "json")
# TPU generations as jax names them (collect/tpu.py: jax/_src/hardware_utils.py, jax-v0.10.1)
TPUS = ("v2", "v3", "plc", "v4", "v5p", "v5e", "v6e", "tpu7x")


def _version(flag: str, pattern: str, example: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if not text.isascii() or not re.fullmatch(pattern, text):
            raise argparse.ArgumentTypeError(f"{flag} {text!r} is not a version such as {example}")
        return text

    return check


def _tpu(text: str) -> str:
    if text.lower() not in TPUS:
        raise argparse.ArgumentTypeError(f"--tpu {text!r} is not a TPU generation ({', '.join(TPUS)})")
    return text.lower()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--driver", type=_version("--driver", r"\d{1,4}(\.\d{1,6}){0,3}", "535.104.05"), help="NVIDIA driver version"
    )
    p.add_argument(
        "--compute-capability",
        dest="compute_capability",
        type=_version("--compute-capability", r"\d{1,2}\.\d", "9.0"),
        metavar="X.Y",
        help="the GPUs' compute capability",
    )
    p.add_argument("--tpu", type=_tpu, metavar="GENERATION", help=f"a TPU host of that generation ({', '.join(TPUS)})")
    p.add_argument(
        "--rocm",
        type=_version("--rocm", r"\d{1,2}(\.(\d{1,3}|x)){0,2}", "7.x or 6.2"),
        metavar="VERSION",
        help="an AMD GPU with this ROCm installed on the host",
    )
    p.add_argument("--cpu", action="store_true", help="jax on the CPU, whatever accelerator is here")
    p.add_argument(
        "--python", type=_version("--python", r"\d{1,2}\.\d{1,3}(\.\d{1,3})?", "3.12"), metavar="X.Y",
        help="the Python (default: this one, or the report's)",
    )  # fmt: skip
    p.add_argument("--installer", choices=INSTALLERS, help="the installer (default: this environment's: uv or pip)")
    p.add_argument(
        "--facts", type=options.path_argument, metavar="REPORT.json", help="the machine of a saved report's facts"
    )
    options.add_format(p, FORMATS, default="text", help="text for a terminal, json for a program (default: text)")


def parse(parsed: argparse.Namespace) -> SuggestOptions:
    o = SuggestOptions(
        driver=parsed.driver,
        compute_capability=parsed.compute_capability,
        tpu=parsed.tpu,
        rocm=parsed.rocm,
        cpu=parsed.cpu,
        python=parsed.python,
        installer=parsed.installer,
        facts=parsed.facts,
        format=parsed.format,
    )
    named = [flag for flag, given in (("--tpu", o.tpu), ("--rocm", o.rocm), ("--cpu", o.cpu)) if given]
    if o.driver or o.compute_capability:
        named.append("--driver/--compute-capability")
    if len(named) > 1:
        raise UsageError(f"suggest: {' and '.join(named)} describe different machines: name one accelerator")
    return o


def run(o: SuggestOptions) -> int:
    from envaudit.commands.suggest import machine, render
    from envaudit.judge.suggestion import suggest

    answer = suggest(machine.of(o))
    sys.stdout.write(render.RENDERERS.render(answer, o.format))
    return Exit.OK if answer.installs else Exit.FINDINGS


COMMAND = Command(
    "suggest",
    "the jax install command for this machine (or a described one), the release it resolves to, and why",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit suggest", "the command that installs jax for this machine's accelerator, and why that release"),
        ("envaudit suggest --tpu v5e --python 3.12", "the same for a described machine"),
        ("envaudit suggest --facts report.json -f json", "for the machine of a saved report, as JSON"),
    ),
    exit_words=(
        (Exit.OK, "a command installs jax for the machine"),
        (Exit.FINDINGS, "nothing installs for the machine's accelerator (what would is said)"),
    ),
)
