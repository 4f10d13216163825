"""What the imports probe saw (facts.jax.imports), judged: one failure per distribution that raised, folded under
the rule its message names or that explains it, a library that imported clearing a static suspicion, and a plan
that stops believing an import failed once it moved what the failure was about."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from envaudit.judge import assemble
from envaudit.rules import api_removals, releases
from envaudit.rules.releases import newer_than
from tests.conftest import facts_from
from tests.planfix import requested

JAX_0420 = {"jax": "0.4.20", "jaxlib": "0.4.20", "numpy": "1.26.4", "scipy": "1.17.1"}
TRIL = "AttributeError: module 'scipy.linalg' has no attribute 'tril'"


def outcome(distribution: str, module: str, status: str = "ok", error: str = "", **more: Any) -> dict[str, Any]:
    found = {"distribution": distribution, "version": more.pop("version", "1.0"), "module": module, "status": status}
    return found | ({"error": error} if error else {}) | more


def facts(packages: dict[str, str], *imports: dict[str, Any]) -> Any:
    jax = {"status": "ok", "jax_version": packages.get("jax", ""), "imports": list(imports)}
    return facts_from({"packages": packages, "jax": jax, "origin": "live"})


def report(packages: dict[str, str], *imports: dict[str, Any]) -> Any:
    return assemble.assemble(facts(packages, *imports), mode="audit")


def test_each_distribution_that_raises_is_its_own_failure_with_the_exception_as_the_user_sees_it() -> None:
    found = report(
        {"jax": "0.10.1", "jaxlib": "0.10.1", "mylib": "2.0", "other": "1.0", "quiet": "1.0"},
        outcome(
            "mylib", "mylib", "error", "RuntimeError: mylib needs a newer jax", version="2.0", where="mylib/a.py:3"
        ),
        outcome("mylib", "mylib.sub", "error", "RuntimeError: again", version="2.0"),
        outcome("other", "other", "error", "ValueError: no"),
        outcome("quiet", "quiet", "needs", "quiet needs tensorflow, which is not installed"),
        outcome("fine", "fine"),
    )
    failed = {f.id: f for f in found.findings if f.severity == "fail"}
    assert set(failed) == {"import-fails-mylib", "import-fails-other"}
    detail = failed["import-fails-mylib"].detail
    assert "mylib 2.0 with jax 0.10.1" in detail
    assert "`import mylib` raises RuntimeError: mylib needs a newer jax (at mylib/a.py:3)" in detail
    assert "`import mylib.sub` raises RuntimeError: again" in detail
    assert found.verdict == "fail"


def test_a_library_whose_import_message_a_rule_knows_folds_under_that_rule() -> None:
    said = "AttributeError: module 'jax.interpreters.xla' has no attribute 'xe'"
    found = report({"jax": "0.10.1", "jaxlib": "0.10.1", "mylib": "1.0"}, outcome("mylib", "mylib", "error", said))
    by_id = {f.id: f for f in found.findings}
    assert by_id["import-fails-mylib"].caused_by == "jax-api-missing"
    assert not by_id["jax-api-missing"].caused_by


def test_a_library_whose_import_the_derived_table_explains_is_one_root_with_the_upgrade() -> None:
    """dm-haiku 0.0.12 beside jax 0.10.1 (measured: `import haiku` raises; 0.0.15 imports): the derived table knows
    haiku/_src/transform.py reads jax.interpreters.xla.xe at import, which jax 0.4.36 removed."""
    said = "AttributeError: module 'jax.interpreters.xla' has no attribute 'xe'"
    packages = {"jax": "0.10.1", "jaxlib": "0.10.1", "dm-haiku": "0.0.12"}
    found = report(packages, outcome("dm-haiku", "haiku", "error", said, version="0.0.12"))
    roots = [f for f in found.findings if f.severity == "fail" and not f.caused_by]
    assert [f.id for f in roots] == ["removed-jax-api-in-dm-haiku"]
    assert "jax.interpreters.xla.xe" in roots[0].detail
    assert {f.id: f.caused_by for f in found.findings}["import-fails-dm-haiku"] == "removed-jax-api-in-dm-haiku"
    upgrade = requested(found.plan.fix.command).requirements[0]
    assert upgrade.startswith("dm-haiku>=") and releases.numbers(upgrade.partition(">=")[2]) >= (0, 0, 15)


def test_jax_0420_beside_scipy_117_is_the_tril_rule_and_its_plan_ends_clean() -> None:
    found = report(JAX_0420, outcome("jax", "jax.scipy.linalg", "error", TRIL, version="0.4.20"))
    roots = [f for f in found.findings if f.severity == "fail" and not f.caused_by]
    assert [f.id for f in roots] == ["jax-scipy-tril-scipy-113"]
    assert {f.id: f.caused_by for f in found.findings}["import-fails-jax"] == "jax-scipy-tril-scipy-113"
    assert "scipy<1.13" in requested(found.plan.fix.command).requirements
    assert found.plan.remaining == ()  # scipy moved: the failure that named it no longer holds


def test_a_library_that_fails_because_of_another_is_folded_under_that_root() -> None:
    """optax 0.1.7 imports jax.scipy, whose jax 0.4.20 wraps scipy.linalg.tril, which SciPy 1.17 no longer has: its
    import raises SciPy's AttributeError; the cause is jax beside SciPy, not optax (one root, the tril rule)."""
    packages = {**JAX_0420, "optax": "0.1.7", "chex": "0.1.84"}
    found = report(
        packages,
        outcome("jax", "jax.scipy.linalg", "error", TRIL, version="0.4.20"),
        outcome("optax", "optax", "error", TRIL, version="0.1.7", where="optax/_src/linear_algebra.py:23"),
    )
    roots = [f.id for f in found.findings if f.severity == "fail" and not f.caused_by]
    assert roots == ["jax-scipy-tril-scipy-113"], [(f.id, f.caused_by) for f in found.findings]
    assert {f.id: f.caused_by for f in found.findings}["import-fails-optax"] == "jax-scipy-tril-scipy-113"
    assert found.plan.remaining == ()


def test_an_import_failure_that_nothing_moved_stays_in_the_plan() -> None:
    found = report(
        {"jax": "0.10.1", "jaxlib": "0.10.1", "mylib": "2.0"},
        outcome("mylib", "mylib", "error", "RuntimeError: mylib needs a newer jax"),
    )
    assert "import-fails-mylib" in found.plan.remaining


def test_a_library_that_imported_clears_the_suspicion_that_its_import_breaks() -> None:
    packages = {"jax": "0.4.24", "jaxlib": "0.4.24", "chex": "0.1.82"}  # the table: chex 0.1.82 uses KeyArray
    suspected = api_removals.removed_api_uses("chex")(facts(packages))
    assert suspected and "import chex fails" in suspected[0].detail
    cleared = api_removals.removed_api_uses("chex")(facts(packages, outcome("chex", "chex", version="0.1.82")))
    assert not any("import chex fails" in o.detail for o in cleared)  # what only a call reaches stays
    failed = api_removals.removed_api_uses("chex")(
        facts(packages, outcome("chex", "chex", "error", "AttributeError: x"))
    )
    assert failed and "import chex fails" in failed[0].detail


def test_a_library_that_raises_in_another_librarys_code_folds_under_that_librarys_failure() -> None:
    said = "RuntimeError: the backend is broken"  # no rule knows it: the link is the line that raised
    at = "tensorflow_probability/python/internal/backend/jax/ops.py:681"  # distrax 0.1.9's, measured with jax 0.10.1
    # jax 0.6.1: the tables say nothing of these releases with it, so only the line that raised links them
    packages = {"jax": "0.6.1", "jaxlib": "0.6.1", "distrax": "0.1.9", "tensorflow-probability": "0.25.0"}
    found = report(
        packages,
        outcome("distrax", "distrax", "error", said, version="0.1.9", where=at),
        outcome("tensorflow-probability", "tensorflow_probability", version="0.25.0"),
        outcome("tensorflow-probability", "tensorflow_probability.substrates.jax", "error", said, where=at),
    )
    causes = {f.id: f.caused_by for f in found.findings}
    assert causes == {
        "import-fails-tensorflow-probability": "",
        "import-fails-distrax": "import-fails-tensorflow-probability",
    }
    alone = report(packages, outcome("distrax", "distrax", "error", said, version="0.1.9", where=at))
    assert {f.id: f.caused_by for f in alone.findings} == {"import-fails-distrax": ""}  # tfp imported: no blame


def test_a_rule_that_declares_the_import_its_consequence_takes_the_messages_rule_with_it() -> None:
    """neural-tangents 0.6.5 beside jax 0.10.1 (measured): its rule names its import, whose message jax-api-missing
    knows too; one root cause, the rule with the fix."""
    said = "ImportError: cannot import name 'Jaxpr' from 'jax.core' (site-packages/jax/core.py)"
    packages = {"jax": "0.10.1", "jaxlib": "0.10.1", "neural-tangents": "0.6.5"}
    found = report(packages, outcome("neural-tangents", "neural_tangents", "error", said, version="0.6.5"))
    causes = {f.id: f.caused_by for f in found.findings if f.severity == "fail"}
    assert causes["nt-065-jax-060-import"] == ""
    assert causes["import-fails-neural-tangents"] == causes["jax-api-missing"] == "nt-065-jax-060-import"


def test_a_lazy_top_level_that_imported_does_not_clear_a_submodule_s_entry_its_own_import_does() -> None:
    """transformers 4.31.0 with jax 0.4.18: `import transformers` works (a lazy module), its Flax models use
    jnp.DeviceArray (api-removals.toml names the module). The top level's import no longer clears that entry, and
    building stacks asks for the module itself (claimed_modules), whose working import would."""
    packages = {"jax": "0.4.18", "jaxlib": "0.4.18", "transformers": "4.31.0"}
    module = "transformers.models.bart.modeling_flax_bart"
    assert api_removals.claimed_modules(facts(packages)) == {"transformers": [module]}
    top = outcome("transformers", "transformers", version="4.31.0")
    assert api_removals.removed_api_uses("transformers")(facts(packages, top))  # still condemned
    assert not api_removals.contradicted(facts(packages, top))
    itself = outcome("transformers", module, version="4.31.0")
    assert not api_removals.removed_api_uses("transformers")(facts(packages, top, itself))  # measured working
    assert api_removals.contradicted(facts(packages, top, itself))  # and the entry is said wrong for this pair


@given(
    release=st.lists(st.integers(0, 30), min_size=1, max_size=3),
    pre=st.one_of(st.none(), st.tuples(st.sampled_from(["a", "b", "rc"]), st.integers(0, 9))),
    dev=st.one_of(st.none(), st.integers(0, 9)),
    later=st.lists(st.integers(0, 31), min_size=1, max_size=4),
    later_pre=st.one_of(st.none(), st.tuples(st.sampled_from(["a", "b", "rc"]), st.integers(0, 9))),
)
def test_a_library_moved_past_its_release_may_take_the_next_one_even_a_pre_release(
    release: list[int],
    pre: tuple[str, int] | None,
    dev: int | None,
    later: list[int],
    later_pre: tuple[str, int] | None,
) -> None:
    """chromax 0.0.3a0 (fix pass 3): `chromax>0.0.3a0` had pip 23.2 answer "No matching distribution found",
    chromax having pre-releases only (0.0.4a0 next). The specifier excludes the installed release, admits every
    later one, and names a pre-release where the installed one is, so that an installer takes them (PEP 440)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    text = (
        ".".join(map(str, release)) + (f"{pre[0]}{pre[1]}" if pre else "") + (f".dev{dev}" if dev is not None else "")
    )
    spec = SpecifierSet(newer_than(text))
    candidate = Version(".".join(map(str, later)) + (f"{later_pre[0]}{later_pre[1]}" if later_pre else ""))
    assert not spec.contains(text, prereleases=True)
    assert spec.contains(candidate, prereleases=True) == (candidate > Version(text))
    if pre is not None or dev is not None:
        assert spec.prereleases  # what makes pip and uv take a pre-release for it
