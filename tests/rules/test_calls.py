"""Check call-fails on report fragments: a library's smoke call that raised is its failure, folded under the derived
removed-API finding of that release; one that worked overrules the table's main-path entry."""

from __future__ import annotations

from typing import Any

from envaudit import rules
from envaudit.judge import causes
from envaudit.rules import imports
from envaudit.rules.registry import registry
from tests.conftest import facts_from

# jaxopt 0.8.3 calls jax.tree_map (removed in jax 0.6.0) on OptaxSolver.run's path: the table's standard_path entry
PACKAGES = {"jax": "0.6.0", "jaxlib": "0.6.0", "jaxopt": "0.8.3", "optax": "0.2.4"}
ERROR = "AttributeError: module 'jax' has no attribute 'tree_map'"


def _fragment(status: str, imported: str = "ok") -> dict[str, Any]:
    call: dict[str, Any] = {"distribution": "jaxopt", "version": "0.8.3", "call": "jaxopt.OptaxSolver.run"}
    call |= {"status": status, "seconds": 0.5}
    if status == "error":
        call |= {"error": ERROR, "where": "jaxopt/_src/optax_wrapper.py:122"}
    imports = [{"distribution": "jaxopt", "version": "0.8.3", "module": "jaxopt", "status": imported}]
    if imported == "error":
        imports[0]["error"] = "ImportError: something else"
    return {"packages": PACKAGES, "jax": {"status": "ok", "imports": imports, "calls": [call]}}


def test_a_failed_call_is_its_library_s_failure_folded_under_the_removed_api_of_that_release() -> None:
    facts = facts_from(_fragment("error"))
    linked = {f.id: f for f in causes.link(registry().evaluate(facts), rules.evaluate(facts))}
    failed = linked["call-fails-jaxopt"]
    assert failed.severity == "fail" and ERROR in failed.detail and "`jaxopt.OptaxSolver.run` raises" in failed.detail
    assert "jaxopt/_src/optax_wrapper.py:122" in failed.detail
    assert failed.caused_by == "removed-jax-api-in-jaxopt" and not linked["removed-jax-api-in-jaxopt"].caused_by
    assert linked["removed-jax-api-in-jaxopt"].severity == "fail"


def test_a_call_that_worked_overrules_the_table_s_main_path_entry() -> None:
    facts = facts_from(_fragment("ok"))
    found = {f.id: f for f in registry().evaluate(facts)}
    assert "removed-jax-api-in-jaxopt" not in found and "call-fails-jaxopt" not in found
    said = found["api-removal-contradicted-jaxopt"].detail
    assert "its main path fails" in said and "`jaxopt.OptaxSolver.run` worked" in said and "jax.tree_map" in said


def test_a_library_whose_import_failed_is_reported_once_as_the_import() -> None:
    found = {f.id for f in registry().evaluate(facts_from(_fragment("error", imported="error")))}
    assert "import-fails-jaxopt" in found and "call-fails-jaxopt" not in found


def test_a_library_the_plan_does_not_name_is_said_with_who_pulls_it_in_and_its_call_is_no_verdict() -> None:
    """40 unseen plans: building failed 4 healthy stacks for a library the stack pulled in transitively, whose smoke
    call needs what the user's program never meets (orbax-export without TensorFlow); on 40 more
    (tests/fixtures/plan-unseen-3, case 02) a transitive library's own call made a healthy stack WARN. The plan
    names flax; the installer brought orbax-checkpoint and orbax-export for it: the user's program does not make
    their calls."""
    planned = {"jax": "0.10.1", "jaxlib": "0.10.1", "flax": "0.12.8"}
    calls = [
        {"distribution": "orbax-checkpoint", "version": "0.12.8", "call": "ocp.StandardCheckpointer", "status": "error"}
        | {"error": "AttributeError: module 'jax' has no attribute 'x'", "seconds": 0.1},
        {"distribution": "orbax-export", "version": "0.0.8", "call": "orbax.export.ExportManager", "status": "error"}
        | {"error": "ModuleNotFoundError: No module named 'tensorflow'", "seconds": 0.1},
    ]
    fragment = {"origin": "plan", "packages": planned, "requires": {"flax": ["orbax-checkpoint", "jax>=0.10.0"]}}
    found = {f.id: f for f in rules.evaluate(facts_from(fragment | {"jax": {"status": "ok", "calls": calls}})).findings}
    assert found["call-fails-orbax-checkpoint"].severity == "info"
    assert "pulled in by flax" in found["call-fails-orbax-checkpoint"].detail
    assert "call-fails-orbax-export" not in found  # needs TensorFlow, which nothing here installs: not run
    named = {**planned, "orbax-checkpoint": "0.12.8"}  # the plan names it: its failure is the user's
    direct = facts_from(fragment | {"packages": named, "jax": {"status": "ok", "calls": calls[:1]}})
    assert {f.id: f.severity for f in rules.evaluate(direct).findings}["call-fails-orbax-checkpoint"] == "fail"


def test_in_a_live_environment_a_library_nobody_asked_for_by_name_is_said_with_who_pulls_it_in() -> None:
    """fix-pass-7's BridgeData V2 requirements name flax (pip marks it REQUESTED); flax pulls in orbax-checkpoint,
    whose checkpointer calls jax.tree, which the project's pinned jax 0.4.13 lacks: the program never makes that
    call. Where the installer marked nothing (a conda environment), every library stays the user's."""
    packages = {"jax": "0.4.13", "jaxlib": "0.4.13", "flax": "0.7.4", "orbax-checkpoint": "0.4.4"}
    call: dict[str, Any] = {"distribution": "orbax-checkpoint", "version": "0.4.4", "call": "ocp.StandardCheckpointer"}
    call |= {"status": "error", "error": "AttributeError: module 'jax' has no attribute 'tree'", "seconds": 0.1}
    live = {"packages": packages, "requires": {"flax": ["orbax-checkpoint", "jax>=0.4.2"]}}
    live |= {"jax": {"status": "ok", "calls": [call]}}

    def judged(requested: list[str]) -> Any:
        return {f.id: f for f in rules.evaluate(facts_from(live | {"requested": requested})).findings}[
            "call-fails-orbax-checkpoint"
        ]

    pulled = judged(["flax", "jax", "jaxlib"])
    assert pulled.severity == "info" and "pulled in by flax" in pulled.detail and not pulled.fix
    assert judged(["flax", "orbax-checkpoint"]).severity == "fail"  # asked for by name: the user's
    assert judged([]).severity == "fail"  # nothing marked: nothing known of what was asked for


def test_uv_s_marks_keep_every_library_the_user_s() -> None:
    """uv writes REQUESTED for every distribution it installs (fix-pass-8's flax 0.6.11 environment: orbax-checkpoint
    came with flax and was marked too): nothing tells a library pulled in apart there, and a failing call stays the
    user's failure rather than becoming information (a user's `optax.update` under flax would be missed); pip's
    marks tell it apart."""
    packages = {"jax": "0.4.13", "jaxlib": "0.4.13", "flax": "0.6.11", "orbax-checkpoint": "0.4.4"}
    call: dict[str, Any] = {"distribution": "orbax-checkpoint", "version": "0.4.4", "call": "ocp.StandardCheckpointer"}
    call |= {"status": "error", "error": "AttributeError: module 'jax' has no attribute 'tree'", "seconds": 0.1}
    live = {"packages": packages, "requires": {"flax": ["orbax-checkpoint", "jax>=0.4.2"]}}
    live |= {"jax": {"status": "ok", "calls": [call]}}

    def judged(installer: str, requested: list[str]) -> Any:
        facts = facts_from(live | {"requested": requested, "installers": dict.fromkeys(packages, installer)})
        return {f.id: f for f in rules.evaluate(facts).findings}["call-fails-orbax-checkpoint"], imports.asked_for(
            facts
        )

    by_uv, asked = judged("uv", sorted(packages))
    assert by_uv.severity == "fail" and asked == frozenset(packages)
    by_pip, asked = judged("pip", ["flax", "jax", "jaxlib"])
    assert by_pip.severity == "info" and "pulled in by flax" in by_pip.detail and "orbax-checkpoint" not in asked


def test_a_library_the_plan_does_not_name_that_fails_to_import_warns_and_an_optional_module_it_lacks_is_said() -> None:
    """What the user named imports; a library pulled in for it that fails its own import is a warning naming who
    pulls it in (a lazy import of it in the named library may fail), and one that lacks a module nothing installs
    (orbax-export's undeclared TensorFlow, tests/fixtures/plan-unseen-3 case 07) is information."""
    planned = {"jax": "0.10.1", "jaxlib": "0.10.1", "flax": "0.12.8"}
    tried = [
        {"distribution": "flax", "module": "flax", "version": "0.12.8", "status": "ok"},
        {"distribution": "orbax-checkpoint", "module": "orbax.checkpoint", "version": "0.12.8", "status": "error"}
        | {"error": "AttributeError: module 'jax' has no attribute 'x'"},
        {"distribution": "orbax-export", "module": "orbax.export", "version": "0.0.8", "status": "error"}
        | {"error": "ModuleNotFoundError: No module named 'tensorflow'"},
    ]
    fragment = {"origin": "plan", "packages": planned, "requires": {"flax": ["orbax-checkpoint", "orbax-export"]}}
    facts = facts_from(fragment | {"jax": {"status": "ok", "imports": tried}})
    found = {f.id: f for f in rules.evaluate(facts).findings}
    assert found["import-fails-orbax-checkpoint"].severity == "warn"
    assert "pulled in by flax" in found["import-fails-orbax-checkpoint"].detail
    assert found["import-fails-orbax-export"].severity == "info"
    named = facts_from(
        fragment | {"packages": {**planned, "orbax-export": "0.0.8"}, "jax": {"status": "ok", "imports": tried}}
    )
    assert {f.id: f.severity for f in rules.evaluate(named).findings}["import-fails-orbax-export"] == "fail"


def test_a_library_pulled_in_whose_failure_breaks_what_the_user_named_is_their_failure() -> None:
    """dynamax 1.0.1 imports tensorflow-probability, which the plan does not name; tfp's import raises with jax
    0.7.2, and so does dynamax's, in tfp's code (tests/fixtures/plan-unseen-3 case 11): one cause, tfp's, and the
    user's program fails with it."""
    planned = {"jax": "0.7.2", "jaxlib": "0.7.2", "dynamax": "1.0.1"}
    error = "AttributeError: module 'jax.interpreters.xla' has no attribute 'pytype_aval_mappings'"
    tried = [
        {"distribution": "dynamax", "module": "dynamax", "version": "1.0.1", "status": "error", "error": error}
        | {"where": "tensorflow_probability/substrates/jax/internal/backend/jax/ops.py:681"},
        {"distribution": "tensorflow-probability", "module": "tensorflow_probability", "version": "0.25.0"}
        | {"status": "error", "error": error, "where": "tensorflow_probability/substrates/jax/x.py:1"},
    ]
    fragment = {"origin": "plan", "packages": planned, "requires": {"dynamax": ["tensorflow-probability"]}}
    found = {
        f.id: f for f in rules.evaluate(facts_from(fragment | {"jax": {"status": "ok", "imports": tried}})).findings
    }
    assert found["import-fails-tensorflow-probability"].severity == "fail"


def test_a_failed_call_s_fix_is_a_newer_release_of_the_library_whose_code_raised_jax_held() -> None:
    """diffrax's implicit solve raising in lineax 0.0.8's LU under jax 0.8.2 (tests/realenv/test_call_raised_elsewhere
    measures it): the call had no fix at all. The proposal is a newer release of the library whose line raised, jax
    held; where the called library's own line raised, a newer release of it; the plan's twin proves or refuses it."""
    from envaudit.rules import calls

    imports = [
        {"distribution": d, "version": v, "module": d, "status": "ok"}
        for d, v in (("diffrax", "0.7.0"), ("lineax", "0.0.8"))
    ]
    call = {"distribution": "diffrax", "version": "0.7.0", "call": "diffrax.diffeqsolve", "status": "error"}
    call |= {"error": "TracerBoolConversionError: ...", "where": "lineax/_solver/lu.py:61"}
    packages = {"jax": "0.8.2", "jaxlib": "0.8.2", "diffrax": "0.7.0", "lineax": "0.0.8"}
    facts = facts_from({"packages": packages, "jax": {"status": "ok", "imports": imports, "calls": [call]}})
    (found,) = calls.failures(facts)
    assert "lineax>0.0.8" in found.fix.install and "jax==0.8.2" in found.fix.command, found.fix
    own = facts_from(
        {
            "packages": packages,
            "jax": {"status": "ok", "imports": imports, "calls": [call | {"where": "diffrax/_solve.py:9"}]},
        }
    )
    (found,) = calls.failures(own)
    assert "diffrax>0.7.0" in found.fix.install and not any(r.startswith("lineax") for r in found.fix.install)


def test_a_removed_api_off_the_everyday_path_of_a_library_nobody_asked_for_is_said_not_planned() -> None:
    """fix-pass-8's flax 0.10.4 look-alike (pip; the user asked for flax, jax 0.5.3): flax pulls in orbax-checkpoint
    0.11.24, whose checkpointing functions use jax.monitoring.record_scalar and jax.shard_map, both after jax 0.5.3.
    The table's warning is information there, with who pulls it in, as the call is: no plan moves jax and flax for
    a function the program is not known to call. Asked for by name, it is the user's warning, with its fix."""
    packages = {"jax": "0.5.3", "jaxlib": "0.5.3", "flax": "0.10.4", "orbax-checkpoint": "0.11.24"}
    live = {"packages": packages, "requires": {"flax": ["orbax-checkpoint", "jax>=0.5.1"]}}

    def judged(requested: list[str]) -> Any:
        facts = facts_from(live | {"requested": requested, "installers": dict.fromkeys(packages, "pip")})
        return {f.id: f for f in rules.evaluate(facts).findings}["removed-jax-api-in-orbax-checkpoint"]

    pulled = judged(["flax", "jax", "jaxlib"])
    assert pulled.severity == "info" and "pulled in by flax" in pulled.detail and not pulled.fix
    named = judged(["flax", "jax", "jaxlib", "orbax-checkpoint"])
    assert named.severity == "warn" and named.fix
