"""`envaudit suggest` on the replayed facts of real machines (an H200 node, a TPU v5e host, a CPU-only machine) and on
described ones. What it answers is held to the tables and to the planner, never to its own strings: the suggested
release is one `envaudit plan` finds no failure in on that machine, it has the wheels the tables list for the
machine's Python and system, and every newer release of the extra (and of a newer CUDA's) is one that either has no
wheel there or that the planner fails."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from envaudit.cli import main
from envaudit.commands import suggest as verb
from envaudit.commands.suggest import render
from envaudit.files import reportfile
from envaudit.model.facts import Facts
from envaudit.rules import cuda_archs, extras, platform_wheels, tpu_pins
from envaudit.rules.releases import listed
from envaudit.rules.wheels import WHEELS, python_of
from tests.conftest import FIXTURES

H200 = FIXTURES / "replay" / "h200-default-settings.json"
TPU = FIXTURES / "tpu" / "tpu-v5e-jax0102-audit.json"
CPU = FIXTURES / "real-pass-2" / "audit-before" / "diffrax050-jax0101.json"  # a real CPU-only machine, a uv venv


def suggested(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["suggest", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert err == ""
    answer: dict[str, Any] = json.loads(out)
    return code, answer


def planned_fails(capsys: pytest.CaptureFixture[str], requirements: list[str], machine: list[str]) -> list[str]:
    """What `envaudit plan` (the tables alone) fails in requirements on a machine: the planner's own answer."""
    main(["plan", *requirements, *machine, "--no-build", "--format", "json"])
    out, _ = capsys.readouterr()
    return [f["id"] for f in json.loads(out)["findings"] if f["severity"] == "fail"]


def machine_of(facts: Facts) -> list[str]:
    """The plan arguments that state a machine's Python, system, driver and GPUs."""
    argv = ["--python", str(python_of(facts)), "--os", str(facts.platform["system"])]
    argv += ["--machine", str(facts.platform["machine"])]
    if driver := facts.nvidia.get("driver_version"):
        argv += ["--driver", driver]
    ccs = {g.get("compute_capability") for g in facts.nvidia.get("gpus") or []}
    if len(ccs) == 1 and (cc := ccs.pop()):
        argv += ["--compute-capability", cc]
    return argv


def has_wheels(facts: Facts, extra: str, release: str) -> bool:
    """Whether the tables list a jaxlib wheel for the machine's Python, and wheels of jaxlib and the extra's plugin
    for its system (a plugin release past the newest the table read has none)."""
    if not listed(release, WHEELS.load()["versions"][str(python_of(facts))]):
        return False
    newest = platform_wheels.PLATFORM_WHEELS.load()["newest"]
    where = platform_wheels.family(facts)
    for package, version in {"jaxlib": release, **extras.implied(release, {extra} if extra else set())}.items():
        found = platform_wheels.platforms_of(package, version)
        if found is None and package in newest and Version(version) > Version(newest[package]):
            return False
        if found is not None and where not in found:
            return False
    return True


def releases_of(extra: str) -> list[str]:
    if extra == "tpu":
        return tpu_pins.releases()
    return extras.releases(extra) if extra else [v for vs in WHEELS.load()["versions"].values() for v in vs]


def newest_that_works(capsys: pytest.CaptureFixture[str], facts: Facts, extras_: list[str]) -> tuple[str, str]:
    """(extra, release) the tables and the planner allow, newest release first, the first extra at a tie."""
    machine = machine_of(facts)
    best: tuple[Version, int, str, str] | None = None
    for rank, extra in enumerate(extras_):
        for release in sorted(set(releases_of(extra)), key=Version, reverse=True):
            if Version(release).is_prerelease or listed(release, WHEELS.load().get("yanked", [])):
                continue
            if best is not None and Version(release) < best[0]:
                break
            if has_wheels(facts, extra, release):
                # jax alone installs the jaxlib of its release (jax pins jaxlib<=V, and pip takes the newest)
                requirements = [f"jax[{extra}]=={release}"] if extra else [f"jax=={release}", f"jaxlib=={release}"]
                if not planned_fails(capsys, requirements, machine):
                    if best is None or (Version(release), -rank) > best[:2]:
                        best = (Version(release), -rank, extra, release)
                    break
    assert best is not None
    return best[2], best[3]


def test_the_h200_node_gets_the_newest_cuda_release_its_driver_python_and_gpus_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    facts = reportfile.read_report(H200).facts
    code, answer = suggested(capsys, "--facts", str(H200))
    assert code == 0 and answer["accelerator"] == "cuda" and answer["installs"]
    cuda = sorted((e for e in extras.names() if re.fullmatch(r"cuda\d+", e)), key=lambda e: -int(e[4:]))
    assert (answer["extra"], answer["release"]) == newest_that_works(capsys, facts, cuda)
    # the build it installs carries code every GPU there runs (cuda-archs.toml)
    plugin = f"jax-{answer['extra']}-plugin"
    row = cuda_archs._row(plugin, answer["release"])
    assert row is not None and cuda_archs.runs(row, 90)
    assert f'"jax[{answer["extra"]}]' in answer["command"] and answer["command"].startswith("pip install -U ")


def test_the_tpu_host_gets_the_tpu_extra_at_a_release_with_a_libtpu_pin(capsys: pytest.CaptureFixture[str]) -> None:
    facts = reportfile.read_report(TPU).facts
    code, answer = suggested(capsys, "--facts", str(TPU))
    assert code == 0 and answer["accelerator"] == "tpu" and answer["extra"] == "tpu"
    assert (answer["extra"], answer["release"]) == newest_that_works(capsys, facts, ["tpu"])
    assert tpu_pins.pins(answer["release"])  # the extra pins the libtpu released with it


def test_the_cpu_machine_gets_jax_alone_by_its_environment_s_installer(capsys: pytest.CaptureFixture[str]) -> None:
    facts = reportfile.read_report(CPU).facts
    code, answer = suggested(capsys, "--facts", str(CPU))
    assert code == 0 and answer["accelerator"] == "cpu" and answer["extra"] == ""
    assert (answer["extra"], answer["release"]) == newest_that_works(capsys, facts, [""])
    assert facts.python.get("environment") == "uv" and answer["command"].startswith("uv pip install -U jax")
    _, by_pip = suggested(capsys, "--facts", str(CPU), "--installer", "pip")
    assert by_pip["command"] == answer["command"].removeprefix("uv ")


def test_a_release_not_the_newest_is_pinned_and_the_newest_is_not(capsys: pytest.CaptureFixture[str]) -> None:
    """The guide's unpinned command resolves to the newest release: it is printed so only where that release is the
    one that works here; otherwise the command pins the release it suggests."""
    for argv in (["--facts", str(H200)], ["--tpu", "v5e", "--python", "3.12"], ["--tpu", "v5e", "--python", "3.11"]):
        _, answer = suggested(capsys, *argv)
        newest = max(releases_of(answer["extra"]), key=Version)
        pinned = answer["command"].endswith(f'=={answer["release"]}"')
        assert pinned == (Version(answer["release"]) < Version(newest)), (argv, answer["command"])


def test_a_driver_too_old_for_every_cuda_wheel_installs_nothing_and_names_the_driver_that_would(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, answer = suggested(capsys, "--driver", "470.82.01", "--compute-capability", "8.0", "--python", "3.12")
    assert code == 1 and not answer["installs"] and answer["command"] == "" and answer["release"] == ""
    upgrades = [re.search(r"driver to (\S+) or newer", way["said"]) for way in answer["otherwise"]]
    drivers = [found[1] for found in upgrades if found]
    assert drivers, answer["otherwise"]
    for driver in drivers:  # each driver it names is one with which a CUDA extra installs
        code, after = suggested(capsys, "--driver", driver, "--compute-capability", "8.0", "--python", "3.12")
        assert code == 0 and after["installs"] and after["extra"].startswith("cuda"), (driver, after)
    cpu = [way for way in answer["otherwise"] if way["command"]]  # and the CPU build, as suggested for --cpu
    _, alone = suggested(capsys, "--cpu", "--python", "3.12")
    assert [(w["command"], w["release"]) for w in cpu] == [(alone["command"], alone["release"])]


def test_a_cuda_13_driver_gets_cuda_13_and_an_older_one_cuda_12(capsys: pytest.CaptureFixture[str]) -> None:
    """Between CUDA majors the guide recommends the newest; a driver below its minimum (the rules') gets the other."""
    _, new = suggested(capsys, "--driver", "580.65.06", "--compute-capability", "9.0", "--python", "3.12")
    _, old = suggested(capsys, "--driver", "570.86.15", "--compute-capability", "9.0", "--python", "3.12")
    assert new["extra"] == "cuda13" and old["extra"] == "cuda12"
    assert "cuda13-driver-below-580" in " ".join(old["reasons"])


def test_the_text_leads_with_the_command_the_json_carries(capsys: pytest.CaptureFixture[str]) -> None:
    _, answer = suggested(capsys, "--facts", str(TPU))
    assert main(["suggest", "--facts", str(TPU)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == answer["command"]
    assert all(line in text for line in answer["reasons"])


def test_the_parser_names_the_renderers_formats() -> None:
    assert set(verb.FORMATS) == set(render.RENDERERS)


@pytest.mark.parametrize(
    "argv",
    [
        ["--driver", "five"],
        ["--driver", "5\u0665\u0665"],  # digits Python's int() reads, no driver has
        ["--compute-capability", "9"],
        ["--tpu", "v99"],
        ["--rocm", "seven"],
        ["--python", "3"],
        ["--installer", "conda"],
        ["--cpu", "--tpu", "v5e"],
        ["--driver", "535.104.05", "--rocm", "7"],
        ["--facts", "missing.json"],
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if argv[0] == "--facts":
        argv = ["--facts", str(tmp_path / argv[1])]
    assert main(["suggest", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("envaudit: error: ")


def test_a_file_that_is_not_a_report_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text('{"schema": "nothing"}', encoding="utf-8")
    assert main(["suggest", "--facts", str(bad)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
