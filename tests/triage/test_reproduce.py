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
