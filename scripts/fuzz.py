"""Run the repository's fuzzers (tests/security/fuzzing.py) longer than CI does, and print the figures: inputs per
family, the exit-code histogram, the inputs that broke the contract (exit 3, or an exception out of the command
line), the slowest input and the peak memory of this process.

usage: python -m scripts.fuzz [--seconds S] [--seed N] [--family NAME]...
"""

from __future__ import annotations

import argparse
import os
import resource
from collections import Counter

from tests.security import fuzzing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per family")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--family", action="append", choices=sorted(fuzzing.FAMILIES))
    args = parser.parse_args(argv)
    os.environ["ENVAUDIT_NO_BUILD"] = "1"  # a plan builds nothing: its inputs are the files fuzzed, not an index
    total, exits, broken = 0, Counter[int](), []
    worst = (0.0, "")
    for family in args.family or sorted(fuzzing.FAMILIES):
        outcome = fuzzing.run(family, args.seed, args.seconds)
        total += outcome.inputs
        exits.update(outcome.exits)
        broken += outcome.broken
        worst = max(worst, (outcome.worst_s, outcome.worst))
        shown = ", ".join(f"exit {code}: {n}" for code, n in sorted(outcome.exits.items()))
        print(f"{family}: {outcome.inputs} inputs ({shown}); slowest {outcome.worst_s:.2f} s", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"all: {total} inputs, exits {dict(sorted(exits.items()))}, {len(broken)} broke the contract")
    print(f"slowest input: {worst[0]:.2f} s ({worst[1]}); peak memory of this process: {peak:.0f} MiB")
    for line in broken[:20]:
        print(f"  {line}")
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
