"""jax and jaxlib as `import jax` couples them, from jax's own table: every release at its boundaries, both ways,
and each printed fix re-planned (a fix is a claim: applied to the plan, no failure may remain)."""

from __future__ import annotations

import json
import re

import pytest

from envaudit.cli import main
from envaudit.commands.plan import ARGUMENTS
from envaudit.rules import declared, releases
from envaudit.rules.jax_pins import MINIMUM_JAXLIB as TABLE
from envaudit.rules.jax_pins import NO_JAXLIB, PINS_JAXLIB_SINCE
from envaudit.rules.wheels import WHEELS
from tests.conftest import BESIDE_MISCOMPILES
from tests.planfix import requested

MINIMUM: dict[str, str] = TABLE.load()["minimum_jaxlib"]


def plan(capsys: pytest.CaptureFixture[str], *pins: str) -> list[dict[str, str]]:
    main(["plan", *pins, *BESIDE_MISCOMPILES, "--format", "json"])
    return [f for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] == "fail"]


def ids(findings: list[dict[str, str]]) -> set[str]:
    return {f["id"] for f in findings}


def fixed(capsys: pytest.CaptureFixture[str], pins: list[str], fix: str, jax: str) -> None:
    """The fix's plan fails no more than jax's own release does (0.4.32 was yanked: that is its own finding)."""
    after = ids(replanned(capsys, pins, fix))
    assert "jax-jaxlib-coupling" not in after and after <= ids(plan(capsys, f"jax=={jax}", f"jaxlib=={jax}")), fix


def below(version: str) -> str | None:
    """The release just below `version` that jax's comparison sees as older (0.4.27 -> 0.4.26), if any."""
    parts = [int(n) for n in version.split(".")]
    if parts[-1] == 0:
        return None
    return ".".join(map(str, [*parts[:-1], parts[-1] - 1]))


def earlier(version: str) -> str | None:
    """The table's release just below an x.y.0 one (0.6.0 -> 0.5.3), where `below` has none to offer."""
    older = [v for v in [*MINIMUM, *MINIMUM.values()] if releases.numbers(v) < releases.numbers(version)]
    return max(older, key=releases.numbers, default=None)


def replanned(capsys: pytest.CaptureFixture[str], pins: list[str], fix: str) -> list[dict[str, str]]:
    """The plan with the fix's pins put in place of the ones they move (each an exact release, nothing else)."""
    asked = requested(fix)
    moved = asked.pins
    assert list(asked.requirements) == [f"{n}=={v}" for n, v in moved.items()] and not asked.remove, fix
    assert not asked.unset and not asked.export and list(asked.files) == [ARGUMENTS], fix
    kept = [p for p in pins if p.split("==")[0] not in moved]
    return plan(capsys, *kept, *(f"{n}=={v}" for n, v in moved.items()))


def test_the_table_maps_release_versions_to_release_versions() -> None:
    assert len(MINIMUM) >= 60 and all(re.fullmatch(r"[0-9]+(\.[0-9]+)+", v) for v in [*MINIMUM, *MINIMUM.values()])


@pytest.mark.parametrize("jax", sorted(MINIMUM, key=lambda v: [int(n) for n in str(v).split(".")]))
def test_each_release_at_its_boundaries(capsys: pytest.CaptureFixture[str], jax: str) -> None:
    """Healthy right at the minimum and at jax's own version; failing one release below the minimum."""
    minimum = MINIMUM[jax]
    assert "jax-jaxlib-coupling" not in ids(plan(capsys, f"jax=={jax}", f"jaxlib=={minimum}"))
    assert "jax-jaxlib-coupling" not in ids(plan(capsys, f"jax=={jax}", f"jaxlib=={jax}"))
    if (jaxlib := below(minimum) or earlier(minimum)) is not None:
        pins = [f"jax=={jax}", f"jaxlib=={jaxlib}"]
        failed = [f for f in plan(capsys, *pins) if f["id"] == "jax-jaxlib-coupling"]
        assert len(failed) == 1 and f"requires version >= {minimum}" in failed[0]["detail"], pins
        fixed(capsys, pins, failed[0]["fix"], jax)


@pytest.mark.parametrize(
    ("jax", "jaxlib"), [("0.4.30", "0.4.31"), ("0.4.25", "0.4.26"), ("0.9.0", "0.9.0.1"), ("0.11.9", "0.12.0")]
)
def test_a_jaxlib_newer_than_jax_fails_as_jax_says(capsys: pytest.CaptureFixture[str], jax: str, jaxlib: str) -> None:
    """Measured with the wheels: jax 0.4.30 beside jaxlib 0.4.31 raises this at import. It holds past the table."""
    pins = [f"jax=={jax}", f"jaxlib=={jaxlib}"]
    failed = plan(capsys, *pins)
    assert [f["id"] for f in failed] == ["jax-jaxlib-coupling"]
    assert f"jaxlib version {jaxlib} is newer than and incompatible with jax version {jax}" in failed[0]["detail"]
    fixed(capsys, pins, failed[0]["fix"], jax)


def test_the_issues_case_and_a_release_the_table_does_not_know(capsys: pytest.CaptureFixture[str]) -> None:
    failed = plan(capsys, "jax==0.4.30", "jaxlib==0.4.20")
    assert (
        "jax 0.4.30: jaxlib is version 0.4.20, but this version of jax requires version >= 0.4.27."
        in (failed[0]["detail"])
    )
    assert not plan(capsys, "jax==0.11.9", "jaxlib==0.11.0")  # no minimum known: not guessed


@pytest.mark.parametrize("jax", ["0.4.30", "0.6.0", "0.10.1"])
def test_a_pin_padded_with_zeros_is_the_release_it_installs(capsys: pytest.CaptureFixture[str], jax: str) -> None:
    """pip installs jaxlib 0.4.30 for `jaxlib==0.4.30.0` (PEP 440), and that jaxlib reports "0.4.30": a padded pin
    is neither newer than jax, nor missing from the wheel index, nor another release than its plugin."""
    exact = ["--python", "3.11", f"jax=={jax}", f"jaxlib=={jax}", f"jax-cuda12-plugin=={jax}"]
    padded = ["--python", "3.11", f"jax=={jax}.0", f"jaxlib=={jax}.0", f"jax-cuda12-plugin=={jax}"]
    main(["plan", *exact, *BESIDE_MISCOMPILES, "--format", "json"])
    expected = {f["id"] for f in json.loads(capsys.readouterr().out)["findings"]}
    main(["plan", *padded, *BESIDE_MISCOMPILES, "--format", "json"])
    assert {f["id"] for f in json.loads(capsys.readouterr().out)["findings"]} == expected
    assert "jax-jaxlib-coupling" in ids(plan(capsys, "--python", "3.11", f"jax=={jax}", f"jaxlib=={jax}.1"))


@pytest.mark.parametrize("jax", [v for v in MINIMUM if releases.numbers(v) < releases.numbers(PINS_JAXLIB_SINCE)][-6:])
def test_a_plan_that_pins_an_old_jax_and_no_jaxlib_installs_a_jax_that_does_not_import(
    capsys: pytest.CaptureFixture[str], jax: str
) -> None:
    """projects round 3 (octo's requirements.txt, octo-models/octo#125): `jax==0.4.20` and no jaxlib planned OK. Before
    0.4.30 jax requires no jaxlib: alone it installs none (`import jax` raises ModuleNotFoundError); beside a library
    that requires any jaxlib (chex 0.1.85: `jaxlib>=0.1.37`), the installer takes the newest one for the Python,
    which jax refuses as newer. The fix pins jaxlib at jax's release, and that plan imports."""
    alone = [f for f in plan(capsys, f"jax=={jax}", "--python", "3.10") if f["id"] == "jax-jaxlib-coupling"]
    assert len(alone) == 1 and NO_JAXLIB in alone[0]["detail"] and f"jaxlib=={jax}" in alone[0]["fix"]
    beside = [
        f for f in plan(capsys, f"jax=={jax}", "chex==0.1.85", "--python", "3.10") if f["id"] == "jax-jaxlib-coupling"
    ]
    newest = max(WHEELS.load()["versions"]["3.10"], key=releases.numbers)
    assert len(beside) == 1 and f"takes jaxlib {newest}" in beside[0]["detail"] and "chex" in beside[0]["detail"]
    assert "jax-jaxlib-coupling" not in ids(plan(capsys, f"jax=={jax}", f"jaxlib=={jax}", "--python", "3.10"))


def test_a_jax_that_requires_jaxlib_itself_brings_it_and_an_environment_is_read_as_installed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert "jax-jaxlib-coupling" not in ids(plan(capsys, f"jax=={PINS_JAXLIB_SINCE}", "--python", "3.10"))
    from tests.conftest import facts_from

    environment = facts_from({"packages": {"jax": "0.4.20"}, "python": {"executable": "/env/bin/python"}})
    assert declared.unpinned_jaxlib(environment) == []  # its metadata and its import answer there, not a model
