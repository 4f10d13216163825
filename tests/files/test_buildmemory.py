"""What a plan's builds measured, remembered: the file stays readable, whatever the entries weigh."""

from __future__ import annotations

from pathlib import Path

import pytest

from envaudit.files import buildmemory, cachedir


@pytest.mark.slow  # writes the file 48 times, megabytes each
def test_the_memory_stays_within_what_the_cache_reads_back_and_keeps_the_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At MAX_ENTRIES entries just under MAX_ENTRY_BYTES each, the file would pass what cachedir reads back (16 MiB)
    and read as nothing at all: every remembered build lost at once. The oldest go first instead."""
    monkeypatch.setenv("ENVAUDIT_CACHE_DIR", str(tmp_path / "cache"))  # a cache of its own: it writes megabytes
    heavy = {"document": {"failed": ["x" * (buildmemory.MAX_ENTRY_BYTES - 1024)]}}
    for n in range(buildmemory.MAX_ENTRIES):
        assert buildmemory.remember("measured", f"key{n}", heavy, now=1000.0 + n)
    newest = f"key{buildmemory.MAX_ENTRIES - 1}"
    assert buildmemory.recall("measured", newest, now=2000.0) == heavy
    assert buildmemory.recall("measured", "key0", now=2000.0) is None  # the oldest gave way
    path = cachedir.private(make=False)
    assert path is not None and (path / buildmemory.NAME).stat().st_size <= buildmemory.BUDGET
