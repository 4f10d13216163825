"""The README's promises: its first two commands are the ones CI runs, and its exit-code table is the contract."""

from __future__ import annotations

import re

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
    loop = next(c for c in re.findall(r"```sh\n(.+?)\n```", README) if "pytest -q -m " in c)
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
