"""jax's own words about its environment (rules/jax_messages.py, tables/derived/jax-messages.toml): each row is the
text of its source at its tag, a message another rule's signature reads stays that rule's, real reports' messages
are read as their category says (a failure, or a warning where nothing says an accelerator was expected), and a
healthy machine's messages fail nothing."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest

from envaudit import rules
from envaudit.commands.triage.triaged import triage
from envaudit.model.facts import Facts
from envaudit.model.report import Finding
from envaudit.rules import jax_messages
from envaudit.rules.jax_messages import CATEGORIES, MESSAGES
from envaudit.rules.registry import registry
from envaudit.rules.signatures import Catalogue, Signature
from tests.conftest import ROOT, facts_from
from tests.rules.test_signatures import LITERAL, TRIPLE

CHECK = jax_messages.JAX_ENVIRONMENT_MESSAGE.id
TABLE = MESSAGES.load()
ROWS = TABLE["message"]
SOURCES = {
    s["url"]: s["excerpt"]
    for s in tomllib.loads((ROOT / "tests" / "fixtures" / "signatures" / "sources.toml").read_text())["source"]
}
AT = re.compile(r"^https://github\.com/jax-ml/jax/blob/jax-v(?P<tag>[\d.]+)/(?P<path>[\w/.]+)#L(?P<line>\d+)$")


def owned() -> dict[str, Signature]:
    cause = registry().get(CHECK)
    assert cause is not None
    return {s.text: s for s in cause.signatures}


def findings(text: str) -> dict[str, Finding]:
    """The root findings triage gives a text, by id (of its first environment that has each)."""
    result = triage(text.encode())
    found: dict[str, Finding] = {}
    for env in result.environments:
        for f in env.report.findings:
            if not f.caused_by:
                found.setdefault(f.id, f)
    return found


# --- the table is its sources' words ---------------------------------------------------------------------------


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["text"][:50])
def test_each_row_is_the_text_of_its_line_at_its_first_tag(row: Any) -> None:
    """`at` names a line of jax's repository at the row's first tag (scripts/signature_sources.py read it from the
    mirror): every literal word of jax's own message is in the string literals there; for what jax imports, the line
    imports the module CPython's message names."""
    at = AT.match(row["at"])
    assert at is not None and at["tag"] == row["first"], row["at"]
    excerpt = SOURCES[row["at"]]
    if row["said"] == "imports":
        module = re.search(r"'([\w.]+)'", row["text"])
        assert module is not None
        named = module[1].split(".")
        assert "import" in excerpt.splitlines()[0] and named[-1] in excerpt.splitlines()[0], excerpt
        return
    literals = "".join(m[2] for m in TRIPLE.finditer(excerpt)) + "".join(
        m[1][1:-1] for m in LITERAL.finditer(TRIPLE.sub(" ", excerpt))
    )  # joined as Python (and C) join adjacent literals, over lines
    have = "".join(literals.replace('\\"', '"').replace("\\'", "'").replace("\\n", " ").split())
    parts = ["".join(part.split()) for part in row["text"].split("{any}")]
    assert [p for p in parts if p not in have] == [], excerpt


def test_the_table_covers_the_releases_the_other_tables_read_from_their_first() -> None:
    from envaudit.rules.jax_env import JAX_ENV

    assert TABLE["covers_from"] == JAX_ENV.load()["covers_from"]  # the first release the jax tables read
    assert {r["category"] for r in ROWS} == set(CATEGORIES)  # every category has messages, each a known one
    versions = [tuple(map(int, v.split("."))) for r in ROWS for v in (r["first"], r["last"])]
    assert min(versions) == tuple(map(int, TABLE["covers_from"].split(".")))
    assert max(versions) == tuple(map(int, TABLE["covers_to"].split(".")))


# --- one owner: an existing rule's signature wins ----------------------------------------------------------------


def test_a_message_another_rules_signature_reads_stays_that_rules() -> None:
    """xla_bridge.py's CPU fallback and jax's version check are in the table, and gpu-present-jax-on-cpu's and
    jax-jaxlib-coupling's signatures read them: the check owns neither, and no text it owns is read by another."""
    ours = owned()
    others = Catalogue(c for c in registry().active if c.id != CHECK)
    fallback = next(r for r in ROWS if r["text"].startswith("An NVIDIA GPU may be present on this machine"))
    newer = next(r for r in ROWS if r["text"].startswith("jaxlib version {any} is newer than and incompatible"))
    assert jax_messages.claimed(fallback["text"], others)[0]  # gpu-present-jax-on-cpu's signature fires on it
    assert jax_messages.claimed(newer["text"], others)[0]  # jax-jaxlib-coupling's
    assert not {jax_messages.first_sentences(r["text"]) for r in (fallback, newer)} & ours.keys()
    assert ours and not [t for t in ours if jax_messages.claimed(t, others)[0]]


def test_a_message_another_rule_reads_only_to_state_facts_is_shared_and_said_only_where_it_fails() -> None:
    """cuda-backend-failed-jax-on-cpu reads "CUDA backend failed to initialize" only to state the CPU platform (a
    machine without a GPU prints it too): the check owns it as well, and says it only where it fails here, where
    the report lists a GPU (jax#20722's DGX V100), not on a machine that lists none."""
    others = [c for c in registry().active if c.id != CHECK]
    owned_here, shared = jax_messages.unclaimed(others)
    text = next(t for t in shared if t.startswith("CUDA backend failed to initialize"))
    assert text in {s.text for s in owned_here} and "cuda-backend-failed-jax-on-cpu" in shared[text]
    line = "CUDA backend failed to initialize: operation cuInit(0) failed: CUDA_ERROR_NOT_INITIALIZED"
    gpu = Facts(
        messages=[{"line": 1, "text": line}],
        nvidia={"status": "ok", "gpus": [{"index": 0, "name": "V100"}]},
        origin="triage",
    )
    found = {f.id: f for f in rules.evaluate(gpu).findings}
    assert found[CHECK].severity == "fail" and "lists 1 NVIDIA GPU" in found[CHECK].detail
    alone = Facts(messages=[{"line": 1, "text": line}], origin="triage")
    assert CHECK not in {f.id for f in rules.evaluate(alone).findings}


def test_a_rule_that_comes_to_read_a_message_takes_it_from_the_check() -> None:
    """The owner is worked out from the other causes' signatures, not kept: a rule given a row's message owns it."""
    text = next(t for t in owned() if t.startswith("Transparent hugepages are not enabled."))
    others = [c for c in registry().active if c.id != CHECK]

    class Newcomer:
        id = "tpu-hugepages-newcomer"
        signatures = (Signature(text, "https://github.com/jax-ml/jax"),)

        def seen(self, facts: Facts, matches: object = ()) -> Finding | None:
            return None

    assert text in {s.text for s in jax_messages.unclaimed(others)[0]}
    assert text not in {s.text for s in jax_messages.unclaimed([*others, Newcomer()])[0]}


def test_where_another_causes_message_is_on_the_same_line_that_cause_speaks() -> None:
    """jax logs the reason a backend did not start after its name, at INFO; the check's general words ("module
    'jaxlib.xla_extension' has no attribute ...", a row of the table) say nothing on a line a log marks as
    information (google-research/maxim#32: INFO lines of a GPU machine where TensorFlow saw the GPU)."""
    line = (
        "I1025 08:07:07.369699 139768635004736 xla_bridge.py:357] Unable to initialize backend 'cuda': module "
        "'jaxlib.xla_extension' has no attribute 'GpuAllocatorConfig'"
    )
    scanned = registry().signatures.scan([line])
    assert {m.owner for m in scanned} >= {CHECK, "jax-platforms-unavailable"}
    facts = Facts(messages=[{"line": 1, "text": line, "informational": True}], origin="triage")
    assert CHECK not in {f.id for f in rules.evaluate(facts).findings}
    assert CHECK not in {f.id for e in triage(line.encode()).environments for f in e.report.findings}


# --- real reports ----------------------------------------------------------------------------------------------

REPORTS = [
    pytest.param(  # an M1 Mac, jax 0.4.1: jaxlib's message before it named the x86 Python on ARM hardware
        "https://github.com/jax-ml/jax/issues/13886",
        '  File "/Users/amir/.venv/lib/python3.8/site-packages/jax/_src/lib/__init__.py", line 85, in <module>\n'
        "    cpu_feature_guard.check_cpu_features()\n"
        "RuntimeError: This version of jaxlib was built using AVX instructions, which your CPU and/or operating "
        "system do not support. You may be able work around this issue by building jaxlib from source.\n"
        "jax 0.4.1, jaxlib 0.4.1\n",
        "cpu-features",
        "fail",
        id="avx-jax#13886",
    ),
    pytest.param(  # the macOS message, cut where the report stops ("... work around this issue by")
        "https://github.com/kach/memo/issues/55",
        '  File "/Users/tobiasg/opt/miniconda3/envs/py312/lib/python3.12/site-packages/jax/_src/lib/__init__.py", '
        "line 84, in <module>\n    cpu_feature_guard.check_cpu_features()\n"
        "RuntimeError: This version of jaxlib was built using AVX instructions, which your CPU and/or operating "
        "system do not support. This error is frequently encountered on macOS when running an x86 Python "
        "installation on ARM hardware. In this case, try installing an ARM build of Python. Otherwise, you may be "
        "able work around this issue by\n",
        "cpu-features",
        "fail",
        id="avx-macos-memo#55",
    ),
    pytest.param(  # jax newer than jaxlib: an attribute of a jaxlib module jax's lib imports is missing
        "https://github.com/jax-ml/jax/issues/8527",
        '"/usr/local/lib/python3.7/dist-packages/haiku/_src/transform.py in check_not_jax_transformed(f)"\n'
        "\"AttributeError: module 'jaxlib.xla_extension' has no attribute 'PmapFunction'\"\n",
        "version-check",
        "fail",
        id="pmap-jax#8527",
    ),
    pytest.param(  # a CI that installed jax without jaxlib, as pytest's summary quotes jax's check
        "https://github.com/huggingface/datasets/issues/5663",
        "FAILED tests/test_arrow_dataset.py::BaseDatasetTest::test_map_jax_in_memory - ModuleNotFoundError: jax "
        "requires jaxlib to be installed. See https://github.com/google/jax#installation for installation "
        "instructions.\n",
        "version-check",
        "fail",
        id="no-jaxlib-datasets#5663",
    ),
    pytest.param(  # jax's TPU cluster code imports a module jax does not require (jax[tpu] installs it from 0.4.15)
        "https://github.com/jax-ml/jax/issues/17075",
        "import jax\njax.distributed.initialize()\n"
        '  File "/home/ayaka/nfs_share/venv/lib/python3.11/site-packages/jax/_src/clusters/cloud_tpu_cluster.py", '
        "line 23, in get_metadata\n    import requests\nModuleNotFoundError: No module named 'requests'\n",
        "tpu-runtime",
        "fail",
        id="requests-jax#17075",
    ),
    pytest.param(  # a TPU v4-32 whose hosts did not all start: jax warns and goes on waiting
        "https://github.com/jax-ml/jax/issues/19971",
        "python jax_test.py\n/home/alberta/.local/lib/python3.10/site-packages/jax/_src/xla_bridge.py:146: "
        "UserWarning: TPU backend initialization is taking more than 60.0 seconds. Did you run your code on all TPU "
        "hosts? See https://jax.readthedocs.io/en/latest/multi_process.html for more information.\n"
        "  warnings.warn(\nI am using TPU v4-32, on ubuntu 22.04 and Python 3.10.\n",
        "tpu-runtime",
        "warn",
        id="tpu-init-slow-jax#19971",
    ),
    pytest.param(  # a CPU node with the CUDA plugin installed: jax logs the plugin's failure and runs on the CPU
        "https://github.com/epaillas/acm/issues/152",
        "ERROR:2026-01-30 07:41:46,407:jax._src.xla_bridge:477: Jax plugin configuration error: Exception when "
        "calling jax_plugins.xla_cuda12.initialize()\nTraceback (most recent call last):\n"
        '  File "/global/common/software/desi/conda/lib/python3.12/site-packages/jax_plugins/xla_cuda12/__init__.py"'
        ", line 285, in _check_cuda_versions\n    local_device_count = cuda_versions.cuda_device_count()\n"
        "RuntimeError: jaxlib/cuda/versions_helpers.cc:113: operation cuInit(0) failed: CUDA_ERROR_NO_DEVICE\n",
        "plugin-load",
        "warn",
        id="plugin-cpu-node-acm#152",
    ),
    pytest.param(  # the backend asked for by name: a failure (its cause, an old cuDNN, is its rule's finding)
        "https://github.com/rgommers/pixi-dev-scipystack/issues/1",
        "../../../../../.pixi/envs/array-api-cuda/lib/python3.12/site-packages/jax/_src/xla_bridge.py:1004: in "
        "_get_backend_uncached\n"
        "E   RuntimeError: Backend 'cuda' failed to initialize: Unable to use CUDA because of the following issues "
        "with CUDA components:\nE   Outdated cuDNN installation found.\nE   Version JAX was built against: 8907\n"
        "E   Minimum supported: 9100\nE   Installed version: 8907\n"
        "E   The local installation version must be no lower than 9100.. Available backends are ['cpu']\n",
        "backend-init",
        "fail",
        id="backend-asked-pixi#1",
    ),
]


@pytest.mark.parametrize(("url", "text", "category", "severity"), REPORTS)
def test_real_reports_messages_are_read_as_their_category(url: str, text: str, category: str, severity: str) -> None:
    found = findings(text)
    assert CHECK in found, (url, sorted(found))
    said = found[CHECK]
    assert said.severity == severity, (url, said.detail)
    assert f"jax says {category}: {CATEGORIES[category].cause}" in said.detail
    assert CATEGORIES[category].fix in said.detail  # what to do for its category
    assert "line " in said.detail  # jax's message quoted with its line


def test_a_module_jax_imports_without_requiring_it_is_named_with_the_extra_that_installs_it() -> None:
    """jax#17075: jax.distributed.initialize() on a TPU pod imports requests, which jax[tpu] installs from 0.4.15."""
    (text,) = [str(p.values[1]) for p in REPORTS if p.id == "requests-jax#17075"]
    said = findings(text)[CHECK].detail
    assert "jax does not require requests; jax[tpu] installs it" in said


def test_the_version_check_states_the_versions_the_message_does() -> None:
    """jax's own check of the jaxlib a jax release needs (jax/_src/lib/__init__.py), at its jaxlib's own message:
    the finding names the versions to install together."""
    facts = Facts(
        messages=[{"line": 3, "text": "This version of jax requires jaxlib version >= 0.4.14."}], origin="triage"
    )
    (found,) = [f for f in rules.evaluate(facts).findings if f.id == CHECK]
    assert found.severity == "fail" and "the versions it states: 0.4.14" in found.detail


@pytest.mark.parametrize(
    ("evidence", "severity"),
    [
        ({}, "warn"),  # a CPU-only machine with a CUDA build installed says it too
        ({"nvidia": {"status": "ok", "gpus": [{"index": 0, "name": "Tesla V100-SXM2-16GB"}]}}, "fail"),
        ({"env": {"JAX_PLATFORMS": "cuda"}}, "fail"),
        ({"env": {"JAX_PLATFORMS": "cpu"}}, "warn"),
        ({"jax": {"status": "unknown", "platform": "tpu"}}, "fail"),
    ],
)
def test_a_backend_message_fails_where_an_accelerator_was_expected(evidence: dict[str, Any], severity: str) -> None:
    said = "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()"
    facts = facts_from({**evidence, "messages": [{"line": 1, "text": said}], "origin": "triage"})
    (found,) = [f for f in rules.evaluate(facts).findings if f.id == CHECK]
    assert found.severity == severity, found.detail


# --- healthy machines --------------------------------------------------------------------------------------------


def test_a_cpu_only_user_seeing_jaxs_gpu_fallback_warning_is_warned_never_failed() -> None:
    text = (
        "jax: 0.4.30\njaxlib: 0.4.30\nnumpy: 1.26.4\npython: 3.11.9\n"
        "WARNING:jax._src.xla_bridge:An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not "
        "installed. Falling back to cpu.\n"
    )
    result = triage(text.encode())
    assert result.verdict == "warn"
    assert set(findings(text)) == {"gpu-present-jax-on-cpu"}


def test_jaxs_info_lines_of_backends_it_did_not_start_on_a_gpu_machine_fail_nothing() -> None:
    """https://github.com/ikostrikov/walk_in_the_park/issues/5: jax logs at INFO each backend it tried (a TPU
    driver, ROCm, the TPU through a jaxlib without it); none is an error, and the check's words defer to the rule
    that reads the line."""
    text = (
        "I0919 21:58:29.074738 139995721590592 xla_bridge.py:350] Unable to initialize backend 'tpu_driver': "
        "NOT_FOUND: Unable to find driver in registry given worker: \n"
        "I0919 21:58:29.120949 139995721590592 xla_bridge.py:350] Unable to initialize backend 'rocm': NOT_FOUND: "
        'Could not find registered platform with name: "rocm". Available platform names are: Interpreter CUDA Host\n'
        "I0919 21:58:29.121373 139995721590592 xla_bridge.py:350] Unable to initialize backend 'tpu': module "
        "'jaxlib.xla_extension' has no attribute 'get_tpu_client'\n"
        "NVIDIA Driver Version: 515.65.01\nCUDA Version: 11.7\nPython: 3.8.13\n"
    )
    found = findings(text)
    assert CHECK not in found and "unexplained-error" not in found
    assert triage(text.encode()).verdict != "fail"
