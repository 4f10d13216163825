"""The releases after a floor, as the installer's resolver gives them (`build.following`): what `fix` tries as the
least moves before the installer's newest. A fake uv plays the index, so the test is offline and exact."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from envaudit.collect import build

FAKE = """\
import os, sys
args = [a for a in sys.argv[1:] if a != "--no-config"]
with open(os.environ["FOLLOWING_LOG"], "a") as log:
    log.write(" ".join(args[:-1]) + "\\n")
assert args[:2] == ["pip", "compile"], args
asked = open(args[-1]).read().strip()
name, _, floor = asked.partition(">")
releases = ["0.1.3", "0.1.4", "0.1.5"]
later = [r for r in releases if tuple(map(int, r.split("."))) > tuple(map(int, floor.split(".")))]
if not later:
    sys.stderr.write("error: No solution found when resolving dependencies\\n")
    sys.exit(1)
print(f"{name}=={later[0]}")
"""


def test_the_releases_after_a_floor_are_the_resolver_s_lowest_each_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake_uv.py"
    fake.write_text(FAKE, encoding="utf-8")
    log = tmp_path / "log"
    monkeypatch.setenv("FOLLOWING_LOG", str(log))
    uv = (sys.executable, str(fake))
    assert build.following("rlax>0.1.2", "3.11", 2, uv) == ["0.1.3", "0.1.4"]
    asked = log.read_text(encoding="utf-8").splitlines()
    # for the environment's Python, without what the release needs (its own resolution is the twin's), lowest first
    assert all("--no-deps" in a and "--resolution lowest" in a and "--python-version 3.11" in a for a in asked)
    assert build.following("rlax>0.1.4", "3.11", 3, uv) == ["0.1.5"]  # the index has no more
    assert build.following("rlax>0.1.5", "3.11", 2, uv) == []


DATED = """\
import os, sys
args = [a for a in sys.argv[1:] if a != "--no-config"]
with open(os.environ["FOLLOWING_LOG"], "a") as log:
    log.write(" ".join(args[:-1]) + "\\n")
uploaded = {"0.9.0": "2023-03-30", "0.9.1": "2023-06-12", "0.9.2": "2023-09-07", "0.12.1": "2024-12-11"}
day = args[args.index("--exclude-newer") + 1] if "--exclude-newer" in args else "9999"
asked = open(args[-1]).read().strip()
name, _, ceiling = asked.partition("<")
key = lambda r: tuple(map(int, r.split(".")))
fits = [r for r, up in uploaded.items() if up < day and (not ceiling or key(r) < key(ceiling))]
if not fits:
    sys.exit(1)
print(f"{name}=={max(fits, key=key)}")
"""


def test_a_library_as_it_stood_on_a_day_is_its_newest_release_uploaded_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake_uv.py"
    fake.write_text(DATED, encoding="utf-8")
    log = tmp_path / "log"
    monkeypatch.setenv("FOLLOWING_LOG", str(log))
    uv = (sys.executable, str(fake))
    assert build.following("brax", "3.10", 2, uv, before="2023-07-27") == ["0.9.1", "0.9.0"]
    asked = log.read_text(encoding="utf-8").splitlines()
    assert all("--exclude-newer 2023-07-27" in a and "--resolution highest" in a for a in asked), asked
    assert build.following("brax", "3.10", 1, uv) == ["0.12.1"]  # no day: the newest


PUBLISHING = """\
import os, sys
args = [a for a in sys.argv[1:] if a != "--no-config"]
with open(os.environ["FOLLOWING_LOG"], "a") as log:
    log.write(" ".join(a for a in args if not a.startswith("/")) + "\\n")
uploaded = {"orbax-checkpoint": "2023-12-01T16:44:20.261Z", "numpy": "2023-10-14T10:00:00Z"}
name, _, version = open(args[args.index("--no-header") + 1]).read().strip().partition("==")
if "--offline" in args and name == "numpy":  # not in the cache: asked of the index
    sys.stderr.write("error: Network connectivity is disabled, but the requested data wasn't found in the cache\\n")
    sys.exit(2)
if name in uploaded:
    sys.stderr.write(
        f"hint: `{name}` was filtered by `exclude-newer` to only include packages uploaded before "
        f"1990-01-02T00:00:00Z. The requested version, v{version}, was published at {uploaded[name]}.\\n"
    )
sys.exit(1)
"""


def test_the_day_a_pinned_release_was_uploaded_is_what_uv_says_of_a_cut_off_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake_uv.py"
    fake.write_text(PUBLISHING, encoding="utf-8")
    log = tmp_path / "log"
    monkeypatch.setenv("FOLLOWING_LOG", str(log))
    uv = (sys.executable, str(fake))
    pins = {"orbax-checkpoint": "0.4.4", "numpy": "1.26.1", "unknown-here": "1.0"}
    assert build.published(pins, "3.10", uv) == {"orbax-checkpoint": "2023-12-01", "numpy": "2023-10-14"}
    asked = log.read_text(encoding="utf-8").splitlines()
    assert all("--exclude-newer 1990-01-01" in a and "--no-deps" in a for a in asked)
    # from uv's cache first; the index only for what the cache lacks
    assert sum("--offline" in a for a in asked) == 3 and len(asked) == 5
    assert build.published({}, "3.10", uv) == {}
