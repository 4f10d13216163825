"""`python -m derive`: the release knowledge kept current.

python -m derive refresh [--cache DIR] [--offline] [--force] [--jax-git DIR] [TABLE ...]
    every derivation whose inputs moved (or those named, with what they read first), run again; the generated
    files after them; then each table's rows added, changed and removed. Exit 1 where a derivation failed (its
    table kept as it was), 2 on bad usage.
python -m derive list
    the registry: each table, what writes it, what it reads, what it is keyed on, how it is confirmed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from derive import generated, refresh, registry
from derive.sources import wheels


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m derive", description=(__doc__ or "").splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    r = verbs.add_parser("refresh", help="re-derive every table whose inputs moved, and print what changed")
    r.add_argument("tables", nargs="*", help="only these tables (file names, as `list` shows them)")
    r.add_argument("--cache", type=Path, default=None, help="download cache (default: ~/.cache/envaudit-derive)")
    r.add_argument("--offline", action="store_true", help="read only what the cache holds")
    r.add_argument("--force", action="store_true", help="run every derivation, whatever its fingerprint says")
    r.add_argument("--jax-git", type=Path, default=None, help="a bare mirror of github.com/jax-ml/jax (cuda-archs)")
    verbs.add_parser("list", help="the registry of derivations")
    return parser


def _list() -> int:
    for d in registry.DERIVATIONS:
        how = f"by hand: {d.by_hand}" if d.by_hand else f"python -m {d.module}"
        print(f"{d.table}\n  {how}\n  reads: {', '.join(d.reads)}\n  keyed on: {d.keyed}\n  confirmed: {d.confirmed}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parsed = _parser().parse_args(argv)
    if parsed.verb == "list":
        return _list()
    if parsed.jax_git is not None and not (parsed.jax_git / "HEAD").is_file():
        print(f"python -m derive: --jax-git {parsed.jax_git}: not a git directory", file=sys.stderr)
        return 2
    options = refresh.Options(
        cache=wheels.cache_of(parsed.cache),
        offline=parsed.offline,
        only=tuple(parsed.tables),
        force=parsed.force,
        jax_git=parsed.jax_git,
        after=(lambda: print(*(f"generated {name}" for name in generated.write_all()), sep="\n"),),
    )
    started = time.monotonic()
    try:
        outcomes = refresh.Refresh(options).run()
    except ValueError as error:
        print(f"python -m derive: {error}", file=sys.stderr)
        return 2
    print("\n".join(refresh.report(outcomes, time.monotonic() - started)))
    return 1 if any(o.status == "failed" for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
