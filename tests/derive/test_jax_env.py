"""The derivation of jax-env.toml (derive/tables/jax_env.py): its reading of a config.py with ast (bool_env's words
and message, an enum flag's values and message, and what it refuses to guess), its combination of releases into
`legacy` and `since`, and the written table: its shape, and the newest jax it reaches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.version import Version

from derive.tables import jax_env as derivation
from envaudit.rules import jax_env
from envaudit.rules.table import TABLES, head
from tests.conftest import derive_cache

BOOL_ENV = '''
import os

def bool_env(varname: str, default: bool) -> bool:
  """Read an environment variable and interpret it as a boolean."""
  val = os.getenv(varname, str(default))
  val = val.lower()
  if val in ('y', 'yes', 't', 'true', 'on', '1'):
    return True
  elif val in ('n', 'no', 'f', 'false', 'off', '0'):
    return False
  else:
    raise ValueError(f"invalid truth value {val!r} for environment {varname!r}")
'''

STATES = """
def bool_state(name, default, help, *, upgrade=False):
  name = name.lower()
  holder = bool_env(name.upper(), default)
  return holder

def optional_enum_state(name, enum_values, default, help):
  name = name.lower()
  default = os.getenv(name.upper(), default)
  if default is not None and default not in enum_values:
    raise ValueError(f"Invalid value \\"{default}\\" for JAX flag {name}")

  def parser(new_val):
    if new_val not in enum_values:
      raise ValueError(f"new enum value must be None or in {enum_values}, got {new_val}")
  return parser
"""

FLAGS = """
enable_x64 = bool_state(name='jax_enable_x64', default=False, help='64-bit')
config._contextmanager_flags.remove('jax_enable_x64')
default_matmul_precision = optional_enum_state(
    name='jax_default_matmul_precision',
    enum_values=[
        {values}
    ],
    default=None,
    help='precision')
"""


def config_py(values: str = "'bfloat16', 'tensorfloat32', 'float32'") -> bytes:
    return (BOOL_ENV + STATES + FLAGS.format(values=values)).encode()


def test_a_config_py_is_read_for_the_words_the_values_and_the_messages() -> None:
    found = derivation.reading(config_py())
    assert found["true"] == ["y", "yes", "t", "true", "on", "1"]
    assert found["false"] == ["n", "no", "f", "false", "off", "0"]
    assert found["message"] == "ValueError: invalid truth value {value!r} for environment {name!r}"
    assert found["bool"] == {"JAX_ENABLE_X64": "bool_state"}
    assert found["enum"]["JAX_DEFAULT_MATMUL_PRECISION"] == {
        "values": ["bfloat16", "tensorfloat32", "float32"],
        "message": 'ValueError: Invalid value "{value}" for JAX flag {flag}',  # the nested parser's is not it
        "definer": "optional_enum_state",
    }


def test_a_flag_defined_twice_by_the_same_function_reads_as_one() -> None:
    """jax 0.8.0 defines jax_enable_x64 in both branches of an `if` on the jaxlib version."""
    source = (
        config_py().decode() + "\nif x:\n  enable_x64 = bool_state(name='jax_enable_x64', default=False, help='')\n"
    )
    assert derivation.reading(source.encode())["bool"] == {"JAX_ENABLE_X64": "bool_state"}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("val = val.lower()", "pass"), "lower-case"),
        (("holder = bool_env(name.upper(), default)", "holder = default"), "bool_env(name.upper()"),
        (("enum_values=[", "enum_values=VALUES + ["), "literal list"),
        (("default = os.getenv(name.upper(), default)", "default = default"), "os.getenv(name.upper()"),
        (("def bool_env(", "def bool_env_gone("), "no bool_env"),
        (("name='jax_enable_x64'", "name='jax_enable_x32'"), "not by one function"),
    ],
)
def test_what_the_table_could_not_say_stops_the_reading(change: tuple[str, str], said: str) -> None:
    source = config_py().decode().replace(*change)
    with pytest.raises(derivation.Unread, match=re.escape(said)):
        derivation.reading(source.encode())


def test_releases_combine_into_legacy_and_since() -> None:
    readings = {
        "0.4.1": derivation.reading(config_py()),
        "0.4.2": derivation.reading(config_py()),
        "0.4.31": derivation.reading(config_py("'default', 'high', 'bfloat16', 'tensorfloat32', 'float32'")),
        "0.4.36": derivation.reading(config_py("'default', 'high', 'bfloat16', 'tensorfloat32', 'float32', 'F1'")),
    }
    table = derivation.combine(readings)
    enum = table["enum"]["JAX_DEFAULT_MATMUL_PRECISION"]
    assert enum["legacy"] == ["bfloat16", "tensorfloat32", "float32"]
    assert enum["since"] == {"0.4.31": ["default", "high"], "0.4.36": ["F1"]}
    assert (table["covers_from"], table["covers_to"]) == ("0.4.1", "0.4.36")
    out = derivation.render(table, "2026-01-01, 4 jax releases")
    assert "DERIVED by derive/tables/jax_env.py" in out and 'since."0.4.36" = ["F1"]' in out


def test_a_removed_value_or_changed_words_stop_the_combination() -> None:
    first = derivation.reading(config_py())
    with pytest.raises(SystemExit, match="no longer accepts"):
        derivation.combine({"0.4.1": first, "0.4.2": derivation.reading(config_py("'bfloat16', 'float32'"))})
    changed = derivation.reading(config_py().replace(b"'on', '1'", b"'on', '1', 'enabled'"))
    with pytest.raises(SystemExit, match="bool_env's true"):
        derivation.combine({"0.4.1": first, "0.4.2": changed})


def test_the_written_table_reads_with_its_shape_and_reaches_the_newest_jax() -> None:
    table = jax_env.JAX_ENV.read(TABLES / "jax-env.toml")
    assert table["covers_from"] == "0.4.1"
    assert Version(table["covers_to"]) >= Version("0.12.1")
    assert "DERIVED by derive/tables/jax_env.py" in head(TABLES / "jax-env.toml")
    precision = table["enum"]["JAX_DEFAULT_MATMUL_PRECISION"]
    assert precision["since"]["0.4.31"] == ["default", "high", "highest"]  # the rows read by hand before it
    assert precision["since"]["0.5.3"] == ["BF16_BF16_F32_X9"]
    assert table["bool"]["true"] == ["y", "yes", "t", "true", "on", "1"]


@pytest.mark.slow
def test_the_table_is_rederived_from_the_released_files_as_written(tmp_path: Path) -> None:
    """From PyPI (network): every release's config.py read again gives the table written, over the releases it
    covers (a jax released since may add values after them)."""
    out = tmp_path / "jax-env.toml"
    assert derivation.main(["--cache", str(derive_cache(tmp_path)), "--output", str(out)]) == 0
    written, derived = jax_env.JAX_ENV.load(), jax_env.JAX_ENV.read(out)
    assert derived["bool"] == written["bool"] and derived["covers_from"] == written["covers_from"]
    for name, enum in written["enum"].items():
        again = derived["enum"][name]
        upto = {v: found for v, found in again["since"].items() if Version(v) <= Version(written["covers_to"])}
        assert {**again, "since": upto} == enum
