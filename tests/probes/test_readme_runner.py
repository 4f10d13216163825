"""The runner of the README blocks (probes/calls/_readme.py), in this process and without jax: a block runs as a
module of its own, and what it raises counts against the library only where the library's code raised it. The
libraries are packages written for the test into a directory on sys.path, as an installed one is found."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

RUNNER = Path(__file__).resolve().parents[2] / "probes" / "calls" / "_readme.py"


@pytest.fixture
def readme() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_envaudit_readme_test", RUNNER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`solvelib`, whose solve raises as a library that calls a name its jax no longer has does (jax 0.6.0's
    `jax.tree_map`: AttributeError), or calls `helperlib`, which raises there; `helperlib` alone."""
    where = tmp_path / "site"
    (where / "solvelib").mkdir(parents=True)
    (where / "solvelib" / "__init__.py").write_text(
        "import helperlib\n\n"
        "def solve(x, via_helper=False):\n"
        "    if via_helper:\n"
        "        return helperlib.broken(x)\n"
        "    if x < 0:\n"
        "        raise AttributeError(\"module 'jax' has no attribute 'tree_map'\")\n"
        "    return 2 * x\n",
        encoding="utf-8",
    )
    (where / "helperlib.py").write_text("def broken(x):\n    raise TypeError('helper refused ' + repr(x))\n")
    monkeypatch.syspath_prepend(str(where))
    for name in ("solvelib", "helperlib"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return where


def _block(code: str) -> dict[str, Any]:
    return {"code": code, "modules": ["solvelib"], "call": "solvelib.solve"}


def _raised(readme: ModuleType, block: dict[str, Any]) -> BaseException:
    with pytest.raises(BaseException) as caught:
        readme.run(block, "solvelib")
    return caught.value


def test_a_block_that_runs_defines_its_own_classes_in_a_module_of_its_own(
    readme: ModuleType, site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = (
        "import dataclasses\nimport pickle\nimport solvelib\n\n"
        "@dataclasses.dataclass\nclass Point:\n    x: int\n\n"
        "assert solvelib.solve(Point(3).x) == 6\npickle.dumps(Point(1))\n"
    )
    readme.run(_block(code + "print('shown')\n"), "solvelib")  # a dataclass and a pickle find its module
    assert not [m for m in sys.modules if m.startswith("__readme_")]  # and it is gone after
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == "shown\n"  # the probe's answer is its stdout


def test_what_the_library_raises_is_evidence_and_what_the_block_raises_is_not(readme: ModuleType, site: Path) -> None:
    in_library = _block("import solvelib\nsolvelib.solve(-1)\n")
    assert readme.own(_raised(readme, in_library), in_library, "solvelib") == ""
    through = _block("import solvelib\nsolvelib.solve(1, via_helper=True)\n")  # the library's call fails further in
    assert readme.own(_raised(readme, through), through, "solvelib") == ""
    misspelt = _block("import solvelib\nsolvelib.solve(x)\n")  # a NameError of the snippet
    said = readme.own(_raised(readme, misspelt), misspelt, "solvelib")
    assert "README block's own code line 2" in said and "NameError" in said
    missing = _block("import solvelib\nimport not_installed_here\nsolvelib.solve(1)\n")
    assert "own code line 2" in readme.own(_raised(readme, missing), missing, "solvelib")
    asserted = _block("import solvelib\nassert solvelib.solve(1) == 3\n")  # its own check of the answer
    assert "own code" in readme.own(_raised(readme, asserted), asserted, "solvelib")
    other = _block("import helperlib, solvelib\nsolvelib.solve(1)\nhelperlib.broken(2)\n")  # another library's
    said = readme.own(_raised(readme, other), other, "solvelib")
    assert said.startswith("raised where no code of solvelib reached") and "helper refused 2" in said
    stdlib = _block("import json, solvelib\nsolvelib.solve(1)\njson.loads('{')\n")  # Python's own, called by it
    assert "own code line 3" in readme.own(_raised(readme, stdlib), stdlib, "solvelib")
    leaving = _block("import sys, solvelib\nsolvelib.solve(1)\nsys.exit(3)\n")
    assert "exited" in readme.own(_raised(readme, leaving), leaving, "solvelib")


def test_the_blocks_are_read_from_the_generated_file_and_another_format_is_none(
    readme: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "_readme.json"
    path.write_text(json.dumps({"format": readme.FORMAT, "blocks": {"solvelib": _block("pass\n"), "bad": {}}}))
    assert list(readme.blocks(str(path))) == ["solvelib"]  # one without code is no block
    path.write_text(json.dumps({"format": readme.FORMAT + 1, "blocks": {"solvelib": _block("pass\n")}}))
    assert readme.blocks(str(path)) == {}
    assert readme.blocks(str(tmp_path / "absent.json")) == {}
    shipped = readme.blocks()  # the committed file, generated from the table
    assert shipped and all(b["modules"] and b["call"] for b in shipped.values())
