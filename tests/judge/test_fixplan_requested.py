"""What the user installed by name is kept where a plan can keep it (issue: fixes found, not predicted)."""

from __future__ import annotations

from envaudit.judge.assemble import candidates
from tests.conftest import facts_from

# augmax 0.3.4 uses a name jax 0.6.0 removed (api-removals.toml): augmax 0.4.0, or a jax below 0.6.0, each ends clean
STACK = {"augmax": "0.3.4", "jax": "0.6.0", "jaxlib": "0.6.0"}


def plans(requested: list[str]) -> list[tuple[str, ...]]:
    facts = facts_from(
        {"packages": STACK, "platform": {"machine": "x86_64"}, "python": {"version": "3.11.7"}, "requested": requested}
    )
    return [r.plan.fix.install for r in candidates(facts, mode="audit", limit=4) if not r.plan.remaining]


def test_both_directions_are_offered_and_the_library_the_user_chose_is_held() -> None:
    """A library too old for the installed jax had one way out, the library up: where the user installed that
    library by name (REQUESTED), or where it does not install, there was no other. jax moved below the removal is
    the other direction; what the user chose by name decides which comes first."""
    neither = plans([])
    assert len(neither) == 2 and neither[0][0].startswith("augmax>=") and neither[1][0].startswith("jax==")
    assert plans(["augmax"]) == [neither[1], neither[0]]  # augmax held, jax moved
    assert plans(["jax"]) == neither  # jax held, augmax moved
    assert plans(["augmax", "jax"]) == neither  # both chosen: the least change decides, as before
