"""Release artefacts from PyPI, fetched once into a cache and read as text: the derivations read what was released
(a wheel, else the sdist), never an installed or imported copy, and never re-download a file they already hold.

The cache holds each project's JSON (`json/NAME.json`, refreshed unless --offline) and each file under its own
name (`files/NAME`), checked against the sha256 PyPI lists for it; the derivations keep their per-release results
beside them (`derived/...`) so that a second run parses nothing it parsed before.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import os
import re
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import urljoin

from packaging.version import InvalidVersion, Version

PYPI = "https://pypi.org/pypi/{name}/json"
THREADS = 8
T = TypeVar("T")
R = TypeVar("R")


def default_cache() -> Path:
    """$XDG_CACHE_HOME/envaudit-derive, else ~/.cache/envaudit-derive: shared by every derivation script."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envaudit-derive"


def arguments(description: str) -> argparse.ArgumentParser:
    """The options every derivation script takes: where the cache is, and whether to stay off the network."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cache", type=Path, default=None, help="cache directory (default: %(default)s)")
    parser.add_argument("--offline", action="store_true", help="use only what the cache holds")
    return parser


def jax_git_options(doc: str | None, output: Path, argv: list[str] | None) -> tuple[argparse.Namespace, Path, float]:
    """A derivation that reads jax's tags: its options (--output, and --jax-git, a bare mirror of jax's repository),
    its cache, and when it started."""
    parser = arguments(doc.splitlines()[0] if doc else "")
    parser.add_argument("--output", type=Path, default=output)
    parser.add_argument("--jax-git", type=Path, required=True, help="a bare git mirror of github.com/jax-ml/jax")
    options = parser.parse_args(argv)
    return options, cache_of(options.cache), time.monotonic()


def table_options(doc: str | None, output: Path, argv: list[str] | None) -> argparse.Namespace:
    """The options of a script that writes one table: the common ones, and --output (default: the table's path)."""
    parser = arguments(doc.splitlines()[0] if doc else "")
    parser.add_argument("--output", type=Path, default=output)
    return parser.parse_args(argv)


def start_table(doc: str | None, output: Path, argv: list[str] | None) -> tuple[argparse.Namespace, Path, float]:
    """A table script's start: its options, its download cache, and when it began (write_table says how long)."""
    options = table_options(doc, output, argv)
    return options, cache_of(options.cache), time.monotonic()


def write_table(options: argparse.Namespace, text: str, read: str, started: float) -> None:
    """The table written where --output says, and a line that says what was read and how long it took."""
    options.output.write_text(text)
    print(f"{read}: {options.output.name} in {time.monotonic() - started:.1f}s")


def newest_upload(project: str, versions: Iterable[str], cache: Path) -> str:
    """The date of the newest first upload among these releases (from the cached PyPI JSON): a table's `read`."""
    data = project_json(project, cache, True)
    return max(first_upload(data["releases"][v]) for v in versions)[:10]


def toml_string(text: str) -> str:
    """A TOML basic string of the text, as a derived table writes it."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def toml_list(items: list[str]) -> str:
    """A one-line TOML array of strings."""
    return "[" + ", ".join(toml_string(i) for i in items) + "]"


def runs(rows: list[dict[str, Any]], same: tuple[str, ...]) -> list[dict[str, Any]]:
    """Consecutive releases (rows with a "version", oldest first) whose `same` fields are equal, as one row that
    lists them under "versions", with those fields."""
    grouped: list[dict[str, Any]] = []
    for row in rows:
        if grouped and all(grouped[-1][key] == row[key] for key in same):
            grouped[-1]["versions"].append(row["version"])
        else:
            grouped.append({"versions": [row["version"]], **{key: row[key] for key in same}})
    return grouped


def cache_of(option: Path | None) -> Path:
    return option if option is not None else default_cache()


@dataclass(frozen=True)
class Artefact:
    """One released file of one release: what PyPI says about it."""

    project: str
    version: str
    filename: str
    url: str
    sha256: str
    upload_time: str  # PyPI's upload_time of the release's first file (ISO, UTC)
    kind: str  # "wheel" or "sdist"


TRIES = (
    3  # a request that failed for the network's sake (a name not resolved, a reset) is made again: seen in refreshes
)


def read_url(url: str, timeout: float) -> bytes:
    """A URL's whole body; a network failure is tried again (TRIES in all), an HTTP error answer is not (a 404 is
    the index's word)."""
    for attempt in range(TRIES):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                body: bytes = response.read()
                return body
        except urllib.error.HTTPError:
            raise
        except OSError:
            if attempt == TRIES - 1:
                raise
            time.sleep(2**attempt)
    raise AssertionError("unreachable")


# The projects whose JSON this process read, and those it fetched from PyPI: a refresh reads each project's JSON from
# the index once however many derivations read it, and fingerprints what each derivation read (derive/refresh.py).
READ: set[str] = set()
_FETCHED_IN: set[tuple[str, Path]] = set()


def project_json(name: str, cache: Path, offline: bool) -> dict[str, Any]:
    """PyPI's JSON of a project, kept in the cache: re-read from PyPI unless offline (then the cached copy), once
    per process."""
    path = cache / "json" / f"{name}.json"
    READ.add(name)
    if not offline and (name, cache) not in _FETCHED_IN:
        data = read_url(PYPI.format(name=name), 60)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
        _FETCHED_IN.add((name, cache))
    if not path.exists():
        raise SystemExit(f"{name}: no cached PyPI JSON in {path.parent} (run once without --offline)")
    result: dict[str, Any] = json.loads(path.read_bytes())
    return result


class _Ranges(io.RawIOBase):
    """A remote file read by HTTP range requests: zipfile reads a wheel's central directory and one member of it
    without downloading the rest (a TensorFlow wheel is 600 MB; its METADATA a few kB)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url, self.position = url, 0
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60) as response:
            self.size = int(response.headers["Content-Length"])

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = base + offset
        return self.position

    def readinto(self, buffer: Any) -> int:
        end = min(self.size, self.position + len(buffer))
        if end <= self.position:
            return 0
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.position}-{end - 1}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            if response.status != 206:  # a server that ignores Range answers with the whole file
                raise OSError(f"{self.url}: HTTP {response.status} to a range request, not 206")
            data = response.read()
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def wheel_metadata(filename: str, url: str, cache: Path, offline: bool) -> str:
    """The METADATA of a released wheel, what pip reads of it: ranged out of the remote file once, then kept in the
    cache under the wheel's name."""
    path = cache / "metadata" / f"{filename}.METADATA"
    if not path.exists():
        if offline:
            raise SystemExit(f"{filename}: no cached METADATA in {path.parent} (run once without --offline)")
        data = _ranged(url, lambda n: n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data or b"")
    text: str = path.read_text(encoding="utf-8", errors="replace")
    return text


def wheel_member(
    filename: str, url: str, cache: Path, offline: bool, key: str, wanted: Callable[[str], bool]
) -> bytes | None:
    """The first member of a released wheel whose name `wanted` accepts, None where none is: ranged out of the
    remote file once (a CUDA library's wheel is hundreds of MB, a header in it a few kB), then kept in the cache
    under the wheel's name and `key`, an absent member remembered as absent."""
    path = cache / "members" / filename / key
    absent = path.with_name(f"{key}.absent")
    if path.exists():
        return path.read_bytes()
    if absent.exists():
        return None
    if offline:
        raise SystemExit(f"{filename}: no cached {key} in {path.parent} (run once without --offline)")
    data = _ranged(url, wanted)
    path.parent.mkdir(parents=True, exist_ok=True)
    if data is None:
        absent.touch()
    else:
        write_atomic(path, data)
    return data


def _ranged(url: str, wanted: Callable[[str], bool]) -> bytes | None:
    """One member of a remote wheel, read through its central directory (zipfile checks the member's CRC-32)."""
    for attempt in range(TRIES):
        try:
            with zipfile.ZipFile(io.BufferedReader(_Ranges(url), 1 << 16)) as archive:
                name = next((n for n in archive.namelist() if wanted(n)), None)
                return archive.read(name) if name is not None else None
        except (OSError, zipfile.BadZipFile) as error:
            if attempt == TRIES - 1:
                raise OSError(f"{url}: {error} ({TRIES} tries)") from error
            time.sleep(2**attempt)
    return None


def fields(text: str) -> dict[str, list[str]]:
    """Core metadata's fields, each as the list of its values (Requires-Dist is what pip enforces)."""
    message = HeaderParser().parse(io.StringIO(text))
    found: dict[str, list[str]] = {}
    for key, value in message.items():
        found.setdefault(key, []).append(str(value))
    return found


def first_upload(files: list[dict[str, Any]]) -> str:
    """A release's upload time: its first file's (ISO, UTC)."""
    return min(str(f["upload_time_iso_8601"]) for f in files)


def final(version: str) -> Version | None:
    """A release a table speaks of (a final release), or None for a pre-release, a dev release or no version."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    return None if parsed.is_prerelease or parsed.is_devrelease else parsed


def artefacts(data: dict[str, Any], finals_only: bool = True, any_wheel: bool = False) -> list[Artefact]:
    """Each final release's file to read (finals_only=False: each release's, a pre-release's too), oldest first:
    its pure-Python wheel, else its sdist (any_wheel: else its first platform wheel by name, whose Python files are
    any platform's). A yanked release is kept while it has one of them (pip still installs it when pinned)."""
    name = data["info"]["name"].lower().replace("_", "-")
    found = []
    for version, files in data["releases"].items():
        if (final(version) is None and (finals_only or not _valid(version))) or not files:
            continue
        wheels = [f for f in files if f["filename"].endswith("-none-any.whl")]
        sdists = [f for f in files if f["packagetype"] == "sdist"]
        others = [f for f in files if f["filename"].endswith(".whl") and any_wheel]
        picked = (
            sorted(wheels, key=lambda f: f["filename"])
            or sdists
            or sorted(others, key=lambda f: f["filename"])
            or [None]
        )[0]
        if picked is None:
            continue
        first = first_upload(files)
        kind = "sdist" if picked in sdists else "wheel"
        url = urljoin(PYPI.format(name=name), picked["url"])  # a mirror may list it relative to the JSON
        found.append(Artefact(name, version, picked["filename"], url, picked["digests"]["sha256"], first, kind))
    return sorted(found, key=lambda a: Version(a.version))


def _valid(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def fetch(artefact: Artefact, cache: Path, offline: bool) -> Path:
    """The artefact's file in the cache, downloaded only when absent there; its sha256 is checked either way."""
    path = cache / "files" / artefact.filename
    if not path.exists():
        if offline:
            raise SystemExit(f"{artefact.filename}: not in the cache {path.parent} (run once without --offline)")
        data = read_url(artefact.url, 300)
        _check(artefact, data)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
        return path
    _check(artefact, path.read_bytes())
    return path


def fetch_all(items: Iterable[Artefact], cache: Path, offline: bool) -> dict[Artefact, Path]:
    """Every artefact's file, fetched in parallel threads (downloads wait on the network, not the CPUs)."""
    listed = list(items)
    return dict(zip(listed, parallel(lambda a: fetch(a, cache, offline), listed), strict=True))


def parallel(work: Callable[[T], R], items: list[T]) -> list[R]:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(work, items))


def _check(artefact: Artefact, data: bytes) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest != artefact.sha256:
        raise SystemExit(f"{artefact.filename}: sha256 {digest}, PyPI lists {artefact.sha256}")


def write_atomic(path: Path, data: bytes) -> None:
    """The file replaced by these bytes at once (a temporary file of its own beside it, renamed): a cached file or a
    table is never half-written, and two threads writing the same file never share the temporary one."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def python_files(path: Path) -> Iterator[tuple[str, bytes]]:
    """Each .py file of a wheel or sdist as (its path as the installed package has it, its bytes), sorted: an
    sdist's top folder (name-version/) and a src/ layout are cut, so both read as the wheel would install them."""
    if path.name.endswith(".whl") or path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            entries = {n: archive.read(n) for n in archive.namelist() if n.endswith(".py")}
    else:
        with tarfile.open(path) as archive:
            entries = {}
            for member in archive.getmembers():
                if member.isfile() and member.name.endswith(".py"):
                    handle = archive.extractfile(member)
                    if handle is not None:
                        entries[member.name] = handle.read()
        entries = {_installed_path(n): data for n, data in entries.items()}
    yield from sorted(entries.items())


def _installed_path(name: str) -> str:
    parts = name.split("/")[1:]  # the sdist's name-version/ folder
    return "/".join(parts[1:] if parts[:1] == ["src"] else parts)


def metadata(path: Path) -> dict[str, list[str]]:
    """The core metadata's fields of a wheel (.dist-info/METADATA) or sdist (PKG-INFO), each as the list of its
    values: Requires-Dist is what pip enforces. An sdist's PKG-INFO may lack it (older setuptools)."""
    text = ""
    if path.name.endswith(".whl"):
        with zipfile.ZipFile(path) as archive:
            name = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
            text = archive.read(name).decode("utf-8", "replace") if name else ""
    else:
        with tarfile.open(path) as archive:
            member = next(
                (m for m in archive.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")), None
            )
            handle = archive.extractfile(member) if member else None
            text = handle.read().decode("utf-8", "replace") if handle else ""
    return fields(text)


def load_json(path: Path) -> Any:
    return json.loads(path.read_text())


def dump_json(path: Path, data: Any) -> None:
    """JSON as every derived file is written: sorted keys, one indent, a final newline (byte-identical reruns)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


# Python 3.12's type parameters (`class X[T]:`, `def f[T](...)`) and `type X = ...` statements, which an older
# parser refuses: cut to what it reads, names and lines kept (jax 0.12 and the libraries that follow it use them)
_TYPE_PARAMS = re.compile(rb"^([ \t]*(?:async[ \t]+)?(?:class|def)[ \t]+\w+)\[[^\n]*?\](?=[ \t]*[(:])", re.M)
_TYPE_ALIAS = re.compile(rb"^([ \t]*)type[ \t]+(\w+)(?:\[[^\]\n]*\])?[ \t]*=", re.M)


# CPython 3.11's ast raises "SystemError: AST constructor recursion depth mismatch" when two threads build trees at
# once (seen in CI: jax_env's parallel read; python/cpython#106905): the derivations parse in threads, one at a time
_PARSING = threading.Lock()


def parse(source: bytes | str, mode: str = "exec") -> ast.Module:
    """A module's tree; a source this Python's parser refuses for newer syntax is read again with that syntax cut
    (the bindings and uses it holds are the same). Raises SyntaxError/ValueError when that does not help. One parse
    at a time, whatever thread asks."""
    data = source.encode() if isinstance(source, str) else source
    with _PARSING:
        try:
            return cast(ast.Module, ast.parse(data, mode=mode))
        except SyntaxError:
            if mode != "exec":
                raise
            return ast.parse(_TYPE_ALIAS.sub(rb"\1\2 =", _TYPE_PARAMS.sub(rb"\1", data)))
