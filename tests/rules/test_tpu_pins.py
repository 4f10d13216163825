"""libtpu against what jax's tpu extra pins (tpu-extra.toml, rules/tpu_pins.py): the table against the METADATA of
the jax installed here, the derivation's reading of Requires-Dist, the check and its fix, and a TPU host's jax
fix through the extra."""

from __future__ import annotations

import json
from importlib.metadata import distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from derive.tables import tpu_extra as derivation
from envaudit import rules
from envaudit.rules import fixing, tpu_pins
from envaudit.rules.table import TABLES
from tests.conftest import facts_from
from tests.planfix import requested

ROOT = Path(__file__).resolve().parents[2]


OUTSIDE = "libtpu-outside-jax-pin"


def test_the_table_says_what_the_installed_jax_declares() -> None:
    """Read from the index, the row of the jax installed here is what its own METADATA declares for the extra."""
    jax = distribution("jax")
    assert tpu_pins.pins(jax.version) == tuple(derivation.pins(list(jax.requires or [])))
    assert tpu_pins.pins(jax.version), jax.version  # the extra pins a libtpu in every jax the tests install


def test_the_derivation_reads_the_tpu_extra_only() -> None:
    declared = [
        'libtpu==0.0.42.*; extra == "tpu"',
        'requests; extra == "tpu"',
        'jaxlib<=0.10.2,>=0.10.2; extra == "tpu"',
        "libtpu-nightly ==0.1.dev20230918 ; extra == 'tpu'",  # the spacing of jax 0.4.16 to 0.4.31's METADATA
        'libtpu==0.0.1; extra == "cuda"',
        "libtpu==0.0.1",
        "not a requirement",
    ]
    assert derivation.pins(declared) == ["libtpu-nightly==0.1.dev20230918", "libtpu==0.0.42.*"]


def test_a_release_the_table_does_not_cover_is_unknown() -> None:
    table = tpu_pins.TPU_EXTRA.load()
    assert tpu_pins.pins(table["covers_from"]) and tpu_pins.pins(table["covers_to"])
    assert tpu_pins.pins("0.2.15") is None and tpu_pins.pins("99.0") is None and tpu_pins.pins("x") is None


def test_a_release_before_jax_had_wheels_is_read_from_its_setup_py() -> None:
    """jax published only sdists before 0.4.16, whose PKG-INFO lists no requirement: the tpu extra is read from
    setup.py. The text is jax-v0.2.16's (https://github.com/jax-ml/jax/blob/jax-v0.2.16/setup.py), the extra as
    written there; the table's row for 0.2.16 is what the derivation read from that release's sdist."""
    source = b"""
_current_jaxlib_version = '0.1.68'
_libtpu_version = '0.1.dev20210615'
setup(
    name='jax',
    extras_require={
        'minimum-jaxlib': [f'jaxlib=={_minimum_jaxlib_version}'],
        'tpu': [f'jaxlib=={_current_jaxlib_version}',
                f'libtpu-nightly=={_libtpu_version}'],
        'cpu': [f'jaxlib>={_current_jaxlib_version}'],
    },
)
"""
    assert derivation.setup_extra(source, "tpu") == ["jaxlib==0.1.68", "libtpu-nightly==0.1.dev20210615"]
    assert tpu_pins.pins("0.2.16") == ("libtpu-nightly==0.1.dev20210615",)
    assert tpu_pins.pins("0.4.14") is not None  # between the sdists and the first wheel: read, not unknown


def tpu_host(jax: str, libtpu: str, name: str = "libtpu") -> dict[str, object]:
    return {"packages": {"jax": jax, "jaxlib": jax, name: libtpu}, "python": {"version": "3.11.7"}}


@pytest.mark.parametrize(
    ("jax", "libtpu", "pinned"),
    [("0.10.1", "0.0.42.1", "libtpu==0.0.41.*"), ("0.4.36", "0.0.4", "libtpu==0.0.5")],
)
def test_a_libtpu_outside_the_pin_warns_and_moves_to_it_with_jax_held(jax: str, libtpu: str, pinned: str) -> None:
    facts = facts_from(tpu_host(jax, libtpu))
    (found,) = [f for f in rules.evaluate(facts).findings if f.id == OUTSIDE]
    assert found.severity == "warn" and f"libtpu {libtpu} is outside {pinned}" in found.detail
    asked = requested(found.fix)
    assert sorted(asked.requirements) == sorted([pinned, f"jax=={jax}", f"jaxlib=={jax}"])


@pytest.mark.parametrize(
    "host",
    [
        tpu_host("0.10.2", "0.0.42.1"),  # the real TPU host's pair
        tpu_host("0.10.1", "0.0.41"),
        tpu_host("0.4.20", "0.1.dev20231102", "libtpu-nightly"),
        tpu_host("0.4.14", "0.0.42.1"),  # not covered: unknown, never a finding
        tpu_host("0.11.0.dev20260101", "0.0.1"),  # a nightly jax pins a nightly libtpu
        {"packages": {"jax": "0.10.1", "jaxlib": "0.10.1"}},  # no TPU runtime
    ],
)
def test_the_pinned_libtpu_or_none_is_no_finding(host: dict[str, object]) -> None:
    assert OUTSIDE not in {f.id for f in rules.evaluate(facts_from(host)).findings}


def test_a_tpu_host_moves_jax_through_its_tpu_extra() -> None:
    """So that pip moves libtpu with jax (what jax_release serves: a platform's or an environment's jax fix)."""
    assert fixing.jax_release(facts_from(tpu_host("0.10.2", "0.0.42.1")), "0.10.1") == [
        "jax[tpu]==0.10.1",
        "jaxlib==0.10.1",
    ]
    assert fixing.jax_release(facts_from({"packages": {"jax": "0.10.2"}}), "0.10.1") == [
        "jax==0.10.1",
        "jaxlib==0.10.1",
    ]


def test_pip_chose_the_pinned_libtpu_wherever_it_could_install_the_extra() -> None:
    """derive/confirm/tpu_extra.py's measurement (pip's resolver on jax[tpu]==V), against today's table."""
    measured = json.loads((TABLES / "derived" / "tpu-extra-confirmed.json").read_text())
    assert measured["confirmed"] >= 20 and all(r["verdict"] != "contradicted" for r in measured["runs"])
    for run in measured["runs"]:
        (pin,) = [p for p in tpu_pins.pins(run["jax"]) or () if p.startswith("libtpu==")]
        assert pin == run["pin"]
        if run["verdict"] == "confirmed":
            assert Requirement(pin).specifier.contains(run["pip_chose"]), run
