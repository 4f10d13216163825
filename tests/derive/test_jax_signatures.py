"""The keyword arguments a jax release's callables take (derive/sources/jax_signatures.py), read from sources as jax
wrote them at its tags (trimmed to the lines that decide), then resolved from the public name the way a library
reaches it."""

from __future__ import annotations

import textwrap
from typing import Any

from derive.sources import jax_api, jax_signatures

# jax-v0.4.26 jax/_src/numpy/lax_numpy.py#L1297-L1299 and jax/numpy/__init__.py#L65
CLIP_0_4_26 = """
@util._wraps(np.clip, skip_params=['out'])
@jit
def clip(a: ArrayLike, a_min: ArrayLike | None = None,
         a_max: ArrayLike | None = None, out: None = None) -> Array:
  util.check_arraylike("clip", a)
"""
# jax-v0.4.27 jax/_src/numpy/lax_numpy.py#L1528-L1553: min/max new, a/a_min/a_max deprecated
CLIP_0_4_27 = """
_DEPRECATED_CLIP_ARG = DeprecatedArg()
@util.implements(
  np.clip,
  skip_params=['a', 'a_min'],
)
@jit
def clip(
  x: ArrayLike | None = None, # Default to preserve backwards compatability
  /,
  min: ArrayLike | None = None,
  max: ArrayLike | None = None,
  *,
  a: ArrayLike | DeprecatedArg = _DEPRECATED_CLIP_ARG,
  a_min: ArrayLike | None | DeprecatedArg = _DEPRECATED_CLIP_ARG,
  a_max: ArrayLike | None | DeprecatedArg = _DEPRECATED_CLIP_ARG
) -> Array:
  x = a if not isinstance(a, DeprecatedArg) else x
"""
NUMPY = "from jax._src.numpy.lax_numpy import (\n    choose as choose,\n    clip as clip,\n)\n"
PACKAGE = "from jax import numpy as numpy\nfrom jax._src.api import jit as jit\n"


def release(sources: dict[str, str]) -> dict[str, Any]:
    """The surface of a release made of these modules (jax_api.read_module, children linked as read_release does)."""
    packages = {name.rpartition(".")[0] for name in sources}
    modules = {
        name: jax_api.read_module(textwrap.dedent(text).encode(), name, name in packages)
        for name, text in sources.items()
    }
    for name in modules:
        parent, _, child = name.rpartition(".")
        if parent in modules:
            modules[parent].setdefault("children", []).append(child)
    for surface in modules.values():
        surface["children"] = sorted(surface.get("children", []))
    return {"modules": modules}


def clip_release(source: str) -> dict[str, Any]:
    return release({"jax": PACKAGE, "jax.numpy": NUMPY, "jax._src.numpy.lax_numpy": source})


def takes(surface: dict[str, Any], dotted: str, keyword: str) -> bool:
    return jax_signatures.accepts(jax_signatures.signature(surface["modules"], dotted), keyword)


def test_jnp_clip_took_max_first_in_0_4_27_and_kept_a_max_deprecated() -> None:
    """blackjax 1.2.1 calls `jnp.clip(..., max=1)` (blackjax/mcmc/proposal.py:156): a TypeError with jax 0.4.26."""
    old, new = clip_release(CLIP_0_4_26), clip_release(CLIP_0_4_27)
    assert not takes(old, "jax.numpy.clip", "max") and takes(old, "jax.numpy.clip", "a_max")
    assert takes(new, "jax.numpy.clip", "max") and takes(new, "jax.numpy.clip", "a_max")
    assert not takes(new, "jax.numpy.clip", "x")  # positional-only: never a keyword


def test_the_last_def_wins_over_overload_stubs_and_a_wrapping_assignment_keeps_it() -> None:
    """jax-v0.9.0 jax/_src/api.py#L162-L215 and #L356-L359: two @overload stubs, the def (abstracted_axes gone, fun
    positional-only), then `jit = api_boundary(jit, ...)` under `if not TYPE_CHECKING:`."""
    api = """
        @overload
        def jit(fun: Callable, /, *, in_shardings: Any = ..., static_argnums: Any = ...) -> Any: ...
        @overload
        def jit(*, in_shardings: Any = ..., static_argnums: Any = ...) -> Any: ...
        def jit(fun = NotSpecified(), /, *, in_shardings = UNSPECIFIED, static_argnums = None, inline = False):
          return pjit.make_jit(fun)
        jit.__doc__ = "..."
        if not TYPE_CHECKING:
          jit = api_boundary(jit, repro_api_name="jax.jit")
        """
    surface = release({"jax": PACKAGE, "jax._src": "", "jax._src.api": api})
    assert jax_signatures.signature(surface["modules"], "jax.jit") == [
        "def",
        ["in_shardings", "static_argnums", "inline"],
        False,
    ]
    assert not takes(surface, "jax.jit", "abstracted_axes") and not takes(surface, "jax.jit", "fun")


def test_a_name_bound_differently_in_a_branch_is_unknown_and_takes_anything() -> None:
    """jax-v0.4.6 jax/_src/api.py#L165 and #L291-L292: `def jit(...)`, then another under `if
    jax.config.jax_jit_pjit_api_merge:`: which one runs depends on the configuration."""
    api = """
        def jit(fun, static_argnums=None, abstracted_axes=None):
          pass
        if jax.config.jax_jit_pjit_api_merge:
          def jit(fun, in_shardings=None, static_argnums=None, abstracted_axes=None):
            pass
        """
    surface = release({"jax": PACKAGE, "jax._src": "", "jax._src.api": api})
    assert jax_signatures.signature(surface["modules"], "jax.jit") is None
    assert takes(surface, "jax.jit", "in_shardings") and takes(surface, "jax.jit", "anything")


def test_what_is_not_a_plain_def_takes_anything() -> None:
    """A ufunc object (jax-v0.9.0 jax/_src/numpy/ufuncs.py#L1208: `@binary_ufunc(...) def add(x, y, /)`, whose
    call takes out= and where=), a value, a class whose __init__ is its base's; **kwargs takes anything."""
    source = """
        @binary_ufunc(identity=0, reduce=reductions.sum)
        def add(x, y, /):
          return lax.add(x, y)
        sin = ufunc(_sin, name="sin", nin=1)
        class Base:
          def __init__(self, shape, *, sharding=None):
            pass
        class Derived(Base):
          pass
        def flexible(x, **kwargs):
          pass
        """
    surface = release({"jax": PACKAGE, "jax.numpy": "from jax._src.numpy.lax_numpy import *\n",
                       "jax._src.numpy.lax_numpy": source})  # fmt: skip
    modules = surface["modules"]
    assert jax_signatures.signature(modules, "jax._src.numpy.lax_numpy.add") is None
    assert jax_signatures.signature(modules, "jax._src.numpy.lax_numpy.sin") is None
    assert jax_signatures.signature(modules, "jax._src.numpy.lax_numpy.Derived") is None
    assert jax_signatures.signature(modules, "jax.numpy.Base") == ["def", ["shape", "sharding"], False]  # (star)
    assert takes(surface, "jax.numpy.flexible", "anything")


def test_a_keyword_added_later_is_refused_before() -> None:
    """jax-v0.4.6 jax/_src/tree_util.py#L545-L548 against jax-v0.4.7 #L608-L617: flatten_func is new in 0.4.7;
    equinox 0.10.4 passes it (equinox/_module.py:113), and declares jax>=0.4.4."""
    before = """
        def register_pytree_with_keys(
            nodetype: Type[T],
            flatten_with_keys: Callable[[T], Tuple[Iterable[Tuple[KeyPath, _Children]], _AuxData]],
            unflatten_func: Callable[[_AuxData, _Children], T]):
          pass
        """
    after = before.replace("_Children], T]):", "_Children], T],\n    flatten_func=None):")
    public = "from jax._src.tree_util import (\n    register_pytree_with_keys as register_pytree_with_keys,\n)\n"
    for source, taken in ((before, False), (after, True)):
        surface = release({"jax": PACKAGE, "jax.tree_util": public, "jax._src": "", "jax._src.tree_util": source})
        assert takes(surface, "jax.tree_util.register_pytree_with_keys", "flatten_func") is taken


def test_a_wrapper_that_passes_everything_on_is_the_function_it_calls() -> None:
    source = """
        def _impl(x, *, axis=None):
          pass
        def public(*args, **kwargs):
          \"\"\"Docs.\"\"\"
          return _impl(*args, **kwargs)
        alias = public
        bound = functools.partial(_impl, axis=0)
        def adds(*args, **kwargs):
          return _impl(*args, extra=1, **kwargs)
        """
    surface = release({"jax": PACKAGE, "jax.mod": source})
    modules = surface["modules"]
    for name in ("public", "alias", "bound"):
        assert jax_signatures.signature(modules, f"jax.mod.{name}") == ["def", ["x", "axis"], False], name
    assert takes(surface, "jax.mod.adds", "anything")  # it does more than pass them on: its own **kwargs
