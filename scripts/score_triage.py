"""Score `envaudit triage` on a set of real reports whose expected answers were written before triage ran on them.

For each case of the set's expected.toml (tests/fixtures/triage-unseen by default): the verdict triage gives (a
refusal, exit 2, counts as the verdict "refused"), whether it names any root finding, and how many of the facts the
expectation lists triage read with the value stated (a fact is matched by its name: `jax`, `jaxlib`, a package, or
`python`, `cuda`, `cudnn`, `driver`, `gpu`; the other expected facts are listed as not scored). The expected root
is prose (the maintainer's diagnosis), so whether a named root is the right one is for a reader: the script prints
both side by side.

usage: python -m scripts.score_triage [SET_DIR] [--verbose]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# triage's own bound on building the stacks a report states (--build-timeout's default), and a minute for the rest
BOUND_S = 240 + 60
SCORED = {"python": "python", "cuda": "cuda", "cudnn": "cudnn", "driver": "driver", "gpu": "gpu"}


def triage(path: Path) -> tuple[str, dict[str, set[str]], list[str]]:
    """(verdict or "refused", the facts read by name -> values, the root findings' ids)."""
    done = subprocess.run(
        [sys.executable, "-m", "envaudit", "triage", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=BOUND_S,
    )
    if done.returncode == 2:
        return "refused", {}, []
    answer = json.loads(done.stdout)
    facts: dict[str, set[str]] = {}
    roots: list[str] = []
    for environment in answer.get("environments") or []:
        for fact in environment.get("facts") or []:
            name = str(fact.get("fact", "")).removeprefix("package ")
            facts.setdefault(name, set()).add(str(fact.get("value")))
        roots += [f["id"] for f in environment.get("findings") or [] if not f.get("caused_by")]
    return str(answer.get("verdict")), facts, roots


def _same(expected: str, read: set[str]) -> bool:
    """A value read as stated: the same text, or the same release as PEP 440 compares them ("JAX 0.7" is 0.7.0)."""
    from packaging.version import InvalidVersion, Version

    if expected in read:
        return True
    try:
        wanted = Version(expected)
    except InvalidVersion:
        return False
    for value in read:
        try:
            if Version(value) == wanted:
                return True
        except InvalidVersion:
            continue
    return False


def expected_facts(case: dict[str, object]) -> dict[str, list[str]]:
    stated = case.get("facts") or {}
    assert isinstance(stated, dict)
    return {str(k): [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in stated.items()}


def main(argv: list[str]) -> int:
    verbose = "--verbose" in argv
    where = Path(next((a for a in argv if not a.startswith("--")), ROOT / "tests" / "fixtures" / "triage-unseen"))
    cases = tomllib.loads((where / "expected.toml").read_text(encoding="utf-8"))["cases"]
    right = named = read = stated = 0
    for name, case in sorted(cases.items()):
        verdict, facts, roots = triage(where / f"{name}.txt")
        ok = verdict == case["verdict"]
        right += ok
        named += bool(roots) == (case["verdict"] != "ok")
        wanted = {k: v for k, v in expected_facts(case).items() if k in SCORED or "-" in k or k in ("jax", "jaxlib")}
        hits = sum(
            any(_same(value, facts.get(SCORED.get(k, k), set())) for value in values) for k, values in wanted.items()
        )
        read, stated = read + hits, stated + len(wanted)
        mark = "ok " if ok else "BAD"
        print(f"{mark} {name}: expected {case['verdict']}, triage {verdict}; facts {hits}/{len(wanted)}; roots {roots}")
        if verbose:
            print(f"      expected root: {case.get('root')}")
            for k, values in wanted.items():
                if not any(_same(value, facts.get(SCORED.get(k, k), set())) for value in values):
                    print(f"      missed {k}={'|'.join(values)} (read {sorted(facts.get(SCORED.get(k, k), set()))})")
    total = len(cases)
    print(f"verdicts right: {right}/{total}; a root named where expected (none where healthy): {named}/{total}")
    print(f"facts read as stated: {read}/{stated} (jax, jaxlib, packages, python, cuda, cudnn, driver, gpu)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
