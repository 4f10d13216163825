"""Benchmark: `python -c "import jax"` in a venv with the import hook enabled against one without it, side by side.

Both venvs chain to this interpreter's site-packages (same jax). Warm: the hook's verdict is cached, the normal
case. Cold: the cache is emptied before each hooked run, the first import after an install.
Target (issue: hook): warm ratio <= 1.03 over >= 20 runs each. Every Python start of the environment also runs the
hook's .pth line: `python -c pass` is timed the same way (target: under 2 ms more, i.e. the hook imports nothing
costly at start-up).   usage: python -m scripts.bench_hook [RUNS] [--record FILE]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from scripts._bench import ROOT, Bench, compare, env

COMPARES = "`import jax` with the hook enabled / without it; `python -c pass` likewise"
TARGET = "≤ 1.03 warm; < 2 ms"


def venv(where: Path, hook: bool) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = next((where / "lib").glob("python*/site-packages"))
    (site / "00-parent.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n{ROOT}\n")
    python = where / "bin" / "python"
    if hook:
        subprocess.run([str(python), "-m", "envaudit", "hook", "enable"], check=True, capture_output=True)
    return python


def main() -> None:
    bench, argv = Bench.start(__file__, COMPARES, TARGET, sys.argv[1:])
    runs = int(argv[0]) if argv else 20
    tmp = Path(tempfile.mkdtemp(prefix="envaudit-hook-bench-"))
    hooked, plain = venv(tmp / "hooked", True), venv(tmp / "plain", False)
    cache = tmp / "cache"
    environ = env(ENVAUDIT_CACHE_DIR=str(cache))
    environ.pop("PYTHONPATH")
    cmd_hooked, cmd_plain = [str(hooked), "-c", "import jax"], [str(plain), "-c", "import jax"]
    print(f"runs each: {runs}")
    a, b = compare(cmd_hooked, cmd_plain, runs, environ)
    bench.report(
        "import jax, hook enabled, warm cache", a, "import jax, no hook", b, "target <= 1.03", name="warm cache"
    )
    a, b = compare(cmd_hooked, cmd_plain, max(runs // 2, 5), environ, before_a=lambda: shutil.rmtree(cache, True))
    bench.report(
        "import jax, hook enabled, cold cache", a, "import jax, no hook", b, "reported, no target", name="cold"
    )
    a, b = compare([str(hooked), "-c", "pass"], [str(plain), "-c", "pass"], runs * 2, environ)
    target = f"difference {(a - b) * 1000:.2f} ms, target < 2"
    sides = bench.report("python -c pass, hook enabled", a, "python -c pass, no hook", b, target, name=None)
    bench.figure("per Python start", (a - b) * 1000, "ms", target="< 2 ms", medians=sides)
    shutil.rmtree(tmp, ignore_errors=True)
    bench.save(runs)


if __name__ == "__main__":
    main()
