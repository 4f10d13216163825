"""The wheel table: a plan whose jaxlib has no wheel for its Python says so, a fix says what it costs in Pythons,
and nothing outside what the table covers is claimed."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import pytest

from envaudit import rules
from envaudit.cli import main
from envaudit.rules import wheels
from envaudit.rules.table import TABLES, Table, TableError
from tests.conftest import facts_from

WHEELS = wheels.WHEELS.load()


def findings(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, dict[str, str]]:
    main(["plan", *argv, "--format", "json"])
    return {f["id"]: f for f in json.loads(capsys.readouterr().out)["findings"]}


def test_a_planned_jaxlib_without_a_wheel_for_the_planned_python(capsys: pytest.CaptureFixture[str]) -> None:
    found = findings(capsys, "jax==0.4.25", "jaxlib==0.4.25", "--python", "3.13")
    assert "jaxlib 0.4.25 has no wheel for Python 3.13" in found["no-jaxlib-wheel-for-python"]["detail"]
    for ok in (["--python", "3.12"], [], ["--python", "3.99"]):  # a wheel; no Python said; a Python not in the table
        assert "no-jaxlib-wheel-for-python" not in findings(capsys, "jax==0.4.25", "jaxlib==0.4.25", *ok)


def test_releases_the_table_does_not_cover_are_never_findings() -> None:
    for jaxlib in ("0.4.12", "0.3.25", "99.0"):  # below covers_from (PyPI lists none), past covers_to
        assert (
            wheels.no_wheel(
                facts_from({"origin": "plan", "packages": {"jaxlib": jaxlib}, "python": {"version": "3.13.1"}})
            )
            == []
        )
    installed = facts_from({"packages": {"jaxlib": "0.4.25"}, "python": {"version": "3.13.1"}})
    assert wheels.no_wheel(installed) == []  # installed, so it was installable (or built from source)


def test_the_installed_jaxlib_is_in_the_table_for_this_python() -> None:
    """The table against this machine: the jaxlib pip installed here has a wheel for this Python, per the table."""
    from importlib.metadata import version

    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert version("jaxlib") in WHEELS["versions"][here]


def test_a_fix_says_what_it_costs_in_pythons(capsys: pytest.CaptureFixture[str]) -> None:
    stack = ("jax==0.10.2", "jaxlib==0.10.2", "neural-tangents==0.6.5")
    # jax<0.6.0 is jax 0.5.3 (the newest below it), whose jaxlib has wheels for Python 3.10 to 3.13
    assert "it needs Python 3.10 to 3.13" in findings(capsys, *stack)["nt-065-jax-060-import"]["detail"]
    on_310 = findings(capsys, *stack, "--python", "3.10")["jaxlib-0102-cpu-vmap-matvec-sum"]["detail"]
    assert "it cannot install on Python 3.10: the jaxlib it pins has wheels for Python 3.11 to 3.14 only" in on_310
    assert wheels.cost(facts_from({}), ["numpy<2"]) == ""  # nothing the table covers
    assert wheels.pythons(["jax==0.12.0.1"]) == ["3.12", "3.13", "3.14", "3.15"]  # PyPI's cp312-cp315 wheels


def test_versions_are_planned_or_installed_as_the_facts_say(capsys: pytest.CaptureFixture[str]) -> None:
    detail = findings(capsys, "jax==0.10.2", "jaxlib==0.10.2", "neural-tangents==0.6.5")["nt-065-jax-060-import"]
    assert "neural-tangents 0.6.5 (planned)" in detail["detail"] and "(installed)" not in detail["detail"]


@pytest.mark.slow
def test_the_table_holds_only_what_the_index_lists_for_this_python() -> None:
    """Read again from the package index (network): each release the table lists for this Python is still there."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    platforms = [a for p in ("manylinux2014_x86_64", "manylinux_2_27_x86_64") for a in ("--platform", p)]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "index",
            "versions",
            "jaxlib",
            "--python-version",
            here,
            "--only-binary=:all:",
            "--implementation",
            "cp",
            *platforms,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-500:]
    listed = next(line for line in done.stdout.splitlines() if "Available versions" in line)
    index = set(listed.partition(":")[2].replace(" ", "").split(","))
    assert set(WHEELS["versions"][here]) <= index


def _declared_tables() -> list[Table[Any]]:
    """Every Table a module of the rules package declares."""
    found: list[Table[Any]] = []
    for info in pkgutil.iter_modules(rules.__path__):
        module = importlib.import_module(f"envaudit.rules.{info.name}")
        found += [v for v in vars(module).values() if isinstance(v, Table) and v not in found]
    return found


def test_every_table_is_declared_once_with_its_shape_and_a_wrong_one_is_refused(tmp_path: Path) -> None:
    """Each table in rules/tables is declared by one module, beside what applies it, and loads against its shape; a
    misspelt key, a missing one or a value of the wrong type is an error when it loads, never a check that silently
    finds nothing."""
    declared = _declared_tables()
    names = sorted(p.name for p in TABLES.glob("*.toml"))
    assert sorted(t.name for t in declared if "/" not in t.name) == names  # derived/: a derivation's own inputs too
    assert all(t.path.is_file() and t.load() for t in declared)
    tpu = next(t for t in declared if t.name == "tpu-extra.toml")
    good = tpu.path.read_text()
    for bad, said in (
        (good.replace("covers_to", "covers_until"), "unknown key"),
        ("\n".join(line for line in good.splitlines() if not line.startswith("covers_to")), "missing 'covers_to'"),
        (good.replace('covers_from = "', "covers_from = 4 #"), "covers_from must be of JSON type string"),
    ):
        (tmp_path / "tpu-extra.toml").write_text(bad)
        with pytest.raises(TableError, match=said):
            tpu.read(tmp_path / "tpu-extra.toml")


def test_the_tables_readme_is_what_their_heads_say() -> None:
    """tables/README.md is generated from each table's head (`python -m derive.readme`): its one place."""
    from derive import readme

    assert readme.README.read_text(encoding="utf-8") == readme.render()


class _Small(TypedDict):
    source: str
    read: str


def test_a_table_s_cached_form_is_keyed_by_its_file_and_the_code_that_checks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table's checked form is kept in envaudit's cache and trusted without a second check (25 ms of every
    command for api-removals.toml): so its key holds the file (path, size, time) and the code that declares and
    checks its shape; a cached form that is not the shape's (damaged) is read anew from the file."""
    from envaudit.files import cachedir
    from envaudit.rules import table

    monkeypatch.setattr(table, "TABLES", tmp_path)
    (tmp_path / "small.toml").write_text('source = "s"\nread = "r"\n')
    assert Table("small.toml", _Small).load() == {"source": "s", "read": "r"}
    (cached,) = [
        p
        for p in (cachedir.cache_dir() or tmp_path).glob("table-*.json")
        if json.loads(p.read_text()) == {"source": "s", "read": "r"}
    ]
    cached.write_text(json.dumps({"source": "from the cache", "read": "r"}))
    assert Table("small.toml", _Small).load()["source"] == "from the cache"  # trusted: the same file and code
    monkeypatch.setattr(table, "_code_of", lambda shape: "another shape's code")
    assert Table("small.toml", _Small).load()["source"] == "s"  # another key: read from the file
    monkeypatch.undo()
    monkeypatch.setattr(table, "TABLES", tmp_path)
    cached.write_text(json.dumps(["damaged"]))
    assert Table("small.toml", _Small).load()["source"] == "s"
