"""`python -m derive refresh` on a made-up derivation: it runs where its inputs moved and only there, replaces its
table whole, says which rows changed, and keeps the table where the derivation fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from derive import diff, refresh
from derive.registry import Derivation
from derive.sources import wheels

FAKE = Derivation("fake.toml", "tests.derive.fake_table", ("pypi:fakeproj",), "release", "none: a test's")


def publish(cache: Path, releases: dict[str, list[str]]) -> None:
    """fakeproj's JSON in the cache, as PyPI would list these files."""
    files = {
        v: [{"filename": f, "digests": {"sha256": f"{hash(f) & 0xFFFF:064x}"}} for f in fs]
        for v, fs in releases.items()
    }
    (cache / "json").mkdir(parents=True, exist_ok=True)
    (cache / "json" / "fakeproj.json").write_text(json.dumps({"releases": files}))


def run(tmp_path: Path, **options: object) -> list[refresh.Outcome]:
    tables = tmp_path / "tables"
    tables.mkdir(exist_ok=True)
    chosen = refresh.Options(cache=tmp_path / "cache", offline=True, derivations=(FAKE,), tables=tables)
    for key, value in options.items():
        setattr(chosen, key, value)
    return refresh.Refresh(chosen).run()


def runs(tmp_path: Path) -> int:
    return len((tmp_path / "cache" / "runs").read_text().splitlines())


def test_a_refresh_derives_once_then_only_where_an_input_moved(tmp_path: Path) -> None:
    publish(tmp_path / "cache", {"1.0": ["fakeproj-1.0.tar.gz"]})
    first = run(tmp_path)
    assert [o.status for o in first] == ["changed"]
    assert first[0].diff.added == ["source", "read", "release: package=fakeproj, from 1.0"]  # a new table: all rows
    table = (tmp_path / "tables" / "fake.toml").read_text()
    assert run(tmp_path)[0].status == "skipped" and runs(tmp_path) == 1  # nothing moved: not run at all
    publish(tmp_path / "cache", {"1.0": ["fakeproj-1.0.tar.gz"], "1.1": ["fakeproj-1.1.tar.gz"]})
    third = run(tmp_path)[0]
    assert third.status == "changed" and third.diff.added == ["release: package=fakeproj, from 1.1"]
    assert not third.diff.removed and not third.diff.changed
    assert (tmp_path / "tables" / "fake.toml").read_text().startswith(table.split("[[release]]")[0])


def test_the_same_inputs_give_the_same_bytes(tmp_path: Path) -> None:
    publish(tmp_path / "cache", {"1.0": ["fakeproj-1.0.tar.gz"]})
    run(tmp_path)
    before = (tmp_path / "tables" / "fake.toml").read_bytes()
    again = run(tmp_path, force=True)[0]
    assert again.status == "same" and not again.diff and runs(tmp_path) == 2
    assert (tmp_path / "tables" / "fake.toml").read_bytes() == before


def test_a_table_edited_by_hand_is_derived_again(tmp_path: Path) -> None:
    publish(tmp_path / "cache", {"1.0": ["fakeproj-1.0.tar.gz"]})
    run(tmp_path)
    path = tmp_path / "tables" / "fake.toml"
    derived = path.read_text()
    path.write_text(derived.replace("fakeproj-1.0.tar.gz", "edited.tar.gz"))
    outcome = run(tmp_path)[0]
    assert outcome.status == "changed" and outcome.diff.changed == ["release: package=fakeproj, from 1.0"]
    assert path.read_text() == derived


def test_a_derivation_that_fails_keeps_its_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    publish(tmp_path / "cache", {"1.0": ["fakeproj-1.0.tar.gz"]})
    run(tmp_path)
    path = tmp_path / "tables" / "fake.toml"
    kept = path.read_bytes()
    publish(tmp_path / "cache", {"2.0": ["fakeproj-2.0.tar.gz"]})
    monkeypatch.setenv("FAKE_TABLE_FAIL", "1")
    outcome = run(tmp_path)[0]
    assert outcome.status == "failed" and "the index said no" in outcome.message
    assert path.read_bytes() == kept
    assert "1 failed" in refresh.report([outcome], 0.1)[-1]


def test_an_unknown_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no derivation of nothing\.toml"):
        run(tmp_path, only=("nothing.toml",))


def test_the_project_a_derivation_read_is_what_its_fingerprint_holds(tmp_path: Path) -> None:
    publish(tmp_path / "cache", {"1.0": ["fakeproj-1.0.tar.gz"]})
    run(tmp_path)
    state = wheels.load_json(tmp_path / "cache" / refresh.STATE)
    assert list(state["fake.toml"]["inputs"]["projects"]) == ["fakeproj"]


def test_rows_are_named_by_what_identifies_them() -> None:
    old = '[[use]]\npackage = "a"\napi = "jax.x"\nversions = ["<1"]\n\n[release."0.4.1"]\npython = ">=3.8"\n'
    new = '[[use]]\npackage = "a"\napi = "jax.x"\nversions = ["<2"]\n\n[release."0.4.2"]\npython = ">=3.9"\n'
    found = diff.between(old, new)
    assert found.changed == ["use: package=a, api=jax.x"]  # the same use, over other releases
    assert "release.0.4.2" in found.added and "release.0.4.1" in found.removed
    assert diff.render("t.toml", found)[0].startswith("t.toml: ")


@pytest.mark.parametrize("state", ["{not json", "[1, 2]", '{"fake.toml": {"output": "x", "inputs": []}}'])
def test_a_state_file_the_refresh_did_not_write_means_derive_again(tmp_path: Path, state: str) -> None:
    """The state is a cache: a corrupt or foreign one is a refresh from nothing, never a traceback or an exit 2."""
    publish(tmp_path / "cache", {"1.0": ["fakeproj-1.0.tar.gz"]})
    run(tmp_path)
    (tmp_path / "cache" / refresh.STATE).write_text(state)
    assert run(tmp_path)[0].status == "same" and runs(tmp_path) == 2


def test_an_unreadable_project_json_is_a_moved_input(tmp_path: Path) -> None:
    publish(tmp_path / "cache", {"1.0": ["fakeproj-1.0.tar.gz"]})
    run(tmp_path)
    (tmp_path / "cache" / "json" / "fakeproj.json").write_text("garbage")
    outcome = run(tmp_path)[0]  # fingerprinted as unreadable: derived again, where the derivation says why it fails
    assert outcome.status == "failed" and runs(tmp_path) == 2
