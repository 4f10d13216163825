"""The table of library releases that use a removed jax API: each entry at its boundaries (the last release with
the use fails with the removing jax, its fixed release does not, nor does the jax before the removal), and each
printed fix re-planned."""

from __future__ import annotations

import json
import re
from typing import Any, cast

import pytest
from packaging.requirements import Requirement

from envaudit.cli import main
from envaudit.judge import assemble
from envaudit.model import fixes
from envaudit.rules import api_removals, releases, wheels
from envaudit.rules.api_removals import Use
from tests.conftest import BESIDE_MISCOMPILES, facts_from
from tests.planfix import requested

USES = api_removals.REMOVALS.load()["use"]


def _newest_removal(use: Use) -> tuple[int, ...]:
    return releases.numbers(api_removals.removal_start(use) or "0")


# The derived table has a thousand entries, read by one code path: of the (library, kind) groups (at import, on a
# call), SAMPLE_SIZE spread evenly over them have their newest removal planned at its boundaries (a fixed number:
# the table grows with the libraries read, the test's time does not); how each entry is derived is tested in
# test_derived_removals.py
SAMPLE_SIZE = 33
GROUPS = sorted({(u["package"], u["kind"]) for u in USES})
SAMPLE = [
    max(group, key=_newest_removal)
    for key in (GROUPS[i * len(GROUPS) // SAMPLE_SIZE] for i in range(min(SAMPLE_SIZE, len(GROUPS))))
    if (group := [u for u in USES if (u["package"], u["kind"]) == key])
]


def planned(capsys: pytest.CaptureFixture[str], *pins: str) -> list[dict[str, str]]:
    main(["plan", *pins, *BESIDE_MISCOMPILES, "--format", "json"])
    return list(json.loads(capsys.readouterr().out)["findings"])


def inside(use: dict[str, Any]) -> str:
    """The last release with the use: the one pinned, or just below the upper bound of its last range."""
    spec = str(use["versions"][-1])
    if spec.startswith("=="):
        return spec.removeprefix("==")
    upper = spec.split("<")[-1]  # `<B`, or `<=N` for a run up to the newest release read
    return upper.removeprefix("=") if upper.startswith("=") else fixes._below(upper)


def jax_sides(use: dict[str, Any]) -> tuple[str, str]:
    """(a jax without the API, the nearest jax with it): the removal and the release before it, or for an API a
    library uses before jax added it (`<R`), the release before R and R."""
    spec = str(use["jax"]).split(",")[0]  # `>=A,<B`: A lacks it, the release before A has it
    if spec.startswith(">="):
        return spec.removeprefix(">="), fixes._below(spec.removeprefix(">="))
    assert spec.startswith("<"), spec
    return fixes._below(spec.removeprefix("<")), spec.removeprefix("<")


def named(findings: list[dict[str, str]], use: dict[str, Any]) -> bool:
    """A finding says the library uses this very name, or passes this very keyword (not a name it is a prefix of:
    jax.lib.xla_bridge.get_backend)."""
    said = f"uses {api_removals.named(cast(Use, use))} ("
    return any(f["id"].startswith("removed-jax-api-in-") and said in f["detail"] for f in findings)


@pytest.mark.parametrize("use", SAMPLE, ids=lambda u: f"{u['package']}-{u['api'].split()[0]}")
def test_each_use_at_its_boundaries_and_its_fix(capsys: pytest.CaptureFixture[str], use: dict[str, Any]) -> None:
    """Other uses of the same library may still apply at a boundary: each entry answers for its own API only. The
    fix upgrades the library and holds the installed jax, so that pip cannot move jax to fit a newer library."""
    without, with_api = jax_sides(use)
    library = f"{use['package']}=={inside(use)}"
    variable = api_removals.BACKENDS.get(use["package"])  # a library of several frameworks, on jax's backend
    env = ("--env", f"{variable}=jax") if variable else ()
    check = f"removed-jax-api-in-{use['package']}"
    found = [f for f in planned(capsys, *env, library, f"jax=={without}", f"jaxlib=={without}") if f["id"] == check]
    assert len(found) == 1 and api_removals.named(cast(Use, use)) in found[0]["detail"], found
    assert not named(planned(capsys, *env, library, f"jax=={with_api}", f"jaxlib=={with_api}"), use)
    if "fixed" not in use:  # no release read after the last with the use: nothing to upgrade to
        return
    fixed = f"{use['package']}=={use['fixed']}"
    assert not named(planned(capsys, *env, fixed, f"jax=={without}", f"jaxlib=={without}"), use)
    if found[0]["severity"] == "warn":  # off the everyday path: the functions are named (the fix is the same)
        assert use["functions"][0] in found[0]["detail"], found[0]
    if not found[0]["caused_by"]:  # a consequence's fix is its root cause's
        asked = requested(found[0]["fix"])
        facts = facts_from({"packages": {use["package"]: inside(use), "jax": without, "jaxlib": without}})
        if not api_removals.first_unaffected(facts, use["package"]):  # every later release is condemned with
            # this jax too (brax 0.12.3: jax.device_put_replicated to its newest), or requires a jax it is not
            below = api_removals.last_unaffected_below(facts, use["package"])
            if below:  # an older release stands beside this jax: the library moves below the next one, jax held;
                # or the other way, jax up to the releases with the names (an upgrade before a downgrade: flowjax
                # 19.1.0 requires jax>=0.7.0, so no newer flowjax stands beside jax 0.4.19)
                held = (f"{use['package']}<{below[1]}", f"jax=={without}", f"jaxlib=={without}")
                up = all(r.startswith(("jax>=", "jaxlib>=")) for r in asked.requirements)
                assert asked.requirements == held or (asked.requirements and up), asked
                return
            # none does: jax moves; the library stays, or follows it where its declared requirements refuse that
            # jax (quax 0.2.1 requires a jax newer than the range without its removed names: quax<0.2.1 follows)
            moved = [r for r in asked.requirements if not r.startswith(f"{use['package']}<")]
            assert moved and all(r.startswith(("jax<", "jax>=", "jaxlib")) for r in moved)
            return
        assert asked.requirements[1:] == (f"jax=={without}", f"jaxlib=={without}"), asked
        assert not (asked.remove or asked.unset or asked.export), asked
        req = Requirement(asked.requirements[0])  # the floor, and a cap where the floor's major is the installed one
        floor = next(s.version for s in req.specifier if s.operator == ">=")
        assert req.name == use["package"] and releases.numbers(floor) >= releases.numbers(use["fixed"])


def test_an_old_flax_is_one_root_cause_with_the_rule_that_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    """flax 0.7.4 with jax 0.4.30 uses three removed APIs and hits flax-config-jax-0425: one failure, its fix."""
    found = planned(capsys, "flax==0.7.4", "jax==0.4.30", "jaxlib==0.4.30")
    roots = [f["id"] for f in found if f["severity"] == "fail" and not f["caused_by"]]
    assert roots == ["flax-config-jax-0425"]
    assert [f["caused_by"] for f in found if f["id"] == "removed-jax-api-in-flax"] == ["flax-config-jax-0425"]
    detail = next(f["detail"] for f in found if f["id"] == "removed-jax-api-in-flax")
    assert "jax.linear_util" in detail and "jax.config.define_bool_state" in detail


def test_another_librarys_removed_api_is_its_own_root_cause(capsys: pytest.CaptureFixture[str]) -> None:
    """chex 0.1.82 beside the same old flax: the flax rule's fix leaves chex broken, so chex stands on its own."""
    found = planned(capsys, "flax==0.7.4", "chex==0.1.82", "jax==0.4.30", "jaxlib==0.4.30")
    chex = next(f for f in found if f["id"] == "removed-jax-api-in-chex")
    assert chex["caused_by"] == ""
    assert requested(chex["fix"]).requirements == ("chex>=0.1.84", "jax==0.4.30", "jaxlib==0.4.30"), chex["fix"]


def test_a_call_time_break_off_the_everyday_path_is_a_warning_that_names_its_functions() -> None:
    """optax 0.2.2 under jax 0.6.0: only optax.scale_by_distance_over_gradients reaches the removed jax.tree_map
    (read at the tag); a standard training step runs, so it is a warn that names the function, not a file:line."""
    from envaudit.rules.registry import registry

    facts = facts_from({"packages": {"optax": "0.2.2", "jax": "0.6.0", "jaxlib": "0.6.0"}})
    (found,) = [f for f in registry().evaluate_checks(facts) if f.id == "removed-jax-api-in-optax"]
    assert found.severity == "warn" and "first call of optax.scale_by_distance_over_gradients" in found.detail
    flax = facts_from({"packages": {"flax": "0.12.6", "jax": "0.11.0", "jaxlib": "0.11.0"}})
    (broken,) = [f for f in registry().evaluate_checks(flax) if f.id == "removed-jax-api-in-flax"]
    assert broken.severity == "fail" and "flax.linen.Module.init included" in broken.detail  # the everyday path


def test_every_call_time_use_says_which_public_functions_reach_it() -> None:

    uses = api_removals.REMOVALS.load()["use"]  # but a raising stub's name bound at import, called where not traced
    assert all(u.get("functions") or u.get("stub") for u in uses if u["kind"] == "first call"), [
        (u["package"], u["api"]) for u in uses if u["kind"] == "first call" and not u.get("functions")
    ]


def test_the_fix_is_the_first_release_no_entry_condemns_with_this_jax() -> None:
    """numpyro 0.19.0 with jax 0.10.0: 0.20.0 fixes its jax.interpreters.pxla.xla_pmap_p but uses
    jax.extend.core.primitives.xla_pmap_p, which jax 0.10.0 lacks too; the fix is 0.21.0, not 0.20.0."""
    from envaudit.rules.registry import registry

    facts = facts_from({"packages": {"numpyro": "0.19.0", "jax": "0.10.0", "jaxlib": "0.10.0"}})
    assert api_removals.first_unaffected(facts, "numpyro") == "0.21.0"
    (found,) = [f for f in registry().evaluate_checks(facts) if f.id == "removed-jax-api-in-numpyro"]
    assert requested(found.fix).requirements[0] == "numpyro>=0.21.0", found.fix
    assert not [
        u
        for u in USES
        if u["package"] == "numpyro"
        and api_removals._table_uses(
            facts_from({"packages": {"numpyro": "0.21.0", "jax": "0.10.0", "jaxlib": "0.10.0"}}), "numpyro"
        )
    ]


def test_a_warning_carries_the_same_fix() -> None:
    """optax 0.2.2 under jax 0.6.0: a corner (scale_by_distance_over_gradients), a warning, and its fix the first
    release without the use, the installed jax held."""
    from envaudit.rules.registry import registry

    facts = facts_from({"packages": {"optax": "0.2.2", "jax": "0.6.0", "jaxlib": "0.6.0"}})
    (found,) = [f for f in registry().evaluate_checks(facts) if f.id == "removed-jax-api-in-optax"]
    assert found.severity == "warn"
    assert requested(found.fix).requirements == ("optax>=0.2.3", "jax==0.6.0", "jaxlib==0.6.0")


def _checked(packages: dict[str, str], check: str) -> list[Any]:
    from envaudit.rules.registry import registry

    return [f for f in registry().evaluate_checks(facts_from({"packages": packages})) if f.id == check]


def test_a_use_an_entry_point_of_the_readme_reaches_is_a_failure_with_the_first_unaffected_release() -> None:
    """jaxopt 0.8.3 under jax 0.6.0: jax.tree_map (removed in 0.6.0) in OptaxSolver._apply_updates, which
    jaxopt.OptaxSolver.run reaches (the derivation followed the calls from the entry points of
    tables/derived/entry-points.toml): the main path, a failure; the fix the first release no entry condemns."""
    (found,) = _checked({"jaxopt": "0.8.3", "jax": "0.6.0", "jaxlib": "0.6.0"}, "removed-jax-api-in-jaxopt")
    assert found.severity == "fail" and "jaxopt.OptaxSolver.run" in found.detail
    assert requested(found.fix).requirements == ("jaxopt>=0.8.4", "jax==0.6.0", "jaxlib==0.6.0")


@pytest.mark.parametrize(
    "packages",
    [
        # flax 0.12.10 fixed flax.nnx for jax 0.11.2 with `getattr(hjx, 'HiPrim', None) or hjx.VJPHiPrimitive`
        {"flax": "0.12.10", "jax": "0.11.2", "jaxlib": "0.11.2"},
        # jax 0.4.20-0.4.24's Config.__getattr__ still answers define_bool_state (deprecated): flax 0.7.5 imports
        {"flax": "0.7.5", "jax": "0.4.24", "jaxlib": "0.4.24"},
    ],
    ids=["flax-0.12.10-guarded", "flax-0.7.5-deprecated-config"],
)
def test_a_guarded_or_deprecated_but_present_name_is_no_finding(packages: dict[str, str]) -> None:
    assert _checked(packages, "removed-jax-api-in-flax") == []


def test_a_release_newer_than_jax_is_fixed_by_the_jax_that_has_every_name_it_needs() -> None:
    """keras 3.12 imports jax.export (first in jax 0.4.30) and uses no name jax removed for good (splash_attention was
    absent from 0.4.15 to 0.4.24 only): the fix moves jax up to 0.4.30, where the real pass's plan had none and
    stopped at the 0.4.29 the oneDNN rule asks for (`cannot import name 'export'`)."""
    stack = {"jax": "0.4.26", "jaxlib": "0.4.26", "keras": "3.12.0"}
    facts = facts_from({"packages": stack, "env": {"KERAS_BACKEND": "jax"}})
    (found,) = api_removals.removed_api_uses("keras")(facts)
    # two ways: keras below the releases that need what jax 0.4.26 lacks, jax held (below 3.7.0: keras 3.7.0 to 3.15
    # call `jnp.reshape(a=..., shape=...)` in affine_transform, keras/src/backend/jax/image.py:467 at 3.7.0, a
    # keyword jax.numpy.reshape takes from jax 0.4.28, its CHANGELOG and its wheel's jax/_src/numpy/lax_numpy.py:896);
    # or jax up to the first release that has them all
    assert found.fix.install == ("keras<3.7.0",) and "jax==0.4.26" in found.fix.hold
    other = api_removals._jax_the_other_way("keras")(facts)
    assert other.install == ("jax>=0.4.30", "jaxlib>=0.4.30")
    # the plan takes jax up (the oneDNN rule moves jax beside it anyway), never below the name keras needs
    plan = assemble.assemble(facts, mode="audit").plan
    assert "jax>=0.4.30" in plan.fix.command and not any(p.startswith(("jax<", "jaxlib<")) for p in plan.fix.install)


def test_keras_is_judged_on_jax_only_where_its_backend_is_jax() -> None:
    """Keras 3 beside an old jax (TensorFlow's Keras in the neural-tangents stack) never calls jax unless its backend
    is jax: KERAS_BACKEND=jax, or the imports probe imported it (it does so only on the jax backend)."""
    stack = {"jax": "0.4.26", "jaxlib": "0.4.26", "keras": "3.12.0"}
    check = api_removals.removed_api_uses("keras")
    assert check(facts_from({"packages": stack})) == []
    assert check(facts_from({"packages": stack, "env": {"KERAS_BACKEND": "tensorflow"}})) == []
    assert check(facts_from({"packages": stack, "env": {"KERAS_BACKEND": "jax"}}))
    imported = {"distribution": "keras", "version": "3.12.0", "module": "keras", "status": "error", "error": "x"}
    assert check(facts_from({"packages": stack, "jax": {"status": "ok", "imports": [imported]}}))


def test_a_library_floor_beside_a_held_jax_is_one_its_release_declares_it_can_stand_beside() -> None:
    """Fix pass 3 (hj_reachability beside jax 0.4.35): flax 0.10.4's use of a name jax added in 0.5.1 got
    `flax>=0.10.5` with jax 0.4.35 held, and flax 0.10.5 requires jax>=0.5.1: no installer resolves it. Over the
    table's libraries, releases and a spread of jax releases, a fix that holds the installed jax and raises the
    library's floor names a release whose declared requirements admit that jax."""
    from packaging.specifiers import SpecifierSet

    from envaudit.rules import declared

    checked = 0
    for package in sorted({u["package"] for u in api_removals.REMOVALS.load()["use"]}):
        for installed in api_removals._releases_named(package)[::3]:
            for jax in ("0.4.23", "0.4.30", "0.4.35", "0.5.3", "0.6.2", "0.7.2"):
                facts = facts_from(
                    {
                        "packages": {"jax": jax, "jaxlib": jax, package: installed},
                        "python": {"version": "3.11.7"},
                        "platform": {"system": "Linux", "machine": "x86_64"},
                    }
                )
                fix = api_removals._removed_api_fix(facts, package)
                floors = [r for r in fix.install if r.startswith(f"{package}>=")]
                if f"jax=={jax}" not in fix.hold or not floors:
                    continue
                checked += 1
                version = floors[0].removeprefix(f"{package}>=")
                found = declared.applying(facts, package, version) or [[]]
                specs = [[SpecifierSet(r[3:]) for r in rs if re.match(r"jax(?![\w.-])", r)] for rs in found]
                assert any(all(s.contains(jax, True) for s in one) for one in specs), (package, installed, jax, fix)
    assert checked > 10


def test_jax_moved_for_a_library_is_bounded_by_the_uses_a_user_meets_and_has_a_wheel_here() -> None:
    """Fix pass 3: jax-md 0.2.8 beside jax 0.4.24 fails at import on jax.random.KeyArray (gone in 0.4.24); one of
    its functions also uses jax.experimental.maps.Mesh (gone in 0.4.11). The plan was `jax<0.4.11`, which has no
    jaxlib wheel for Python 3.11, and pip refused it; jax 0.4.23 runs the program."""
    facts = facts_from(
        {"packages": {"jax": "0.4.24", "jaxlib": "0.4.24", "jax-md": "0.2.8"}, "python": {"version": "3.11.7"}}
    )
    (found,) = api_removals.removed_api_uses("jax-md")(facts)
    assert found.fix.install == ("jax<0.4.24", "jaxlib<0.4.24")
    assert wheels.range_installs_here(facts, found.fix.install) is True


def test_a_jax_range_installs_here_only_where_a_jaxlib_in_it_has_a_wheel_for_this_python() -> None:
    table = wheels.WHEELS.load()
    for python, found in table["versions"].items():
        facts = facts_from({"packages": {"jax": found[-1]}, "python": {"version": f"{python}.0"}})
        first = min(found, key=releases.numbers)
        assert wheels.range_installs_here(facts, [f"jax<{first}", f"jaxlib<{first}"]) is False, python
        assert wheels.range_installs_here(facts, [f"jax<={first}", f"jaxlib<={first}"]) is True, python
        assert wheels.range_installs_here(facts, [f"jax>{table['covers_to']}"]) is None  # past what was read


def _said(packages: dict[str, str], package: str) -> str:
    found = _checked(packages, f"removed-jax-api-in-{package}")
    return " ".join(f.detail for f in found)


def test_a_keyword_the_installed_jax_does_not_take_is_a_finding() -> None:
    """blackjax 1.2.1 calls `jnp.clip(..., max=1)` in its proposals (blackjax/mcmc/proposal.py:156, 227, 256): jax
    0.4.26's clip is `clip(a, a_min=None, a_max=None, out=None)` (jax-v0.4.26 jax/_src/numpy/lax_numpy.py#L1298),
    min/max came in 0.4.27 (CHANGELOG, jax 0.4.27); measured, 0.4.26 raises `TypeError: clip() got an unexpected
    keyword argument 'max'` (derived/confirmed-calls.json). blackjax 1.2.0's a_max= is gone in jax 0.10.0 ("The
    deprecated keyword arguments `a`, `a_min`, and `a_max` to `jax.numpy.clip` have been removed", CHANGELOG at
    jax-v0.10.0)."""
    assert "uses jax.numpy.clip(max=...) (fails on first call" in _said(
        {"blackjax": "1.2.1", "jax": "0.4.26", "jaxlib": "0.4.26"}, "blackjax"
    )
    assert "clip(max=" not in _said({"blackjax": "1.2.1", "jax": "0.4.27", "jaxlib": "0.4.27"}, "blackjax")
    assert "uses jax.numpy.clip(a_max=...)" in _said(
        {"blackjax": "1.2.0", "jax": "0.10.0", "jaxlib": "0.10.0"}, "blackjax"
    )
    assert "clip(a_max=" not in _said({"blackjax": "1.2.0", "jax": "0.9.2", "jaxlib": "0.9.2"}, "blackjax")


def test_a_keyword_added_after_the_release_a_library_allows_breaks_its_import() -> None:
    """equinox 0.10.4 declares jax>=0.4.4 and registers every Module with `jtu.register_pytree_with_keys(cls,
    flatten_with_keys=..., flatten_func=..., unflatten_func=...)` in _ModuleMeta.__new__ (equinox/_module.py:113),
    which `class Module(metaclass=_ModuleMeta)` (:253) runs at import; flatten_func is new in jax 0.4.7
    (jax-v0.4.6 jax/_src/tree_util.py#L545-L548 against jax-v0.4.7 #L608-L617)."""
    said = _said({"equinox": "0.10.4", "jax": "0.4.6", "jaxlib": "0.4.6"}, "equinox")
    assert "uses jax.tree_util.register_pytree_with_keys(flatten_func=...) (import equinox fails" in said
    assert "flatten_func" not in _said({"equinox": "0.10.4", "jax": "0.4.7", "jaxlib": "0.4.7"}, "equinox")


def test_a_guard_is_evaluated_as_the_library_wrote_it() -> None:
    """brainpy 2.7.7 brainpy/integrators/_jaxpr_to_source_code.py:30-33: `if jax.__version__ >= '0.5.0': from
    jax.extend.core import Literal, Var, Jaxpr` `else: from jax.core import Primitive, Literal, Var, Jaxpr`. Compared
    as strings, "0.10.0" < "0.5.0": jax 0.10.0 takes the old branch, whose jax.core.Jaxpr jax removed in 0.6.0, and
    the import fails; jax 0.9.2 takes the new one. Before guards were evaluated the use was dropped as guarded.
    Measured: `import brainpy` raises "ImportError: cannot import name 'Primitive' from 'jax.core'" with jax 0.10.0
    and works with jax 0.9.2."""
    said = _said({"brainpy": "2.7.7", "jax": "0.10.0", "jaxlib": "0.10.0"}, "brainpy")
    assert "uses jax.core.Jaxpr (import brainpy fails" in said and "as strings" in said
    assert "jax.core.Jaxpr" not in _said({"brainpy": "2.7.7", "jax": "0.9.2", "jaxlib": "0.9.2"}, "brainpy")
