"""The reader of a library's jax uses (probes/calls/_uses.py): what it reads as a use, what it leaves as
version-compatible code, and, against the jax installed here, which names are missing and what Python says."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _reader() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_test_uses", ROOT / "probes" / "calls" / "_uses.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


uses = _reader()


def _read(source: str) -> list[tuple[str, int, str]]:
    return [(u.name, u.line, u.function) for u in uses.uses_in(source.encode())]


def test_a_use_is_a_name_off_any_alias_of_jax_with_when_it_runs() -> None:
    source = (
        "import jax.numpy as jnp\n"  # 1
        "from jax import lax as L\n"  # 2
        "from jax.interpreters import batching\n"  # 3
        "X = jnp.DeviceArray\n"  # 4: at import
        "def f(a: jnp.ndarray = L.add):\n"  # 5: annotation and default at the definition
        "    return batching.not_mapped\n"  # 6: on the call of f
        "class C:\n"
        "    y = L.foo\n"  # 8: a class body runs at import
        "    def m(self):\n"
        "        return jnp.product\n"  # 10: on the call of m
    )
    read = _read(source)
    assert ("jax.numpy.DeviceArray", 4, "") in read
    assert ("jax.numpy.ndarray", 5, "") in read and ("jax.lax.add", 5, "") in read
    assert ("jax.interpreters.batching.not_mapped", 6, "f") in read
    assert ("jax.lax.foo", 8, "") in read and ("jax.numpy.product", 10, "m") in read
    # the imports themselves are uses of what they import
    assert ("jax.interpreters.batching", 3, "") in read


def test_version_compatible_code_is_not_read_as_a_use() -> None:
    source = (
        "import jax\nimport jax.numpy as jnp\nfrom typing import TYPE_CHECKING\n"
        "try:\n    A = jnp.DeviceArray\nexcept AttributeError:\n    A = jax.Array\n"
        "try:\n    from jax.config import config\nexcept Exception:\n    config = jax.config\n"
        "if hasattr(jnp, 'product'):\n    P = jnp.product\nelse:\n    P = jnp.prod\n"
        "if jax.__version_info__ < (0, 4, 14):\n    D = jnp.DeviceArray\n"
        "if TYPE_CHECKING:\n    K = jax.random.KeyArray\n"
        "Q = jnp.product if hasattr(jnp, 'product') else jnp.prod\n"
        "def f(x: 'jnp.DeviceArray'):\n    return getattr(jnp, 'product', None) and jnp.product(x)\n"
    )
    read = {name for name, _, _ in _read(source)}
    assert not read & {"jax.numpy.DeviceArray", "jax.config.config", "jax.numpy.product", "jax.random.KeyArray"}
    # what runs unguarded still is: the module's own imports
    assert {"jax", "jax.numpy"} <= read


def test_annotations_are_read_only_where_python_evaluates_them() -> None:
    lazy = "from __future__ import annotations\nimport jax.numpy as jnp\ndef f(x: jnp.DeviceArray) -> jnp.Old: ...\n"
    assert not any(name.endswith(("DeviceArray", "Old")) for name, _, _ in _read(lazy))
    eager = "import jax.numpy as jnp\ndef f(x: jnp.DeviceArray) -> jnp.Old: ...\n"
    assert {("jax.numpy.DeviceArray", 2, ""), ("jax.numpy.Old", 2, "")} <= set(_read(eager))


def test_what_is_not_package_code_and_what_is_not_jax_is_not_read() -> None:
    assert not uses.package_file(("lib", "tests", "test_a.py")) and not uses.package_file(("lib", "data.json"))
    for shipped_test in ("asserts_chexify_test.py", "test_utils_x.py", "handler_test_utils.py", "conftest.py"):
        assert not uses.package_file(("lib", "_src", shipped_test)), shipped_test
    assert uses.package_file(("lib", "_src", "testing.py")) and uses.package_file(("lib", "latest.py"))
    assert uses.package_file(("lib", "sub", "a.py")) and uses.module_of(("lib", "sub", "__init__.py")) == "lib.sub"
    assert _read("import numpy as jnp\nX = jnp.DeviceArray\njax = 1\n") == []
    assert _read("def broken(:\n") == []  # a file that does not parse is no use


@pytest.mark.jax
def test_each_name_is_resolved_in_the_jax_here_and_a_missing_one_says_what_python_raises() -> None:
    import jax

    def said(name: str, module: str = "") -> str:
        return str(uses.missing(uses.Use(name, 1, "", module)))

    assert said("jax.numpy.ones") == "" and said("jax.lax", module="jax") == ""
    # names jax removed: jnp.DeviceArray (0.4.14), the module jax.experimental.maps (0.4.31), jax.tree_multimap
    assert said("jax.numpy.DeviceArray") == "AttributeError: module 'jax.numpy' has no attribute 'DeviceArray'"
    assert said("jax.experimental.maps.Mesh", module="jax.experimental.maps") == (
        "ModuleNotFoundError: No module named 'jax.experimental.maps'"
    )
    assert said("jax.tree_multimap", module="jax") == "ImportError: cannot import name 'tree_multimap' from 'jax'"
    # a name no jax release ever had is no API change (tensorflow-probability's rewritten `np.random` under
    # `import jax.numpy as np`; a typo): nothing is said; a private module's missing name is always read
    assert uses.ever("jax.numpy.DeviceArray") and not uses.ever("jax.numpy.random")
    assert said("jax.numpy.random.RandomState") == "" and said("jax.tree_util.treep_map") == ""
    assert uses.ever("jax._src.earray.EArray") and said("jax._src.no_such_module.x") != ""
    # a submodule on disk that `import jax` does not load is there, and what it holds is read in it
    assert said("jax.experimental.pjit.pjit") == ""
    assert hasattr(jax, "numpy")
    # each broken use once per name, with its module and file
    source = b"import jax.numpy as jnp\ndef f():\n    return jnp.DeviceArray, jnp.ones, jnp.random\n"
    files = iter([(("lib", "a.py"), uses.read(source))])
    assert [(m, f, u.name, u.function) for m, f, u, _ in uses.broken(files)] == [
        ("lib.a", "lib/a.py", "jax.numpy.DeviceArray", "f")
    ]


def test_a_name_bound_again_is_no_longer_an_alias_of_jax() -> None:
    # orbax-checkpoint 0.12: `from jax.extend import ifrt_programs` then `ifrt_programs = ifrt_programs.ifrt_programs`
    source = (
        "from jax.extend import ifrt_programs\nimport jax.numpy as jnp\n"
        "ifrt_programs = ifrt_programs.ifrt_programs\nnp2 = jnp\n"
        "def f():\n    return ifrt_programs.make_plugin_program, np2.Gone\n"
    )
    read = {name for name, _, _ in _read(source)}
    assert "jax.extend.ifrt_programs.ifrt_programs" in read and "jax.numpy.Gone" in read
    assert not any("make_plugin_program" in name for name in read)


def test_a_reading_is_kept_by_its_files_and_a_link_or_garbage_in_its_place_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(uses.CACHE, str(tmp_path))
    reading = {"lib/a.py": uses.read(b"import jax.numpy as jnp\ndef f():\n    return jnp.Gone\n")}
    key = uses.cache_key("lib", "1.0", [("lib/a.py", 40, 1)])
    assert uses.load(key) is None
    uses.store(key, reading)
    assert uses.load(key) == reading
    # another size or mtime of a file is another reading
    assert uses.cache_key("lib", "1.0", [("lib/a.py", 41, 1)]) != key
    (tmp_path / key).write_text("not json", encoding="utf-8")
    assert uses.load(key) is None
    (tmp_path / key).unlink()
    (tmp_path / "elsewhere.json").write_text('{"lib/a.py": []}', encoding="utf-8")
    (tmp_path / key).symlink_to(tmp_path / "elsewhere.json")
    assert uses.load(key) is None
    monkeypatch.delenv(uses.CACHE)
    uses.store(key, reading)  # no cache: nothing kept, nothing raised
    assert uses.load(key) is None


def test_the_fallback_import_of_a_try_does_not_rename_what_the_try_imported() -> None:
    # chex 0.1.86's restrict_backends: `compiler.backend_compile` is jax._src.compiler's, where that import works
    source = (
        "try:\n    from jax._src import compiler\nexcept ImportError:\n    from jax._src import dispatch as compiler\n"
        "def f():\n    return compiler.backend_compile\n"
    )
    assert ("jax._src.compiler.backend_compile", 6, "f") in _read(source)
    assert not any(name.startswith("jax._src.dispatch.backend") for name, _, _ in _read(source))


def test_a_call_s_keyword_arguments_are_uses_of_what_the_callable_must_take() -> None:
    source = "import jax.numpy as jnp\ndef f(x):\n    return jnp.reshape(x, newshape=(2,), order='C')\n"
    found = {(u.name, u.keyword) for u in uses.uses_in(source.encode())}
    assert {("jax.numpy.reshape", "newshape"), ("jax.numpy.reshape", "order")} <= found


@pytest.mark.jax
def test_a_keyword_the_jax_callable_here_does_not_take_or_keeps_only_to_raise_is_missing() -> None:
    def said(name: str, keyword: str) -> str:
        return str(uses.missing(uses.Use(name, 1, "f", keyword=keyword)))

    assert said("jax.numpy.reshape", "shape") == "" and said("jax.numpy.reshape", "order") == ""
    assert said("jax.numpy.reshape", "no_such_argument") == (
        "TypeError: reshape() got an unexpected keyword argument 'no_such_argument'"
    )
    # jax keeps a removed argument as a DeprecatedArg default that raises when passed (jax.checkpoint's concrete,
    # in jax 0.10's signature: `concrete: bool | DeprecatedArg = DeprecatedArg()`, then `raise NotImplementedError`)
    assert "concrete argument of jax.checkpoint was removed" in said("jax.checkpoint", "concrete")

    # a DeprecatedArg whose code only warns (jax 0.4.29's clip and a_min) is taken: the function's own raise decides
    def warns(x: object = None, a_min: object = None) -> object:
        if a_min is not None:
            import warnings

            warnings.warn("a_min is deprecated", DeprecationWarning, stacklevel=2)
        return x

    def raises(x: object = None, newshape: object = None) -> object:
        if newshape is not None:
            raise TypeError("The newshape argument to jnp.reshape was removed in JAX v0.4.36.")
        return x

    assert not uses._raises_on(warns, "a_min") and uses._raises_on(raises, "newshape")

    # jax 0.4.35's pure_callback: `vectorized` warns; the raise that names it is for passing vmap_method beside it
    def both(callback: object = None, vectorized: object = None, vmap_method: object = None) -> object:
        if vectorized is not None:
            warnings.warn("The vectorized argument of jax.pure_callback is deprecated", stacklevel=2)
            if vmap_method is not None:
                raise ValueError("the vectorized and vmap_method arguments cannot be used together")
        return callback

    def removed(callback: object = None, vectorized: object = None, vmap_method: object = None) -> object:
        if vectorized is not None:
            raise ValueError("The vectorized argument of jax.pure_callback was removed")
        return callback

    assert not uses._raises_on(both, "vectorized") and uses._raises_on(removed, "vectorized")
    # a name jax lacks is said once, by its plain use, not again for each keyword
    assert said("jax.numpy.DeviceArray", "x") == ""
