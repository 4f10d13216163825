"""derive/tables/api_removals.py's join of a library's uses with jax's releases, end to end on small releases: jax's
clip at three tags (jax-v0.4.26, jax-v0.4.27, jax-v0.10.0 jax/_src/numpy/lax_numpy.py, trimmed to the def) and a
library whose releases call it as blackjax's do, one of them behind a guard."""

from __future__ import annotations

import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from derive.sources import jax_api, library_uses
from derive.tables import api_removals
from tests.derive.test_jax_signatures import CLIP_0_4_26, CLIP_0_4_27, NUMPY, PACKAGE

# jax-v0.10.0 jax/_src/numpy/lax_numpy.py#L3326-L3333 ("The deprecated keyword arguments `a`, `a_min`, and `a_max`
# to `jax.numpy.clip` have been removed.", CHANGELOG.md#L60-L61 at that tag); unstack is new there (in this sample)
CLIP_0_10_0 = """
@export
@api.jit
def clip(
  arr: ArrayLike | None = None,
  /,
  min: ArrayLike | None = None,
  max: ArrayLike | None = None,
) -> Array:
  pass
def unstack(x, axis=0):
  pass
"""


class Releases:
    """What derive() reads of jax's releases (api_removals.Surfaces): their versions and surfaces, oldest first."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.versions = list(sources)
        self.surfaces = {version: self.surface(source) for version, source in sources.items()}

    @staticmethod
    def surface(clip: str) -> dict[str, Any]:
        texts = {"jax": PACKAGE, "jax.numpy": NUMPY + "from jax._src.numpy.lax_numpy import *\n"}
        old = "a_min: ArrayLike | None = None" in clip  # jax 0.4.26 alone has the helper (in this sample)
        texts["jax._src.numpy.lax_numpy"] = textwrap.dedent(clip) + "def old_helper(x):\n  pass\n" * old
        packages = {"jax", "jax.numpy"}
        modules = {name: jax_api.read_module(text.encode(), name, name in packages) for name, text in texts.items()}
        modules["jax"]["children"], modules["jax.numpy"]["children"] = ["numpy"], []
        modules["jax._src.numpy.lax_numpy"]["children"] = []
        jax_api.resolve_stars(modules)
        return {"modules": modules, "config_options": [], "config_members": []}

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        yield from self.surfaces.items()


def library(tmp_path: Path, version: str, source: str) -> api_removals.Release:
    wheel = tmp_path / f"lib-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("lib/__init__.py", "from lib.proposal import accept\n")
        archive.writestr("lib/proposal.py", textwrap.dedent(source))
        archive.writestr(f"lib-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: lib\nVersion: {version}\n")
    return api_removals.Release("lib", version, library_uses.read_release(wheel))


def test_keywords_and_guards_become_entries(tmp_path: Path) -> None:
    """1.0 passes a_max (gone in 0.10.0); 1.1 passes max (first in 0.4.27), as blackjax 1.2.1 does
    (blackjax/mcmc/proposal.py:156); 1.2 asks for unstack (new in 0.10.0) and falls back to a helper only 0.4.26
    had: 0.4.27 has neither."""
    releases = [
        library(tmp_path, "1.0", "import jax.numpy as jnp\ndef accept(p):\n    return jnp.clip(p, a_max=1)\n"),
        library(tmp_path, "1.1", "import jax.numpy as jnp\ndef accept(p):\n    return jnp.clip(p, max=1)\n"),
        library(
            tmp_path,
            "1.2",
            """
            import jax.numpy as jnp
            def accept(p):
                if hasattr(jnp, "unstack"):
                    return jnp.unstack(p)
                return jnp.old_helper(p)
            """,
        ),
    ]
    jax = Releases({"0.4.26": CLIP_0_4_26, "0.4.27": CLIP_0_4_27, "0.10.0": CLIP_0_10_0})
    entries = api_removals.derive({"lib": releases}, jax)  # type: ignore[arg-type]
    found = {(e["api"], e.get("keyword", ""), e["jax"], tuple(e["versions"]), e.get("fixed")) for e in entries}
    assert found == {
        ("jax.numpy.clip", "a_max", ">=0.10.0", ("==1.0",), "1.1"),
        ("jax.numpy.clip", "max", "<0.4.27", ("==1.1",), "1.2"),
        ("jax.numpy.old_helper", "", ">=0.4.27,<0.10.0", ("==1.2",), None),
    }
    said = {e.get("keyword", e["api"]): e["evidence"] for e in entries}
    assert said["max"].endswith("jax.numpy.clip takes max= first in jax 0.4.27")
    assert said["a_max"].endswith("jax 0.10.0's jax.numpy.clip takes no a_max=")
    assert said["jax.numpy.old_helper"].endswith("; it runs without jax.numpy.unstack")
    assert all(e["kind"] == "first call" and e["functions"] == ["lib.accept"] for e in entries)


def test_a_keyword_no_release_takes_is_no_boundary(tmp_path: Path) -> None:
    """A misspelt keyword (or a callable read wrongly) fails with every jax: nothing to choose between them."""
    releases = [library(tmp_path, "1.0", "import jax.numpy as jnp\ndef accept(p):\n    return jnp.clip(p, maxx=1)\n")]
    jax = Releases({"0.4.26": CLIP_0_4_26, "0.4.27": CLIP_0_4_27})
    assert api_removals.derive({"lib": releases}, jax) == []  # type: ignore[arg-type]


# jax-v0.4.35 jax/experimental/host_callback.py#L24-L34: the removed API's names kept, each a raising stub
HOST_CALLBACK_0_4_35 = '''
"""Backwards compatibility shims for the deprecated host_callback APIs."""

from __future__ import annotations

def call(*_, **__):
  raise NotImplementedError(
      "jax.experimental.host_callback has been deprecated since March 2024 and "
      "is now no longer supported. "
      "See https://github.com/jax-ml/jax/issues/20385"
  )


id_tap = call
'''
# jax-v0.8.0 jax/_src/util.py and jax/_src/numpy/lax_numpy.py: functions that raise by design, no removed API
RAISING_BY_DESIGN = '''
def assert_unreachable(x):
  raise AssertionError(f"Unhandled case: {type(x).__name__}")

def fromfile(*args, **kwargs):
  """Unimplemented JAX wrapper for jnp.fromfile."""
  raise NotImplementedError(
    "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for use "
    "with JIT and other JAX transformations.")
'''


def test_a_name_kept_as_a_raising_stub_is_removed_and_a_function_that_raises_by_design_is_not() -> None:
    """blackjax 1.1.1's progress bar calls `host_callback.id_tap` (fix-pass-4): jax 0.4.35 kept the name, a stub
    that raises NotImplementedError, so the import works and the derived table (names present or not) saw nothing;
    the module went in jax 0.8.0. A stub whose message says the API is gone reads as removed, with jax's words."""
    stubs = jax_api.read_module(HOST_CALLBACK_0_4_35.encode(), "jax.experimental.host_callback", False)
    assert set(stubs["removed"]) == {"call", "id_tap"} and "no longer supported" in stubs["removed"]["id_tap"]
    release = {"modules": {"jax": {**stubs, "children": ["experimental"], "removed": {}, "names": [], "open": False}}}
    release["modules"]["jax.experimental"] = {"children": ["host_callback"], "names": [], "removed": {}, "open": False}
    release["modules"]["jax.experimental.host_callback"] = {**stubs, "children": []}
    gone, message = jax_api.lookup(release, "jax.experimental.host_callback.id_tap")
    assert gone == "jax.experimental.host_callback.id_tap" and message.startswith("NotImplementedError")
    assert jax_api.stubbed(release, gone)  # bound: importing it works, a call raises
    designed = jax_api.read_module(RAISING_BY_DESIGN.encode(), "jax._src.util", False)
    assert designed["removed"] == {} and {"assert_unreachable", "fromfile"} <= set(designed["names"])
