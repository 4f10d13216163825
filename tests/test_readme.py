"""The README's promises: its first two commands are the ones CI runs, its exit-code table is the contract, it is a
short page of the five jobs, and every link of the documentation leads somewhere. The reference it links (docs/) is
read through tests/docs.py, which finds a section or a block wherever it now lives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envaudit.model.exitcodes import Exit
from tests import docs
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
LONGEST = 250  # lines: the README is the five jobs and a link to the reference, not the reference


def first_commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", README)[:2]


def test_readme_starts_with_install_and_test_commands() -> None:
    audit, test = first_commands()
    assert "pip install" in audit and "python -m envaudit" in audit
    assert "pip install" in test and "pytest" in test
    assert README.index("```sh") < 600  # the commands come first, before any long prose


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    runs = [line for line in ci.splitlines() if line.startswith(first_commands()[1])]
    assert runs and all(line.endswith("exit 1; }") for line in runs), runs  # the command, and its failure fails CI
    assert "set -euo pipefail" in ci  # a failing (or test-less, exit 5) pytest fails CI


def test_readme_exit_code_table_matches_the_contract() -> None:
    for code in Exit:
        assert re.search(rf"^\| {int(code)} \|", README, re.MULTILINE), code


def test_the_fast_loop_names_every_slow_marker() -> None:
    """The README's fast loop leaves out each marker pyproject.toml declares for slow tests, and nothing else."""
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    names = {m.split(":")[0].split("(")[0] for m in declared}
    slow = names - {"cpu_only", "alone", "cost"}  # what a test asserts, or how it is scheduled: not its speed
    (loop,) = [c for c in docs.sh_blocks() if '-m "not jax' in c]
    assert set(re.findall(r"not (\w+)", loop)) == slow, loop


def test_every_probe_is_in_the_documentations_probe_table() -> None:
    """A probe is added by its file alone; the documentation's table of what each compares must name it."""
    from envaudit.files import probefiles

    head = "| probe | what it compares |"
    (page,) = [docs.text(p) for p in docs.pages() if head in docs.text(p)]
    listed = set(re.findall(r"^\| `(\w+)` \|", page[page.index(head) :], re.MULTILINE))
    assert set(probefiles.available()) <= listed, set(probefiles.available()) - listed


def test_the_jax_extra_leaves_out_what_the_readme_says() -> None:
    """The sentence under the first command names releases the `[jax]` extra leaves out: it does, on this machine
    (tests/test_jax_extra.py holds the extra to the rules; tests/realenv/test_install.py the rest of the sentence)."""
    from tests.test_jax_extra import extra_here

    said = re.search(
        r'`pip install "\.\[jax\]"`, which\s+leaves out the releases [^.]*?, jaxlib ([\d.]+?) among', README
    )
    assert said, "the README says what the [jax] extra leaves out, under its first command"
    assert not extra_here("jaxlib").contains(said[1]), said[1]


def test_the_fast_loop_script_runs_the_readmes_command() -> None:
    """scripts/fast_loop.py measures the figures the documentation quotes, by running exactly its fast-loop command."""
    from scripts import fast_loop

    (loop,) = [c for c in docs.sh_blocks() if '-m "not jax' in c]
    assert loop == " ".join(["python", *fast_loop.COMMAND[:-1], f'"{fast_loop.COMMAND[-1]}"'])


@pytest.mark.slow
def test_the_readmes_fast_loop_count_is_what_it_collects() -> None:
    """The number of tests the documentation says the fast loop runs is what pytest collects for it, within a tenth (so
    that a new rule's or probe's tests need no edit of the page; the figures are re-measured with the script), and the
    time is the script's to measure: no wall-clock figure is asserted."""
    import subprocess
    import sys

    from scripts import fast_loop

    said = docs.claim(r"python -m scripts\.fast_loop` on [^:]*: (\d+) tests")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", fast_loop.MARKS, "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    collected = re.search(r"(\d+)/\d+ tests collected", done.stdout)
    assert collected, done.stdout[-500:]
    assert abs(int(said[1]) - int(collected[1])) <= int(collected[1]) // 10, (said[1], collected[1])


def test_ci_lints_and_types_first_as_the_repositorys_pre_commit_does() -> None:
    """.ci/run runs ruff, ruff format and mypy before the tests; the repository's pre-commit config runs the same."""
    import yaml  # type: ignore[import-untyped, unused-ignore]

    ci = (ROOT / ".ci" / "run").read_text()
    tests_at = ci.index(first_commands()[1])
    for check in ("ruff check", "ruff format --check", "mypy"):
        assert -1 < ci.index(f"\n{check}") < tests_at, check
    hooks = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    assert [h["entry"] for h in hooks] == ["ruff check", "ruff format --check", "mypy"]


@pytest.mark.slow
def test_the_suite_runs_without_xdist_too() -> None:
    """tests/conftest.py implements xdist's worker-count hook: a run without xdist (`-p no:xdist`, a contributor's
    plain `pytest`) must still start rather than reject the hook as unknown."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "--collect-only", __file__],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0 and "tests collected" in done.stdout, done.stdout[-1000:] + done.stderr[-1000:]


# each job the README teaches, in its order: a word of its heading and the command its worked example runs
JOBS = (
    ("audit", "python -m envaudit"),
    ("plan", "envaudit plan"),
    ("triage", "envaudit triage"),
    ("health", "envaudit health"),
    ("CI", "envaudit plan -r requirements.txt --format sarif"),
)


def test_the_readme_is_a_short_page_of_the_five_jobs() -> None:
    """At most LONGEST lines; a numbered heading for each job, in order, whose first block is its worked example."""
    assert len(README.splitlines()) <= LONGEST, len(README.splitlines())
    numbered = [h for h in docs.headings(docs.README) if h.level == 2 and re.match(r"\d+\. ", h.title)]
    assert [int(h.title.split(".")[0]) for h in numbered] == list(range(1, len(JOBS) + 1)), numbered
    for (word, command), heading in zip(JOBS, numbered, strict=True):
        assert word.lower() in heading.title.lower(), heading.title
        example = next(iter(docs.fenced(README[heading.start : heading.end], r"\w+")), "")
        assert command in example, (heading.title, example[:200])


def slug(title: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped (backticks, dots, apostrophes,
    parentheses), each space a hyphen (github/cmark-gfm's and GitHub's renderer's rule)."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for h in docs.headings(page):
        base, n = slug(h.title), 0
        while (name := base if n == 0 else f"{base}-{n}") in found:  # a repeated heading gets -1, -2...
            n += 1
        found.add(name)
    return found


def links(page: Path) -> list[str]:
    """The relative links of a page's prose (not inside a fenced block or a code span)."""
    prose = re.sub(r"^( *)```.*?^\1```$", "", docs.text(page), flags=re.MULTILINE | re.DOTALL)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", prose) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", docs.pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_of_the_documentation_resolves(page: Path) -> None:
    """A link of README.md or a docs/ page names a file of the checkout, and a heading of it where it gives one."""
    broken = []
    for target in links(page):
        name, _, anchor = target.partition("#")
        where = (page.parent / name).resolve() if name else page
        missing = not where.exists() or not where.is_relative_to(ROOT)
        if missing or (anchor and where.suffix == ".md" and anchor not in anchors(where)):
            broken.append(target)
    assert broken == [], broken


def test_the_link_check_reads_github_s_anchors() -> None:
    assert slug("4. Check a node's health (Slurm, Kubernetes, NHC, Prometheus)") == (
        "4-check-a-nodes-health-slurm-kubernetes-nhc-prometheus"
    )
    assert slug("Plan a project's files before installing them (`envaudit plan`)") == (
        "plan-a-projects-files-before-installing-them-envaudit-plan"
    )
    assert "1-audit-this-environment" in anchors(docs.README) and links(docs.README)
