"""The README's promises: its first two commands are the ones CI runs, and its exit-code table is the contract."""

from __future__ import annotations

import re

import pytest

from envaudit.model.exitcodes import Exit
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


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
    loop = next(c for c in re.findall(r"```sh\n(.+?)\n```", README) if '-m "not jax' in c)
    assert set(re.findall(r"not (\w+)", loop)) == slow, loop


def test_every_probe_is_in_the_readmes_probe_table() -> None:
    """A probe is added by its file alone; the README's table of what each compares must name it."""
    from envaudit.files import probefiles

    listed = set(re.findall(r"^\| `(\w+)` \|", README[README.index("| probe | what it compares |") :], re.MULTILINE))
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
    """scripts/fast_loop.py measures the figures the README quotes, by running exactly its fast-loop command."""
    from scripts import fast_loop

    loop = next(c for c in re.findall(r"```sh\n(.+?)\n```", README) if '-m "not jax' in c)
    assert loop == " ".join(["python", *fast_loop.COMMAND[:-1], f'"{fast_loop.COMMAND[-1]}"'])


@pytest.mark.slow
def test_the_readmes_fast_loop_count_is_what_it_collects() -> None:
    """The number of tests the README says the fast loop runs is what pytest collects for it, within a tenth (so that
    a new rule's or probe's tests need no edit of the README; the figures are re-measured with the script), and the
    time is the script's to measure: no wall-clock figure is asserted."""
    import subprocess
    import sys

    from scripts import fast_loop

    said = re.search(r"python -m scripts\.fast_loop` on [^:]*: (\d+) tests", README)
    assert said, "the README quotes the fast loop's figures"
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
