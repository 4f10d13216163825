"""Fix commands built from facts: only what is not installed yet, and the co-installed packages the pins would
break moved with them (the real environments of tests/realenv prove the commands in pip itself)."""

from __future__ import annotations

from envaudit.model import fixes
from envaudit.rules import fixing
from tests.conftest import facts_from

NUMPY2 = {
    "packages": {"jax": "0.4.25", "jaxlib": "0.4.25", "numpy": "2.0.2", "ml-dtypes": "0.6.0", "scipy": "1.17.1"},
    "requires": {"ml-dtypes": ["numpy>=2.0.0"], "scipy": ["numpy<2.7,>=1.26.4"], "jax": ["numpy>=1.22"]},
    "python": {"executable": "/home/a b/env/bin/python"},
}


def test_pins_move_the_packages_they_would_break_and_quote_for_a_shell() -> None:
    command = fixing.install(facts_from(NUMPY2), ["numpy<2"]).command
    assert command == "'/home/a b/env/bin/python' -m pip install 'numpy<2' 'ml-dtypes<0.6.0'"  # nothing but the command


def test_an_upgrade_moves_a_dependent_up() -> None:
    facts = facts_from({"packages": {"numpy": "1.26.4", "old": "1.0"}, "requires": {"old": ["numpy<2"]}})
    assert fixing.install(facts, ["numpy>=2"]).command == "python -m pip install 'numpy>=2' 'old>1.0'"


def test_what_is_installed_is_never_recommended() -> None:
    facts = facts_from(NUMPY2)
    assert fixing.install(facts, ["numpy>=2", "jax==0.4.25"]).command == ""
    assert (
        fixing.install(facts, ["numpy>=2", "jaxlib==0.4.26"]).command
        == "'/home/a b/env/bin/python' -m pip install jaxlib==0.4.26"
    )
    assert fixing.install(facts, ["flax==0.8.4"], installed_only=True).command == ""  # a constraint, not an install
    assert not fixing.satisfied(facts, "jax[cuda12]==0.4.25")  # an extra asks for its packages too


def test_fits_sees_disjoint_and_overlapping_ranges() -> None:
    assert not fixing._fits("<2", ">=2.0.0")
    assert fixing._fits("<2", "<2.7,>=1.26.4")
    assert fixing._fits("==0.4.30", ">=0.4.27,<=0.4.30")
    assert not fixing._fits("==0.4.25", ">=0.4.27")
    assert fixing._fits(">0.11.7", ">=0.11.2") and fixing._fits(">0.11.7", ">=0.11.7,<0.12")
    assert not fixing._fits(">0.11.7", "<=0.11.7") and not fixing._fits(">0.11.7", "==0.11.7")


def test_a_library_moved_up_moves_no_dependent_whose_floor_it_meets() -> None:
    """equinox>0.11.7 beside diffrax, lineax and optimistix, each requiring `equinox>=` a floor below it: nothing else
    moves (every one of them was moved up with it, and uv refused the plan beside the held jax); one that caps
    equinox at the installed release does."""
    facts = facts_from(
        {
            "packages": {"equinox": "0.11.7", "diffrax": "0.6.0", "lineax": "0.0.7", "capped": "1.0"},
            "requires": {
                "diffrax": ["equinox>=0.11.2"],
                "lineax": ["equinox>=0.11.5"],
                "capped": ["equinox<=0.11.7"],
            },
        }
    )
    assert fixing.dependents(facts, ["equinox>0.11.7"]) == ["capped>1.0"]


def test_a_dependent_with_a_local_version_is_pinned_by_its_public_one() -> None:
    facts = facts_from({"packages": {"numpy": "2.0.2", "torch": "2.4.0+cu121"}, "requires": {"torch": ["numpy>=2"]}})
    assert fixing.install(facts, ["numpy<2"]).command == "python -m pip install 'numpy<2' 'torch<2.4.0'"


def test_facts_that_are_not_versions_give_no_command() -> None:
    facts = facts_from({"packages": {"numpy": "2.0.2", "x": "1.0"}, "requires": {"x": ["!!"]}})  # hand-edited
    assert fixing.install(facts, ["numpy<2"]).command == ""


def test_a_range_a_later_step_moved_out_of_is_not_carried_and_a_line_keeps_its_extras() -> None:
    from envaudit.model.fixes import Fix, excluded

    moved = Fix(install=("flax<0.8.5,>=0.8.0",)).then(Fix(install=("flax==0.10.6", "jax==0.5.3")))
    assert moved.excluding == ()  # flax 0.10.6 is outside the earlier range: it says nothing of what fails now
    within = Fix(install=("jax>=0.4.26",)).then(Fix(install=("jax==0.10.1",)))
    assert within.excluding == ("jax>=0.4.26",)
    assert excluded(("jax!=0.4.24,!=0.4.25",), ("jax>=0.4.26",)) == ("jax>=0.4.26",)  # what the floor implies goes

    assert fixes._within("flax!=0.8.3", "flax[all]>=0.8.0; python_version >= '3.10'") == (
        'flax[all]!=0.8.3,>=0.8.0; python_version >= "3.10"'
    )
