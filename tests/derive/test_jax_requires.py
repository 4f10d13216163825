"""jax-requires.toml derived from the files released on PyPI (derive/tables/jax_requires.py): Requires-Dist read from
a wheel's METADATA, else from an sdist's setup.py checked against its egg-info, normalised; the written table has
its shape and reaches the newest jax the other tables speak of."""

from __future__ import annotations

import datetime
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from derive.sources import wheels
from derive.tables import jax_requires as derivation
from envaudit.rules.jax_pins import REQUIRES
from envaudit.rules.table import head
from envaudit.rules.tpu_pins import TPU_EXTRA
from tests.conftest import derive_cache

METADATA = """Metadata-Version: 2.1
Name: jax
Version: 0.4.30
Requires-Python: >=3.9
Requires-Dist: jaxlib <=0.4.30,>=0.4.27
Requires-Dist: ml-dtypes >=0.2.0
Requires-Dist: numpy >=1.22
Requires-Dist: opt-einsum
Requires-Dist: scipy >=1.9
Requires-Dist: importlib-metadata >=4.6 ; python_version < "3.10"
Requires-Dist: numpy >=1.26.0 ; python_version >= "3.12"
Provides-Extra: ci
Requires-Dist: jaxlib ==0.4.29 ; extra == 'ci'
Provides-Extra: tpu
Requires-Dist: libtpu-nightly ==0.1.dev20240617 ; extra == 'tpu'
Requires-Dist: requests ; python_version >= "3.9" and extra == "tpu"

long description
"""

SETUP_PY = b"""
from setuptools import setup, find_packages
_dct = {}
__version__ = '0.4.11'
setup(
    name='jax',
    version=__version__,
    python_requires='>=3.8',
    install_requires=[
        'ml_dtypes>=0.1.0',
        'numpy>=1.21',
        'opt_einsum',
        'scipy>=1.7',
        'importlib_metadata>=4.6;python_version<"3.10"',
    ],
    extras_require={'cpu': [f'jaxlib=={__version__}']},
)
"""

REQUIRES_TXT = """ml_dtypes>=0.1.0
numpy>=1.21
opt_einsum
scipy>=1.7

[:python_version < "3.10"]
importlib_metadata>=4.6

[cpu]
jaxlib==0.4.11
"""

FROM_SETUP = [
    'importlib_metadata>=4.6; python_version < "3.10"',
    "ml_dtypes>=0.1.0",
    "numpy>=1.21",
    "opt_einsum",
    "scipy>=1.7",
]


def test_a_wheel_metadata_gives_its_requirements_normalised_without_extras_or_jaxlib() -> None:
    read = wheels.fields(METADATA)
    assert read["Requires-Python"] == [">=3.9"]
    assert derivation.requirements(read["Requires-Dist"], leave_out="jaxlib") == [
        'importlib-metadata>=4.6; python_version < "3.10"',
        "ml-dtypes>=0.2.0",
        "numpy>=1.22",
        'numpy>=1.26.0; python_version >= "3.12"',
        "opt-einsum",
        "scipy>=1.9",
    ]
    # jaxlib's own list keeps every package; the old setuptools form "name (>=x)" reads as "name>=x"
    assert derivation.requirements(["scipy (>=1.7)", "numpy (>=1.21)", "numpy (>=1.21)"]) == [
        "numpy>=1.21",
        "scipy>=1.7",
    ]


def test_an_unparsable_requirement_is_an_error_not_dropped() -> None:
    with pytest.raises(ValueError):
        derivation.requirements(["numpy >=>= 1"])


def test_setup_py_is_read_as_literals_and_a_computed_one_refused() -> None:
    requires, python = derivation.setup_py(SETUP_PY)
    assert python == ">=3.8" and derivation.requirements(requires) == FROM_SETUP
    with pytest.raises(ValueError, match="computed"):
        derivation.setup_py(b"v = '1'\nsetup(install_requires=['numpy', f'scipy>={v}'])")
    with pytest.raises(ValueError, match="not a literal list"):
        derivation.setup_py(b"setup(install_requires=REQUIRES)")
    with pytest.raises(ValueError, match="2 setup"):
        derivation.setup_py(b"setup()\nsetuptools.setup()")


def test_egg_info_requires_keeps_markers_and_drops_extras() -> None:
    assert derivation.requirements(derivation.egg_requires(REQUIRES_TXT)) == FROM_SETUP


def sdist(tmp_path: Path, files: dict[str, str | bytes], name: str = "jax-0.4.11") -> Path:
    path = tmp_path / f"{name}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for inner, text in files.items():
            data = text.encode() if isinstance(text, str) else text
            info = tarfile.TarInfo(f"{name}/{inner}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


PKG_INFO = "Metadata-Version: 2.1\nName: jax\nVersion: 0.4.11\nRequires-Python: >=3.8\nProvides-Extra: cpu\n\ntext\n"


def test_an_sdist_without_requires_dist_is_read_from_its_setup_py(tmp_path: Path) -> None:
    path = sdist(
        tmp_path,
        {"PKG-INFO": PKG_INFO, "setup.py": SETUP_PY, "jax.egg-info/requires.txt": REQUIRES_TXT, "jax/version.py": ""},
    )
    python, requires = derivation.sdist_declared(path)
    assert python == ">=3.8" and derivation.requirements(requires) == FROM_SETUP
    assert derivation.sdist_member(path, "jax/version.py") == b"" and derivation.sdist_member(path, "nope") is None


def test_an_sdist_whose_setup_py_and_egg_info_disagree_fails(tmp_path: Path) -> None:
    path = sdist(
        tmp_path,
        {"PKG-INFO": PKG_INFO, "setup.py": SETUP_PY, "jax.egg-info/requires.txt": "numpy>=1.20\n"},
    )
    with pytest.raises(SystemExit, match="disagree"):
        derivation.sdist_declared(path)


def test_an_sdist_with_requires_dist_in_pkg_info_reads_it(tmp_path: Path) -> None:
    info = PKG_INFO.replace(
        "Provides-Extra: cpu\n", "Requires-Dist: numpy>=1.22\nRequires-Dist: jaxlib; extra == 'cpu'\n"
    )
    python, requires = derivation.sdist_declared(sdist(tmp_path, {"PKG-INFO": info, "setup.py": b"raise SystemExit"}))
    assert python == ">=3.8" and derivation.requirements(requires) == ["numpy>=1.22"]


def file(name: str, yanked: bool = False) -> dict[str, Any]:
    kind = "sdist" if name.endswith(".tar.gz") else "bdist_wheel"
    return {
        "filename": name,
        "url": f"https://files.example/{name}",
        "packagetype": kind,
        "digests": {"sha256": "0" * 64},
        "upload_time_iso_8601": "2024-01-01T00:00:00.000000Z",
        "yanked": yanked,
    }


def test_final_releases_from_0_4_1_keep_a_yanked_one_only_where_listed() -> None:
    data = {
        "info": {"name": "jax"},
        "releases": {
            "0.4.0": [file("jax-0.4.0.tar.gz")],
            "0.4.1": [file("jax-0.4.1.tar.gz")],
            "0.4.15": [file("jax-0.4.15.tar.gz", yanked=True)],
            "0.4.16": [file("jax-0.4.16.tar.gz"), file("jax-0.4.16-py3-none-any.whl")],
            "0.4.32": [file("jax-0.4.32-py3-none-any.whl", yanked=True)],
            "0.5.0rc1": [file("jax-0.5.0rc1-py3-none-any.whl")],
            "0.5.0": [],
        },
    }
    found = derivation.final_releases(data, ["0.4.15"])
    assert [(a.version, a.kind) for a in found] == [("0.4.1", "sdist"), ("0.4.15", "sdist"), ("0.4.16", "wheel")]


def test_the_jaxlib_wheel_read_is_cpython_311_on_linux_x86_64_else_312() -> None:
    files = [
        file("jaxlib-0.4.30-cp311-cp311-macosx_11_0_arm64.whl"),
        file("jaxlib-0.4.30-cp312-cp312-manylinux2014_x86_64.whl"),
        file("jaxlib-0.4.30-cp311-cp311-manylinux2014_x86_64.whl"),
        file("jaxlib-0.4.30-cp311-cp311-manylinux2014_aarch64.whl"),
    ]
    assert (derivation.jaxlib_wheel(files) or {})["filename"] == "jaxlib-0.4.30-cp311-cp311-manylinux2014_x86_64.whl"
    newer = [
        file("jaxlib-0.12.1-cp313-cp313-manylinux_2_27_x86_64.whl"),
        file("jaxlib-0.12.1-cp312-cp312-manylinux_2_27_x86_64.whl"),
    ]
    assert (derivation.jaxlib_wheel(newer) or {})["filename"].startswith("jaxlib-0.12.1-cp312-")
    assert derivation.jaxlib_wheel(files[:1]) is None and derivation.jaxlib_wheel([]) is None


TABLE = REQUIRES.load()


def test_the_written_table_has_its_shape_and_says_how_it_was_read() -> None:
    assert REQUIRES.read(REQUIRES.path) == TABLE
    assert "DERIVED by derive/tables/jax_requires.py" in head(REQUIRES.path)
    assert "do not edit by hand" in head(REQUIRES.path)
    assert TABLE["read"].endswith(f"{len(TABLE['release'])} jax releases, 0.4.1 to {list(TABLE['release'])[-1]}")
    assert next(iter(TABLE["release"])) == "0.4.1"


def test_the_table_reaches_the_newest_jax_the_other_tables_speak_of() -> None:
    from packaging.version import Version

    newest = TPU_EXTRA.load()["covers_to"]
    assert newest in TABLE["release"]
    releases = [Version(v) for v in TABLE["release"]]
    assert releases == sorted(releases) and max(releases) >= Version(newest)


def test_every_row_is_normalised_as_the_derivation_writes_it() -> None:
    for version, row in TABLE["release"].items():
        assert row["python"].startswith(">="), version
        assert datetime.date.fromisoformat(row["released"]) >= datetime.date(2022, 12, 1), version  # 0.4.1's month
        for key in ("jax", "jaxlib"):
            assert row[key] == derivation.requirements(row[key]), (version, key)
        assert not any(r.startswith("jaxlib") for r in row["jax"]), version  # the coupling is the other table's


@pytest.mark.slow
def test_the_table_is_rederived_from_the_index_as_committed(tmp_path: Path) -> None:
    """Network: PyPI's JSON of jax and jaxlib (the released files kept by the suite's cache): every release the
    committed table lists is derived again to the same row (a newer release on PyPI is only more rows)."""
    out = tmp_path / "jax-requires.toml"
    assert derivation.main(["--cache", str(derive_cache(tmp_path)), "--output", str(out)]) == 0
    derived = REQUIRES.read(out)["release"]
    assert {v: derived.get(v) for v in TABLE["release"]} == TABLE["release"]
