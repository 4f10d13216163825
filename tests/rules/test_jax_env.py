"""The JAX_* values jax refuses at import, from jax's own config.py (`rules/tables/jax-env.toml`): each value at
the release that added it and one before, both cases of the words, and the table held against the jax installed
here, through jax's own parser and a real `import jax` (a plan that calls such a value "x64 off" is wrong: jax
does not start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from envaudit.cli import main
from envaudit.rules import jax_env
from tests.conftest import facts_from

TABLE = jax_env.JAX_ENV.load()
PRECISION = TABLE["enum"]["JAX_DEFAULT_MATMUL_PRECISION"]
ALL_VALUES = sorted({*PRECISION["legacy"], *(v for values in PRECISION["since"].values() for v in values)})
NOT_VALUES = ["", "HIGHEST", "Float32", "tf32", " float32", "bfloat16_3x"]


def plan(capsys: pytest.CaptureFixture[str], jax: str, *env: str) -> set[str]:
    main(["plan", f"jax=={jax}", f"jaxlib=={jax}", *(a for e in env for a in ("--env", e)), "--format", "json"])
    return {f["id"] for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] == "fail"}


def before(version: str) -> str:
    parts = [int(n) for n in version.split(".")]
    return ".".join(map(str, [*parts[:-1], parts[-1] - 1]))


@pytest.mark.parametrize("since", sorted(PRECISION["since"]))
def test_a_precision_value_is_accepted_from_the_release_that_added_it(
    capsys: pytest.CaptureFixture[str], since: str
) -> None:
    for value in PRECISION["since"][since]:
        setting = f"JAX_DEFAULT_MATMUL_PRECISION={value}"
        assert "jax-env-invalid" not in plan(capsys, since, setting), value
        assert "jax-env-invalid" in plan(capsys, before(since), setting), value


@pytest.mark.parametrize("value", ["1", "true", "True", "YES", "on", "0", "false", "Off", "n"])
def test_the_truth_words_jax_reads_in_any_case_pass(capsys: pytest.CaptureFixture[str], value: str) -> None:
    assert "jax-env-invalid" not in plan(capsys, "0.4.25", f"JAX_ENABLE_X64={value}")


@pytest.mark.parametrize("value", ["", " true", "2", "enabled"])
def test_a_word_jax_does_not_read_fails_the_plan_instead_of_reading_as_off(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert "jax-env-invalid" in plan(capsys, "0.10.1", f"JAX_ENABLE_X64={value}")


def test_what_the_table_cannot_say_is_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    """No jax planned, a release after the table (it may accept new presets), a jax that imported with the value
    (found by review: each of these was failed)."""
    assert "jax-env-invalid" not in plan_only(capsys, "numpy==1.26.4", "JAX_ENABLE_X64=")
    past = jax_env.JAX_ENV.load()["covers_to"].split(".")
    after = ".".join([*past[:2], str(int(past[2]) + 1)])  # the release after the table's last
    assert "jax-env-invalid" not in plan(capsys, after, "JAX_DEFAULT_MATMUL_PRECISION=F8E4M3_F8E4M3_F32")
    imported = {"packages": {"jax": "0.10.1"}, "jax": {"status": "ok", "x64": True}, "env": {"JAX_ENABLE_X64": " 1"}}
    assert jax_env.invalid_env(facts_from(imported)) == []
    assert jax_env.invalid_env(facts_from({**imported, "jax": {"status": "import_error"}}))


def plan_only(capsys: pytest.CaptureFixture[str], pin: str, *env: str) -> set[str]:
    main(["plan", pin, *(a for e in env for a in ("--env", e)), "--format", "json"])
    return {f["id"] for f in json.loads(capsys.readouterr().out)["findings"]}


@pytest.mark.jax
def test_the_table_is_what_the_installed_jax_accepts() -> None:
    """jax's own parser of the option, run on every value the table knows and on values no release accepts."""
    program = (
        "import json, sys, jax; from jax._src import config; parse = config.default_matmul_precision._parser\n"
        "def ok(v):\n"
        "    try: parse(v); return True\n"
        "    except ValueError: return False\n"
        "print(json.dumps({'jax': jax.__version__, 'ok': {v: ok(v) for v in json.loads(sys.argv[1])}}))"
    )
    values = [*ALL_VALUES, *NOT_VALUES]
    done = subprocess.run(
        [sys.executable, "-c", program, json.dumps(values)],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    for value in values:
        facts = facts_from({"packages": {"jax": found["jax"]}, "env": {"JAX_DEFAULT_MATMUL_PRECISION": value}})
        assert (jax_env.invalid_env(facts) == []) == found["ok"][value], value


@pytest.mark.jax
@pytest.mark.parametrize(("name", "value"), [("JAX_ENABLE_X64", ""), ("JAX_DEFAULT_MATMUL_PRECISION", "HIGHEST")])
def test_import_jax_raises_what_the_check_says(name: str, value: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import jax"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "JAX_PLATFORMS": "cpu", name: value},
    )
    version = subprocess.run(
        [sys.executable, "-c", "import jax; print(jax.__version__)"],
        text=True,
        capture_output=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=120,
    )
    [said] = jax_env.invalid_env(facts_from({"packages": {"jax": version.stdout.strip()}, "env": {name: value}}))
    raised = done.stderr.splitlines()[-1].partition(": ")[2]  # jax's own message, after the exception's name
    assert done.returncode != 0 and raised and said.detail.endswith(f": {raised}"), done.stderr[-500:]


@pytest.mark.parametrize(
    "setting",
    ["JAX_ENABLE_X64=yes please", "JAX_DEFAULT_MATMUL_PRECISION=FLOAT32", "JAX_DEFAULT_MATMUL_PRECISION=fast"],
)
def test_the_fix_the_check_prints_leaves_a_value_jax_accepts(setting: str) -> None:
    """The fix is a command (an export of the value meant, or an unset): the state it leaves has nothing left to fix
    for the variable, on the first release the table covers and on a current one."""
    from envaudit.rules import installing
    from envaudit.rules.registry import registry

    name, value = setting.split("=")
    for jax in (PRECISION_FIRST, "0.11.0"):
        facts = facts_from({"packages": {"jax": jax, "jaxlib": jax}, "env": {name: value}})
        (found,) = [f for f in registry().evaluate_checks(facts) if f.id == "jax-env-invalid"]
        after = installing.after(facts, found.remedy)
        assert found.fix.split()[0] in ("unset", "export") and name in found.fix, found.fix
        assert "jax-env-invalid" not in {f.id for f in registry().evaluate_checks(after)}, (jax, found.fix)
    if value == "FLOAT32":
        assert found.fix == f"export {name}=float32"  # the value meant, in the case jax reads


PRECISION_FIRST = "0.4.1"  # the first release the table covers: float32 is a legacy value there
