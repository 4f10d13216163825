"""Score `envaudit plan` on a set of pinned install sets whose expected verdicts were written before plan ran on them.

For each case of the set's cases.toml (tests/fixtures/plan-unseen-1 by default): plan runs on the case's pins and
options; the verdict it gives (a refusal, exit 2, counts as "refused") is compared with the expected one, and for
a case expected to fail, whether plan names a finding at all and whether its fix plan changes a package that the
case's `fixed_by` names. Option words the collector guessed at are mapped to envaudit's (`--gpu H100` to the
compute capability NVIDIA lists for it); anything else is passed as written, so an option envaudit lacks is a
refusal and scores as a miss.

usage: python -m scripts.score_plan [SET_DIR] [--verbose]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPABILITY = {"H100": "9.0", "A100": "8.0", "V100": "7.0"}  # developer.nvidia.com/cuda-gpus


def options(words: list[str]) -> list[str]:
    out: list[str] = []
    it = iter(words)
    for word in it:
        out += ["--compute-capability", CAPABILITY[next(it)]] if word == "--gpu" else [word]
    return out


def plan(pins: list[str], extra: list[str]) -> tuple[str, list[str], set[str]]:
    """(verdict or "refused", the root findings' ids, the packages the fix plan changes)."""
    done = subprocess.run(
        [sys.executable, "-m", "envaudit", "plan", *pins, *options(extra), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    if done.returncode == 2:
        return "refused", [], set()
    answer = json.loads(done.stdout)
    findings = answer.get("findings") or []
    roots = [str(f["id"]) for f in findings if not f.get("caused_by")]
    text = str((answer.get("plan") or {}).get("fix") or "")
    changed = {m.lower().replace("_", "-") for m in re.findall(r"([A-Za-z][\w.-]*)\s*[=<>!~]=", text)}
    return str(answer.get("verdict")), roots, changed


def named(fixed_by: str) -> set[str]:
    return {m.lower().replace("_", "-") for m in re.findall(r"([A-Za-z][\w.-]*)\s*[=<>!~]=", fixed_by)}


def main(argv: list[str]) -> int:
    verbose = "--verbose" in argv
    where = Path(next((a for a in argv if not a.startswith("--")), ROOT / "tests" / "fixtures" / "plan-unseen-1"))
    cases = tomllib.loads((where / "cases.toml").read_text(encoding="utf-8"))["cases"]
    right = found = fixes = wanted = 0
    for name, case in sorted(cases.items()):
        verdict, roots, changed = plan(list(case["pins"]), list(case.get("options") or []))
        ok = verdict == case["verdict"]
        right += ok
        found += bool(roots) == (case["verdict"] != "ok")
        want = named(str(case.get("fixed_by") or ""))
        hit = bool(want & changed)
        if want:
            wanted += 1
            fixes += hit
        mark = "ok " if ok else "BAD"
        print(f"{mark} {name}: expected {case['verdict']}, plan {verdict}; roots {roots}; fix {sorted(changed)}")
        if verbose:
            print(f"      why: {case.get('why')}\n      fixed by: {case.get('fixed_by')}")
    total = len(cases)
    print(f"verdicts right: {right}/{total}; a finding where expected (none where healthy): {found}/{total}")
    print(f"fix plans changing a package the record's fix names: {fixes}/{wanted}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
