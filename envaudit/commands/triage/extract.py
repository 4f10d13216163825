"""Facts from the text of a bug report, each with the line it came from: what a maintainer reads off a paste.

Reports carry their environment as pasted text: `jax.print_environment_info()` (jax, jaxlib, numpy, python, the
devices, uname, then an `nvidia-smi` table), `pip list`, `pip freeze`, `pip show`, `conda list`, or flax's
template lines. Each recognised line gives a `Seen` (fact, value, line number, the line): nothing is used that
cannot be shown with its source. Only the audited stack's packages are read (envaudit/model/scope.py). The text is
untrusted: it is read bounded (bytes, lines, line length), terminal escapes and control characters removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from envaudit.commands.triage import gpus
from envaudit.model.facts import Message
from envaudit.model.libraries import LIBRARIES
from envaudit.model.redact import scrubber
from envaudit.model.scope import canonicalize_name, is_relevant
from envaudit.model.versions import public, release
from envaudit.rules import extras as extras_model
from envaudit.rules import raised

MAX_BYTES, MAX_LINES, MAX_LINE = 4_000_000, 100_000, 1_000
ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.")
# Possessive (Python 3.11): each part of a version matched once and never given back, so no line of untrusted text
# makes a pattern backtrack (a nested quantifier took seconds per 30 characters, doubling with each one).
# PEP 440's pre/dev/post parts and a local label (`0.4.23.dev20240125`, `0.4.7+cuda11.cudnn82`, `2.0.0rc2`): a
# sentence's next word (`0.4.30.Then`), a wildcard (`0.9.x`) or a file's suffix (`.dist-info`) is no part of it
VERSION = (
    r"v?+(\d++(?:\.\d++)++(?:[.-]?+(?:a|b|rc|dev|post)\d*+)*+(?:\+[A-Za-z0-9]++(?:\.[A-Za-z0-9]++)*+)?+)(?!\.[xX*])"
    r"(?![eE][-+]?\d)"  # a number printed in scientific notation (`scipy: 7.61985302416047e-24`) is no version
)
SPACE = r"[\s`'\":=]*+"  # what may stand between a name and its version, taken at once

ENV_INFO = re.compile(rf"^\s*+(jax|jaxlib|numpy|scipy)\s*+:\s++{VERSION}\s*+$")  # jax.print_environment_info()
PYTHON = re.compile(
    r"^\W*python\W*:\s+(\d+\.\d+\.\d+)"  # print_environment_info, `python`: 3.11.11
    r"|\bpython(?:\s++|(?=[:=]))(?:version\s*+)?+(?:\([^)]{0,100}+\))?+\s*+(?:is\s++)?+(?:==?|:)?+\s*+[`'\"]*+v?+"
    r"(3\.\d+(?:\.\d+)?)\b"  # "Python 3.10", `conda create -n x python=3.10.11`
    r"|^Python (\d+\.\d+\.\d+) [|(]"  # the interpreter's banner
    r"|(?<![\w.])(3\.\d{1,2}\.\d{1,2}) \((?:main|default|tags|heads|remotes|bpo|HEAD)\b"  # a bare sys.version
    r"|\bcpython-(3\.\d+\.\d+)-"  # uv's name of an interpreter: cpython-3.12.9-macos-x86_64-none
    r"|(?<![/\\])\bpy(?:thon)?+(3\.\d{1,2}(?:\.\d{1,2})?+)(?!\.?+\d)",  # the interpreter's command: python3.11, py3.10
    re.IGNORECASE,
)
UV_PYTHON = re.compile(r"\bcpython-3\.\d+\.\d+-(macos|linux|windows)-(x86_64|aarch64|arm64)\b", re.IGNORECASE)
PYTHON_PATH = re.compile(
    r"[/\\]Python[/\\](3\.\d+\.\d+)[/\\]"  # a CI runner's tool cache: /opt/hostedtoolcache/Python/3.9.18/x64/
    r"|[/\\]lib[/\\]python(\d\.\d+)[/\\](?:site|dist)-packages|[/\\]Python(\d)(\d+)[/\\]lib[/\\]"
)
DEVICES = re.compile(
    r"jax\.devices\s*\([^)]*\)\s*:\s*\[\s*([A-Za-z]+?)(?:Device)?\(|^\s*\[(Tpu|Cuda|Gpu|Cpu)Device\(", re.IGNORECASE
)
ACCELERATOR = re.compile(r"^\W*(TPU|GPU|CPU|cuda)\b", re.IGNORECASE)  # after "Which accelerator(s)...?", or .platform
UNAME = re.compile(r"uname_result\(system='(\w+)'")
MACHINE = re.compile(r"uname_result\(.*?\bmachine='(\w+)'")
SYSTEM = re.compile(
    r"\b(Windows)\s*(?:10|11|PC|machine|laptop|Server)\b|\bon (?:a )?(Windows)\b"
    r"|\b[A-Z]:\\(?:Users|Program)"
    r"|win_amd64|\b(Ubuntu|Debian|CentOS|RHEL|Fedora|Rocky|Linux)\b|\] on (linux|darwin|win32)\b"
    r"|\b(mac ?OS|Darwin|Sonoma|Ventura|Monterey|Catalina|Big Sur|MacBook|Apple M\d)\b|(/Users/)\w",
    re.IGNORECASE,
)
# a system named as what something is for ("the wheels are all for linux", "there is 0.4.6 for **macos** users"):
# what is published, not the reporter's machine
FOR_SYSTEM = re.compile(r"\bfor[\s*_`'\"]++$", re.IGNORECASE)
# Runs of spaces taken at once: "python", "CUDA" or "driver version" followed by a line of spaces took 7 s a line
# when the spaces could be shared out between the quantifiers around an optional word in every way.
SMI = re.compile(r"Driver Version:\s*+(\d++(?:\.\d++)++)\s++CUDA Version:\s*+(\d++\.\d++)")
DRIVER = re.compile(r"(?:nvidia[- ]?driver|driver version)\s*+[:=]?+\s*+(\d{3}\.\d+(?:\.\d+)?)", re.IGNORECASE)
# "CUDA 12.4", "CUDA version: 11.8", flax's template "CUDA version (if applicable): 11.8"
CUDA = re.compile(
    r"\bCUDA\s*+(?:version)?+\s*+(?:\([^()\n]{0,40}+\))?+\s*+[:=]?+\s*+(\d{1,2}\.\d)(?![\d])", re.IGNORECASE
)
CUDNN = re.compile(r"(?<![\w-])cuDNN\s*+(?:version\s*+)?+[:=]?+\s*+v?+(\d++\.\d++(?:\.\d++)?+)(?![\d.])", re.IGNORECASE)
# The GPU's name ends where a run of spaces starts (so that each run is read once), before its On/Off column.
GPU_ROW = re.compile(r"^\|\s*+\d++\s++((?:NVIDIA|Tesla|Quadro|GeForce)\b[^|]*?)(?<!\s)\s++(?:On|Off|WDDM|TCC)\s*+\|")
PIN = re.compile(
    rf"(?<![\w.-])([A-Za-z0-9][A-Za-z0-9._-]*+)(?:\[([^\]]{{0,40}}+)\])?+\s*+==\s*+{VERSION}"
)  # pip freeze
COLUMNS = re.compile(
    rf"^\s*+([A-Za-z0-9][A-Za-z0-9._-]*+)\s++{VERSION}(?:\s++\S++){{0,3}}+\s*+$"
)  # pip list, conda list
# what heads an installer's list: pip list's "Package Version" and its rule of dashes, conda list's "# Name Version"
LISTING = re.compile(r"^\s*+(?:#\s*+)?+(?:Package|Name)\s++Version\b|^[\s-]*-{3}[\s-]*+$")
# a distribution's name (https://packaging.python.org/en/latest/specifications/name-normalization/), canonical;
# and words a "name version" line states that no installer lists (a version of Python, CUDA or an OS)
DISTRIBUTION = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,98}[a-z0-9])?$")
NOT_DISTRIBUTIONS = frozenset(
    {
        "python",
        "cuda",
        "cudnn",
        "driver",
        "nvidia-driver",
        "gcc",
        "ubuntu",
        "debian",
        "centos",
        "linux",
        "macos",
        "windows",
        "version",
        "release",
        "cpython",
        "conda",
        "os",
        "kernel",
        "nccl",
        "rocm",
    }
)
SHOW = re.compile(r"^\s*(Name|Version)\s*:\s*(\S+)\s*$")  # pip show
# A wheel's file name, name-version-python-abi-platform.whl (https://packaging.python.org/en/latest/specifications/
# binary-distribution-format/), matched from where a name starts, never inside one, and possessive: each run of
# name characters is read once. `\b` let it start after every dot of `a.a.a...` and give back each time, which
# is quadratic in a line's length (a megabyte of such lines took 34 s); the last field is read up to its own end.
WHEEL = re.compile(
    r"(?<![A-Za-z0-9_.])\.*+([A-Za-z0-9][A-Za-z0-9_.]*+)-(\d[^-\s/]*+)-(?:cp(\d)(\d++)|py\d)[^\s-]*+"
    r"-[^\s-]++-[^\s-]*?\.whl"
)
INSTALLED = re.compile(r"Successfully installed (.*)$")
SATISFIED = re.compile(
    rf"Requirement already satisfied: ([A-Za-z0-9._-]++)[^\s(]*+ in [^()]*+(?:\([^()]*+\)[^()]*+)*?"
    rf"\({VERSION}\)\s*+$"
)
# jax's issue template asks "What jax/jaxlib version are you using?"; an answer of versions alone, "0.4.14",
# "0.4.20/0.4.20" or "jax/jaxlib v0.3.25", is jax's then jaxlib's (one version: both)
# jax's issue templates: "What jax/jaxlib version are you using?", "System info (python version, jaxlib version,
# accelerator, etc.)"; a bare answer on the next line is jax's version, then jaxlib's ("0.4.23 0.4.23", "0.4.31")
TEMPLATE_QUESTION = re.compile(r"What jax/jaxlib version|System info \(python version, jaxlib version", re.IGNORECASE)
TEMPLATE_ANSWER = re.compile(
    rf"^\W*+(?:jax\s*+/\s*+jaxlib\s++)?+{VERSION}(?:\s*+[/,]\s*+{VERSION}|\s++{VERSION})?+\s*+$", re.IGNORECASE
)
DASHED = re.compile(rf"^\W*+([A-Za-z][A-Za-z0-9._-]*+)\s++[-\u2013]\s++{VERSION}\s*+$")  # a list: "jax - 0.4.28"
# pipdeptree: "├── jax [required: >=0.5.0, installed: 0.5.3]"
TREE = re.compile(rf"([A-Za-z][A-Za-z0-9._-]*+)\s*+\[required:[^\]]{{0,80}}?installed:\s*+{VERSION}\]")
DUNDER = re.compile(r"^\W*(?:\d+\s+)?(?:__version__\s*=\s*)?'?(\d+\.\d+\.\d+[^'\s]*)'?\s*$")  # jax.__version__
NAMED = re.compile(
    rf"\b(flax|jax|jaxlib|optax|chex|orbax|neural[-_]tangents|tensorflow)\b{SPACE}(?:version{SPACE})?+"
    rf"(?:is{SPACE})?+{VERSION}",
    re.IGNORECASE,
)
# Libraries built on jax (and the frameworks installed beside it) whose versions a report states: read by triage,
# not audited (scope.py); the names prose uses for them.
DOWNSTREAM = {
    "equinox": "equinox",
    "haiku": "dm-haiku",
    "dm-haiku": "dm-haiku",
    "orbax": "orbax-checkpoint",
    "diffrax": "diffrax",
    "numpyro": "numpyro",
    "lineax": "lineax",
    "optimistix": "optimistix",
    "jraph": "jraph",
    "distrax": "distrax",
    "rlax": "rlax",
    "jaxtyping": "jaxtyping",
    "blackjax": "blackjax",
    "tensorflow-probability": "tensorflow-probability",
    "tfp": "tensorflow-probability",
    "tensorstore": "tensorstore",
    "torch": "torch",
    "pytorch": "torch",
    "keras": "keras",
    "trax": "trax",
    "objax": "objax",
    "brax": "brax",
    "dm-acme": "dm-acme",
    "alphafold": "alphafold",
    "colabfold": "colabfold",
}
# a name as prose writes it: words joined by "-" or "_" ("neural-tangents", "neural_tangents", "dm-haiku"); the
# patterns below are tried only where such a name is one envaudit knows (`_at_known`), so that every library on
# and around jax is read without an alternation of a hundred names tried at each character of a line
PROSE_NAMES = r"[A-Za-z][A-Za-z0-9_]*+(?:-[A-Za-z][A-Za-z0-9_]*+)*+"
NAME_TOKEN = re.compile(rf"(?<![\w.-]){PROSE_NAMES}(?![\w])")  # after a "/" too: "jax/jaxlib 0.4.30"
# "jax 0.4.32", "bumping JAX to 0.4.32", "JAX version 0.4.29", "upgraded to optax 0.2.3", "jax v0.4.12"; a version
# followed by "+" or after ">=", "at least" is a requirement the text states, not the installed one.
PROSE = re.compile(
    rf"(?<![\w.-])({PROSE_NAMES})(?:\[([\w,-]{{1,40}}+)\])?+(?![\w]|-(?!\d))[`'\"]?+(?:-(?=\d))?+(?:\s++(?:v[a-z]{{2,4}}on|to|at|is|was|=|:)){{0,2}}+[\s`'\"]*+[=:@]?+[\s`'\"(]*+{VERSION}"
    r"(\+|\s++or\s++(?:newer|later|higher|above))?+",
    re.IGNORECASE,
)
# a second version of the same name: another environment ("0.4.30 & 0.4.31", "from 0.4.23 to 0.4.25")
ALSO = re.compile(rf"\s*+(?:&|/|->|→|\bor\b|\band\b|\bto\b|\bvs\.?+)\s*+{VERSION}", re.IGNORECASE)
# an installer's move in parentheses, "Updating jax (0.4.23 -> 0.4.30)" (poetry): its lines are no environment,
# and their before/after pairs over two lines would mix one package's old release with another's new one
UPDATING = re.compile(r"\s*+(?:->|→)")
# a name joined to the next by "&", "and" or "/", read backwards from where that next name starts
JOINED = re.compile(rf"(?<![\w./-])({PROSE_NAMES})\s*+(?:&|\band\b|/)\s*+$", re.IGNORECASE)
# "still fails in 0.5.1": a bare version after a preposition, read where its sentence names one package before it
AGAIN = re.compile(rf"(?<![\w-])(?:in|on|with|using)\s++{VERSION}(?![\w/\\-])", re.IGNORECASE)
# "the jax version used (0.4.28)": a version in parentheses within a few words of its name
PAREN = re.compile(
    rf"(?<![\w./-])({PROSE_NAMES})(?![\w-])(?:\s++[A-Za-z]++){{0,3}}+\s*+\(\s*+{VERSION}\s*+\)", re.IGNORECASE
)
# a version after a verb of change, in a sentence that says the change helps ("can be solved by downgrading Flax
# to 0.6.4", "pinning optax==0.1.7 fixes it"): a way out, not what is installed
CHANGE = re.compile(
    r"\b(?:downgrad|upgrad|pinn?|revert|roll(?:ing|ed)?+\s++back|switch|bump)\w*+(?:\s++\w++){0,3}+\s*+$", re.IGNORECASE
)
HELPS = re.compile(
    r"\b(?:solv\w*+|fix(?:es|ed)?+|resolv\w*+|workaround|(?<!n't\s)(?<!not\s)(?<!never\s)works?|helps?)\b",
    re.IGNORECASE,
)
REQUIRES = re.compile(r"\b(?:requires?|needs?|depends\s++on)\s*+$", re.IGNORECASE)  # a requirement, stated
# a version the text names as a release, not as what is installed: "removed in JAX v0.4.36", "since jax 0.4.14"
RELEASE = re.compile(
    r"\b(?:removed|deprecated|added|introduced|fixed|released|since|until|as\s++of|starting(?:\s++with)?+)"
    r"(?:\s++in)?+\s*+$",
    re.IGNORECASE,
)
AT_LEAST = re.compile(
    rf"(?<![\w./-])({PROSE_NAMES})(?![\w-])\s*+(?:>=|≥|>|at\s++least|minimum(?:\s++version)?+)\s*+{VERSION}",
    re.IGNORECASE,
)
# "nvidia-cudnn-cu12: 9.10.0.56", "`jaxlib`=0.4.30": any audited package, named then its version after a colon
STATED = re.compile(rf"(?<![\w./-])([A-Za-z][A-Za-z0-9_.-]*+)[`'\"]?+\s*+[:=]\s*+[`'\"]?+{VERSION}")
MINIMUM = re.compile(r"\d\+|\bor\s+(?:newer|later|higher|above)\b|>=|\bat\s+least\b", re.IGNORECASE)
TEMPLATE = re.compile(r"flax,\s*jax,\s*jaxlib versions[^:]*:\s*(.*)$", re.IGNORECASE)
X64 = re.compile(r"(?:jax_enable_x64\W+|JAX_ENABLE_X64\s*=\s*)(True|False|1|0|true|false)\b")
SYSTEMS = {"windows": "Windows", "darwin": "Darwin", "linux": "Linux"}
NOT_INSTALLED = ("requires ", "helps ")  # the facts of a Seen that say what is not installed
NEARBY = 2  # lines after the one that started an environment whose facts belong to it
# What one text is read for, at most: a before/after report shows two or three environments, each of tens of
# facts. Every rule judges each environment, so these two bound triage's time; past either the reading stops,
# and the reply says where (`Unread`).
MAX_ENVIRONMENTS, MAX_FACTS = 16, 1_000
PLATFORMS = {"cuda": "cuda", "gpu": "cuda", "tpu": "tpu", "cpu": "cpu", "metal": "metal", "rocm": "rocm"}


# jax's code or its traceback: a report about jax, whatever it states of its versions
JAX_USE = re.compile(
    r"^\s*+(?:>>>\s*+)?+(?:import|from)\s++(?:jax|jaxlib|flax|neural_tangents|equinox|optax|haiku)\b"
    r"|\bjax\.(?:numpy|lax|jit|grad|vmap|random|devices|config)\b|[/\\](?:jax|jaxlib|flax)[/\\]_?src[/\\]"
)


def mentions_jax(text_lines: list[str]) -> bool:
    """Whether the text is about jax: its code, or its name or a library's on or around it as a word ("Jax is
    slower than Numpy", "the backend does not change to JAX"): a report to answer, with what to state, even where
    it states no version."""
    if not prose(text_lines):
        return False  # a binary file read as text spells three-letter library names (jmp, spu) by chance
    return any(JAX_USE.search(line) or any(_about_jax(m[0]) for m in NAME_TOKEN.finditer(line)) for line in text_lines)


def prose(text_lines: list[str]) -> bool:
    """Whether the text is written, not a binary file read as text: at most one character in a hundred is one no
    encoding decoded or none prints."""
    text = "".join(text_lines)
    return sum(not (ch.isprintable() or ch.isspace()) or ch == "\ufffd" for ch in text) <= len(text) // 100


@lru_cache(maxsize=4096)
def _about_jax(word: str) -> bool:
    name = _name(word)
    return name in ("jax", "jaxlib", "keras-core") or name in LIBRARIES


# a version with no name beside it, outside a path, a URL or a date: "it crashes with 0.4.30 on 12.2"
BARE = re.compile(rf"(?<![\w./\\:-]){VERSION}(?![\w/\\-])")
MAX_UNNAMED = 8
URL = re.compile(r"(?<!\S)\S*+://\S*+")  # tried where a word starts: at each character, a long word is read again


def unnamed(text_lines: list[str]) -> list[Seen]:
    """The versions a text states where no reader found a name for them (asked about: "which packages are
    these?"), at most MAX_UNNAMED, each once."""
    found: dict[str, Seen] = {}
    if not prose(text_lines):
        return []  # a binary file read as text: its digits are no one's versions
    for number, line in enumerate(text_lines, 1):
        for match in BARE.finditer(URL.sub(" ", line)):
            if len(found) < MAX_UNNAMED and "." in match[1]:
                found.setdefault(match[1], Seen("unnamed", match[1], number, line.strip()[:200]))
    return list(found.values())


# what an error looks like in a paste, whatever printed it: Python's exception line, at the line's start or behind a
# prefix (pytest's `E   `, a log's, a quote in prose: "errors with `TypeError: ...`") or another exception's name
# (`jax._src.traceback_util.UnfilteredStackTrace: jaxlib.xla_extension.XlaRuntimeError: INTERNAL: ...`); XLA's
# status codes (`INTERNAL: `, `FAILED_PRECONDITION: `..., not NOT_FOUND, which jax's log of a backend it did not look
# for says); a crash (a signal, a fatal error, an abort, a failed CHECK or a glog FATAL line); a tool's fatal error
# (`nvlink fatal   : `, `fatal error: `); CUDA's and cuDNN's status names; pip's refusals. Each part is possessive
# or bounded: a 1,000-character line is tried at each position without backtracking.
ERROR = re.compile(
    r"(?:^|(?<=[\s:>|`'\"(\[]))"
    + raised.EXCEPTION_CLASS
    + r"|\b(?:Segmentation fault|core dumped|Fatal Python error|Aborted \(core|terminate called after"
    r"|Check failed:|double free or corruption)"
    r"|^\s*+F\d{4} \d\d:\d\d"
    r"|\b(?:INTERNAL|UNKNOWN|FAILED_PRECONDITION|INVALID_ARGUMENT|RESOURCE_EXHAUSTED|UNIMPLEMENTED|DATA_LOSS|ABORTED"
    r"|DEADLINE_EXCEEDED):\s"
    r"|\bfatal(?: error)?+\s*+:"
    r"|\bCUDA_ERROR_[A-Z_]++|\bCUDNN_STATUS_(?!SUCCESS)[A-Z_]++"
    r"|^\s*+ERROR: (?:Could not find a version|No matching distribution|Cannot install|ResolutionImpossible)"
)
# words one of ERROR's parts needs (a glog FATAL line aside, which starts with F): a line without them is not
# searched, which keeps a 4 MB text of other lines cheap
ERROR_WORDS = (
    "Error", "Exception", "fault", "dumped", "Fatal", "Aborted", "terminate", "Check failed", "double free", "fatal",
    "CUDA_ERROR_", "CUDNN_STATUS_", "ERROR: ", "INTERNAL: ", "UNKNOWN: ", "FAILED_PRECONDITION: ", "INVALID_ARGUMENT: ",
    "RESOURCE_EXHAUSTED: ", "UNIMPLEMENTED: ", "DATA_LOSS: ", "ABORTED: ", "DEADLINE_EXCEEDED: ",
)  # fmt: skip


def looks_like_error(line: str) -> bool:
    """Whether a line looks like an error (ERROR), not one a log marks as information (LOG_INFO)."""
    if not (line.lstrip().startswith("F") or any(word in line for word in ERROR_WORDS)):
        return False
    return not LOG_INFO.match(line) and not CODE.match(line) and ERROR.search(line) is not None


# a line of Python that names an exception class (`from jaxtyping import ..., TypeCheckError`, `except ValueError:`,
# `raise RuntimeError(...)`, `class MyError(Exception):`): the program, not what it printed
CODE = re.compile(r"^\s*+(?:>>>\s*+|\.\.\.\s*+)?+(?:from\s++[\w.]++\s++import|import|except|raise|class|def)\b")
# a line a log marks as information or debugging (glog's `I0820 16:10:25`, logging's `INFO:`/`DEBUG:`, `[INFO]`):
# what it says is no error, whatever words it quotes (jax logs each backend it could not start at INFO)
LOG_INFO = re.compile(
    r"^\W{0,4}(?:I\d{4} \d\d:\d\d|(?:INFO|DEBUG)\b)"
    # logging's own formats: a date and time, maybe the logger's name, then the level ("2024-09-19 12:00:01,123 -
    # jax._src.xla_bridge - INFO - ...", "[2024-09-19 12:00:01] INFO ...")
    r"|^\W{0,2}\d{4}-\d\d-\d\d[ T][\d:.,]{5,15}\]?\s*+(?:-\s*+)?(?:[\w.]{1,80}\s++-\s++)?(?:INFO|DEBUG)\b"
)
MAX_ERRORS = 20


# the program choosing jax's platforms itself, in its code (a setting jax reads once, when its first backend starts):
# jax.config.update('jax_platforms', ...), os.environ['JAX_PLATFORMS'] = ..., os.environ.setdefault, a notebook's %env
PLATFORMS_CHOSEN = re.compile(
    r"""config\.update\(\s*+['"]jax_platform(?:s|_name)['"]"""
    r"""|environ\s*+\[\s*+['"]JAX_PLATFORM(?:S|_NAME)['"]\s*+\]\s*+="""
    r"""|environ\.setdefault\(\s*+['"]JAX_PLATFORM|putenv\(\s*+['"]JAX_PLATFORM|^\s*+%env\s++JAX_PLATFORM"""
)


CHOSEN_VALUE = re.compile(r"""(?:,|=)\s*+['"]([\w,]{1,40})['"]""")


def chosen_platforms(text_lines: list[str]) -> frozenset[str]:
    """The platforms the text's program chooses for jax itself ('cpu', 'gpu', 'cuda'...), lower case; a line that
    chooses one whose value is not read gives "?"."""
    found: set[str] = set()
    for line in text_lines:
        if (where := PLATFORMS_CHOSEN.search(line)) is not None:
            value = CHOSEN_VALUE.search(line, where.end() - 1)
            found |= {p.strip().lower() for p in value[1].split(",") if p.strip()} if value else {"?"}
    return frozenset(found)


# a traceback's frame in an installed distribution's module body: what raised was that module's import
IMPORTING = re.compile(r"""File "[^"]*[/\\](?:site|dist)-packages[/\\][^"]*", line \d+, in <module>""")
# a traceback's frame in a module's body whose source line is an import: the import raised (`import jax`)
MODULE_FRAME = re.compile(r"""File "[^"]*", line \d+, in <module>""")
IMPORT_STATEMENT = re.compile(r"^\s++(?:import\s++[\w.]++|from\s++[\w.]++\s++import\b)")
TRACEBACK_REACH = 40  # lines above an error read for its traceback's frames


def errors(text_lines: list[str], read: list[str]) -> list[Message]:
    """The lines that look like an error (not those a log marks as information), but those a signature explains
    (`read`: what the signatures that explain them matched, its whitespace collapsed), first ones first (a log
    repeats its error): each once, at its first line, at most MAX_ERRORS; each with its shape (rules/raised.py),
    read with whether the text's program chooses jax's platforms itself."""
    chosen = chosen_platforms(text_lines)
    found: dict[str, Message] = {}
    frame = -TRACEBACK_REACH - 1  # the line of the last frame in an installed module's body
    for number, line in enumerate(text_lines, start=1):
        after_frame = number > 1 and MODULE_FRAME.search(text_lines[number - 2]) is not None
        if IMPORTING.search(line) or (after_frame and IMPORT_STATEMENT.match(line)):
            frame = number
        text = " ".join(line.split())
        if text in found or not looks_like_error(line):
            continue
        if any(text in m or m in text for m in read if m):
            continue
        importing = number - frame <= TRACEBACK_REACH
        shape = raised.shape(text, platforms_chosen=chosen, importing=importing)
        found[text] = Message(line=number, text=text[:300], shape=shape)
        if len(found) == MAX_ERRORS:
            break
    return list(found.values())


@dataclass(frozen=True)
class Seen:
    # "package jax", "python", "system", "platform", "driver", "cuda", "gpu", "x64"; what is no environment:
    # "requires jax" (a requirement the text states, ">=0.4.4"), "helps flax" (a release it says helps: a way out)
    fact: str
    value: str
    line: int  # 1-based
    text: str  # the line, cleaned and cut
    implied: bool = False  # not stated but what a stated install brings (jax[cuda12]==V: its jaxlib and plugin)


def whole_lines(raw: bytes) -> list[str]:
    """The text's lines as written, each whole (an envaudit report's JSON holds lines longer than MAX_LINE), within
    MAX_BYTES and MAX_LINES: what a report envaudit wrote is parsed from, never quoted back."""
    return raw[:MAX_BYTES].decode("utf-8", errors="replace").splitlines()[:MAX_LINES]


# a reply's or an email's quote marks ("> W external/xla/...", "> > jax 0.4.30"), never Python's prompt (">>> ")
QUOTED = re.compile(r"^(?:[ \t]*+>(?!>>)[ \t]?+)++")


def lines(raw: bytes) -> tuple[list[str], bool]:
    """The text's lines, bounded and cleaned; and whether anything was cut."""
    cut = len(raw) > MAX_BYTES
    text = ESCAPES.sub("", raw[:MAX_BYTES].decode("utf-8", errors="replace"))
    found = text.splitlines()
    cut = cut or len(found) > MAX_LINES or any(len(line) > MAX_LINE for line in found)
    scrub = scrubber({})  # a URL's credentials, query and fragment, a PEM block: never quoted back in a reply
    clean = [
        scrub(QUOTED.sub("", "".join(ch if ch.isprintable() or ch == "\t" else " " for ch in line[:MAX_LINE])))
        for line in found[:MAX_LINES]
    ]
    return unwrapped(clean), cut


WRAP_WIDTH = 100  # the narrowest terminal width read as a hard wrap (nvidia-smi's tables are 79 to 91 wide)


def unwrapped(text_lines: list[str]) -> list[str]:
    """The lines with a terminal's hard wrap undone: a run of two or more lines exactly as wide (at least
    WRAP_WIDTH), each cut inside a word ("...CUDA version is 11." then "0 which is older..."), and the shorter line
    that ends it, are one line again, at the run's first line number; the lines it took stay, empty, so that every
    other line keeps its number. A table's rows (| or + first, or columns aligned by runs of spaces: `pip list -v`
    pads its rows to one width) are never joined; the joined line is at most
    MAX_LINE long."""
    out = list(text_lines)
    index = 0
    while index < len(out):
        width, end = len(out[index]), index
        while (
            end + 1 < len(out)
            and width >= WRAP_WIDTH
            and len(out[end]) == width
            and (out[end][-1].isalnum() or out[end][-1] in ".,_-/")
            and out[end + 1][:1].isalnum()
            and (end > index or len(out[end + 1]) == width)  # two lines as wide at least: one alone tells no width
            and out[end].lstrip()[:1] not in ("|", "+")
            and "  " not in out[end].strip()  # a column-aligned row (pip list -v, conda list) is no wrapped prose
            and sum(map(len, out[index : end + 2])) <= MAX_LINE
        ):
            end += 1
        if end > index:
            out[index : end + 1] = ["".join(out[index : end + 1])] + [""] * (end - index)
        index = end + 1
    return out


def _package(name: str, version: str, number: int, line: str, extras: str = "", *, listed: bool = False) -> list[Seen]:
    """A package's version, and the platform a CUDA jaxlib build or libtpu says jax runs on; for jax with extras
    (`jax[cuda12]==0.11.1`, "jax[cuda12] 0.11.1"), the jaxlib and plugins pip installs with it (rules/extras.py),
    not the CUDA wheels, whose versions pip chooses within pins. A name in prose is read where it is one envaudit
    knows (`known`); a name an installer's list states (`listed`: a pin, pip list or conda list, pip's output, a
    wheel's file name) is any distribution's: mpi4py's or typeguard's version decides a pair with a library too."""
    name = canonicalize_name(name)
    if not (known(name) or (listed and DISTRIBUTION.match(name) and name not in NOT_DISTRIBUTIONS)):
        return []
    if not version.isascii():  # `\d` reads other scripts' digits ("0.3.25\u0663"): no installer reads them
        return []
    if release(version) == (0,):
        return []  # "jax: 0.0" is a printed value: no package is at release 0.0
    implied = "cuda" if name == "jaxlib" and "+cuda" in version else "tpu" if name.startswith("libtpu") else None
    named = {e.strip() for e in extras.split(",") if e.strip()} if name == "jax" else set()
    installs = extras_model.inferred(version, named).builds.items()
    return (
        [Seen(f"package {name}", version, number, line)]
        # what the build is for, not what jax ran on: a platform the text states (jax on the CPU beside its
        # failed CUDA backend) replaces it, and it starts no second environment
        + ([Seen("platform", implied, number, line, implied=True)] if implied else [])
        + [replace(s, implied=True) for n, v in installs for s in _package(n, v, number, line)]
    )


def known(name: str) -> bool:
    """Whether prose naming `name` (canonical) names a distribution envaudit reads: the audited stack, the
    libraries on and around jax (model/libraries.py), and the frameworks installed beside it; not envaudit, whose
    own header ("envaudit 0.1.0 | node01 | ...") a report quotes without its environment."""
    return (is_relevant(name) and name != "envaudit") or name in DOWNSTREAM.values()


@lru_cache(maxsize=4096)
def _known_word(word: str) -> bool:
    """`known` for a word of prose as written (a text repeats its words: each is looked up once)."""
    return known(_name(word))


def _versions(number: int, line: str, previous: str, wheels: list[tuple[str, ...]]) -> list[Seen]:
    """Package versions: the templates, pins, pip list/show/install output, wheel names (the line's `WHEEL`
    matches), version lines."""
    short = line.strip()[:200]
    if match := TEMPLATE.search(line):  # "Flax, jax, jaxlib versions (...): 0.7.5, 0.4.23, 0.4.23", or named
        named = NAMED.findall(match[1])
        if named:
            return [s for n, v in named for s in _package(n, v, number, short)]
        ordered = zip(("flax", "jax", "jaxlib"), re.findall(VERSION, match[1]), strict=False)  # the template's order
        return [s for n, v in ordered for s in _package(n, v, number, short)]
    if TEMPLATE_QUESTION.search(previous) and (match := TEMPLATE_ANSWER.match(line)):
        jax, jaxlib = public(match[1]), match[2] or match[3] or match[1]  # a +cuda label is jaxlib's, never jax's
        return _package("jax", jax, number, short) + _package("jaxlib", jaxlib, number, short)
    for pattern in (ENV_INFO, DASHED, COLUMNS):
        if (match := pattern.match(line)) and not (pattern is COLUMNS and MINIMUM.search(line)):
            listed = pattern is not COLUMNS or bool(LISTING.match(previous) or COLUMNS.match(previous))
            found = _package(match[1], match[2], number, short, listed=listed)
            return _distinct(found + _prose(number, line, short)) if pattern is COLUMNS else found
    if match := INSTALLED.search(line):
        pairs = [token.rsplit("-", 1) for token in match[1].split() if "-" in token]
        return [s for n, v in pairs for s in _package(n, v, number, short, listed=True)]
    if match := SATISFIED.search(line):
        return _package(match[1], match[2], number, short, listed=True)
    pins: list[re.Match[str]] = []
    ways: list[
        re.Match[str]
    ] = []  # a pin the text says helps ("pinning optax==0.1.7 fixes it") is a way out, not installed
    for m in PIN.finditer(line):
        (ways if _counterfactual(line, m.start()) else pins).append(m)
    found = [s for m in pins for s in _package(m[1], m[3], number, short, m[2] or "", listed=True)]
    found += [Seen(f"helps {_name(m[1])}", m[3], number, short) for m in ways if known(_name(m[1]))]
    if "[required:" in line:  # pipdeptree's; elsewhere its name part would be tried at every position of the line
        found += [s for n, v in TREE.findall(line) for s in _package(n, v, number, short, listed=True)]
    found += [s for n, v, *_ in wheels for s in _package(n, v, number, short, listed=True)]
    owner = re.search(r"\b(jaxlib|jax|flax|neural_tangents)(?:\.__version__|/__init__\.py)", previous)
    if (match := DUNDER.match(line)) and owner:
        found += _package(owner[1], match[1], number, short)
    return found or _prose(number, line, short)


def _prose(number: int, line: str, short: str) -> list[Seen]:
    """Versions written in sentences; a stated minimum is a requirement (`requires NAME`), not an environment."""
    starts = [m.start() for m in NAME_TOKEN.finditer(line) if _known_word(m[0])]
    found = [Seen(f"requires {_name(m[1])}", f">={m[2]}", number, short) for m in _at_known(AT_LEAST, line, starts)]
    for match in _at_known(PROSE, line, starts):
        name, extra, version, minimum = match.groups()
        moved = "(" in line[match.start() : match.start(3)] and UPDATING.match(line, match.end())
        if RELEASE.search(_before(line, match.start())) or moved:
            continue
        joined, first = _joined(line, match.start())
        if _counterfactual(line, first):  # "solved by downgrading Flax to 0.6.4": a way out, stated
            found += [Seen(f"helps {_name(n)}", version, number, short) for n in (*joined, name)]
            continue
        if REQUIRES.search(_before(line, match.start())):  # "equinox 0.10.4 requires jax 0.4.13"
            found.append(Seen(f"requires {_name(name)}", version, number, short))
            continue
        if minimum:
            found.append(Seen(f"requires {_name(name)}", f">={version}", number, short))
            continue
        found += [s for n in (*joined, name) for s in _package(_name(n), version, number, short, extra or "")]
        end = match.end()
        while also := ALSO.match(line, end):  # "0.4.23.dev20240125 & 0.4.23.dev20240522": another environment
            found += _package(_name(name), also[1], number, short)
            end = also.end()
    found += _again(line, number, short, [m for m in found if m.fact.startswith("package ")])
    for paren in _at_known(PAREN, line, starts):
        if not (RELEASE.search(_before(line, paren.start())) or _counterfactual(line, paren.start())):
            found += _package(_name(paren[1]), paren[2], number, short)
    for stated in STATED.finditer(line):  # "equinox requires jax: 0.4.13" states a requirement
        required = REQUIRES.search(_before(line, stated.start()))
        name, version = stated.groups()
        found += (
            [Seen(f"requires {_name(name)}", version, number, short)]
            if required
            else _package(name, version, number, short)
        )
    return _distinct(found)


def _joined(line: str, at: int) -> tuple[list[str], int]:
    """The known names joined to the one at `at` before it, that share its version ("jax & jaxlib 0.4.24",
    "jax and jaxlib to 0.4.23", "jax/jaxlib 0.4.30"), nearest last; and where the first of them starts."""
    found: list[str] = []
    while (joined := JOINED.search(line, 0, at)) and _known_word(joined[1]):
        found.insert(0, joined[1])
        at = joined.start()
    return found, at


def _again(line: str, number: int, short: str, named: list[Seen]) -> list[Seen]:
    """A bare version after "in", "on" or "with" in a sentence that names one package's version before it ("fails
    with jax 0.4.20 and still fails in 0.5.1"): that package at another release, another environment; not a release
    the text names ("fixed in 0.5.1"), nor a version another reader took."""
    names = {s.fact for s in named}
    if len(names) != 1:
        return []
    (fact,) = names
    taken = {s.value for s in named}
    found = []
    for match in AGAIN.finditer(line):
        sentence = line[: match.start()].rsplit(". ", 1)[-1]
        said = fact.removeprefix("package ")
        if match[1] in taken or not re.search(rf"(?<![\w-]){re.escape(said)}(?![\w-])", _canonical_words(sentence)):
            continue
        if not (RELEASE.search(_before(line, match.start(1))) or _counterfactual(line, match.start())):
            found += _package(said, match[1], number, short)
    return found


def _canonical_words(text: str) -> str:
    """Prose with its names as distributions spell them ("Neural_Tangents" -> "neural-tangents")."""
    return NAME_TOKEN.sub(lambda m: _name(m[0]), text)


def _at_known(pattern: re.Pattern[str], line: str, starts: list[int]) -> list[re.Match[str]]:
    """The pattern's matches that start at a known name (`starts`), none inside another, as finditer's would be."""
    found: list[re.Match[str]] = []
    for start in starts:
        if (not found or start >= found[-1].end()) and (match := pattern.match(line, start)):
            found.append(match)
    return found


def _counterfactual(line: str, at: int) -> bool:
    """Whether the version named at `at` is a change the text says helps (a way out), not the environment."""
    return bool(CHANGE.search(_before(line, at)) and HELPS.search(line))


def _before(line: str, at: int) -> str:
    """The words just before a name: what says whether its version is a release or a requirement (REQUIRES and
    RELEASE are anchored at its end, so a few words are enough)."""
    return line[max(0, at - 40) : at]


def _distinct(found: list[Seen]) -> list[Seen]:
    return list({(s.fact, s.value): s for s in found}.values())


def _name(name: str) -> str:
    """A name as prose writes it, as its distribution's ("haiku": dm-haiku)."""
    return DOWNSTREAM.get(canonicalize_name(name), canonicalize_name(name))


def _machine(number: int, line: str, previous: str, wheels: list[tuple[str, ...]]) -> list[Seen]:
    """Python, OS, platform, driver, CUDA, GPUs, x64 (a CPython wheel's tag, from the line's `WHEEL` matches)."""
    found, short = [], line.strip()[:200]
    if smi := SMI.search(line):
        found += [Seen("driver", smi[1], number, short), Seen("cuda", smi[2], number, short)]
    elif match := DRIVER.search(line):
        found.append(Seen("driver", match[1], number, short))
    if not smi and (match := CUDA.search(line)) and "cuda_dnn" not in line:
        found.append(Seen("cuda", match[1], number, short))
    if match := CUDNN.search(line):  # "cuDNN 8.9.7", "CuDNN v8.5"; not a requirement (">= 8.2")
        found.append(Seen("cudnn", match[1], number, short))
    if match := GPU_ROW.match(line):
        found.append(Seen("gpu", match[1].strip(), number, short))
    elif (match := gpus.NAMES.search(line)) and re.search(
        r"GPU|NVIDIA|RTX|Tesla|Jetson|DGX|accelerator", f"{previous} {line}", re.I
    ):
        found.append(Seen("gpu", match[1], number, short))
    platform = None
    if match := DEVICES.search(line):
        platform = PLATFORMS.get((match[1] or match[2]).lower())
    elif re.search(r"accelerator|\.platform\b|get_backend", previous, re.I) and (match := ACCELERATOR.match(line)):
        platform = PLATFORMS[match[1].lower()]
    found += [Seen("platform", platform, number, short)] if platform else []
    if match := UV_PYTHON.search(line):
        found.append(Seen("system", SYSTEMS.get(match[1].lower().replace("macos", "darwin"), match[1]), number, short))
        found.append(
            Seen("machine", {"arm64": "arm64", "aarch64": "aarch64"}.get(match[2].lower(), "x86_64"), number, short)
        )
    elif match := UNAME.search(line):
        found.append(Seen("system", SYSTEMS.get(match[1].lower(), match[1]), number, short))
        found += [Seen("machine", m[1], number, short)] if (m := MACHINE.search(line)) else []
    elif match := next((m for m in SYSTEM.finditer(line) if not FOR_SYSTEM.search(line[: m.start()])), None):
        groups = [g for g in match.groups()]
        said = (
            "Windows"
            if groups[0] or groups[1] or "\\" in match[0] or "win_amd64" in match[0]
            else ("Linux" if groups[2] or groups[3] in ("linux",) else "Windows" if groups[3] == "win32" else "Darwin")
        )
        found.append(Seen("system", said, number, short))
    if match := PYTHON.search(line):
        found.append(Seen("python", next(g for g in match.groups() if g), number, short))
    elif match := PYTHON_PATH.search(line):
        found.append(Seen("python", match[1] or match[2] or f"{match[3]}.{match[4]}", number, short))
    elif wheels:
        _, _, major, minor = wheels[0]
        found += [Seen("python", f"{major}.{minor}", number, short)] if major else []
    if match := X64.search(line):
        found.append(Seen("x64", "on" if match[1].lower() in ("true", "1") else "off", number, short))
    return found


def seen(text_lines: list[str]) -> list[Seen]:
    found, pending, previous = [], {}, ""
    for number, line in enumerate(text_lines, 1):
        if match := SHOW.match(line):  # pip show: Name: then Version:
            if match[1] == "Name":
                pending["name"] = match[2]
            elif "name" in pending:
                found += _package(pending.pop("name"), match[2], number, line.strip()[:200], listed=True)
        else:
            wheels = WHEEL.findall(line)  # once for the line: both readers use its matches
            found += _versions(number, line, previous, wheels) + _machine(number, line, previous, wheels)
        previous = line if line.strip() else previous
    return found


Env = dict[str, Seen | list[Seen]]  # an environment: each fact's Seen, the GPUs' a list


@dataclass(frozen=True)
class Unread:
    """Where the reading of a text's facts stopped: the fact on `line` would have made more than `limit`
    environments or facts in one environment (`bound`); it and every fact after it are not used."""

    line: int
    bound: Literal["environments", "facts"]
    limit: int


@dataclass(frozen=True)
class Shown:
    """The environments a text shows, and where their reading stopped, if it did."""

    environments: list[Env]
    unread: Unread | None


def _values(env: Env) -> dict[str, str | tuple[str, ...]]:
    return {k: tuple(g.value for g in v) if isinstance(v, list) else v.value for k, v in env.items()}


def _same(a: str, b: str) -> bool:
    """3.10 and 3.10.12 say the same thing, one less precisely; so do 0.1.69 and 0.1.69+cuda101 (its build)."""
    return a == b or any(x.startswith(y + sep) for x, y in ((a, b), (b, a)) for sep in ".+")


def environments(found: list[Seen]) -> Shown:
    """The environments a text shows: a fact said again with another value starts the next one (a before/after
    report), which keeps what it does not restate; the facts of the next few lines are that environment's (its
    jaxlib after its jax). GPUs are a list; a next environment's own rows replace it. At most MAX_ENVIRONMENTS,
    each of at most MAX_FACTS facts (a GPU is one): the fact that would pass either bound stops the reading."""
    envs: list[Env] = [{}]
    # whether the current environment's GPU list is the previous one's; its first line; how many facts it holds
    inherited, started, size = False, 0, 0
    for item in found:
        current = envs[-1]
        if item.fact == "gpu":
            gpus = current.get("gpu")
            listed = gpus if isinstance(gpus, list) else []
            fresh = inherited or not listed  # then this row replaces the list
            grown = size + 1 - (len(listed) if fresh else 0)
            if grown > MAX_FACTS:
                return _shown(envs, Unread(item.line, "facts", MAX_FACTS))
            size = grown
            current["gpu"] = [item] if fresh else [*listed, item]
            inherited = False
            continue
        before = current.get(item.fact)
        if item.implied or (isinstance(before, Seen) and before.implied):
            # what an extra brings never starts an environment, nor replaces what a text states; a stated value, or
            # the next implied one, replaces it
            if before is None or (isinstance(before, Seen) and before.implied):
                size += 1 if before is None else 0
                current[item.fact] = item
            continue
        if isinstance(before, Seen) and _same(before.value, item.value):
            if len(item.value) > len(before.value):
                current[item.fact] = item  # the more precise
            continue  # said again, the same
        if isinstance(before, Seen) and (item.line - started > NEARBY or item.line == before.line):
            if len(envs) == MAX_ENVIRONMENTS:
                return _shown(envs, Unread(item.line, "environments", MAX_ENVIRONMENTS))
            current = dict(current)
            envs.append(current)
            inherited, started = True, item.line
        elif before is None and size == MAX_FACTS:
            return _shown(envs, Unread(item.line, "facts", MAX_FACTS))
        size += 1 if before is None else 0
        current[item.fact] = item
    return _shown(envs, None)


def _shown(envs: list[Env], unread: Unread | None) -> Shown:
    """A fact stated once, after the first environment, holds for the earlier ones (unless the environments that
    state it disagree); then "X works, Y fails, X again" is two environments. Each environment's values are
    computed once, and each fact is looked up once per environment."""
    disputed: set[str] = set()
    agreed: dict[str, str | tuple[str, ...]] = {}
    for values in map(_values, envs):
        for key, value in values.items():
            if agreed.setdefault(key, value) != value:
                disputed.add(key)
    nearest: Env = {}  # each fact as the nearest later environment that states it says it
    for env in reversed(envs):
        env.update({key: value for key, value in nearest.items() if key not in env and key not in disputed})
        nearest.update(env)
    unique: dict[frozenset[tuple[str, str | tuple[str, ...]]], Env] = {}
    for env in envs:
        if env:
            unique.setdefault(frozenset(_values(env).items()), env)
    return Shown(list(unique.values()), unread)
