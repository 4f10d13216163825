"""The derivation of jax's messages about its environment (derive/tables/jax_messages.py): a message read with ast
whatever way the source builds it (f-strings, str.format, `%`, concatenation, a variable), how jax says it, its
category from where it lives, cpu_feature_guard.c's `#if` branches, what jax imports without requiring it, and a
table written from a repository's release tags that loads with its shape."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from derive.tables import jax_messages as derivation
from envaudit.rules.jax_messages import MESSAGES

BRIDGE = "jax/_src/xla_bridge.py"


def said(source: str, path: str = BRIDGE) -> list[tuple[str, str, str]]:
    return [(s.text, s.said, s.category) for s in derivation.python_messages(source, path)]


@pytest.mark.parametrize(
    ("statement", "text"),
    [
        (
            "raise RuntimeError(f\"Backend '{platform}' failed to initialize: {err}\")",
            "Backend '{any}' failed to initialize: {any}",
        ),
        (
            'raise RuntimeError("Unable to initialize " + "the backend " + name + " here")',
            "Unable to initialize the backend {any} here",
        ),
        ('raise ValueError("Unknown backend %s requested here" % platform)', "Unknown backend {any} requested here"),
        (
            'raise ValueError("Unknown backend {} requested, {!r} found".format(p, q))',
            "Unknown backend {any} requested, {any} found",
        ),
        ('msg = f"Unable to initialize backend {p}"\n  raise RuntimeError(msg)', "Unable to initialize backend {any}"),
    ],
)  # fmt: skip
def test_a_message_is_read_however_the_source_builds_it(statement: str, text: str) -> None:
    assert [t for t, _, _ in said(f"def backends():\n  {statement}\n")] == [text]


@pytest.mark.parametrize(
    "statement",
    [
        "raise RuntimeError(make_message(platform))",  # nothing literal
        'raise RuntimeError(f"{platform}: {err}")',  # too little to tell a line by
        'raise ValueError("the option {jax_platforms} was unset")',  # a brace of its own would read as a placeholder
    ],
)
def test_a_message_too_bare_to_tell_a_line_by_is_left_out(statement: str) -> None:
    assert said(f"def backends():\n  {statement}\n") == []


def test_how_jax_says_it_and_what_it_is_about_come_from_where_it_is() -> None:
    source = (
        "import logging, warnings\nlogger = logging.getLogger(__name__)\n"
        "def backends():\n"
        "  logger.warning('Platform %s is experimental and not all JAX functionality may be supported!', p)\n"
        "def discover_pjrt_plugins():\n"
        "  logger.exception('Jax plugin configuration error: Exception when calling %s.initialize()', name)\n"
        "def tpu_client_timer_callback(timer_secs):\n"
        "  def _log_warning():\n"
        "    warnings.warn(f'TPU backend initialization is taking more than {timer_secs} seconds.')\n"
        "def process_index(backend=None):\n"
        "  warnings.warn('jax.host_id has been renamed to jax.process_index. This alias will be removed.')\n"
    )
    assert said(source) == [
        ("Platform {any} is experimental and not all JAX functionality may be supported!", "warns", "backend-init"),
        ("Jax plugin configuration error: Exception when calling {any}.initialize()", "logs", "plugin-load"),
        ("TPU backend initialization is taking more than {any} seconds.", "warns", "tpu-runtime"),
    ]  # the device API's renamed aliases are no message about the environment


def test_cpu_feature_guard_says_one_message_per_platform_branch() -> None:
    source = (
        "static void ReportMissingCpuFeature(const char* name) {\n"
        "  PyErr_Format(\n"
        "      PyExc_RuntimeError,\n"
        "#if defined(__APPLE__)\n"
        '      "This version of jaxlib was built using %s instructions. "\n'
        '      "Try an ARM build of Python.",\n'
        "#else\n"
        '      "This version of jaxlib was built using %s instructions. "\n'
        '      "Build jaxlib from source.",\n'
        "#endif\n"
        "      name);\n"
        "}\n"
    )
    found = derivation.c_messages(source, "jaxlib/cpu_feature_guard.c")
    assert [(s.text, s.line, s.category) for s in found] == [
        ("This version of jaxlib was built using {any} instructions. Try an ARM build of Python.", 5, "cpu-features"),
        ("This version of jaxlib was built using {any} instructions. Build jaxlib from source.", 8, "cpu-features"),
    ]


def test_what_jax_imports_without_requiring_it_is_a_message_of_cpythons() -> None:
    source = (
        "import os\nimport numpy\n"
        "def get_metadata(key):\n  import requests\n  return requests.get(key)\n"
        "try:\n  import portpicker\nexcept ImportError:\n  portpicker = None\n"
    )
    found = derivation.import_messages(
        source, "jax/_src/clusters/cloud_tpu_cluster.py", {"numpy"}, {"tpu": {"requests"}}
    )
    assert [(s.text, s.said, s.extras, s.line) for s in found] == [
        ("No module named 'requests'", "imports", ("tpu",), 4)
    ]
    lib = derivation.import_messages(
        "import jaxlib.xla_client as xla_client\nfrom jaxlib import cpu_feature_guard\n",
        "jax/_src/lib/__init__.py",
        set(),
        {},
    )
    assert [s.text for s in lib] == [
        "module 'jaxlib.xla_client' has no attribute '{any}'",
        "module 'jaxlib.cpu_feature_guard' has no attribute '{any}'",
    ]  # a jax newer than its jaxlib reaches for what they lack


def test_jaxs_requirements_and_extras_are_read_from_its_setup() -> None:
    setup = (
        "setup(install_requires=[f'jaxlib >={_minimum_jaxlib_version}', 'ml_dtypes>=0.5.0', 'numpy>=2.1'],\n"
        "      extras_require={'tpu': [f'libtpu=={_libtpu_version}', 'requests'], 'cuda': []})\n"
    )
    assert derivation.requirements(setup) == (
        {"jaxlib", "ml_dtypes", "numpy"},
        {"tpu": {"libtpu", "requests"}, "cuda": set()},
    )


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _release(work: Path, tag: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    _git(work, "add", "-A")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", tag)
    _git(work, "tag", tag)


def test_the_table_is_written_from_the_release_tags_with_each_messages_first_and_last(tmp_path: Path) -> None:
    work = tmp_path / "jax"
    work.mkdir()
    _git(work, "init", "-q")
    setup = "setup(install_requires=['numpy'], extras_require={})\n"
    old = "def backends():\n  raise RuntimeError(f'Backend {p} provides no devices at all.')\n"
    new = "def backends():\n  raise RuntimeError(f'Could not initialize backend {p} here.')\n"
    _release(work, "jax-v0.4.1", {"setup.py": setup, BRIDGE: old})
    _release(work, "jax-v0.4.2-rc", {BRIDGE: old + "\n"})  # a candidate: not a release
    _release(work, "jax-v0.4.2", {BRIDGE: old + new})
    _release(work, "jax-v0.4.3", {BRIDGE: new})
    bare = tmp_path / "jax.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True)
    output = tmp_path / "jax-messages.toml"
    assert derivation.main(["--jax-git", str(bare), "--cache", str(tmp_path / "cache"), "--output", str(output)]) == 0
    table = MESSAGES.read(output)
    assert (table["covers_from"], table["covers_to"]) == ("0.4.1", "0.4.3")
    rows = {r["text"]: (r["first"], r["last"], r["said"], r["category"], r["at"]) for r in table["message"]}
    assert rows == {
        "Backend {any} provides no devices at all.": (
            "0.4.1", "0.4.2", "raises", "backend-init", f"https://github.com/jax-ml/jax/blob/jax-v0.4.1/{BRIDGE}#L2"
        ),
        "Could not initialize backend {any} here.": (
            "0.4.2", "0.4.3", "raises", "backend-init", f"https://github.com/jax-ml/jax/blob/jax-v0.4.2/{BRIDGE}#L4"
        ),
    }  # fmt: skip
