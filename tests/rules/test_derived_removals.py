"""The derivation of api-removals.toml (derive/): its ast reading on small sources (aliases, import time or
call time, each guard, annotations with and without `from __future__ import annotations`, jax's deprecation
tables), and, with the network, a sample re-derived from the real wheels against the committed table."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path
from typing import Any, cast

import pytest
from packaging.specifiers import SpecifierSet

from derive.confirm import api_removals as confirm
from derive.confirm import calls as confirm_calls
from derive.sources import jax_api, library_uses
from derive.tables import api_removals
from envaudit.rules.api_removals import REMOVALS, Use
from tests.conftest import derive_cache, facts_from

ROOT = Path(__file__).resolve().parents[2]


def uses(source: str, module: str = "lib.mod") -> list[tuple[str, str, str, bool]]:
    """(api, when, function, whether it runs under a condition or never breaks) of each name use."""
    found = library_uses.uses_in(textwrap.dedent(source), module)
    return sorted((u.api, u.when, u.function, u.guarded or bool(u.guard)) for u in found if not u.keyword)


def test_aliases_of_jax_are_followed() -> None:
    found = uses(
        """
        import jax
        import jax.numpy as jnp
        from jax import lax
        from jax.interpreters import xla
        from numpy import linalg
        x = jnp.zeros(3).astype
        y = xla.xe.PjitFunction
        z = lax.scan
        w = linalg.norm
        v = jax.random.KeyArray
        """
    )
    apis = [api for api, *_ in found]
    assert apis == [
        "jax.interpreters.xla",  # the import itself
        "jax.interpreters.xla.xe.PjitFunction",
        "jax.lax",
        "jax.lax.scan",
        "jax.numpy",
        "jax.numpy.zeros",
        "jax.random.KeyArray",
    ]


def test_a_name_bound_to_something_else_too_is_not_jax() -> None:
    assert uses("from jax import config\nfrom absl.flags import config\nconfig.x\n") == [
        ("jax.config", "import", "", False)
    ]


def test_import_time_and_call_time() -> None:
    found = uses(
        """
        import jax

        @jax.jit
        def f(x=jax.numpy.float32):
            return jax.tree_map(x)

        class C:
            key: jax.random.KeyArray
            def method(self):
                def inner():
                    return jax.lax.cond
                return inner
        """
    )
    assert found == [
        ("jax.jit", "import", "", False),
        ("jax.lax.cond", "call", "lib.mod.C.method", False),
        ("jax.numpy.float32", "import", "", False),
        ("jax.random.KeyArray", "import", "", False),
        ("jax.tree_map", "call", "lib.mod.f", False),
    ]


def test_a_helper_called_at_module_level_runs_at_import() -> None:
    found = uses("import jax\ndef define(n):\n    return jax.config.define_bool_state(n)\nFLAG = define('x')\n")
    assert found == [("jax.config.define_bool_state", "import", "lib.mod.define", False)]


def test_config_update_uses_the_option() -> None:
    found = uses("import jax\ndef f():\n    jax.config.update('jax_enable_x64', True)\n")
    assert ("jax.config.jax_enable_x64", "call", "lib.mod.f", False) in found


@pytest.mark.parametrize(
    "guard",
    [
        "try:\n    X = jax.core.Shape\nexcept AttributeError:\n    X = None\n",
        "try:\n    from jax.core import Shape\nexcept (ValueError, ImportError):\n    Shape = None\n",
        "try:\n    X = jax.core.Shape\nexcept Exception:\n    X = None\n",
        "try:\n    X = jax.core.Shape\nexcept:\n    X = None\n",
        "if hasattr(jax.core, 'Shape'):\n    X = jax.core.Shape\n",
        "if jax.__version_info__ < (0, 4, 29):\n    X = jax.core.Shape\n",
        "if Version(jax.__version__) < Version('0.4.29'):\n    X = jax.core.Shape\nelse:\n    X = jax.core.Shape\n",
        "X = jax.core.Shape if hasattr(jax.core, 'Shape') else None\n",
        # chex 0.1.92's _check_sharding
        "def f(x):\n    return hasattr(jax.core, 'Shape') and isinstance(x, jax.core.Shape)\n",
        # the fallback of version-compatible code (jax-md 0.2.29, flax 0.12.12)
        "try:\n    from jax.extend import Shape\nexcept ImportError:\n    X = jax.core.Shape\n",
        # flax 0.12.10's fix for jax 0.11.2 (flax/nnx/variablelib.py:286): the fallback of a getattr with a default
        "X = getattr(jax.core, 'HiPrim', None) or jax.core.Shape\n",
        "X = hasattr(jax.core, 'HiPrim') or jax.core.Shape\n",
        # an option asked for before it is read
        "def f():\n    if 'jax_shape' in jax.config.values:\n        return jax.core.Shape\n",
        "if 'Shape' in dir(jax.core):\n    X = jax.core.Shape\n",
        # the fallback for an object without the attribute (equinox 0.13.8's _none_to_zero: old jax's avals)
        "def f(aval):\n    if hasattr(aval, 'to_tangent_aval'):\n        return aval\n    else:\n"
        "        return jax.core.Shape(aval)\n",
    ],
)
def test_each_guard(guard: str) -> None:
    found = [u for u in uses("import jax\nfrom packaging.version import Version\n" + guard) if u[0] == "jax.core.Shape"]
    assert found and all(u[3] for u in found), found


def test_what_is_no_guard() -> None:
    found = uses(
        """
        import sys, jax
        try:
            X = jax.core.Shape
        except ValueError:
            pass
        try:  # an attribute raises AttributeError, which an ImportError handler does not catch
            X = jax.core.Shape
        except ImportError:
            pass
        if sys.version_info >= (3, 11):
            Y = jax.core.Shape
        Z = jax.core.Shape and hasattr(jax.core, "Shape")
        W = getattr(obj, "Shape", None) or jax.core.Shape  # asks another object, not jax
        V = "x" in options or jax.core.Shape
        def g(key, cache):  # flax 0.11.0's _graph_unflatten: the else of a test of its own dict runs with any jax
            if key in cache:
                return cache[key]
            else:
                return jax.core.Shape
        def f(array):  # penzai 0.1.5: a hasattr of the array, not of jax (measured: raises with jax 0.7.0)
            if hasattr(array, "sharding") and hasattr(array.sharding, "_device_assignment"):
                return jax.core.Shape
        """
    )
    assert [u[3] for u in found if u[0] == "jax.core.Shape"] == [False] * 8


def test_type_checking_never_runs() -> None:
    assert uses("import typing, jax\nif typing.TYPE_CHECKING:\n    X = jax.core.Shape\n") == []


def test_annotations_with_and_without_postponed_evaluation() -> None:
    body = """
        import jax
        def f(key: jax.random.KeyArray) -> jax.Array:
            local: jax.core.Shape = 1
            return key
        class C:
            field: jax.numpy.DeviceArray
        """
    assert uses(body) == [
        ("jax.Array", "import", "", False),
        ("jax.numpy.DeviceArray", "import", "", False),
        ("jax.random.KeyArray", "import", "", False),
    ]  # a local variable's annotation is never evaluated
    assert uses("from __future__ import annotations\n" + textwrap.dedent(body)) == []
    assert uses("import jax\ndef f(key: 'jax.random.KeyArray'): pass\n") == []  # a string is not evaluated


def test_public_names_of_functions_from_the_packages_reexports() -> None:
    reexported = {"haiku._src.transform.transform": ["haiku.transform", "haiku.experimental.transform"]}
    assert library_uses.public_name("haiku._src.transform.transform", reexported) == "haiku.transform"
    reexported = {"flax.linen.module.Module": ["flax.linen.Module"]}
    assert library_uses.public_name("flax.linen.module.Module.init", reexported) == "flax.linen.Module.init"
    assert library_uses.public_name("haiku._src.dot._helper", {}) == "haiku._src.dot._helper"


def test_package_code_only() -> None:
    assert library_uses.package_file("flax/linen/module.py")
    assert not any(
        library_uses.package_file(p)
        for p in ["flax/linen/module_test.py", "tests/test_x.py", "flax/examples/a.py", "docs/conf.py", "setup.py"]
    )
    # a wheel's top-level module is installed code (klujax is one file); an sdist's is a build script (noxfile.py)
    assert library_uses.package_file("klujax.py", wheel=True) and not library_uses.package_file("noxfile.py")
    assert not library_uses.package_file("setup.py", wheel=True)


def test_the_jax_requirement_pip_enforces() -> None:
    fields = {"Requires-Dist": ["jax>=0.4.27", "jaxlib", "jax[cuda]>=0.5; extra == 'gpu'"]}
    assert library_uses.jax_requirement(fields) == ">=0.4.27"
    assert library_uses.jax_requirement({"Requires-Dist": ["numpy"]}) is None


SYNTHETIC = """
from jax._src.core import Shape as _Shape, Tracer as Tracer
from jax._src import deprecations as _deps
import typing
if typing.TYPE_CHECKING:
    from jax._src.core import gone as gone
_deprecations = {
    "gone": ("jax.mod.gone was removed in JAX v0.4.36. " "Use jax.other instead.", None),
    "Shape": (("jax.mod.Shape is deprecated."), _Shape),
}
if typing.TYPE_CHECKING:
    Shape = _Shape
else:
    __getattr__ = _deps.deprecation_getattr(__name__, _deprecations)
def helper(): pass
temporary = 1
del temporary
__all__ = ["Tracer"]
"""


def synthetic_release() -> dict[str, Any]:
    module = jax_api.read_module(SYNTHETIC.encode(), "jax.mod", False)
    package = jax_api.read_module(b"from jax import mod as mod\n", "jax", True)
    package["children"], module["children"] = ["mod"], []
    return {"modules": {"jax": package, "jax.mod": module}, "config_options": ["jax_x"], "config_members": ["update"]}


def test_the_deprecation_table_reader() -> None:
    release = synthetic_release()
    module = release["modules"]["jax.mod"]
    assert module["removed"] == {"gone": "jax.mod.gone was removed in JAX v0.4.36. Use jax.other instead."}
    assert module["deprecated"] == {"Shape": "jax.mod.Shape is deprecated."}
    assert "gone" not in module["names"] and "temporary" not in module["names"] and not module["open"]
    assert module["all"] == ["Tracer"]
    assert jax_api.lookup(release, "jax.mod.gone") == ("jax.mod.gone", module["removed"]["gone"])
    assert jax_api.lookup(release, "jax.mod.Shape") == (None, "")  # deprecated: still works
    assert jax_api.lookup(release, "jax.mod.Tracer.anything") == (None, "")  # past a value: not read
    assert jax_api.lookup(release, "jax.mod.helper") == (None, "")
    assert jax_api.lookup(release, "jax.mod.missing.x") == ("jax.mod.missing", "")
    assert jax_api.lookup(release, "jax.config.jax_x") == (None, "")
    assert jax_api.lookup(release, "jax.config.define_bool_state") == ("jax.config.define_bool_state", "")


def test_a_name_configs_getattr_answers_deprecated_is_there() -> None:
    """jax 0.4.20 to 0.4.24: Config.__getattr__ returns the module's define_bool_state for the names of
    _CONFIG_DEPRECATIONS, with a DeprecationWarning (measured: flax 0.7.5 imports with jax 0.4.24)."""
    source = (
        "_CONFIG_DEPRECATIONS = {'define_bool_state', 'not_bound'}\n"
        "class Config:\n"
        "    def __getattr__(self, name):\n"
        "        fn = None\n"
        "        if name in _CONFIG_DEPRECATIONS:\n"
        "            fn = globals().get(name, None)\n"
        "        return fn\n"
        "def define_bool_state(name, default, help): pass\n"
    )
    assert jax_api.config_deprecated({"jax._src.config": ast.parse(source)}) == ["define_bool_state"]
    release = synthetic_release()
    assert jax_api.lookup(release, "jax.config.define_bool_state")[0] == "jax.config.define_bool_state"
    release["config_deprecated"] = ["define_bool_state"]
    assert jax_api.lookup(release, "jax.config.define_bool_state") == (None, "")


def test_a_star_import_from_outside_jax_leaves_a_module_open() -> None:
    modules = {
        "jax.a": jax_api.read_module(b"from numpy import *\n", "jax.a", False),
        "jax.b": jax_api.read_module(b"from jax.c import *\n", "jax.b", False),
        "jax.c": jax_api.read_module(b"x = 1\n_y = 2\n", "jax.c", False),
    }
    jax_api.resolve_stars(modules)
    assert modules["jax.a"]["open"] and not modules["jax.b"]["open"]
    assert modules["jax.b"]["names"] == ["x"]


def test_config_options_of_each_spelling() -> None:
    import ast

    source = "enable_x64 = bool_state(name='jax_enable_x64')\nconfig.define_bool_state('jax_old', False, '')\n"
    source += "flags.DEFINE_bool('jax_flag', False, '')\nx = int_state('jax_int', 1, '')\n"
    assert jax_api.config_options({"m": ast.parse(source)}) == ["jax_enable_x64", "jax_flag", "jax_int", "jax_old"]


def test_what_import_of_the_package_reaches() -> None:
    """flax 0.6.5: `import flax` runs flax.linen, not flax.training.orbax_utils, whose jax.experimental.maps.Mesh
    (gone in jax 0.4.11) breaks only its own import; a namespace package's modules are the top (orbax.checkpoint)."""
    sources = {
        ("flax", True): "from . import linen\nimport flax.core.scope\n",
        ("flax.linen", True): "from .module import Module\ndef f():\n    from flax import training\n",
        ("flax.linen.module", False): "import jax\n",
        ("flax.core", True): "",
        ("flax.core.scope", False): "try:\n    from flax.core import frozen\nexcept ImportError:\n    pass\n",
        ("flax.core.frozen", False): "",
        ("flax.training", True): "",
        ("flax.training.orbax_utils", False): "from jax.experimental.maps import Mesh\n",
        ("orbax.checkpoint", True): "from orbax.checkpoint import utils\n",
        ("orbax.checkpoint.utils", False): "",
    }
    imports = {m: library_uses.imported_at_import(ast.parse(src), m, pkg) for (m, pkg), src in sources.items()}
    assert library_uses.reached(imports) == {
        "flax",
        "flax.linen",
        "flax.linen.module",
        "flax.core",
        "flax.core.scope",
        "flax.core.frozen",
        "orbax.checkpoint",
        "orbax.checkpoint.utils",
    }


def test_a_lazy_package_s_type_checking_imports_are_not_reached() -> None:
    """transformers 4.31.0: its __init__ names every model under `if TYPE_CHECKING:` and hands the rest to a lazy
    module, so `import transformers` runs none of modeling_flax_bart, whose jnp.DeviceArray (gone in jax 0.4.14)
    breaks only `from transformers import FlaxBartModel`; read as reached, a working `import transformers` cleared
    the entry and the plan moved to a transformers without Flax models, said OK."""
    sources = {
        ("lazy", True): (
            "from typing import TYPE_CHECKING\nfrom .utils import LazyModule\nif TYPE_CHECKING:\n"
            "    from .models.bart import FlaxBartModel\nelse:\n    from . import utils\n"
        ),
        ("lazy.utils", False): "",
        ("lazy.models", True): "",
        ("lazy.models.bart", True): "from .modeling_flax_bart import FlaxBartModel\n",
        ("lazy.models.bart.modeling_flax_bart", False): "import jax.numpy as jnp\nX = jnp.DeviceArray\n",
    }
    imports = {m: library_uses.imported_at_import(ast.parse(src), m, pkg) for (m, pkg), src in sources.items()}
    assert library_uses.reached(imports) == {"lazy", "lazy.utils"}


def entry(**fields: Any) -> Use:
    """An entry of the table with only the fields a test reads (the rest as the table never has them)."""
    return cast(Use, fields)


def test_what_a_confirmation_imports_and_expects() -> None:
    """The package of the use's file (below a namespace package: orbax.checkpoint), or the entry's module; and what
    the table predicts on each side, another import-time entry of the release included."""
    uses = {"jax.a": {"import": "orbax/checkpoint/_src/x.py:3"}, "jax.b": {"import": "haiku/_src/t.py:9"}}
    files = {"orbax/checkpoint/__init__.py", "orbax/checkpoint/_src/x.py", "haiku/__init__.py", "haiku/_src/t.py"}
    assert confirm.imported_module(entry(**{"api": "jax.a"}), uses, files) == "orbax.checkpoint"
    assert confirm.imported_module(entry(**{"api": "jax.b"}), uses, files) == "haiku"
    assert confirm.imported_module(entry(**{"api": "jax.b", "module": "haiku.x"}), uses, files) == "haiku.x"
    table = [
        entry(package="p", kind="import", jax=">=0.5.0", versions=["<2"], api="jax.gone"),
        entry(package="p", kind="import", jax="<0.4.5", versions=["<2"], api="jax.new"),
        entry(package="p", kind="import", jax=">=0.1", versions=["<2"], api="jax.x", module="p.sub"),
        entry(package="p", kind="first call", jax=">=0.1", versions=["<2"], api="jax.y"),
    ]
    assert confirm.predicted(table, "p", "1.0", "0.5.0", "p") and not confirm.predicted(table, "p", "1.0", "0.4.9", "p")
    assert confirm.predicted(table, "p", "1.0", "0.4.4", "p")  # the release needs a name jax added later
    assert confirm.predicted(table, "p", "1.0", "0.4.9", "p.sub")  # importing p.sub runs what it uses
    assert not confirm.predicted(table, "p", "2.0", "0.5", "p")


def test_specifiers_of_runs() -> None:
    order = ["0.1", "0.2", "0.3", "0.4", "0.5"]
    assert api_removals.version_specs(order, {"0.1", "0.2", "0.4"}) == [">=0.1,<0.3", "==0.4"]
    assert api_removals.version_specs(order, {"0.4", "0.5"}) == [">=0.4,<=0.5"]
    assert api_removals.jax_spec(order, 2, 4) == ">=0.3"
    assert api_removals.jax_spec(order, 0, 1) == "<0.3"
    assert api_removals.jax_spec(order, 1, 2) == ">=0.2,<0.4"


def _committed(package: str, api: str) -> list[Use]:
    return [u for u in REMOVALS.load()["use"] if u["package"] == package and u["api"] == api]


@pytest.mark.realenv
@pytest.mark.cost(60)
def test_a_sample_rederived_from_the_real_wheels(tmp_path: Path) -> None:
    """dm-haiku 0.0.12 against jax 0.4.35 (has jax.interpreters.xla.xe) and 0.4.36 (its deprecation table
    removes it), and flax 0.7.4 against jax 0.4.23 and 0.4.24 (jax.linear_util), from wheels fetched here."""
    cache = derive_cache(tmp_path)
    jax = {a.version: a for a in jax_api.releases(cache, offline=False)}
    haiku = next(a for a in library_uses.releases("dm-haiku", cache, False) if a.version == "0.0.12")
    flax = next(a for a in library_uses.releases("flax", cache, False) if a.version == "0.7.4")
    haiku_uses = library_uses.uses_of(haiku, cache, False)["uses"]
    flax_uses = library_uses.uses_of(flax, cache, False)["uses"]
    xe = [n for n in haiku_uses if n.startswith("jax.interpreters.xla.xe.")]
    assert xe and all(haiku_uses[n]["import"] for n in xe)
    before, after = (jax_api.surface_of(jax[v], cache, False) for v in ("0.4.35", "0.4.36"))
    assert all(jax_api.lookup(before, n) == (None, "") for n in xe)
    prefix, message = jax_api.lookup(after, xe[0])
    assert prefix == "jax.interpreters.xla.xe" and "removed in JAX v0.4.36" in message
    (committed,) = [u for u in _committed("dm-haiku", prefix) if u["jax"] == ">=0.4.36"]
    assert any(SpecifierSet(s).contains("0.0.12") for s in committed["versions"]) and committed["kind"] == "import"
    assert flax_uses["jax.linear_util"]["import"]
    gone, kept = (jax_api.surface_of(jax[v], cache, False) for v in ("0.4.24", "0.4.23"))
    assert jax_api.lookup(gone, "jax.linear_util")[0] == "jax.linear_util"
    assert jax_api.lookup(kept, "jax.linear_util") == (None, "")
    (linear,) = [u for u in _committed("flax", "jax.linear_util") if u["jax"].startswith(">=0.4.24")]
    assert linear["kind"] == "import" and linear.get("fixed") == "0.7.5"


@pytest.mark.realenv
@pytest.mark.cost(60)
def test_a_keyword_rederived_from_the_real_wheels(tmp_path: Path) -> None:
    """blackjax 1.2.1's `jnp.clip(..., max=1)` against jax 0.4.26 (clip(a, a_min, a_max, out)) and 0.4.27 (min and
    max), and equinox 0.10.4's flatten_func= against jax 0.4.6 and 0.4.7, from the files fetched here."""
    from derive.sources import jax_signatures

    cache = derive_cache(tmp_path)
    jax = {a.version: a for a in jax_api.releases(cache, offline=False)}
    for project, version, api, keyword, without, having in (
        ("blackjax", "1.2.1", "jax.numpy.clip", "max", "0.4.26", "0.4.27"),
        ("equinox", "0.10.4", "jax.tree_util.register_pytree_with_keys", "flatten_func", "0.4.6", "0.4.7"),
    ):
        release = next(a for a in library_uses.releases(project, cache, False) if a.version == version)
        read = library_uses.uses_of(release, cache, False)
        assert any(u["api"] == api and u.get("keyword") == keyword for u in read["conditional"]), project
        old, new = (jax_api.surface_of(jax[v], cache, False)["modules"] for v in (without, having))
        assert not jax_signatures.accepts(jax_signatures.signature(old, api), keyword)
        assert jax_signatures.accepts(jax_signatures.signature(new, api), keyword)
        committed = [u for u in _committed(project, api) if u.get("keyword") == keyword]
        assert any(
            SpecifierSet(u["jax"]).contains(without) and not SpecifierSet(u["jax"]).contains(having)
            for u in committed
            if any(SpecifierSet(s).contains(version) for s in u["versions"])
        ), committed


def test_each_library_of_the_table_has_a_boundary_confirmed_by_measurement_or_says_why_not() -> None:
    """derived/confirmed.json (an import on both sides) and derived/confirmed-calls.json (a call on both sides, for
    the libraries whose entries are all call-time): each confirms an entry the committed table has, none was
    contradicted, and a library with neither is one confirm_calls.py names with its reason."""
    derived = ROOT / "envaudit" / "rules" / "tables" / "derived"
    imports = json.loads((derived / "confirmed.json").read_text(encoding="utf-8"))
    calls = json.loads((derived / "confirmed-calls.json").read_text(encoding="utf-8"))
    table = REMOVALS.load()["use"]
    for result in [*imports, *calls]:
        assert result["verdict"] in ("confirmed", "confirmed-other-name"), result
        assert any(
            u["package"] == result["package"]
            and u["api"] == result["api"]
            and SpecifierSet(u["jax"]).contains(result["jax_without"])
            and not SpecifierSet(u["jax"]).contains(result["jax_with"])
            and any(SpecifierSet(s).contains(result["version"]) for s in u["versions"])
            for u in table
        ), result
    measured = {r["package"] for r in [*imports, *calls]}
    assert {u["package"] for u in table} - measured == set(confirm_calls.NOT_CONFIRMED)


def graph_of(sources: dict[tuple[str, bool], str]) -> library_uses.CallGraph:
    graph = library_uses.CallGraph()
    for (module, is_package), source in sources.items():
        graph.read(ast.parse(textwrap.dedent(source)), module, is_package)
    return graph


def test_what_an_entry_point_reaches_through_the_calls_of_a_release() -> None:
    """diffrax.diffeqsolve calls its module's _maybe_static; jaxopt's OptaxSolver.run is its base's run, whose
    self.update is OptaxSolver's, which calls self._apply_updates; super() and a function passed by name (a
    callback) are followed; what no entry point calls is not reached."""
    graph = graph_of(
        {
            ("lib", True): "from lib._integrate import diffeqsolve\nfrom lib._src.optax_wrapper import OptaxSolver\n",
            ("lib._integrate", False): """
                import jax
                def _maybe_static(x):
                    return jax.core.Literal
                def _corner():
                    return jax.core.gone
                def diffeqsolve(y):
                    return jax.lax.scan(_body, _maybe_static(y), None)
                def _body(c, x):
                    return c, x
                """,
            ("lib._src", True): "",
            ("lib._src.base", False): """
                class IterativeSolver:
                    def run(self, x):
                        return self.update(x)
                    def update(self, x):
                        raise NotImplementedError
                """,
            ("lib._src.optax_wrapper", False): """
                from lib._src import base
                class OptaxSolver(base.IterativeSolver):
                    def __init__(self):
                        super().__init__()
                    def update(self, x):
                        return self._apply_updates(x)
                    def _apply_updates(self, x):
                        return x
                """,
        }
    )
    assert graph.reached("lib.diffeqsolve") == {"lib._integrate.diffeqsolve", "lib._integrate._maybe_static",
                                                "lib._integrate._body"}  # fmt: skip
    assert graph.reached("lib.OptaxSolver.run") == {
        "lib._src.base.IterativeSolver.run",
        "lib._src.optax_wrapper.OptaxSolver.update",
        "lib._src.optax_wrapper.OptaxSolver._apply_updates",
    }
    assert graph.reached("lib.nothing") == set()


def test_a_use_an_entry_point_reaches_is_on_the_main_path(tmp_path: Path) -> None:
    """read_release marks a call-time use with the entry points that reach it; api-removals.toml then says so
    (`standard_path`), and the check makes it a failure; a use no entry point reaches has none."""
    import zipfile

    wheel = tmp_path / "lib-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("lib/__init__.py", "from lib._integrate import diffeqsolve, corner\n")
        archive.writestr(
            "lib/_integrate.py",
            "import jax\ndef _maybe_static(x):\n    return jax.core.Literal\n"
            "def diffeqsolve(y):\n    return _maybe_static(y)\ndef corner():\n    return jax.core.gone\n",
        )
        archive.writestr("lib-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: lib\nVersion: 1.0\n")
    data = library_uses.read_release(wheel, ["lib.diffeqsolve"])
    assert data["entry_points_found"] == ["lib.diffeqsolve"]
    assert data["uses"]["jax.core.Literal"]["main"] == {
        "lib.diffeqsolve": "lib._integrate._maybe_static (lib/_integrate.py:3)"
    }
    assert "main" not in data["uses"]["jax.core.gone"]


def test_the_entry_points_are_of_libraries_the_derivation_reads_and_say_where_they_were_read() -> None:
    import tomllib

    libraries = tomllib.loads(library_uses.ENTRY_POINTS.read_text(encoding="utf-8"))["library"]
    assert len({lib["package"] for lib in libraries}) == len(libraries)
    for lib in libraries:
        assert lib["package"] in library_uses.PROJECTS and lib["entry_points"], lib
        assert lib["source"].startswith("https://"), lib
        for point in lib["entry_points"]:  # the call the quoted source shows (a dunder: its class's)
            parts = point.split(".")
            assert (parts[-2] if parts[-1].startswith("__") else parts[-1]) in lib["source"], point
        assert library_uses.entry_points(lib["package"]) == sorted(lib["entry_points"])


@pytest.mark.realenv
@pytest.mark.cost(30)
def test_a_raising_stub_rederived_from_the_real_wheels(tmp_path: Path) -> None:
    """blackjax 1.1.1's progress bar calls `host_callback.id_tap` (fix-pass-4): jax 0.4.34 has it, jax 0.4.35 keeps
    the name as a stub that raises NotImplementedError, read from the wheels fetched here as removed, in jax's
    words, so that a library's call of it is a use of a removed API."""
    cache = derive_cache(tmp_path)
    jax = {a.version: a for a in jax_api.releases(cache, offline=False)}
    blackjax = next(a for a in library_uses.releases("blackjax", cache, False) if a.version == "1.1.1")
    used = library_uses.uses_of(blackjax, cache, False)["uses"]
    taps = [n for n in used if n.startswith("jax.experimental.host_callback.") and n.endswith("id_tap")]
    assert taps, sorted(n for n in used if "host_callback" in n)
    kept, stubbed = (jax_api.surface_of(jax[v], cache, False) for v in ("0.4.34", "0.4.35"))
    assert jax_api.lookup(kept, taps[0]) == (None, "")
    prefix, message = jax_api.lookup(stubbed, taps[0])
    assert prefix == taps[0] and "no longer supported" in message and jax_api.stubbed(stubbed, taps[0])


def test_a_stub_s_name_bound_at_import_is_a_first_call_that_warns_and_one_called_on_a_path_fails() -> None:
    """jax 0.4.35 keeps host_callback's names as raising stubs: brainpy 2.6.0 binds `call` at its import, which
    works, and calls it in functions the derivation does not trace: a warning; blackjax 1.1.1's progress bar calls
    `id_tap`: its entry names the function. Neither is an import failure."""
    from envaudit.rules.registry import registry

    for package in ("brainpy", "blackjax"):
        entries = [
            u for u in _committed(package, "jax.experimental.host_callback.call") if u["jax"] == ">=0.4.35,<0.8.0"
        ]
        entries += [
            u for u in _committed(package, "jax.experimental.host_callback.id_tap") if u["jax"] == ">=0.4.35,<0.8.0"
        ]
        assert entries and all(u["kind"] == "first call" for u in entries), entries
    # blackjax 1.1.1 beside jax 0.4.35: its progress bar's call, off the everyday path, a warning with jax's words
    facts = facts_from({"packages": {"jax": "0.4.35", "jaxlib": "0.4.35", "blackjax": "1.1.1"}})
    (found,) = [f for f in registry().evaluate(facts) if f.id == "removed-jax-api-in-blackjax"]
    assert found.severity == "warn" and "no longer supported" in found.detail, found
    assert "blackjax>=1.2.0" in found.fix or "blackjax>1.1.1" in found.fix or "jax<0.4.35" in found.fix, found.fix


def test_the_checks_made_at_import_name_the_libraries_the_loaded_table_holds_in_its_order() -> None:
    """The removed-API checks are made at import from the file's `package` lines, not from the loaded table (30 ms
    of every command): the two readings must agree, or a library's check would be missing or never run."""
    from envaudit.rules.api_removals import REMOVED_API, _by_package, removal_packages

    assert removal_packages() == list(_by_package())
    assert [c.id.removeprefix("removed-jax-api-in-") for c in REMOVED_API] == list(_by_package())
