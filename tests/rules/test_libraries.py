"""The list of libraries around jax (derive/tables/libraries.py): which candidates a fake PyPI keeps and by which
way (a requirement, an extra, an entry point, a file that imports jax), and what the committed list holds; offline."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tomllib
import urllib.error
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from derive.sources import library_uses, wheels
from derive.tables import libraries
from envaudit.model import scope


def project(name: str, version: str, requires: list[str] | None, uploads: dict[str, str] | None = None) -> Any:
    """PyPI's JSON of a project, as the cache keeps it: `info` of the newest release, one wheel per release."""
    releases = {
        v: [
            {
                "filename": f"{name}-{v}-py3-none-any.whl",
                "url": f"https://files.example/{name}-{v}-py3-none-any.whl",
                "packagetype": "bdist_wheel",
                "upload_time_iso_8601": when,
                "digests": {"sha256": "0" * 64},
            }
        ]
        for v, when in (uploads or {version: "2024-01-01T00:00:00Z"}).items()
    }
    return {"info": {"name": name, "version": version, "requires_dist": requires}, "releases": releases}


def fake_pypi(
    cache: Path,
    projects: dict[str, Any],
    files: dict[str, dict[str, str]] | None = None,
    entry_points: dict[str, str] | None = None,
) -> None:
    """The projects' JSON, each wheel's RECORD and entry_points.txt (as ranged out of it before; an absent one
    remembered absent) in the cache, and a project's whole wheel where `files` gives its Python files (in the
    cache's files/, its sha256 the one the JSON lists, as wheels.fetch checks)."""
    for name, data in projects.items():
        (cache / "json").mkdir(parents=True, exist_ok=True)
        for listed in data["releases"].values():
            filename = listed[0]["filename"]
            member = cache / "members" / filename / "RECORD"
            member.parent.mkdir(parents=True)
            member.write_text(f"{name.replace('-', '_')}/__init__.py,sha256=x,1\n")
            said = (entry_points or {}).get(name)
            if said is None:
                (member.parent / "entry_points.txt.absent").touch()
            else:
                (member.parent / "entry_points.txt").write_text(said)
            if name in (files or {}):
                built = io.BytesIO()
                with zipfile.ZipFile(built, "w") as archive:
                    for path, text in (files or {})[name].items():
                        archive.writestr(path, text)
                (cache / "files").mkdir(exist_ok=True)
                (cache / "files" / filename).write_bytes(built.getvalue())
                listed[0]["digests"] = {"sha256": hashlib.sha256(built.getvalue()).hexdigest()}
        (cache / "json" / f"{name}.json").write_text(json.dumps(data))


# jaxtyping 0.3.11's jaxtyping/__init__.py (its wheel on PyPI): jax imported for annotations only under
# `if typing.TYPE_CHECKING:` (line 44), and at run time in its module __getattr__ (line 184)
JAXTYPING_INIT = """\
import typing

if typing.TYPE_CHECKING:
    from jax import Array as Array
else:

    def __getattr__(item):
        if item == "Array":
            import jax

            return jax.Array
"""


def test_a_candidate_is_kept_by_the_first_way_its_newest_release_shows_a_jax_interface(tmp_path: Path) -> None:
    """Kept: a Requires-Dist that names jax (the line as written), one that applies under a marker before one under
    an extra, an extra's alone; an entry point in jax's plugin group; a package file that imports jax at run time,
    the first in name order (not a test's, not under TYPE_CHECKING); dropped: none of these (a test file's import of
    jax is the project's tests, not its interface)."""
    fake_pypi(
        tmp_path,
        {
            "lib-a": project("lib-a", "1.2", ["numpy>=1.22", "jax>=0.4.20"]),
            "lib-b": project("lib-b", "3.0", ["numpy", "torch"]),
            "lib-c": project("lib-c", "0.5", ["flax>=0.8; extra == 'flax'", "optax; python_version >= '3.10'"]),
            "lib-d": project("lib-d", "2.0", ["numpy", "jax>=0.4; extra == 'jax'"]),
            "plugin": project("plugin", "0.1.1", ["six"]),
            "jaxtyping": project("jaxtyping", "0.3.11", ["wadler-lindig>=0.1.3"]),
        },
        files={
            "jaxtyping": {
                "jaxtyping/__init__.py": JAXTYPING_INIT,
                "jaxtyping/_array_types.py": "import numpy as np\n",
                "jaxtyping/tests/test_a.py": "import jax\n",
            },
            "lib-b": {"lib_b/__init__.py": "import torch\n", "lib_b/ops_test.py": "import jax.numpy\n"},
        },
        entry_points={"plugin": "[console_scripts]\nplug = plugin:main\n\n[jax_plugins]\nmetal = jax_plugins.metal\n"},
    )
    seed = tmp_path / "candidates.toml"
    seed.write_text(
        "".join(
            f'[[candidate]]\nname = "{name}"\nfound = "https://example.org/{name}"\n'
            for name in ("lib-a", "lib-b", "Lib_C", "lib-d", "plugin", "jaxtyping", "lib-a")
        )
    )
    kept, dropped = libraries.derive(tmp_path, True, seed)
    assert [(lib.package, lib.way, lib.evidence) for lib in kept] == [
        ("jaxtyping", "imports", "jaxtyping/__init__.py:9 (jaxtyping-0.3.11-py3-none-any.whl)"),
        ("lib-a", "requires", "jax>=0.4.20"),
        ("lib-c", "requires", "optax; python_version >= '3.10'"),
        ("lib-d", "extra", "jax>=0.4; extra == 'jax'"),
        ("plugin", "entry point", "[jax_plugins] metal = jax_plugins.metal"),
    ]
    assert [lib.requires for lib in kept] == [
        "",
        "jax>=0.4.20",
        "optax; python_version >= '3.10'",
        "jax>=0.4; extra == 'jax'",
        "",
    ]
    assert kept[1].found == "https://example.org/lib-a" and kept[1].imports == ("lib_a",)
    assert dropped == ["lib-b: 3.0 shows no jax interface"]
    assert libraries.requirement_on(["flax>=0.8; extra == 'flax'", "numpy"]) == "flax>=0.8; extra == 'flax'"
    text = libraries.render(kept, "2026-12-06", 6)
    listed = tomllib.loads(text)["library"]
    assert [(lib["package"], lib["way"]) for lib in listed] == [(lib.package, lib.way) for lib in kept]
    assert listed[-1]["entry_point"] == "[jax_plugins] metal = jax_plugins.metal"
    again, _ = libraries.derive(tmp_path, True, seed)  # the scan kept in the cache: the same answer, nothing read
    (tmp_path / "files" / "jaxtyping-0.3.11-py3-none-any.whl").unlink()
    assert libraries.derive(tmp_path, True, seed)[0] == again == kept


def test_what_counts_as_importing_jax() -> None:
    """An import of jax or one of its modules anywhere it runs (a function's body: PennyLane imports jax lazily);
    not one under TYPE_CHECKING, not another package whose name starts with jax, not a relative import."""
    assert libraries.imports_jax(JAXTYPING_INIT.encode()) == 9
    assert libraries.imports_jax(b"import numpy\nfrom jax.experimental import sparse\n") == 2
    assert libraries.imports_jax(b"import jaxtyping\nimport jax_plugins\nfrom .jax import x\n") == 0
    assert libraries.imports_jax(b"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jax\n") == 0
    assert libraries.imports_jax(b"def f(:\n") == 0  # a file that does not parse shows nothing
    assert libraries.jax_entry_point("[pytest11]\njaxtyping = jaxtyping._pytest_plugin\n") == ""
    assert libraries.jax_entry_point("[jax_plugins]\nmetal_plugin = jax_plugins.metal_plugin\n") == (
        "[jax_plugins] metal_plugin = jax_plugins.metal_plugin"
    )


def test_a_name_pypi_lacks_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str, cache: Path, offline: bool) -> Any:
        raise urllib.error.HTTPError(f"https://pypi.org/pypi/{name}/json", 404, "Not Found", None, None)  # type: ignore[arg-type]

    monkeypatch.setattr(wheels, "project_json", missing)
    assert libraries.pypi("no-such-project", Path("."), False) is None
    assert libraries.judge("no-such-project", "https://example.org", None, ("", "", "")) is None


def test_a_project_whose_releases_are_all_old_pre_releases_has_its_newest_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jraph's releases are all .dev0, the newest from 2022: pip installs it, so it is read."""
    uploads = {"0.0.5.dev0": "2022-06-06T13:33:24Z", "0.0.6.dev0": "2022-08-12T15:24:45Z"}
    fake_pypi(tmp_path, {"oldlib": project("oldlib", "0.0.6.dev0", ["jax"], uploads)})
    monkeypatch.setitem(library_uses.SINCES, "oldlib", "2023-01-01")
    assert [a.version for a in library_uses.releases("oldlib", tmp_path, True)] == ["0.0.6.dev0"]


def test_the_committed_list_holds_at_least_80_jax_libraries_with_their_provenance() -> None:
    """Each says how it was found and shows it: its own Requires-Dist line (an extra's for `extra`), its jax entry
    point, or the file and line of its release that imports jax; each names where it was found. library_uses reads
    exactly these, and the audited scope names them."""
    with libraries.OUTPUT.open("rb") as handle:
        listed = tomllib.load(handle)["library"]
    assert len(listed) >= 80
    for lib in listed:
        assert lib["found"].startswith("https://"), lib
        assert lib["way"] in libraries.WAYS, lib
        if lib["way"] in ("requires", "extra"):
            requirement = Requirement(lib["requires"])
            assert canonicalize_name(requirement.name) in libraries.REQUIRED, lib
            assert lib["evidence"] == lib["requires"], lib
            assert libraries.under_extra(requirement) == (lib["way"] == "extra"), lib
        elif lib["way"] == "entry point":
            assert lib["evidence"] == lib["entry_point"] and libraries.JAX_GROUP.search(lib["evidence"]), lib
        else:
            assert re.fullmatch(r"\S+\.py:\d+ \(\S+-" + re.escape(lib["release"]) + r"[-.]\S+\)", lib["evidence"]), lib
    names = {lib["package"] for lib in listed}
    assert set(library_uses.PROJECTS) == names == scope.LIBRARIES


def test_the_libraries_that_declare_no_jax_are_on_the_list_by_what_their_release_holds() -> None:
    """PennyLane's jax interface, jaxtyping, pymc's jax samplers, Keras 3's jax backend and transformers declare no
    jax (their newest Requires-Dist); a file of each imports it. tensorflow-probability's jax substrate is its `jax`
    extra; jax-metal's plugin is the entry point jax reads its plugins from."""
    with libraries.OUTPUT.open("rb") as handle:
        listed = {lib["package"]: lib for lib in tomllib.load(handle)["library"]}
    for name in ("pennylane", "jaxtyping", "pymc", "keras", "transformers"):
        assert listed[name]["way"] == "imports" and listed[name]["requires"] == "", listed[name]
    assert listed["tensorflow-probability"]["way"] == "extra"
    assert listed["jax-metal"]["entry_point"].startswith("[jax_plugins] ")


def test_the_modules_a_wheel_installs_are_read_from_its_record() -> None:
    """A package, a namespace package's subpackages (orbax.export), a single module; not tests or metadata."""
    record = "\n".join(
        f"{path},sha256=x,1"
        for path in (
            "orbax/export/__init__.py",
            "orbax/export/serving.py",
            "kfac_jax/__init__.py",
            "kfac_jax/_src/optimizer.py",
            "tests/test_x.py",
            "single.py",
            "orbax_export-0.0.8.dist-info/METADATA",
        )
    )
    assert libraries.modules(record) == ("kfac_jax", "orbax.export", "single")


def test_each_library_is_named_by_the_module_its_users_import() -> None:
    """What an import-time finding says is imported: the module of the distribution's newest wheel."""
    from envaudit.rules.api_removals import import_name

    expected = {"kfac-jax": "kfac_jax", "dm-pix": "dm_pix", "orbax-export": "orbax.export", "dm-haiku": "haiku"}
    assert {name: import_name(name) for name in expected} == expected
