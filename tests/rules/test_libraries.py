"""The list of libraries api-removals.toml is derived from (derive/tables/libraries.py): which candidates a fake
PyPI keeps, and what the committed list holds; offline."""

from __future__ import annotations

import json
import tomllib
import urllib.error
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


def fake_pypi(cache: Path, projects: dict[str, Any]) -> None:
    """The projects' JSON, and each wheel's RECORD (as ranged out of it before), in the cache."""
    for name, data in projects.items():
        (cache / "json").mkdir(parents=True, exist_ok=True)
        (cache / "json" / f"{name}.json").write_text(json.dumps(data))
        for files in data["releases"].values():
            member = cache / "members" / files[0]["filename"] / "RECORD"
            member.parent.mkdir(parents=True)
            member.write_text(f"{name.replace('-', '_')}/__init__.py,sha256=x,1\n")


def test_a_candidate_is_kept_by_what_its_newest_release_requires(tmp_path: Path) -> None:
    """Kept: a Requires-Dist that names jax (the line as written), one that applies under a marker before one under
    an extra, keras explicitly (it declares no jax); dropped: one that requires none of them."""
    fake_pypi(
        tmp_path,
        {
            "lib-a": project("lib-a", "1.2", ["numpy>=1.22", "jax>=0.4.20"]),
            "lib-b": project("lib-b", "3.0", ["numpy", "torch"]),
            "lib-c": project("lib-c", "0.5", ["flax>=0.8; extra == 'flax'", "optax; python_version >= '3.10'"]),
            "keras": project("keras", "3.11.0", ["absl-py", "numpy"]),
        },
    )
    seed = tmp_path / "candidates.toml"
    seed.write_text(
        "".join(
            f'[[candidate]]\nname = "{name}"\nfound = "https://example.org/{name}"\n'
            for name in ("lib-a", "lib-b", "Lib_C", "keras", "lib-a")
        )
    )
    kept, dropped = libraries.derive(tmp_path, True, seed)
    assert [(lib.package, lib.requires, lib.release) for lib in kept] == [
        ("keras", "", "3.11.0"),
        ("lib-a", "jax>=0.4.20", "1.2"),
        ("lib-c", "optax; python_version >= '3.10'", "0.5"),
    ]
    assert kept[0].explicit and not kept[1].explicit and kept[1].found == "https://example.org/lib-a"
    assert kept[1].imports == ("lib_a",)
    assert dropped == ["lib-b: 3.0 requires none"]
    assert libraries.requirement_on(["flax>=0.8; extra == 'flax'", "numpy"]) == "flax>=0.8; extra == 'flax'"
    text = libraries.render(kept, "2026-12-06", 4)
    assert [lib["package"] for lib in tomllib.loads(text)["library"]] == ["keras", "lib-a", "lib-c"]


def test_a_name_pypi_lacks_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str, cache: Path, offline: bool) -> Any:
        raise urllib.error.HTTPError(f"https://pypi.org/pypi/{name}/json", 404, "Not Found", None, None)  # type: ignore[arg-type]

    monkeypatch.setattr(wheels, "project_json", missing)
    assert libraries.pypi("no-such-project", Path("."), False) is None
    assert libraries.judge("no-such-project", "https://example.org", None, []) is None


def test_a_project_whose_releases_are_all_old_pre_releases_has_its_newest_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jraph's releases are all .dev0, the newest from 2022: pip installs it, so it is read."""
    uploads = {"0.0.5.dev0": "2022-06-06T13:33:24Z", "0.0.6.dev0": "2022-08-12T15:24:45Z"}
    fake_pypi(tmp_path, {"oldlib": project("oldlib", "0.0.6.dev0", ["jax"], uploads)})
    monkeypatch.setitem(library_uses.SINCES, "oldlib", "2023-01-01")
    assert [a.version for a in library_uses.releases("oldlib", tmp_path, True)] == ["0.0.6.dev0"]


def test_the_committed_list_holds_at_least_80_jax_libraries_with_their_provenance() -> None:
    """Each requires one of the packages (its own Requires-Dist line) or says why it is kept without, and names
    where it was found; library_uses reads exactly these, and the audited scope names them."""
    with libraries.OUTPUT.open("rb") as handle:
        listed = tomllib.load(handle)["library"]
    assert len(listed) >= 80
    for lib in listed:
        assert lib["found"].startswith("https://"), lib
        if lib.get("explicit"):
            assert lib["package"] in libraries.EXPLICIT, lib
            continue
        assert canonicalize_name(Requirement(lib["requires"]).name) in libraries.REQUIRED, lib
    names = {lib["package"] for lib in listed}
    assert set(library_uses.PROJECTS) == names == scope.LIBRARIES


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
