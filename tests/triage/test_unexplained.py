"""Triage never answers `ok` over an error of the environment's shape it cannot explain: an error line no signature
reads is a warning that quotes it and says what to state and try, unless it is of the program's shape (a value or
type refused, a backend after the program chose jax's platforms: information that quotes it, rules/raised.py); an
error a rule reads is that rule's, and a paste without one is judged by its facts alone. An error line is any that
says one (an exception behind a prefix or another exception's name, an XLA status, a tool's fatal error), not a line
a log marks as information; a signature that only states facts does not explain it unless its rule is a finding."""

from __future__ import annotations

import pytest

from envaudit.commands.triage import extract
from envaudit.commands.triage.triaged import triage

VERSIONS = "jax: 0.10.1\njaxlib: 0.10.1\nnumpy: 2.2.6\npython: 3.12.3\n"


def roots(text: str | bytes) -> tuple[str, dict[str, str]]:
    result = triage(text if isinstance(text, bytes) else text.encode())
    found = {f.id: f.detail for e in result.environments for f in e.report.findings if not f.caused_by}
    return result.verdict, found


def test_an_error_no_rule_reads_fails_the_report_and_quotes_its_line() -> None:
    """What the report's program ran stopped on an error of the environment's shape: a failure, as the audit's own
    failed import is, though no rule says why (triage-unseen to -5: 18 of 19 such reports were failures by their
    threads' record, and were said WARN); the question stays, with what the reporter should state."""
    verdict, found = roots(
        VERSIONS + "Traceback (most recent call last):\n  File 'x.py'\nRuntimeError: the frobnicator broke\n"
    )
    assert verdict == "fail" and "line 7: 'RuntimeError: the frobnicator broke'" in found["unexplained-error"]
    assert "jax.print_environment_info()" in found["unexplained-error"]  # what the reporter should state
    # a backend that did not start, or a plugin's library that did not load, only says jax went on without it
    verdict, found = roots(VERSIONS + "RuntimeError: Unable to load cuSPARSE. Is it installed?\n")
    assert verdict == "warn" and "Unable to load cuSPARSE" in found["unexplained-error"]


def test_an_error_a_rule_reads_is_that_rules() -> None:
    text = VERSIONS + "RuntimeError: jaxlib is version 0.10.0, but this version of jax requires version >= 0.10.1.\n"
    _, found = roots(text)
    assert "jax-jaxlib-coupling" in found and "unexplained-error" not in found


def test_a_paste_without_an_error_is_judged_by_its_facts() -> None:
    assert roots(VERSIONS) == ("ok", {})


def test_an_error_quoted_in_a_sentence_is_an_error_too() -> None:
    """ "With JAX 0.7.2, the following code errors with `TypeError: cannot create weak reference to 'Flatten'
    object`" (optimistix#170; tests/fixtures/triage-unseen-5 case 07): the error stated in prose, not on a
    traceback's last line, is still quoted (a TypeError: the program's shape, as information); one of the
    environment's shape in prose is the unexplained error's question."""
    verdict, found = roots(b"With JAX 0.7.2, the code errors with `TypeError: cannot create weak reference to 'X'`:\n")
    assert "TypeError: cannot create weak reference" in found["program-error-program"]
    verdict, found = roots(b"With JAX 0.7.2, importing it errors with `ModuleNotFoundError: No module named 'frob'`\n")
    assert verdict != "ok" and "No module named 'frob'" in found["unexplained-error"]


@pytest.mark.parametrize(
    ("url", "text", "quoted"),
    [
        (  # an XLA status behind jax's UnfilteredStackTrace, in the backticks of the report's prose
            "https://github.com/jax-ml/jax/issues/16699",
            "I get the following error message:\n`jax._src.traceback_util.UnfilteredStackTrace: jaxlib.xla_extension."
            "XlaRuntimeError: INTERNAL: nvlink exited with non-zero error code 256, output: nvlink fatal   : Value "
            "'sm_80' is not defined for option 'arch'`\n### What jax/jaxlib version are you using?\n"
            "0.4.13+cuda11.cudnn86\n### Which accelerator(s) are you using?\nA100 GPU\n",
            "XlaRuntimeError: INTERNAL: nvlink exited with non-zero error code 256",
        ),
        (  # a jaxlib module jax 0.4 no longer imports (jaxlib.cuda_linalg, jax 0.3): no row, no rule
            "https://github.com/jax-ml/jax/issues/10717",
            "/usr/local/lib/python3.7/dist-packages/jax/_src/lax/linalg.py in <module>()\n"
            "AttributeError: module 'jaxlib.cuda_linalg' has no attribute 'cuda_lu_pivots_to_permutation'\n",
            "AttributeError: module 'jaxlib.cuda_linalg' has no attribute",
        ),
        (  # a ModuleNotFoundError quoted in the report's title, behind its prose
            "https://github.com/jax-ml/jax/issues/19112",
            "# regression on main: ModuleNotFoundError: No module named 'jaxlib.mlir.extras'\n"
            "Successfully installed jax-0.4.24.dev20231223+b413ee254\n",
            "ModuleNotFoundError: No module named 'jaxlib.mlir.extras'",
        ),
        (  # the GPU plugin's backend that found no device, raised as jax asked for the GPU
            "https://github.com/jax-ml/jax/issues/21299",
            "2024-05-21 18:06:49.257055: E external/xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to "
            "cuInit: CUDA_ERROR_SYSTEM_NOT_READY: system not yet initialized\n"
            "jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: No visible GPU devices.\n",
            "FAILED_PRECONDITION: No visible GPU devices.",
        ),
    ],
)
def test_real_errors_no_rule_explains_are_warnings_that_quote_them(url: str, text: str, quoted: str) -> None:
    verdict, found = roots(text)
    assert verdict in ("warn", "fail") and quoted in found.get("unexplained-error", ""), (url, found)


def test_a_pytest_prefix_and_a_tools_fatal_error_are_error_lines_and_a_logs_info_lines_are_not() -> None:
    lines = [
        "E   ModuleNotFoundError: No module named 'optax'",
        "nvlink fatal   : Value 'sm_80' is not defined for option 'arch'",
        "Exception: the frobnicator broke",
        "F0000 00:00:1713630999.125092  494916 pjrt_computation_client.cc:158] Check failed: status.ok()",
        # information: a backend jax tried and did not need, however its reason is worded
        "I0919 21:58:29.121373 139995721590592 xla_bridge.py:350] Unable to initialize backend 'tpu': INTERNAL: x",
        "INFO:2024-06-25 00:34:55,142:jax._src.xla_bridge:889: Unable to initialize backend 'tpu': ABORTED: busy",
        "a ValueError is raised when the shapes differ",  # prose naming an exception, without its message
    ]
    assert [extract.looks_like_error(line) for line in lines] == [True, True, True, True, False, False, False]


def test_a_line_of_the_program_that_names_an_exception_is_no_error() -> None:
    """A report's code imports or raises exception classes (`from jaxtyping import ..., TypeCheckError`, a
    traceback's `raise RuntimeError(err_msg)` source line; tests/fixtures/triage-unseen-5 case 20): the program, not
    what it printed; the error it printed is still one."""
    code = "from jaxtyping import Array, Float, jaxtyped, TypeCheckError\n    raise RuntimeError(err_msg)\n"
    assert roots(VERSIONS + code) == ("ok", {})
    verdict, found = roots(VERSIONS + code + "RuntimeError: the frobnicator broke\n")
    assert verdict == "fail" and "RuntimeError: the frobnicator broke" in found["unexplained-error"]


@pytest.mark.parametrize(
    ("url", "text", "quoted"),
    [
        (  # a library's own check of an annotation (jaxtyping 0.2.25 with typeguard 2.13.3, the pair it supports)
            "https://github.com/patrick-kidger/jaxtyping/issues/181",
            "jaxtyping 0.2.25, typeguard 2.13.3\n# AnnotationError: Cannot process symbolic axis '{size}' as some "
            "axis names have not been processed.\n",
            "AnnotationError: Cannot process symbolic axis",
        ),
        (  # jax's own tracer error: the program branches on a traced value
            "https://docs.jax.dev/en/latest/errors.html",
            VERSIONS + "jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with "
            "shape bool[].\n",
            "TracerBoolConversionError",
        ),
        (  # a backend that did not start after the program chose jax's platforms itself, after its import
            "https://github.com/jax-ml/jax/issues/23208",
            'jax version: 0.4.30\n    os.environ["JAX_PLATFORMS"] = "cpu"\nRuntimeError: Unable to initialize '
            "backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.\n",
            "Unable to initialize backend 'cuda'",
        ),
        (  # 'gpu' asks for every GPU backend: jax 0.3.14 tried rocm on a CUDA machine
            "https://github.com/jax-ml/jax/issues/12335",
            "jax 0.3.14, jaxlib 0.3.14\njax.config.update('jax_platforms', 'gpu')\nRuntimeError: Unable to "
            "initialize backend 'rocm': NOT_FOUND: Could not find registered platform with name: \"rocm\".\n",
            "Unable to initialize backend 'rocm'",
        ),
    ],
)
def test_an_error_of_the_programs_shape_is_information_that_quotes_it(url: str, text: str, quoted: str) -> None:
    verdict, found = roots(text)
    program = " ".join(detail for finding, detail in found.items() if finding.startswith("program-error"))
    assert verdict == "ok" and quoted in program and "unexplained-error" not in found, (url, found)


def test_the_same_backend_error_without_the_programs_choice_is_the_environments() -> None:
    """jax#21299's error without a line of the program choosing the platforms: the environment's to answer, in
    jax's own words about a backend that did not start (the message names the CUDA backend jax was starting)."""
    text = "jax version: 0.4.30\nRuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: x.\n"
    verdict, found = roots(text)
    assert verdict == "fail" and "backend-init" in found["jax-environment-message"] and "program-error" not in found


def test_a_cuda_backend_that_failed_where_the_report_lists_a_gpu_fails() -> None:
    """jax#20722: a DGX V100 with jaxlib 0.4.26+cuda12, where jax fell back to the CPU after "CUDA backend failed
    to initialize: ... CUDA_ERROR_NOT_INITIALIZED": the GPU the report names is not used. The same words where no
    accelerator is named stay the unexplained error's question (a CUDA jaxlib on a machine without a GPU says
    them too)."""
    error = (
        "CUDA backend failed to initialize: jaxlib/cuda/versions_helpers.cc:90: operation gpuDeviceGetAttribute( "
        "&major, GPU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) failed: CUDA_ERROR_NOT_INITIALIZED (Set "
        "TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n"
    )
    stack = "jax                          0.4.26\njaxlib                       0.4.26+cuda12.cudnn89\n"
    result = triage((">>> jax.devices()\n" + error + "[CpuDevice(id=0)]\nA DGX V100 machine\n" + stack).encode())
    verdict, found = result.verdict, {f.id: f.detail for e in result.environments for f in e.report.findings}
    assert len(result.environments) == 1  # the +cuda build is what jaxlib is for, not a second platform
    assert verdict == "fail" and "the report lists 1 NVIDIA GPU" in found["jax-environment-message"]
    verdict, found = roots(">>> jax.devices()\n" + error + "[CpuDevice(id=0)]\n" + stack)
    assert verdict == "warn" and "CUDA backend failed to initialize" in found["unexplained-error"]


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        (  # protobuf 4 under an old _pb2 module, raised by `import optax`: the environment's, though a TypeError
            'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    import optax\n'
            '  File "/usr/lib/python3.10/site-packages/optax/__init__.py", line 17, in <module>\n'
            "    from optax import contrib\nTypeError: Descriptors cannot be created directly.\n",
            "Descriptors cannot be created directly",
        ),
        (  # ml_dtypes older than jax's float8 types: `import jax` raised it
            'jax 0.4.30, ml_dtypes 0.2.0\nTraceback (most recent call last):\n  File "t.py", line 2, in <module>\n'
            "    import jax\nTypeError: data type 'float8_e4m3b11fnuz' not understood\n",
            "float8_e4m3b11fnuz",
        ),
        (  # the program asked for cuda, and cuda did not start: not the choice's doing
            "A100\njax 0.4.30\njax.config.update('jax_platforms', 'cuda')\nRuntimeError: Unable to initialize "
            "backend 'cuda': Unknown backend cuda\n",
            "Unable to initialize backend 'cuda'",
        ),
    ],
)
def test_an_environments_error_in_a_programs_class_or_after_its_own_choice_is_still_a_question(
    text: str, quoted: str
) -> None:
    verdict, found = roots(text)
    said = " ".join(detail for finding, detail in found.items() if not finding.startswith("program-error"))
    assert verdict != "ok" and quoted in said, found
