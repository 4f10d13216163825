"""What planned releases declare they need (declared-requires.toml, rules/declared.py): the table against the real
METADATA of the wheels installed here, pip's own verdicts measured by derive/confirm/declared.py replayed
through `envaudit plan`, markers on a plan with and without a Python, the refusal's fix replanned, and the
derivation's reading of Requires-Dist."""

from __future__ import annotations

import json
import sys
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from derive.sources import wheels
from derive.tables import declared as derivation
from envaudit.cli import main
from envaudit.model.facts import Facts, PythonFacts
from envaudit.model.scope import canonicalize_name, in_stack
from envaudit.rules import declared
from envaudit.rules.table import TABLES
from tests.planfix import requested

ROOT = Path(__file__).resolve().parents[2]


CONFIRMED = TABLES / "derived" / "declared-confirmed.json"
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    main(["plan", *argv, "--format", "json"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def refusals(report: dict[str, Any]) -> list[str]:
    """Each refusal's detail, up to what the check adds after it (its fix, said in words)."""
    return [f["detail"].split(" (the fix: ")[0] for f in report["findings"] if f["id"] == "planned-requirement-refused"]


def installed_listed() -> list[tuple[str, str, list[str]]]:
    """The distributions installed here that the derived table lists at their installed version, with the
    Requires-Dist their own METADATA declares."""
    found = []
    for dist in distributions():
        name = canonicalize_name(dist.metadata["Name"])
        if name in ("jax", "jaxlib") or not in_stack(name):
            continue
        if declared.declaration(name, dist.version) is not None:
            found.append((name, dist.version, list(dist.requires or [])))
    return sorted(found)


def test_the_table_says_what_each_installed_wheel_declares() -> None:
    """Read from the index, it agrees with the METADATA pip installed here (numpy, scipy, ml-dtypes, opt-einsum,
    flax...: whichever the table lists at the installed version)."""
    listed = installed_listed()
    assert len(listed) >= 3, listed  # jax's own requirements (numpy, scipy, ml-dtypes) are always installed here
    facts = Facts(packages={}, python=PythonFacts(version=PYTHON), origin="plan")
    listed_libraries = derivation.libraries()
    for name, version, requires in listed:
        own = {
            f"{canonicalize_name(r.name)}{r.specifier}"
            for r in map(Requirement, derivation.requirements(requires, listed_libraries))
            if r.marker is None or ("extra" not in str(r.marker) and r.marker.evaluate({"extra": ""}))
        }
        table = declared.applying(facts, name, version)
        assert table is not None and set(table[0]) == own, (name, version)


def test_pips_measured_verdicts_are_the_plans(capsys: pytest.CaptureFixture[str]) -> None:
    """Each pair pip resolved (both sides of a bound, recorded by confirm_declared.py) is refused by `envaudit plan`
    where pip refused it, and accepted where pip accepted it."""
    measured = json.loads(CONFIRMED.read_text())
    firsts = [r["pins"][0] for r in measured["results"]]
    assert len(set(firsts)) >= 6, "the sample is of at least six projects"
    assert all(firsts.count(f) == 2 for f in firsts), "each bound is tried on both sides"
    assert {r["pip_refuses"] for r in measured["results"]} == {True, False}
    for result in measured["results"]:
        report = plan(capsys, *result["pins"], "--python", measured["python"])
        assert bool(refusals(report)) == result["pip_refuses"], (result, refusals(report))


def test_a_refusal_names_the_requirement_and_its_fix_replanned_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    pins = ("tensorflow==2.16.1", "numpy==2.0.0", "jax==0.4.30", "jaxlib==0.4.30")
    report = plan(capsys, *pins)
    assert refusals(report) == ["tensorflow requires numpy<2.0.0,>=1.23.5, planned: 2.0.0"], refusals(report)
    assert report["verdict"] == "fail"
    asked = requested(report["plan"]["fix"])
    assert asked.requirements == ("numpy<2.0.0,>=1.23.5",), asked
    fixed = plan(capsys, *pins[:1], "numpy==1.26.4", *pins[2:])
    assert not refusals(fixed)


def test_a_marker_holds_on_the_plans_python_or_on_every_python_the_release_admits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """tensorflow 2.16.1 declares numpy>=1.23.5 up to Python 3.11 and numpy>=1.26.0 from 3.12: numpy 1.24.4 is
    refused on 3.12 only, so a plan that names no Python is refused only where every Python refuses it."""
    pins = ("tensorflow==2.16.1", "numpy==1.24.4")
    assert refusals(plan(capsys, *pins, "--python", "3.12")) == [
        "tensorflow requires numpy<2.0.0,>=1.26.0, planned: 1.24.4"
    ]
    assert not refusals(plan(capsys, *pins, "--python", "3.11"))
    assert not refusals(plan(capsys, *pins))


def test_only_a_plan_is_refused() -> None:
    """An environment's packages (and the state a fix leaves in one) are pip's to answer for: pip installs beside
    what is there and warns; only a plan of requirements, which no interpreter holds yet, is refused."""
    packages = {"tensorflow": "2.16.1", "numpy": "2.0.0"}
    assert declared.unmet(Facts(packages=packages, origin="plan"))
    live = PythonFacts(version="3.11.7", executable="/env/bin/python")
    assert not declared.unmet(Facts(packages=packages, python=live, origin="plan"))
    assert not declared.unmet(Facts(packages=packages, origin="live"))


def test_a_release_not_listed_is_unknown_not_refused() -> None:
    assert declared.declaration("tensorflow", "2.16.0rc0") is None
    assert declared.declaration("tensorflow", "99.0.0") is None
    assert not declared.unmet(Facts(packages={"tensorflow": "99.0.0", "numpy": "2.0.0"}, origin="plan"))


def test_the_derivation_keeps_what_a_plan_can_break_extras_with_their_marker() -> None:
    """Of each release's Requires-Dist (real lines, from the METADATA on PyPI): every requirement on an audited
    package or a library of the list, an extra's with its marker (tensorflow-probability 0.25.0's jax substrate);
    one on another package only where it bounds it above, pins it or excludes a release (jaxtyping 0.2.26's
    `typeguard==2.13.3`, transformers' `tokenizers<0.24.0,>=0.23.1`), not under an extra (jaxtyping 0.3.4's docs)."""
    found = derivation.requirements(
        [
            "numpy<2.0.0,>=1.23.5; python_version <= '3.11'",  # tensorflow 2.16.1
            "jax>=0.4.27",
            "keras>=3.0.0",  # tensorflow 2.16.1: keras is no library of `listed` here, and bounds nothing above
            "tensorflow>=2.15; extra == 'tf'",  # tensorflow-probability 0.25.0
            'jax; extra == "jax"',  # tensorflow-probability 0.25.0
            "typeguard==2.13.3",  # jaxtyping 0.2.26
            "tokenizers<0.24.0,>=0.23.1",  # transformers 5.x
            "mkdocs==1.6.1; extra == 'docs'",  # jaxtyping 0.3.4: another package, under an extra
            "jaxtyping>=0.2.23",  # optimistix 0.0.10: a library of the list
            "wadler-lindig>=0.1.3",  # jaxtyping 0.3.11: another package, a lower bound only
            "not a requirement (",
        ],
        frozenset({"jaxtyping"}),
    )
    assert found == [
        'jax; extra == "jax"',
        "jax>=0.4.27",
        "jaxtyping>=0.2.23",
        'numpy<2.0.0,>=1.23.5; python_version <= "3.11"',
        'tensorflow>=2.15; extra == "tf"',
        "tokenizers<0.24.0,>=0.23.1",
        "typeguard==2.13.3",
    ]


def test_the_derivation_groups_only_consecutive_releases_that_declare_the_same() -> None:
    rows = [
        {"version": "1.0", "python": ">=3.9", "requires": ["jax>=0.4"]},
        {"version": "1.1", "python": ">=3.9", "requires": ["jax>=0.4"]},
        {"version": "1.2", "python": ">=3.10", "requires": ["jax>=0.4"]},
        {"version": "1.3", "python": ">=3.9", "requires": ["jax>=0.4"]},
    ]
    assert [r["versions"] for r in wheels.runs(rows, derivation.SAME)] == [["1.0", "1.1"], ["1.2"], ["1.3"]]


def test_jax_metal_releases_pin_the_jax_they_were_built_for(capsys: pytest.CaptureFixture[str]) -> None:
    """jax-metal's compatibility is in its wheels' METADATA (0.0.5 pins jax and jaxlib 0.4.20; 0.0.7 asks >=0.4.26):
    a plan on a Mac that pairs 0.0.5 with jax 0.4.26 is refused by pip, one that pairs 0.0.7 is not."""
    mac = ("--os", "Darwin", "--machine", "arm64")
    old = refusals(plan(capsys, "jax-metal==0.0.5", "jax==0.4.26", "jaxlib==0.4.26", *mac))
    assert old and all("jax-metal requires jax" in said for said in old), old
    assert not refusals(plan(capsys, "jax-metal==0.0.7", "jax==0.4.26", "jaxlib==0.4.26", *mac))


def test_a_requirement_under_an_extra_the_plan_asks_for_applies(capsys: pytest.CaptureFixture[str]) -> None:
    """tensorflow-probability 0.25.0 declares `tensorflow>=2.16; extra == "tf"` and `jax; extra == "jax"`: beside
    tensorflow 2.15.0 the resolver refuses `tensorflow-probability[tf]==0.25.0` and accepts the package without the
    extra (uv pip compile, Python 3.11, 2026-12-07: "Because tensorflow-probability[tf]>=0.25.0 depends on
    tensorflow>=2.16 ... your requirements are unsatisfiable"); the plan says the same, and builds what it asks."""
    from envaudit.judge import twin

    with_extra = plan(capsys, "tensorflow-probability[tf]==0.25.0", "tensorflow==2.15.0", "--python", "3.11")
    assert [r for r in refusals(with_extra) if r.startswith("tensorflow-probability requires tensorflow>=2.16")]
    assert with_extra["facts"]["extras"] == {"tensorflow-probability": ["tf"]}
    without = plan(capsys, "tensorflow-probability==0.25.0", "tensorflow==2.15.0", "--python", "3.11")
    assert not refusals(without)
    facts = Facts(packages={"tensorflow-probability": "0.25.0"}, extras={"tensorflow-probability": ["jax"]})
    each = declared.applying(facts, "tensorflow-probability", "0.25.0") or []
    assert each and all({"jax", "jaxlib"} <= {r.split(";")[0] for r in one} for one in each)
    assert not any("jax" in one for one in declared.applying(Facts(), "tensorflow-probability", "0.25.0") or [])
    built = twin.stack(facts)
    assert "tensorflow-probability[jax]==0.25.0" in build_requirements(built)


def build_requirements(stack: Any) -> tuple[str, ...]:
    from envaudit.collect import build

    return build.twin(stack.packages, stack.ranges, stack.extras).requirements
