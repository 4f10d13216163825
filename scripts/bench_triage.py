"""Benchmark: `envaudit triage` on a normal paste and on the slowest texts known, small and large side by side,
alternated in one run (whole process, start-up included). Targets (issue 27): a normal paste in under 1 s, any
text within the 4 MB cap in under 30 s. Before the fix: 100 environments (3 KB) took 23 s and 300 (10 KB) more
than 120 s; 1 MB of `a.a.a...` lines 34 s; a line of spaces after "python" 7 s.

usage: python -m scripts.bench_triage [RUNS] [--record FILE]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from scripts._bench import ENVAUDIT, ROOT, Bench, compare, env

MB = 1_000_000
NORMAL = ROOT / "tests" / "fixtures" / "triage" / "05-print-env-10-gpus-after-upgrade.txt"
COMPARES = "`envaudit triage` of a normal paste, and of the slowest texts known at 1 MB and at 4 MB (the cap)"
TARGET = "a paste < 1 s; any text < 30 s"


def before_after(count: int) -> bytes:
    """`count` environments: jax stated again with another version, each with a CUDA wheel of its own."""
    return b"".join(b"jax==0.4.%d nvidia-x%d-cu12==1.0\n\n\n" % (i, i) for i in range(count))


def filled(unit: bytes, size: int) -> bytes:
    return (unit * max(1, size // len(unit)))[:size]


def spaced(word: bytes) -> bytes:
    return word + b" " * (998 - len(word)) + b"!\n"


SPACES = b"".join(map(spaced, (b"python", b"CUDA", b"driver version", b"| 0 NVIDIA")))
PAIRS = [  # (label, text) small, then large
    (("100 environments (3 KB)", before_after(100)), ("300 environments (10 KB)", before_after(300))),
    (
        ("before-after, 1 MB", filled(before_after(40_000), MB)),
        ("before-after, 4 MB", filled(before_after(10**5), 4 * MB)),
    ),
    (
        ("a.a.a lines, 1 MB", filled(b"a." * 499 + b"a\n", MB)),
        ("a.a.a lines, 4 MB", filled(b"a." * 499 + b"a\n", 4 * MB)),
    ),
    (("spaces after a word, 1 MB", filled(SPACES, MB)), ("spaces after a word, 4 MB", filled(SPACES, 4 * MB))),
]


def main() -> None:
    bench, argv = Bench.start(__file__, COMPARES, TARGET, sys.argv[1:], measures_jax=False)
    runs = int(argv[0]) if argv else 3
    environ = env()
    tmp = Path(tempfile.mkdtemp(prefix="envaudit-triage-"))
    print(f"runs each: {runs}")
    normal, bare = compare([*ENVAUDIT, "triage", str(NORMAL)], [sys.executable, "-c", "pass"], runs, environ)
    sides = bench.report(
        f"normal paste ({NORMAL.stat().st_size} bytes)", normal, "python -c pass", bare, "the paste: < 1 s", name=None
    )
    bench.figure("normal paste", normal, "s", target="< 1 s", medians=sides)
    for (small_label, small), (large_label, large) in PAIRS:
        paths = [tmp / "small.txt", tmp / "large.txt"]
        paths[0].write_bytes(small)
        paths[1].write_bytes(large)
        cmds = [[*ENVAUDIT, "triage", str(path), "--format", "json"] for path in paths]
        large_s, small_s = compare(cmds[1], cmds[0], runs, environ)
        print()
        target = "target: < 30 s; linear: the ratio of the sizes or less"
        sides = bench.report(large_label, large_s, small_label, small_s, target, name=None)
        bench.figure(large_label, large_s, "s", target="< 30 s", medians=sides)
    shutil.rmtree(tmp, ignore_errors=True)
    bench.save(runs)


if __name__ == "__main__":
    main()
