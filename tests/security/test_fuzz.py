"""The fuzzers of tests/security/fuzzing.py, a fixed number of inputs per family, seeded: every input ends in exit
0, 1 or 2, never 3, shows no traceback, and an exit 2 says one line. A longer run, with its figures:
`python -m scripts.fuzz --seconds 60`."""

from __future__ import annotations

import pytest

from tests.security import fuzzing

# inputs per family in CI, the same ones every run (a count, not a time: a busy machine runs them all as well);
# a report is judged in about a second, a requirements file in a few milliseconds
INPUTS = {"check": 6, "compare": 4, "verbs": 20, "report": 40, "triage": 40}
DEFAULT = 150


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(fuzzing.FAMILIES))
def test_fuzzed_inputs_keep_the_exit_code_contract(family: str) -> None:
    wanted = INPUTS.get(family, DEFAULT)
    outcome = fuzzing.run(family, seed=0, seconds=float("inf"), limit=wanted)
    assert outcome.inputs == wanted, outcome  # it ran them all
    assert outcome.broken == [], "\n".join(outcome.broken[:5])


def test_an_input_is_the_same_for_the_same_seed_and_index(tmp_path: object) -> None:
    """A failure is reproduced by its family, seed and index."""
    from pathlib import Path

    first, second = Path(str(tmp_path)) / "a", Path(str(tmp_path)) / "b"
    first.mkdir()
    second.mkdir()
    for family, make in fuzzing.FAMILIES.items():
        if family == "snapshot":  # its file name is drawn too: compared by content below
            continue
        (_, one), (_, two) = next(fuzzing.inputs(family, 7)), next(fuzzing.inputs(family, 7))
        argv_one = [a.replace(str(first), "D") for a in make(one, first)]
        argv_two = [a.replace(str(second), "D") for a in make(two, second)]
        assert argv_one == argv_two, family


def test_the_contract_is_more_than_the_exit_code() -> None:
    """A traceback shown, or an exit 2 of more than its one line, breaks it as an exit 3 does."""
    assert fuzzing._broken(0, "") == "" and fuzzing._broken(2, "envaudit: error: bad\n") == ""
    assert fuzzing._broken(3, "envaudit: internal error: x\n") == "exit 3"
    assert fuzzing._broken(1, "Traceback (most recent call last):\n  File ...\n") == "a traceback"
    assert fuzzing._broken(2, "envaudit: error: bad\nand more\n") == "exit 2 in 2 lines"
