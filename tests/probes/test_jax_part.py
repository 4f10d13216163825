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


def test_a_release_installed_with_no_module_at_all_fails_the_twin() -> None:
    """e3nn-jax 0.20.1's wheel (and brax 0.12.2's) holds its metadata only: a plan pinning it was proven, since the
    imports probe had nothing of it to import, and the program then met `No module named 'e3nn_jax'`."""
    stack = build.Stack({"e3nn-jax": "0.20.1", "jax": "0.4.34"}, ["3.11"], before={"e3nn-jax": "0.20.7"})
    stack = build.Stack(stack.packages, stack.pythons, before=stack.before, parts={"e3nn-jax": 40})
    other: ImportOutcome = {"distribution": "equinox", "module": "equinox", "version": "0.11.5", "status": "ok"}
    installed = {"e3nn-jax": "0.20.1", "equinox": "0.11.5", "jax": "0.4.34"}
    (said,) = build.dropped(stack, [other], installed)
    assert "e3nn-jax" in said and "0.20.1 holds no module" in said and "0.20.7 had 40" in said
    here: ImportOutcome = {"distribution": "e3nn-jax", "module": "e3nn_jax", "version": "0.20.1", "status": "ok"}
    assert build.dropped(stack, [other, here | {"jax_files": 40}], installed) == []  # imported there: it holds some
    assert build.dropped(stack, [other], {"equinox": "0.11.5"}) == []  # not installed there: not this check's
