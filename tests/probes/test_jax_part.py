"""A library's JAX part, as the imports probe counts it (`jax_files`: its module files that name jax or flax), and a
fix whose release drops it: diffusers 0.18.2 ships 28 such files (modeling_flax_utils.py, the Flax pipelines and
schedulers), 0.42.1 none, and `from diffusers import FlaxDDPMScheduler` fails there while `import diffusers` works
(fix-pass-8); transformers 5 dropped its Flax models the same way."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from envaudit.collect import build
from envaudit.model.facts import ImportOutcome
from tests.conftest import ROOT
from tests.probes.test_imports import install

sys.path.insert(0, str(ROOT / "probes"))
import imports as probe


def test_the_files_that_name_jax_or_flax_are_the_library_s_jax_part(tmp_path: Path) -> None:
    files = {
        "lib/__init__.py": "",
        "lib/models/modeling_flax_utils.py": "",
        "lib/schedulers/scheduling_ddpm_flax.py": "",
        "lib/substrates/jax/__init__.py": "",
        "lib/jaxtyping_compat.py": "",  # a name that starts with jax but is another word: not counted
        "lib/relaxation.py": "",  # "flax" inside no word boundary: not counted
        "lib/pipelines/flax/README.md": "",  # not a module
        "lib/tests/test_flax_models.py": "",  # its tests: a wheel may stop shipping them
    }
    install(tmp_path, {"lib": {"requires": [], "files": files}})
    (dist,) = [d for d in metadata.distributions(path=[str(tmp_path)]) if d.metadata["Name"] == "lib"]
    assert probe.jax_files(dist) == 3


def test_a_release_without_the_jax_part_the_environment_had_fails_the_twin() -> None:
    stack = build.Stack({"diffusers": "0.42.1", "jax": "0.4.31"}, ["3.10"], before={"diffusers": "0.18.2"})
    stack = build.Stack(stack.packages, stack.pythons, before=stack.before, parts={"diffusers": 28})
    gone: ImportOutcome = {"distribution": "diffusers", "module": "diffusers", "version": "0.42.1", "status": "ok"}
    (said,) = build.dropped(stack, [gone | {"jax_files": 0}])
    assert "diffusers" in said and "0.42.1" in said and "0.18.2 had 28" in said
    assert build.dropped(stack, [gone | {"jax_files": 27}]) == []  # kept, renamed or not: the part is there
    assert build.dropped(stack, [gone]) == []  # not counted (an older probe): nothing said
    helper = build.Stack(stack.packages, stack.pythons, before=stack.before, parts={"diffusers": 1})
    assert build.dropped(helper, [gone | {"jax_files": 0}]) == []  # one helper file renamed away is no part dropped
    assert build.dropped(build.Stack(stack.packages, stack.pythons), [gone | {"jax_files": 0}]) == []
