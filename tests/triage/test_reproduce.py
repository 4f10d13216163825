"""What a report's stack is built of, and what triage says where it builds nothing (the unit tests build nothing:
tests/realenv/test_triage_reproduce.py builds)."""

from __future__ import annotations

import json

from envaudit.commands.triage import reply
from envaudit.commands.triage.reproduce import _split
from envaudit.commands.triage.triaged import Building, triage


def test_the_twin_installs_what_envaudit_knows_and_the_rest_only_constrains_it() -> None:
    installs, constraints = _split(
        {
            "jax": "0.4.30",
            "jaxlib": "0.4.30+cuda12.cudnn89",  # the twin takes its CPU wheel (collect/build.twin)
            "jaxtyping": "0.2.34",
            "typeguard": "4.3.0",
            "torch": "2.3.0+cu121",  # a local build: no index has it
            "tensorflow-gpu": "2.10.0",  # only a GPU runs it
            "nvidia-cublas-cu12": "12.4.5.8",
        }
    )
    assert set(installs) == {"jax", "jaxlib", "jaxtyping", "nvidia-cublas-cu12"}  # the twin leaves CUDA's out
    assert constraints == {"typeguard": "4.3.0"}


def test_a_report_whose_stack_is_not_built_says_why_in_every_format() -> None:
    result = triage(b"jax==0.4.30\njaxlib==0.4.30\n", Building(no_build=True))
    (env,) = result.environments
    assert env.reproduction is not None and env.reproduction.status == "not_built"
    assert "not built here: nothing was built (--no-build)" in reply.text(result)
    assert json.loads(reply.RENDERERS.render(result, "json"))["environments"][0]["reproduction"] == {
        "status": "not_built",
        "reason": "nothing was built (--no-build)",
    }
    assert triage(b"numpy==2.0.0\nimport jax\n").environments[0].reproduction is None  # no jax stated: no stack


def test_what_a_report_does_not_pin_is_resolved_as_of_its_jax_and_its_pins_at_any_date() -> None:
    """A report of jax 0.4.27 built with today's SciPy and NumPy fails where the reporter's did not (SciPy 1.13 and
    NumPy 2 came after it): the twin resolves what the text does not pin among the releases uploaded while its jax
    was the newest (the day the next jax was first uploaded, from coverage.toml's PyPI dates)."""
    from envaudit.collect import build
    from envaudit.rules import knowledge

    uploaded = knowledge.COVERAGE.load()["uploaded"]
    assert knowledge.superseded("0.4.27") == uploaded["0.4.28"]
    assert knowledge.superseded(knowledge.COVERAGE.load()["jax"]) is None  # the newest: today's index
    stack = build.Stack(
        {"jax": "0.4.27", "flax": "0.8.3", "jaxlib": ""},
        ["3.11"],
        ranges={"jaxlib": "jaxlib<=0.4.27"},
        as_of=uploaded["0.4.28"],
    )
    args = build._dated(stack)
    assert args[:2] == ["--exclude-newer", uploaded["0.4.28"]]
    lifted = {args[i + 1].split("=")[0] for i, a in enumerate(args) if a == "--exclude-newer-package"}
    assert lifted == {"jax", "flax"}  # the pins, at any date; jaxlib's range is resolved as of the day
