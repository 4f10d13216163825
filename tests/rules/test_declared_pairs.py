"""Pairs between the libraries around jax, from what their releases declare (declared-requires.toml, derived from
each release's wheel METADATA on PyPI; rules/declared.py): exclusions, upper bounds and exact pins between libraries
of the list and on jax are kept per release, and a plan of pins is followed to the release a resolver would pick of
what it does not pin, so that a requirement no release of it can meet beside the pins is a refusal. Every case is a
real release's Requires-Dist, as the committed table holds it; offline."""

from __future__ import annotations

import json
from typing import Any

import pytest

from envaudit.cli import main
from envaudit.model.facts import Facts, PythonFacts
from envaudit.model.versions import release
from envaudit.rules import declared
from tests.planfix import requested


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    main(["plan", "--no-build", *argv, "--format", "json"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def refusals(report: dict[str, Any]) -> list[str]:
    return [f["detail"].split(" (the fix: ")[0] for f in report["findings"] if f["id"] == "planned-requirement-refused"]


def runs(package: str) -> dict[str, tuple[str, ...]]:
    """Each listed release of a package and what the table says it requires."""
    return {
        v: tuple(r["requires"])
        for r in declared.DECLARED.load()["release"]
        if r["package"] == package
        for v in r["versions"]
    }


def test_the_exclusions_and_bounds_between_libraries_are_kept_per_release() -> None:
    """equinox 0.11.5 excludes the jax it broke on (`jax!=0.4.27`); optimistix 0.1.0 excludes jax 0.7.0 and 0.7.1
    and requires jaxtyping>=0.2.24; jaxtyping 0.2.23 bounds typeguard below 3 and 0.2.26 pins it to 2.13.3 (their
    Requires-Dist on PyPI); tensorflow-probability's jax substrate is its `jax` extra, kept with its marker."""
    assert "jax!=0.4.27,>=0.4.13" in runs("equinox")["0.11.5"]
    optimistix = runs("optimistix")["0.1.0"]
    assert "jax!=0.7.0,!=0.7.1,>=0.4.38" in optimistix and "jaxtyping>=0.2.24" in optimistix
    jaxtyping = runs("jaxtyping")
    assert "typeguard<3,>=2.13.3" in jaxtyping["0.2.23"] and "typeguard==2.13.3" in jaxtyping["0.2.26"]
    assert not any(r.startswith("typeguard") for r in jaxtyping["0.3.11"])
    assert 'jax; extra == "jax"' in runs("tensorflow-probability")["0.25.0"]


@pytest.mark.parametrize(
    ("pins", "refused"),
    [
        (
            ("equinox==0.11.5", "jax==0.4.27", "jaxlib==0.4.27"),
            "equinox requires jax!=0.4.27,>=0.4.13, planned: 0.4.27",
        ),
        (
            ("optimistix==0.0.10", "jaxtyping==0.2.20", "jax==0.4.28", "jaxlib==0.4.28"),
            "optimistix requires jaxtyping>=0.2.23, planned: 0.2.20",
        ),
        (
            ("optimistix==0.1.0", "jax==0.7.0", "jaxlib==0.7.0"),
            "optimistix requires jax!=0.7.0,!=0.7.1,>=0.4.38, planned: 0.7.0",
        ),
        (("jaxtyping==0.2.23", "typeguard==3.0.2"), "jaxtyping requires typeguard<3,>=2.13.3, planned: 3.0.2"),
        (("jaxtyping==0.2.26", "typeguard==4.1.5"), "jaxtyping requires typeguard==2.13.3, planned: 4.1.5"),
    ],
)
def test_a_pin_a_planned_library_excludes_is_refused(
    capsys: pytest.CaptureFixture[str], pins: tuple[str, ...], refused: str
) -> None:
    assert refused in refusals(plan(capsys, *pins))


def test_a_release_that_accepts_the_pin_is_not_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """The other side of each bound: jaxtyping 0.2.23 for optimistix 0.0.10, typeguard 2.13.3 for jaxtyping 0.2.26,
    and jaxtyping 0.3.11, which declares no typeguard, beside typeguard 4."""
    for pins in (
        ("optimistix==0.0.10", "jaxtyping==0.2.23", "jax==0.4.28", "jaxlib==0.4.28"),
        ("jaxtyping==0.2.26", "typeguard==2.13.3"),
        ("jaxtyping==0.3.11", "typeguard==4.1.5"),
    ):
        assert not refusals(plan(capsys, *pins)), pins


def test_what_the_plan_does_not_pin_is_followed_to_a_release_that_fits_or_the_plan_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """lineax 0.0.6 requires equinox>=0.11.5, and every equinox from 0.11.5 excludes jax 0.4.27 (`jax!=0.4.27`) or
    requires a newer one: pip finds no equinox to install beside jax 0.4.27. ott-jax 0.5.0 reaches it one level
    further down (lineax>=0.0.7: lineax 0.0.7 requires equinox>=0.11.5, later ones a newer jax). The fix moves jax."""
    report = plan(capsys, "lineax==0.0.6", "jax==0.4.27", "jaxlib==0.4.27")
    (said,) = [r for r in refusals(report) if r.startswith("lineax 0.0.6 requires equinox>=0.11.5")]
    assert "jax!=0.4.27,>=0.4.13" in said and "(jax 0.4.27)" in said
    assert all(not r.startswith("jax==0.4.27") for r in requested(report["plan"]["fix"]).requirements)
    (deeper,) = [r for r in refusals(plan(capsys, "ott-jax==0.5.0", "jax==0.4.27", "jaxlib==0.4.27")) if "lineax" in r]
    assert "lineax 0.0.7 requires equinox>=0.11.5 (no release of it installs: equinox" in deeper


def test_the_release_a_resolver_picks_is_the_newest_that_fits_the_pins() -> None:
    """Beside jax 0.4.26, lineax 0.0.6's equinox is the newest release that admits it (equinox 0.12 and later
    require jax>=0.4.38), and nothing is refused. optimistix 0.0.10 beside typeguard 4: jaxtyping 0.2.23-0.2.34
    would refuse it, the resolver takes a newer jaxtyping that declares no typeguard."""
    facts = Facts(
        packages={"lineax": "0.0.6", "jax": "0.4.26", "jaxlib": "0.4.26"},
        python=PythonFacts(version="3.11"),
        origin="plan",
    )
    chosen, stuck = declared.resolved(facts)
    assert not stuck
    equinox = chosen["equinox"]
    assert declared.admits(facts, "equinox", equinox, facts.packages)
    newer = [v for v in declared.releases("equinox") if (release(v) or ()) > (release(equinox) or ())]
    assert newer and not any(declared.admits(facts, "equinox", v, facts.packages) for v in newer)
    pins = {"optimistix": "0.0.10", "typeguard": "4.1.5", "jax": "0.4.28", "jaxlib": "0.4.28"}
    chosen, stuck = declared.resolved(Facts(packages=pins, python=PythonFacts(version="3.11"), origin="plan"))
    assert not stuck and not any(r.startswith("typeguard") for r in runs("jaxtyping")[chosen["jaxtyping"]])


def test_what_the_tables_cannot_see_whole_is_unknown_not_refused() -> None:
    """A requirement whose releases may be older than the first the tables read (no lower bound: flowjax 12.1.1's
    bare `optax`) is never a refusal, nor is an environment's (pip installs beside what is there)."""
    facts = Facts(
        packages={"flowjax": "12.1.1", "jax": "0.4.1", "jaxlib": "0.4.1"},
        python=PythonFacts(version="3.11"),
        origin="plan",
    )
    assert not [u for u in declared.resolved(facts)[1] if u.target == "optax"]
    live = PythonFacts(version="3.11.7", executable="/env/bin/python")
    packages = {"lineax": "0.0.6", "jax": "0.4.27", "jaxlib": "0.4.27"}
    assert declared.resolved(Facts(packages=packages, python=PythonFacts(version="3.11"), origin="plan"))[1]
    assert not declared.resolved(Facts(packages=packages, python=live, origin="plan"))[1]
