"""jax's own pins on the CUDA wheels (`tables/cuda-extra.toml`, derived from each plugin release's METADATA: what
`jax[cuda12]==V` or `jax[cuda13]==V` installs): every pin of every row at its bounds (met: nothing; missed: one
warning for that wheel, whose fix re-planned meets it), silence where the table cannot speak, and one finding where a
rule names the same cause."""

from __future__ import annotations

import json
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from envaudit.cli import main
from envaudit.commands.plan import ARGUMENTS
from envaudit.model import fixes
from envaudit.rules import extras
from tests.conftest import BESIDE_MISCOMPILES
from tests.planfix import requested

ROWS = extras.CUDA_EXTRA.load()["plugin"]


def _cases() -> list[tuple[str, str, str]]:
    """Each pin that names a version, at the newest plugin release of the newest row that has it (the 0.7.2 eigh
    rule would move the oldest cuda13 one), and every row at least once: 52 cases over 13 rows instead of 137."""
    found, seen = [], set()
    for row in sorted(ROWS, key=lambda r: Version(r["versions"][-1]), reverse=True):
        pins = [pin for pin in row["pins"] if Requirement(pin).specifier]
        new = [pin for pin in pins if (row["name"], pin) not in seen] or pins[:1]
        seen |= {(row["name"], pin) for pin in new}
        found += [(row["name"], row["versions"][-1], pin) for pin in new]
    return found


CASES = _cases()


def stack(plugin: str, release: str) -> list[str]:
    pjrt = plugin.replace("-plugin", "-pjrt")
    return [f"jax=={release}", f"jaxlib=={release}", f"{plugin}=={release}", f"{pjrt}=={release}"]


def findings(capsys: pytest.CaptureFixture[str], release: str, *pins: str, plugin: str = "jax-cuda12-plugin") -> Any:
    main(["plan", *stack(plugin, release), *pins, *BESIDE_MISCOMPILES, "--format", "json"])
    return list(json.loads(capsys.readouterr().out)["findings"])


def outside(release: str, pin: str) -> list[str]:
    """Versions just outside the pin: below its lower bound, at its upper bound."""
    found = []
    for spec in Requirement(pin).specifier:
        if spec.operator == ">=":
            found.append(fixes._below(spec.version))
        elif spec.operator == "<":
            found.append(spec.version)
    return found


@pytest.mark.parametrize(("plugin", "release", "pin"), CASES, ids=[f"{p}-{r}-{pin}" for p, r, pin in CASES])
def test_each_pin_at_its_bounds(capsys: pytest.CaptureFixture[str], plugin: str, release: str, pin: str) -> None:
    req = Requirement(pin)
    check = f"{req.name}-outside-jax-pin"
    lowest = next(s.version for s in req.specifier if s.operator == ">=")
    assert check not in {f["id"] for f in findings(capsys, release, f"{req.name}=={lowest}", plugin=plugin)}
    for version in outside(release, pin):
        found = [f for f in findings(capsys, release, f"{req.name}=={version}", plugin=plugin) if f["id"] == check]
        assert len(found) == 1, (release, pin, version)
        if found[0]["caused_by"]:
            continue  # a rule on the same wheel is the root: its fix is the one shown
        asked = requested(found[0]["fix"])
        assert list(asked.files) == [ARGUMENTS] and not (asked.remove or asked.unset or asked.export), asked
        first = Requirement(asked.requirements[0])
        assert first.name == req.name and first.specifier == req.specifier, asked
        assert set(asked.requirements[1:]) == set(stack(plugin, release))
        applied = [f"{req.name}=={lowest}"]  # the fix re-planned: the lowest release its pin lets pip install
        assert check not in {f["id"] for f in findings(capsys, release, *applied, plugin=plugin)}, (release, version)


@pytest.mark.parametrize(
    "stack",
    [
        ["jax==0.6.0", "jaxlib==0.6.0"],  # no plugin: the pins are the plugin extra's
        ["jax==0.99.0", "jaxlib==0.99.0", "jax-cuda12-plugin==0.99.0"],  # after the table: unknown
        ["jax==0.4.21", "jaxlib==0.4.21", "jax-cuda12-plugin==0.4.21"],  # before the plugin was released
    ],
)
def test_where_the_table_cannot_speak_nothing_is_said(capsys: pytest.CaptureFixture[str], stack: list[str]) -> None:
    main(["plan", *stack, "nvidia-cublas-cu12==11.0.0", *BESIDE_MISCOMPILES, "--format", "json"])
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if f["id"].endswith("-outside-jax-pin")]


def test_a_wheel_not_installed_is_not_outside_the_pin(capsys: pytest.CaptureFixture[str]) -> None:
    """jax[cuda12-local] uses the system's CUDA: the extra's wheels are absent, not wrong."""
    assert not [f for f in findings(capsys, "0.6.0") if f["id"].endswith("-outside-jax-pin")]


def test_a_rule_on_the_same_wheel_is_the_one_finding(capsys: pytest.CaptureFixture[str]) -> None:
    """cuDNN 9.1 under the 0.6.0 plugin: the cuDNN rule fails, jax's pin folds under it."""
    found = findings(capsys, "0.6.0", "nvidia-cudnn-cu12==9.1.1.17")
    roots = [f["id"] for f in found if f["severity"] == "fail" and not f["caused_by"]]
    pinned = next(f for f in found if f["id"] == "nvidia-cudnn-cu12-outside-jax-pin")
    assert roots == ["cudnn-below-98-jax-060"] and pinned["caused_by"] == "cudnn-below-98-jax-060"


def test_the_readme_form_of_a_plan_is_checked_too(capsys: pytest.CaptureFixture[str]) -> None:
    """`plan 'jax[cuda12]==0.6.1' ...`: the extra installs the plugin, whose pins apply (review: this was silent)."""
    main(["plan", "jax[cuda12]==0.6.1", "nvidia-cublas-cu12==12.9.0.13", "--format", "json"])
    found = [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert "nvidia-cublas-cu12-outside-jax-pin" in found


def test_a_plugin_jax_does_not_use_has_no_pins_to_keep(capsys: pytest.CaptureFixture[str]) -> None:
    """A plugin of another release than jaxlib is skipped by jax (plugin-jaxlib-mismatch, the root): its pins would
    move cuDNN back to 8.9 under a jaxlib that needs 9.1 (review)."""
    main(
        [
            "plan",
            "jax==0.4.31",
            "jaxlib==0.4.31",
            "jax-cuda12-plugin==0.4.28",
            "nvidia-cudnn-cu12==9.1.0.70",
            "--format",
            "json",
        ]
    )
    found = json.loads(capsys.readouterr().out)["findings"]
    assert "plugin-jaxlib-mismatch" in {f["id"] for f in found}
    assert not [f for f in found if f["id"].endswith("-outside-jax-pin")]


def test_a_cudnn_rule_before_894_is_the_one_finding(capsys: pytest.CaptureFixture[str]) -> None:
    found = findings(capsys, "0.4.26", "nvidia-cudnn-cu12==8.6.0.163")
    # planned on aarch64 (BESIDE_MISCOMPILES), where jax-cuda12-plugin 0.4.26 has no wheel: that is its own finding
    found = [f for f in found if f["id"] != "no-wheel-for-platform"]
    assert [f["id"] for f in found if not f["caused_by"] and f["severity"] in ("fail", "warn")] == [
        "cudnn-below-894-cuda12-jaxlib-0417"
    ]
