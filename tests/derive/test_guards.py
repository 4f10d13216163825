"""The condition a guarded jax use runs under (derive/sources/guards.py, built by derive/sources/library_uses.py)
and its value on a jax release: the tests libraries write, quoted from their wheels, evaluated three-valued."""

from __future__ import annotations

import ast
import textwrap

import pytest

from derive.sources import guards, library_uses


def condition(test: str) -> guards.Condition:
    return guards.condition(ast.parse(test, mode="eval").body, {"jax": "jax", "jnp": "jax.numpy"})


def on(
    cond: guards.Condition, version: str, has: frozenset[str] = frozenset(), refuses: frozenset[str] = frozenset()
) -> object:
    """The condition on a release of that version, which has the names given and refuses the keywords given."""
    return guards.evaluate(cond, lambda n: n in has, lambda api, k: f"{api}({k}=)" not in refuses, version)


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        # equinox 0.13.2 equinox/internal/_primitive.py:345
        ("jax.__version_info__ >= (0, 5, 1)", {"version": [">=", "0.5.1", "tuple"]}),
        # optax 0.2.8 optax/tree_utils/_tree_math.py:127: a string comparison, as Python makes it
        ("jax.__version__ < '0.7.2'", {"version": ["<", "0.7.2", "str"]}),
        # skrl's playground_envs.py:35
        ("version.parse(jax.__version__) >= version.parse('0.7.0')", {"version": [">=", "0.7.0", "tuple"]}),
        ("(0, 4, 30) <= jax.__version_info__", {"version": [">=", "0.4.30", "tuple"]}),
        # keras 3.15.1 keras/src/callbacks/orbax_checkpoint.py:21
        ("not hasattr(jax.monitoring, 'record_scalar')", {"not": {"has": "jax.monitoring.record_scalar"}}),
        # kfac-jax 0.0.8 kfac_jax/_src/optimizer.py:31: an option asked for by its name
        ("'jax_pmap_shmap_merge' in jax.config.values", {"has": "jax.config.jax_pmap_shmap_merge"}),
        ("'Shape' not in dir(jax.core)", {"not": {"has": "jax.core.Shape"}}),
        ("getattr(jnp, 'unstack', None) is None", {"not": {"has": "jax.numpy.unstack"}}),
        # flax 0.12.x flax/nnx/variablelib.py:54
        ("hasattr(jax, 'new_ref') and hasattr(jax, 'Ref')", {"all": [{"has": "jax.new_ref"}, {"has": "jax.Ref"}]}),
    ],
)
def test_the_tests_libraries_write(test: str, expected: guards.Condition) -> None:
    assert condition(test) == expected


def test_a_test_of_the_library_s_own_values_is_unknown() -> None:
    """A variable holding the version (torchax's `_jax_version < (0, 4, 31)`), another object's attribute."""
    for test in ("_jax_version < (0, 4, 31)", "hasattr(aval, 'to_tangent_aval')", "version == 'v2'"):
        assert "unknown" in condition(test), test
        assert on(condition(test), "0.4.30") is None


def test_evaluation_on_releases() -> None:
    assert on(condition("jax.__version_info__ >= (0, 5, 1)"), "0.5.1") is True
    assert on(condition("jax.__version_info__ >= (0, 5, 1)"), "0.4.38") is False
    # as strings, "0.10.0" < "0.7.2": optax 0.2.8's _vdot takes its old branch on jax 0.10.0 and later
    assert on(condition("jax.__version__ < '0.7.2'"), "0.10.0") is True
    assert on(condition("jax.__version__ < '0.7.2'"), "0.8.0") is False
    asked = condition("hasattr(jax, 'new_ref') and hasattr(jax, 'Ref')")
    assert on(asked, "0.8.0", has=frozenset({"jax.new_ref", "jax.Ref"})) is True
    assert on(guards.negate(asked), "0.8.0", has=frozenset({"jax.new_ref"})) is True


def test_unknown_is_neither_true_nor_false_but_cannot_hide_a_known_answer() -> None:
    mixed = condition("hasattr(jax, 'a') and flag")
    assert on(mixed, "0.5.0", has=frozenset({"jax.a"})) is None  # the branch may or may not run: not counted
    assert on(guards.negate(mixed), "0.5.0") is True  # without jax.a the else runs whatever the flag
    assert on(condition("hasattr(jax, 'a') or flag"), "0.5.0", has=frozenset({"jax.a"})) is True


def test_decidable_only_where_some_condition_reads_jax() -> None:
    assert guards.decidable([condition("hasattr(jax, 'a') and flag")])
    assert not guards.decidable([condition("flag"), condition("hasattr(jax, 'a')")])


def found(source: str) -> list[library_uses.Use]:
    return library_uses.uses_in(textwrap.dedent(source), "lib.mod")


def test_the_else_of_a_hasattr_runs_where_jax_lacks_the_name() -> None:
    uses = {u.api: u for u in found(
        """
        import jax
        if hasattr(jax.tree_util, "register_dataclass"):
            X = jax.tree_util.register_dataclass
        else:
            X = jax.tree_util.register_pytree_node
        """
    )}  # fmt: skip
    asked: guards.Condition = {"has": "jax.tree_util.register_dataclass"}
    assert uses["jax.tree_util.register_dataclass"].guard == (asked,)
    assert uses["jax.tree_util.register_pytree_node"].guard == ({"not": asked},)
    assert not any(u.guarded for u in uses.values())


def test_a_try_catches_what_its_body_raises_and_its_handler_runs_where_that_fails() -> None:
    """The fallback of version-compatible code (jax-md 0.2.29's `except ImportError: from jax.core import ...`):
    the import tried never breaks; the fallback runs where it failed; the try's else where it worked."""
    uses = found(
        """
        try:
            from jax.extend.core import Primitive
        except ImportError:
            from jax.core import Primitive
        else:
            import jax.extend
        """
    )
    tried, fallback, otherwise = uses
    assert tried.api == "jax.extend.core.Primitive" and tried.guarded
    assert fallback.api == "jax.core.Primitive" and not fallback.guarded
    assert fallback.guard == ({"not": {"has": "jax.extend.core.Primitive"}},)
    assert otherwise.guard == ({"has": "jax.extend.core.Primitive"},)


def test_a_keyword_tried_under_except_type_error() -> None:
    """`jnp.clip(x, max=1)` refused (jax < 0.4.27) raises TypeError: a handler of it runs where it is refused."""
    uses = found(
        """
        import jax.numpy as jnp
        def f(x):
            try:
                return jnp.clip(x, max=1)
            except TypeError:
                return jnp.clip(x, a_max=1)
        """
    )
    keywords = [(u.keyword, u.guarded, u.guard) for u in uses if u.keyword]
    assert keywords == [
        ("max", True, ()),
        ("a_max", False, ({"not": {"accepts": ["jax.numpy.clip", "max"]}},)),
    ]


def test_a_function_defined_in_a_try_is_not_caught_by_it() -> None:
    """The body of a def runs on its call, long after the `try` around the def ended."""
    (use,) = found("import jax\ntry:\n    def f():\n        return jax.core.Shape\nexcept AttributeError:\n    pass\n")
    assert not use.guarded and not use.guard


def test_after_a_guard_that_returns_the_rest_runs_where_it_is_false() -> None:
    """optax 0.2.8's _vdot: `if jax.__version__ < '0.7.2': return jnp.vdot(...)`, then jax.typeof and
    tensordot's out_sharding for the newer releases."""
    uses = found(
        """
        import jax
        import jax.numpy as jnp
        def _vdot(a, b):
            if jax.__version__ < '0.7.2':
                return jnp.vdot(a, b)
            mesh = jax.typeof(a).sharding.mesh
            return jnp.tensordot(a, b, a.ndim, out_sharding=None)
        """
    )
    old: guards.Condition = {"version": ["<", "0.7.2", "str"]}
    by_api = {(u.api, u.keyword): u.guard for u in uses}
    assert by_api[("jax.numpy.vdot", "")] == (old,)
    assert by_api[("jax.typeof", "")] == ({"not": old},)
    assert by_api[("jax.numpy.tensordot", "out_sharding")] == ({"not": old},)


def test_keywords_of_a_call_and_of_a_partial_of_a_jax_callable() -> None:
    uses = found(
        """
        import functools, jax
        import jax.numpy as jnp
        f = functools.partial(jax.jit, static_argnames=("n",), abstracted_axes=None)
        g = jnp.clip(1, max=2, **options)
        jax.config.update("jax_enable_x64", True)
        """
    )
    assert {(u.api, u.keyword) for u in uses if u.keyword} == {
        ("jax.jit", "static_argnames"),
        ("jax.jit", "abstracted_axes"),
        ("jax.numpy.clip", "max"),
    }


def test_setting_an_attribute_of_jax_reads_only_what_it_is_set_on() -> None:
    """keras 3.15.1 keras/src/callbacks/orbax_checkpoint.py:21-22 gives an older jax the function it lacks: `if not
    hasattr(jax.monitoring, "record_scalar"): jax.monitoring.record_scalar = lambda *args, **kwargs: None`."""
    uses = found(
        """
        import jax
        if not hasattr(jax.monitoring, "record_scalar"):
            jax.monitoring.record_scalar = lambda *args, **kwargs: None
        """
    )
    assert "jax.monitoring.record_scalar" not in {u.api for u in uses}
    assert [u.guard for u in uses if u.api == "jax.monitoring"] == [
        (),
        ({"not": {"has": "jax.monitoring.record_scalar"}},),
    ]


def test_a_metaclass_runs_when_a_class_statement_uses_it() -> None:
    """equinox 0.10.4 equinox/_module.py:113 and :253: `_ModuleMeta.__new__` registers each Module with
    register_pytree_with_keys(flatten_func=...), and `class Module(metaclass=_ModuleMeta)` runs it at import."""
    uses = found(
        """
        import jax.tree_util as jtu
        class _ModuleMeta(type):
            def __new__(mcs, name, bases, dict_):
                cls = super().__new__(mcs, name, bases, dict_)
                jtu.register_pytree_with_keys(cls, flatten_with_keys=f, flatten_func=g, unflatten_func=h)
                return cls
        class Module(metaclass=_ModuleMeta):
            pass
        """
    )
    assert {(u.api, u.keyword, u.when) for u in uses if u.keyword} == {
        ("jax.tree_util.register_pytree_with_keys", k, "import")
        for k in ("flatten_with_keys", "flatten_func", "unflatten_func")
    }
