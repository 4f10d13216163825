"""jax-minimum-jaxlib.toml derived from the files released on PyPI (derive/tables/jax_minimum_jaxlib.py):
`_minimum_jaxlib_version` read with ast from jax/version.py, the check's messages read from its f-strings and held
to the table's templates (a release that says otherwise fails the run), and the written table's shape and reach."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from packaging.version import Version

from derive.sources import wheels
from derive.tables import jax_minimum_jaxlib as derivation
from envaudit.rules.jax_pins import MINIMUM_JAXLIB
from envaudit.rules.table import head
from envaudit.rules.tpu_pins import TPU_EXTRA
from tests.conftest import derive_cache

TABLE = MINIMUM_JAXLIB.load()

VERSION_PY = b"""
import os
_version: str = "0.12.1"
def _version_as_tuple(version_str):
  return tuple(int(i) for i in version_str.split(".") if i.isdigit())
__version__ = _version
_minimum_jaxlib_version = '0.12.1'
_minimum_jaxlib_version_info = _version_as_tuple(_minimum_jaxlib_version)
"""

# check_jaxlib_version as jax 0.12.1 writes it (jax/_src/lib/__init__.py)
CHECK_NOW = b"""
import re
def check_jaxlib_version(jax_version: str, jaxlib_version: str,
                         minimum_jaxlib_version: str) -> tuple[int, ...]:
  version_regex = re.compile(r"[0-9]+(?:\\.[0-9]+)*")
  def _parse_version(v: str) -> tuple[int, ...]:
    m = version_regex.match(v)
    if m is None:
      raise ValueError(f"Unable to parse jaxlib version '{v}'")
    return tuple(int(x) for x in m.group(0).split('.'))

  _jax_version = _parse_version(jax_version)
  _minimum_jaxlib_version = _parse_version(minimum_jaxlib_version)
  _jaxlib_version = _parse_version(jaxlib_version)

  if _jaxlib_version < _minimum_jaxlib_version:
    msg = (f'jaxlib is version {jaxlib_version}, but this version '
           f'of jax requires version >= {minimum_jaxlib_version}.')
    raise RuntimeError(msg)

  if _jaxlib_version > _jax_version:
    raise RuntimeError(
        f'jaxlib version {jaxlib_version} is newer than and '
        f'incompatible with jax version {jax_version}. Please '
        'update your jax and/or jaxlib packages.')
  return _jaxlib_version
"""

# as jax 0.4.15 wrote it: the message bound before the `if`, and nightlies' dates compared too
CHECK_0415 = b"""
def check_jaxlib_version(jax_version, jaxlib_version, minimum_jaxlib_version):
  version_regex = re.compile(r"[0-9]+(?:\\.[0-9]+)*")
  _jax_version, jax_date = _parse_version(jax_version)
  _minimum_jaxlib_version, _ = _parse_version(minimum_jaxlib_version)
  _jaxlib_version, jaxlib_date = _parse_version(jaxlib_version)
  if _jaxlib_version < _minimum_jaxlib_version:
    msg = (f'jaxlib is version {jaxlib_version}, but this version '
           f'of jax requires version >= {minimum_jaxlib_version}.')
    raise RuntimeError(msg)

  msg = (f'jaxlib version {jaxlib_version} is newer than and '
         f'incompatible with jax version {jax_version}. Please '
         'update your jax and/or jaxlib packages.')
  if _jaxlib_version > _jax_version:
    raise RuntimeError(msg)

  if jaxlib_date is not None and jax_date is not None and jaxlib_date > jax_date:
    raise RuntimeError(msg)
  return _jaxlib_version
"""

# as jax 0.2.28 wrote it: the minimum only, no refusal of a newer jaxlib
CHECK_0228 = b"""
def _check_jaxlib_version():
  if version < _minimum_jaxlib_version:
    msg = (f'jaxlib is version {jaxlib_version.__version__}, '
           f'but this version of jax requires version {_minimum_jaxlib_version_str}.')
    if version == (0, 1, 23):
      msg += ('\\n\\nA common cause of this error is ...')
    raise ValueError(msg)
"""


def test_the_minimum_is_read_from_version_py() -> None:
    assert derivation.minimum(VERSION_PY) == "0.12.1"
    assert derivation.minimum(b'_minimum_jaxlib_version = "0.3.22"\n') == "0.3.22"
    assert derivation.minimum(b'_minimum_jaxlib_version: str = "0.4.7"\n') == "0.4.7"


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (b"_minimum_jaxlib_version = _compute()\n", "not a literal string"),
        (b'__version__ = "0.4.1"\n', "0 assignments"),
        (b'_minimum_jaxlib_version = "0.4.1"\n_minimum_jaxlib_version = "0.4.2"\n', "2 assignments"),
    ],
)
def test_a_minimum_not_read_as_a_literal_is_an_error(source: bytes, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        derivation.minimum(source)


def test_the_messages_are_read_as_the_tables_templates() -> None:
    for source in (CHECK_NOW, CHECK_0415):
        found = derivation.checks(source)
        assert derivation.template(found["older"]) == TABLE["older_message"]
        assert derivation.template(found["newer"]) == TABLE["newer_message"]
        assert found["numbers"] is True
        assert found["dates"] is (source == CHECK_0415)
    # what envaudit formats them with (rules/jax_pins.py)
    assert TABLE["older_message"].format(jaxlib="0.4.1", minimum="0.4.2").startswith("jaxlib is version 0.4.1,")
    assert "jax version 0.4.1." in TABLE["newer_message"].format(jaxlib="0.4.2", jax="0.4.1")


def test_a_check_without_the_newer_refusal_has_no_newer_message() -> None:
    found = derivation.checks(CHECK_0228)
    assert "newer" not in found and "older" in found
    with pytest.raises(ValueError, match="none of"):  # jaxlib_version.__version__: not a variable of the template
        derivation.template(found["older"])
    assert derivation.checks(b"def unrelated():\n  raise RuntimeError(f'{x}')\n") == {}


def test_a_message_with_another_variable_is_refused() -> None:
    node = ast.parse("f'jaxlib {jaxlib_version} needs {cuda_version}'", mode="eval").body
    assert isinstance(node, ast.JoinedStr)
    with pytest.raises(ValueError, match="cuda_version"):
        derivation.template(node)


def artefact(version: str) -> wheels.Artefact:
    return wheels.Artefact("jax", version, f"jax-{version}-py3-none-any.whl", "u", "0" * 64, "t", "wheel")


def test_a_release_whose_check_says_otherwise_fails_the_run_and_is_named() -> None:
    kept = {"older_message": TABLE["older_message"], "newer_message": TABLE["newer_message"]}
    same = (TABLE["older_message"], TABLE["newer_message"], True, False)
    read = [artefact("0.4.15"), artefact("0.12.1")]
    assert derivation.check_messages(kept, read, [(*same[:3], True), same]) == ["0.4.15"]
    with pytest.raises(SystemExit, match=r"jax 0\.12\.1: older 'jaxlib is too old'"):
        derivation.check_messages(kept, read, [same, ("jaxlib is too old", same[1], True, False)])
    with pytest.raises(SystemExit, match="leading numbers False"):
        derivation.check_messages(kept, read, [same, (same[0], same[1], False, False)])


def test_the_written_table_has_its_shape_and_says_how_it_was_read() -> None:
    assert MINIMUM_JAXLIB.read(MINIMUM_JAXLIB.path) == TABLE
    said = head(MINIMUM_JAXLIB.path)
    assert "DERIVED by derive/tables/jax_minimum_jaxlib.py" in said and "do not edit by hand" in said
    assert f"checked: {TABLE['newer_check_since']}'s does" in said
    rows = TABLE["minimum_jaxlib"]
    assert TABLE["read"].endswith(f"{len(rows)} jax releases, 0.4.1 to {list(rows)[-1]}")


def test_the_table_reaches_the_newest_jax_the_other_tables_speak_of() -> None:
    rows = TABLE["minimum_jaxlib"]
    newest = TPU_EXTRA.load()["covers_to"]
    assert newest in rows
    releases = [Version(v) for v in rows]
    assert releases == sorted(releases) and max(releases) >= Version(newest)
    assert all(Version(minimum) <= Version(jax) for jax, minimum in rows.items())  # never above its own release


@pytest.mark.slow
def test_the_table_is_rederived_from_the_index_as_committed(tmp_path: Path) -> None:
    """Network: PyPI's JSON of jax (the released files kept by the suite's cache): every release the committed
    table lists is derived again to the same minimum, and the messages still hold (a newer release is more rows)."""
    out = tmp_path / "jax-minimum-jaxlib.toml"
    assert derivation.main(["--cache", str(derive_cache(tmp_path)), "--output", str(out)]) == 0
    derived = MINIMUM_JAXLIB.read(out)
    assert {v: derived["minimum_jaxlib"].get(v) for v in TABLE["minimum_jaxlib"]} == TABLE["minimum_jaxlib"]
    assert derived["older_message"] == TABLE["older_message"] and derived["newer_message"] == TABLE["newer_message"]
