"""`fix` tries each plan's least move first: a library's floor (`ott-jax>=0.4.5`) made that release
(`ott-jax==0.4.5`), since the installer takes the newest release a floor allows, whose own use of jax may differ
(blackjax 1.3, ott-jax past 0.4.5: the experts pinned the first fixed release). The plan itself follows where the
pin is not proven; jax's own packages keep what the plan says."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from envaudit.collect import build
from envaudit.commands.plan import building
from envaudit.judge import fixplan
from envaudit.model.build import BuildStatus, Measurement
from envaudit.model.facts import ImportOutcome
from envaudit.model.fixes import Fix, Plan, Step
from envaudit.model.report import Finding, Report, Severity, Subject
from envaudit.rules import jax_pins
from tests.conftest import facts_from


def _plan(*install: str) -> Plan:
    fix = Fix(install=install)
    return Plan(steps=(Step("removed-jax-api-in-ott-jax", fix),), fix=fix)


def test_a_library_floor_is_made_that_release_and_jax_s_packages_and_other_ranges_are_kept() -> None:
    plan = _plan("ott-jax>=0.4.5", "jax==0.4.29", "jaxlib>=0.4.29", "scipy<1.13", "numpy>=1.2,<2", "flax[all]>=0.8")
    least = fixplan.least(plan)
    assert least is not None
    assert least.fix.install == (
        "ott-jax==0.4.5",
        "jax==0.4.29",
        "jaxlib>=0.4.29",
        "scipy<1.13",
        "numpy>=1.2,<2",
        "flax[all]>=0.8",
    )
    assert least.steps[0].fix.install == least.fix.install and least.steps[0].finding == plan.steps[0].finding
    assert fixplan.least(_plan("scipy<1.13", "jax==0.4.29")) is None
    assert fixplan.least(_plan("ott-jax>=0.4.5rc1")) is None  # a pre-release floor is no release to pin


@pytest.fixture
def proven_when(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """`prove` replaced: proven only for the commands the test lists."""
    proven: list[str] = []

    def prove(report: Report, **_: object) -> tuple[str, str, build.Built | None]:
        command = " ".join(report.plan.fix.install)
        forgot = FORGOT.get(command)
        status: BuildStatus = "not_installable" if command in REFUSED else "built"
        document: Measurement = {"status": status}
        if command in MOVED:
            document["installed"] = MOVED[command]
        twin = build.Built(document, {"imports": [forgot]} if forgot else {})
        return ("proven", "built", twin) if command in proven else ("unproven", f"twin: {command} fails", twin)

    monkeypatch.setattr(building, "prove", prove)
    yield proven


# what a twin's imports showed, by the plan's command: a module its library imports and declares nowhere
FORGOT: dict[str, ImportOutcome] = {}
REFUSED: set[str] = set()  # the commands whose twin the installer refuses
MOVED: dict[str, dict[str, str]] = {}  # what a command's twin has installed, where the test says


def _search(*plans: Plan) -> tuple[Report, str, str]:
    facts = facts_from({"packages": {"jax": "0.4.29", "ott-jax": "0.4.4"}})
    report, proof, why = building.searched(
        [replace(Report(facts), plan=p) for p in plans], no_build=False, timeout=60, quiet=True
    )
    return report, proof, why


def test_the_least_move_is_tried_first_and_printed_where_proven(proven_when: list[str]) -> None:
    proven_when.append("ott-jax==0.4.5 jax==0.4.29")
    report, proof, _ = _search(_plan("ott-jax>=0.4.5", "jax==0.4.29"))
    assert proof == "proven" and report.plan.fix.install == ("ott-jax==0.4.5", "jax==0.4.29")


def test_the_plan_itself_follows_its_least_move_and_none_proven_says_the_first_plan_s_own_why(
    proven_when: list[str],
) -> None:
    proven_when.append("ott-jax>=0.4.5 jax==0.4.29")
    report, proof, _ = _search(_plan("ott-jax>=0.4.5", "jax==0.4.29"))
    assert proof == "proven" and report.plan.fix.install == ("ott-jax>=0.4.5", "jax==0.4.29")
    proven_when.clear()
    report, proof, why = _search(_plan("ott-jax>=0.4.5", "jax==0.4.29"), _plan("jax==0.4.23"))
    assert proof == "unproven" and report.plan.fix.install == ("ott-jax>=0.4.5", "jax==0.4.29")
    assert why == "twin: ott-jax>=0.4.5 jax==0.4.29 fails"


def test_a_floor_with_no_release_the_tables_name_is_tried_at_each_release_the_index_has_after_it(
    proven_when: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # rlax>0.1.2 beside a held jax 0.4.13: the newest rlax calls jax.tree, which 0.4.13 lacks; 0.1.4 caps NumPy
    # below any CPython 3.11 jaxlib; 0.1.5 is the expert's fix
    asked: list[tuple[str, str]] = []

    def following(requirement: str, python: str, count: int, uv: object = None) -> list[str]:
        asked.append((requirement, python))
        return ["0.1.4", "0.1.5"][:count]

    monkeypatch.setattr(build, "following", following)
    monkeypatch.setattr(building, "_installer", lambda no_build: (("uv",), ""))
    proven_when.append("rlax==0.1.5 jax==0.4.13")
    facts = facts_from({"packages": {"jax": "0.4.13", "rlax": "0.1.2"}, "python": {"version": "3.11.7"}})
    plan = _plan("rlax>0.1.2", "jax==0.4.13")
    report, proof, why = building.searched([replace(Report(facts), plan=plan)], no_build=False, timeout=60, quiet=True)
    assert proof == "proven" and report.plan.fix.install == ("rlax==0.1.5", "jax==0.4.13"), why
    assert asked == [("rlax>0.1.2", "3.11")]
    assert "rlax==0.1.4 jax==0.4.13" in why  # what was tried before it, and why it was not proven


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The releases the index has after (or before) each requirement asked, as the test says; uv is here."""
    releases: dict[str, list[str]] = {}

    def following(req: str, python: str, count: int, uv: object = None, before: str = "") -> list[str]:
        return releases.get(f"{req} before {before}" if before else req, [])[:count]

    monkeypatch.setattr(build, "following", following)
    monkeypatch.setattr(building, "_installer", lambda no_build: (("uv",), ""))
    return releases


def _searched(packages: dict[str, str], plan: Plan) -> tuple[Report, str, str]:
    facts = facts_from({"packages": packages, "python": {"version": "3.11.7"}})
    return building.searched([replace(Report(facts), plan=plan)], no_build=False, timeout=60, quiet=True)


def test_a_library_too_new_for_a_pinned_jax_is_moved_down_when_no_newer_release_stands(
    proven_when: list[str], index: dict[str, list[str]]
) -> None:
    # qax 0.3.1 beside a cluster's jax 0.4.13 imports jax.extend.linear_util, which that jax does not have yet
    index.update({"qax<0.3.1": ["0.3.0", "0.2.0"], "jax>0.4.13": ["0.4.14", "0.4.16"]})
    proven_when.append("qax==0.2.0 jax==0.4.13")
    report, proof, why = _searched({"jax": "0.4.13", "qax": "0.3.1"}, _plan("qax>0.3.1", "jax==0.4.13"))
    assert proof == "proven" and report.plan.fix.install == ("qax==0.2.0", "jax==0.4.13"), why
    assert report.plan.steps[0].fix.install == ("qax==0.2.0", "jax==0.4.13")


def test_jax_is_moved_up_with_the_library_held_when_the_library_needs_a_newer_jax(
    proven_when: list[str], index: dict[str, list[str]]
) -> None:
    # evermore 0.2.10 calls jax.tree, first in jax 0.4.25, and declares no jax floor
    index.update({"jax>0.4.23": ["0.4.24", "0.4.25"], "evermore<0.2.10": ["0.2.9"]})
    proven_when.append("jax==0.4.25 jaxlib==0.4.25")
    report, proof, why = _searched(
        {"jax": "0.4.23", "jaxlib": "0.4.23", "evermore": "0.2.10"},
        _plan("evermore>0.2.10", "jax==0.4.23", "jaxlib==0.4.23"),
    )
    assert proof == "proven" and report.plan.fix.install == ("jax==0.4.25", "jaxlib==0.4.25"), why
    # nothing proven: the first plan is said, with its own reason
    proven_when.clear()
    report, proof, why = _searched({"jax": "0.4.23", "evermore": "0.2.10"}, _plan("evermore>0.2.10", "jax==0.4.23"))
    assert proof == "unproven" and report.plan.fix.install == ("evermore>0.2.10", "jax==0.4.23")


def test_what_a_twin_shows_its_library_imports_and_declares_nowhere_is_added_to_the_plan_and_tried_again(
    proven_when: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """jaxns 2.6.4 declares no requirement: with jax installed, its twin shows `import jaxns` needs
    tensorflow_probability, then matplotlib's pylab; each is added to the plan, which the next twin proves, before
    the tables' other plan (a jaxns major whose API the user's program no longer finds)."""

    def forgot(module: str, distribution: str) -> ImportOutcome:
        error = f"ModuleNotFoundError: No module named '{module}'"
        return {
            "distribution": "jaxns",
            "module": "jaxns",
            "status": "error",
            "error": error,
            "undeclared": distribution,
        }

    monkeypatch.setitem(FORGOT, "jax==0.5.3", forgot("tensorflow_probability", "tensorflow-probability"))
    monkeypatch.setitem(FORGOT, "jax==0.5.3 tensorflow-probability", forgot("pylab", "matplotlib"))
    proven_when += ["jax==0.5.3 tensorflow-probability matplotlib", "jax jaxns==3.0.0"]
    facts = facts_from({"packages": {"jaxns": "2.6.4"}})
    first = replace(Report(facts), plan=_plan("jax==0.5.3"))
    report, proof, why = building.searched(
        [first, replace(Report(facts), plan=_plan("jax", "jaxns==3.0.0"))], no_build=False, timeout=60, quiet=True
    )
    assert proof == "proven" and report.plan.fix.install == ("jax==0.5.3", "tensorflow-probability", "matplotlib")
    assert report.plan.steps[0].fix.install == report.plan.fix.install
    assert "No module named 'pylab'" not in why and "jax==0.5.3 tensorflow-probability: twin" in why
    # nothing added where the plan installs it already, or where the twin showed nothing undeclared
    monkeypatch.setitem(FORGOT, "jax==0.5.3 tensorflow-probability matplotlib", forgot("pylab", "matplotlib"))
    proven_when.remove("jax==0.5.3 tensorflow-probability matplotlib")
    report, proof, _ = building.searched(
        [first, replace(Report(facts), plan=_plan("jax", "jaxns==3.0.0"))], no_build=False, timeout=60, quiet=True
    )
    assert proof == "proven" and report.plan.fix.install == ("jax", "jaxns==3.0.0")


def test_jax_moved_up_no_longer_holds_the_installed_jax_its_plan_held() -> None:
    """quadax 0.2.7 needs jax 0.4.36 and declares jax>=0.3.2: the plan for equinox held the installed jax 0.4.35
    (`Fix.hold`, named in its command), and the way up printed `jax==0.4.36 jaxlib==0.4.36 jax==0.4.35
    jaxlib==0.4.35`, which the installer refuses."""
    fix = Fix(install=("equinox>0.11.10",), hold=("jax==0.4.35", "jaxlib==0.4.35", "numpy==2.2.4"))
    plan = Plan(steps=(Step("call-fails-equinox", fix),), fix=fix)
    moved = fixplan.jax_moved(plan, "equinox", "0.4.36")
    assert moved.fix.install == ("jax==0.4.36", "jaxlib==0.4.36") and moved.fix.hold == ("numpy==2.2.4",)
    words = moved.fix.command.split()
    assert "jax==0.4.35" not in words and "jaxlib==0.4.35" not in words and "jax==0.4.36" in words
    assert moved.steps[0].fix.hold == ("numpy==2.2.4",)


def test_where_nothing_is_proven_a_plan_the_installer_refuses_is_never_the_one_printed(
    proven_when: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """quadax 0.2.7 beside jax 0.4.35: the audit's own plan (`equinox>0.11.10` with jax held) is refused by the
    installer; where no plan is proven, the first one it took is printed, unproven, with why."""
    monkeypatch.setitem(globals(), "REFUSED", {"equinox>0.11.10 jax==0.4.35"})
    report, proof, why = _search(_plan("equinox>0.11.10", "jax==0.4.35"), _plan("equinox==0.11.9", "jax==0.4.35"))
    assert proof == "unproven" and report.plan.fix.install == ("equinox==0.11.9", "jax==0.4.35")
    assert why.startswith("twin: equinox==0.11.9 jax==0.4.35 fails") and "refused the first plan" in why
    # where the installer took the first, it is the one said
    monkeypatch.setitem(globals(), "REFUSED", set())
    report, proof, _ = _search(_plan("equinox>0.11.10", "jax==0.4.35"), _plan("equinox==0.11.9", "jax==0.4.35"))
    assert proof == "unproven" and report.plan.fix.install == ("equinox>0.11.10", "jax==0.4.35")


def test_plan_searches_as_fix_does_each_plan_s_least_move_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """One truth between `plan` (a requirements file before the install) and `fix`: the plan verb tries each
    plan's least move (a floor made the release the index has after it) before the plan, as fix's search does."""
    from envaudit.judge import measured

    tried: list[tuple[str, ...]] = []
    monkeypatch.setattr(build, "following", lambda req, python, count, uv=None: ["0.4.5"][:count])
    monkeypatch.setattr(build, "measure", lambda stack, **_: build.Built({"status": "built"}, {"status": "ok"}))

    def proof(plan: Plan, planned: object, fixed: object) -> tuple[str, str]:
        tried.append(plan.fix.install)
        return ("proven", "built") if plan.fix.install[0] == "ott-jax==0.4.5" else ("unproven", "no")

    monkeypatch.setattr(measured, "proof", proof)
    monkeypatch.setattr(fixplan, "settled", lambda *_, **__: "")
    facts = facts_from({"packages": {"jax": "0.4.29", "ott-jax": "0.4.4"}, "python": {"version": "3.11.7"}})
    option = replace(Report(facts), plan=_plan("ott-jax>=0.4.5", "jax==0.4.29"))
    planned = build.Built({"status": "built"}, {"status": "ok"})
    made, _, _ = building._tried([option], planned, time.monotonic() + 60, 60, (), ("uv",), lambda _: None, {})
    assert tried[0] == ("ott-jax==0.4.5", "jax==0.4.29") and made.plan.fix.install == tried[0]


def _about(library: str, severity: Severity = "warn") -> Finding:
    return Finding(Subject("check", f"removed-jax-api-in-{library}"), severity, "uses a jax API", about=(library,))


def test_a_library_the_report_fails_of_is_tried_at_its_release_of_the_installed_jax_s_time(
    proven_when: list[str], index: dict[str, list[str]]
) -> None:
    """brax 0.12.1 beside jaxirl's pinned jax 0.4.13 (fix-pass-8) calls jax.tree, first in jax 0.4.25; so do the
    releases after it and the nearest before it. The next jax (0.4.14) was uploaded on 2023-07-27: the newest brax
    before that day (0.9.1) was made with jax 0.4.13, and is tried where the tables' plan is not proven; the plan's
    own moves stay."""
    assert jax_pins.succeeded("0.4.13") == "2023-07-27"  # jax-requires.toml's `released` of 0.4.14
    index.update({"brax before 2023-07-27": ["0.9.1"], "jaxopt<0.8.4": ["0.8.3"]})
    proven_when.append("jaxopt<0.8.4 jax==0.4.13 brax==0.9.1")
    facts = facts_from({"packages": {"jax": "0.4.13", "brax": "0.12.1"}, "python": {"version": "3.10.13"}})
    first = replace(Report(facts, findings=(_about("brax"),)), plan=_plan("jaxopt<0.8.4", "jax==0.4.13"))
    report, proof, why = building.searched([first], no_build=False, timeout=60, quiet=True)
    assert proof == "proven" and report.plan.fix.install == ("jaxopt<0.8.4", "jax==0.4.13", "brax==0.9.1"), why
    # the plan's own pin of the library is made that release; several libraries the report fails of move together
    # first (a state judged again fails nothing: jaxirl's orbax-checkpoint 0.4.4 failed its call beside brax)
    facts = facts_from(
        {"packages": {"jax": "0.4.13", "brax": "0.12.1", "orbax-checkpoint": "0.4.4"}, "python": {"version": "3.10"}}
    )
    index["orbax-checkpoint before 2023-07-27"] = ["0.3.1"]
    both = (_about("orbax-checkpoint", "fail"), _about("brax"))
    pair = replace(Report(facts, findings=both), plan=_plan("brax==0.12.2", "jax==0.4.13"))
    proven_when.append("brax==0.9.1 jax==0.4.13 orbax-checkpoint==0.3.1")
    report, proof, why = building.searched([pair], no_build=False, timeout=60, quiet=True)
    assert proof == "proven" and report.plan.fix.install == ("brax==0.9.1", "jax==0.4.13", "orbax-checkpoint==0.3.1")
    assert "brax==0.9.1 jax==0.4.13:" not in why  # the two together came first
    # what the user keeps is not moved, nor is what the report only informs of; jax's own packages never
    kept, _, _ = building.searched([first], no_build=False, timeout=60, quiet=True, keep=("brax",))
    assert kept.plan.fix.install == ("jaxopt<0.8.4", "jax==0.4.13")
    informed = replace(first, findings=(_about("brax", "info"),))
    assert building.searched([informed], no_build=False, timeout=60, quiet=True)[1] == "unproven"
    assert fixplan.struggling((_about("jaxlib"), _about("brax"), _about("brax", "fail"))) == ["brax"]


def test_the_release_of_the_installed_jax_s_time_may_be_a_move_up() -> None:
    """diffusers 0.18.2 reads jax.random.KeyArray, gone in jax 0.4.24; 0.19 too, and the newest dropped Flax: the
    release of jax 0.4.31's time (before 0.4.32, uploaded 2024-09-11) is a move up. A plan that already moves the
    library has its requirement made that release; jax past the table gives no day."""
    plan = fixplan.pinned(_plan("diffusers>0.18.2", "jax==0.4.31"), {"diffusers": "0.30.2"}, add=True)
    assert plan.fix.install == ("diffusers==0.30.2", "jax==0.4.31") == plan.steps[0].fix.install
    assert jax_pins.succeeded("0.4.31") == "2024-09-11"
    newest = list(jax_pins.REQUIRES.load()["release"])[-1]
    assert jax_pins.succeeded(newest) == "" and jax_pins.succeeded("99.0") == ""
    # a patch of an older line uploaded after a newer release: its time ended at the first later upload
    assert jax_pins.succeeded("0.8.3") > jax_pins.REQUIRES.load()["release"]["0.8.3"]["released"]


def test_where_the_environment_s_pins_are_of_a_later_day_the_libraries_are_tried_as_of_that_day(
    proven_when: list[str], index: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """jaxirl pins jax 0.4.13 and, of later days, numpy 1.26.1 and tensorstore 0.1.49 (2023-11-12), and leaves brax
    open: brax of jax 0.4.13's time (0.9.1) reads MjOption.collision, which the paper's mujoco 3.0.0 lacks; brax of
    the day the pins were made (the newest upload of what was installed by name, but brax) is 0.9.3."""
    days = {"jax": "2023-06-23", "tensorstore": "2023-11-12", "numpy": "2023-10-14", "brax": "2024-12-11"}
    asked: list[dict[str, str]] = []

    def published(pins: dict[str, str], python: str, uv: object = None) -> dict[str, str]:
        asked.append(dict(pins))
        return {name: days[name] for name in pins if name in days}

    monkeypatch.setattr(build, "published", published)
    index.update({"brax before 2023-07-27": ["0.9.1"], "brax before 2023-11-12": ["0.9.3"]})
    proven_when.append("jax==0.4.13 brax==0.9.3")
    packages = {"jax": "0.4.13", "brax": "0.12.1", "numpy": "1.26.1", "tensorstore": "0.1.49", "optax": "0.2.3"}
    facts = facts_from(
        {"packages": packages, "python": {"version": "3.10.13"}, "requested": ["jax", "brax", "numpy", "tensorstore"]}
    )
    first = replace(Report(facts, findings=(_about("brax"),)), plan=_plan("jax==0.4.13"))
    report, proof, why = building.searched([first], no_build=False, timeout=60, quiet=True)
    assert proof == "proven" and report.plan.fix.install == ("jax==0.4.13", "brax==0.9.3"), why
    assert "jax==0.4.13 brax==0.9.1:" in why  # jax's time first
    assert asked == [{"numpy": "1.26.1", "tensorstore": "0.1.49"}]  # by name, but the struggling and jax's own


def test_each_library_may_stand_at_either_day_the_pairs_are_tried_before_each_alone(
    proven_when: list[str], index: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """jaxirl's twins (fix-pass-8): brax of jax 0.4.13's time (0.9.1) does not load the paper's mujoco; brax of the
    pins' day (0.9.3) does, but orbax-checkpoint of that day (0.4.2) calls a jax name 0.4.13 lacks, and the one of
    jax's time (0.3.1) works: orbax-checkpoint of jax's time beside brax of the pins' day."""
    monkeypatch.setattr(build, "published", lambda pins, python, uv=None: {n: "2023-11-12" for n in pins})
    index.update(
        {
            "brax before 2023-07-27": ["0.9.1"],
            "brax before 2023-11-12": ["0.9.3"],
            "orbax-checkpoint before 2023-07-27": ["0.3.1"],
            "orbax-checkpoint before 2023-11-12": ["0.4.2"],
        }
    )
    proven_when += ["jax==0.4.13 orbax-checkpoint==0.3.1 brax==0.9.3", "jax==0.4.13 brax==0.9.3"]
    packages = {"jax": "0.4.13", "brax": "0.12.1", "orbax-checkpoint": "0.4.4", "numpy": "1.26.1"}
    facts = facts_from({"packages": packages, "python": {"version": "3.10"}, "requested": list(packages)})
    findings = (_about("orbax-checkpoint", "fail"), _about("brax"))
    first = replace(Report(facts, findings=findings), plan=_plan("jax==0.4.13"))
    report, proof, why = building.searched([first], no_build=False, timeout=60, quiet=True)
    assert proof == "proven", why
    assert report.plan.fix.install == ("jax==0.4.13", "orbax-checkpoint==0.3.1", "brax==0.9.3"), why
    tried = [part.split(":")[0] for part in why.split("; ")[1:]]
    assert tried[-2:] == [
        "jax==0.4.13 orbax-checkpoint==0.3.1 brax==0.9.1",  # both of jax's time
        "jax==0.4.13 orbax-checkpoint==0.4.2 brax==0.9.3",  # both of the pins' day
    ], why


def test_a_plan_whose_twin_moved_jax_unasked_is_tried_again_with_jax_held(
    proven_when: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """flax's ImageNet example pins flax 0.6.0 beside jax 0.4.13 (fix-pass-9): `flax>=0.6.7,<0.7.5` brings
    orbax-checkpoint, whose newest requires a newer jax, and pip moved jax to 0.6.2 in the twin; flax and chex then
    failed. The same plan with jax and jaxlib named at the environment's releases is tried next (the expert's
    `flax==0.6.10 jax==0.4.13 jaxlib==0.4.13`); a plan that names jax is left as it is."""
    monkeypatch.setitem(MOVED, "flax>=0.6.7,<0.7.5", {"flax": "0.7.4", "jax": "0.6.2", "jaxlib": "0.6.2"})
    proven_when.append("flax>=0.6.7,<0.7.5 jax==0.4.13 jaxlib==0.4.13")
    facts = facts_from({"packages": {"flax": "0.6.0", "jax": "0.4.13", "jaxlib": "0.4.13"}})
    first = replace(Report(facts), plan=_plan("flax>=0.6.7,<0.7.5"))
    report, proof, why = building.searched([first], no_build=False, timeout=60, quiet=True)
    assert proof == "proven" and report.plan.fix.install == ("flax>=0.6.7,<0.7.5", "jax==0.4.13", "jaxlib==0.4.13"), why
    plan = _plan("flax>=0.6.7,<0.7.5")
    assert fixplan.unheld_jax(plan, facts, {"jax": "0.4.13", "jaxlib": "0.4.13"}) == []  # nothing moved
    assert fixplan.unheld_jax(_plan("flax>=0.6.7", "jax>=0.4.13"), facts, {"jax": "0.6.2"}) == []  # it names jax
