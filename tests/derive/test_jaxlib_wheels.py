"""The derivation of jaxlib-wheels.toml (derive/tables/jaxlib_wheels.py): which Pythons a wheel's tags install on
(regular CPython builds only, abi3 onward, Linux x86_64 only), the table from a PyPI JSON (yanked releases named,
pre-releases and file-less releases left out, the span), its bytes, and the written table: its shape, and the
newest jaxlib it reaches."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.tags import Tag
from packaging.version import Version

from derive.tables import jaxlib_wheels as derivation
from envaudit.rules import wheels
from envaudit.rules.table import TABLES, head
from tests.conftest import derive_cache


def files(*names: str, yanked: bool = False, day: str = "01") -> list[dict[str, Any]]:
    return [{"filename": n, "yanked": yanked, "upload_time_iso_8601": f"2026-01-{day}T00:00:00.000000Z"} for n in names]


PYPI: dict[str, Any] = {
    "info": {"name": "jaxlib"},
    "releases": {
        "0.4.13": files(
            "jaxlib-0.4.13-cp38-cp38-manylinux2014_x86_64.whl",
            "jaxlib-0.4.13-cp311-cp311-manylinux2014_x86_64.whl",
            "jaxlib-0.4.13-cp312-cp312-macosx_11_0_arm64.whl",  # not Linux x86_64
        ),
        "0.4.14": [],  # deleted: no files
        "0.4.32": files("jaxlib-0.4.32-cp311-cp311-manylinux2014_x86_64.whl", yanked=True),
        "0.5.0": files(
            "jaxlib-0.5.0-cp311-cp311-manylinux_2_27_x86_64.whl",
            "jaxlib-0.5.0-cp313-cp313t-manylinux_2_27_x86_64.whl",  # free-threaded only: not a 3.13 wheel
            "jaxlib-0.5.0-cp311-cp311-musllinux_1_2_x86_64.whl",
            "jaxlib-0.5.0.tar.gz",
        ),
        "0.6.0": files("jaxlib-0.6.0-cp312-abi3-manylinux2014_x86_64.whl", day="03"),  # 3.12 and every later one
        "0.7.0rc1": files("jaxlib-0.7.0rc1-cp315-cp315-manylinux2014_x86_64.whl", day="09"),  # a pre-release
    },
}


@pytest.mark.parametrize(
    ("tag", "served"),
    [
        (Tag("cp311", "cp311", "manylinux2014_x86_64"), (11, False)),
        (Tag("cp312", "cp312", "manylinux_2_27_x86_64"), (12, False)),
        (Tag("cp313", "cp313t", "manylinux_2_27_x86_64"), None),
        (Tag("cp312", "abi3", "manylinux2014_x86_64"), (12, True)),
        (Tag("py3", "none", "manylinux2014_x86_64"), (0, True)),
        (Tag("cp311", "cp311", "manylinux2014_aarch64"), None),
        (Tag("cp311", "cp311", "musllinux_1_2_x86_64"), None),
        (Tag("cp311", "cp311", "win_amd64"), None),
        (Tag("pp310", "pypy310_pp73", "manylinux2014_x86_64"), None),
    ],
)
def test_a_tag_serves_the_pythons_pip_installs_it_on(tag: Tag, served: tuple[int, bool] | None) -> None:
    assert derivation.minors(tag) == served


def test_the_table_from_a_pypi_json() -> None:
    found = derivation.derive(PYPI)
    assert found["versions"] == {
        "3.8": ["0.4.13"],
        "3.11": ["0.4.13", "0.5.0"],  # 0.4.32 is yanked: named under `yanked`, not listed
        "3.12": ["0.6.0"],
    }
    assert found["yanked"] == ["0.4.32"]
    assert (found["covers_from"], found["covers_to"]) == ("0.4.13", "0.6.0")


def test_an_abi3_wheel_serves_every_later_python_the_table_has() -> None:
    data = {
        **PYPI,
        "releases": {**PYPI["releases"], "0.7.0": files("jaxlib-0.7.0-cp314-cp314-manylinux2014_x86_64.whl")},
    }
    found = derivation.derive(data)["versions"]
    assert list(found) == ["3.8", "3.11", "3.12", "3.14"]  # by number, not by text
    assert found["3.14"] == ["0.6.0", "0.7.0"] and "0.6.0" not in found["3.11"]


def test_the_same_json_writes_the_same_bytes_and_a_loadable_table(tmp_path: Path) -> None:
    derived = derivation.derive(PYPI)
    text = derivation.render(derived, "2026-01-03, 4 jaxlib releases 0.4.13 to 0.6.0")
    assert text == derivation.render(derivation.derive(PYPI), "2026-01-03, 4 jaxlib releases 0.4.13 to 0.6.0")
    out = tmp_path / "jaxlib-wheels.toml"
    out.write_text(text)
    table = wheels.WHEELS.read(out)
    assert table["versions"]["3.11"] == ["0.4.13", "0.5.0"] and table["yanked"] == ["0.4.32"]
    assert text.startswith("# The jaxlib releases") and "DERIVED by" in text


def test_the_read_date_is_the_newest_upload_not_today(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "json").mkdir(parents=True)
    (cache / "json" / "jaxlib.json").write_text(json.dumps(PYPI))
    out = tmp_path / "out.toml"
    assert derivation.main(["--cache", str(cache), "--offline", "--output", str(out)]) == 0
    first = out.read_bytes()
    assert tomllib.loads(first.decode())["read"] == "2026-01-03, 4 jaxlib releases 0.4.13 to 0.6.0"
    assert derivation.main(["--cache", str(cache), "--offline", "--output", str(out)]) == 0
    assert out.read_bytes() == first


def test_the_written_table_reads_with_its_shape_and_reaches_the_newest_jaxlib() -> None:
    table = wheels.WHEELS.read(TABLES / "jaxlib-wheels.toml")
    assert "DERIVED by derive/tables/jaxlib_wheels.py" in head(TABLES / "jaxlib-wheels.toml")
    assert Version(table["covers_to"]) >= Version("0.12.1")
    assert table["covers_from"] == "0.4.13"  # the first release PyPI lists any file of
    assert "0.4.32" in table.get("yanked", [])
    pythons = list(table["versions"])
    assert pythons == sorted(pythons, key=lambda p: tuple(map(int, p.split(".")))) and "3.12" in pythons
    assert all(table["covers_to"] in table["versions"][p] for p in ("3.12", "3.13", "3.14"))


@pytest.mark.slow
def test_the_table_is_rederived_from_the_index_as_written(tmp_path: Path) -> None:
    """From PyPI (network): its file lists give the table written, for every release it covers."""
    out = tmp_path / "jaxlib-wheels.toml"
    assert derivation.main(["--cache", str(derive_cache(tmp_path)), "--output", str(out)]) == 0
    written, derived = wheels.WHEELS.load(), wheels.WHEELS.read(out)
    upto = Version(written["covers_to"])
    for python, found in written["versions"].items():
        assert [v for v in derived["versions"][python] if Version(v) <= upto] == found, python
    assert derived["covers_from"] == written["covers_from"]
