"""What a report may show of the environment: values that may be secrets are hidden before they enter the facts.

Reports travel (Markdown is meant for public bug reports), so `select_env` keeps the variables of the audited scope
(`envaudit/scope.py`) with their secrets hidden, and `scrub` hides the same values in any text (a child's stderr
line that quotes XLA_FLAGS): redacting here and scrubbing there can never disagree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from envaudit.scope import cuda_library_path_entries, selected

# Reports travel (Markdown is meant for public bug reports), so what may be a secret never enters the facts: the
# value of a variable whose name looks secret; in every flags variable (XLA_FLAGS, TF_XLA_FLAGS, ..._ARGS), the
# value of any argument not known to matter to numerics here (--xla_dump_to=/home/alice/..., a plugin's token);
# and in any value, a URL's credentials (user:password@), query and fragment, and for a variable named like a URL
# or a webhook its path too (only scheme://host:port stays). `scrub` hides the same values in any text (a child's
# stderr line that quotes XLA_FLAGS), so redacting here and scrubbing there can never disagree.
REDACTED = "<redacted>"
SECRET_WORDS = ("TOKEN", "SECRET", "PASSW", "CREDENTIAL", "API_KEY", "APIKEY", "AUTH", "PRIVATE", "COOKIE")
FLAGS_SUFFIXES = ("_FLAGS", "_ARGS")  # XLA_FLAGS, TF_XLA_FLAGS, LIBTPU_INIT_ARGS: command lines in a variable
URL_NAME = re.compile(r"(URL|URI|WEBHOOK|ENDPOINT)S?$")
KNOWN_XLA_FLAGS = frozenset(
    {
        "--xla_cpu_enable_fast_math",
        "--xla_cpu_fast_math_honor_nans",
        "--xla_cpu_fast_math_honor_infs",
        "--xla_cpu_fast_math_honor_division",
        "--xla_cpu_fast_math_honor_functions",
        "--xla_gpu_deterministic_ops",
        "--xla_gpu_exclude_nondeterministic_ops",
        "--xla_gpu_enable_scatter_determinism_expander",
        "--xla_gpu_enable_triton_gemm",
        "--xla_gpu_enable_cublaslt",
        "--xla_gpu_autotune_level",
        "--xla_gpu_cublas_fallback",
        "--xla_force_host_platform_device_count",
        "--xla_gpu_enable_fast_min_max",
        "--xla_backend_optimization_level",
        "--xla_gpu_enable_latency_hiding_scheduler",
        "--xla_cpu_experimental_ynn_fusion_type",
        "--xla_disable_hlo_passes",
    }
)
PLAIN = re.compile(r"[A-Za-z0-9_.+,-]*")  # a known flag's value is kept only when words or numbers (a, b lists)
FLAG_NAME = re.compile(r"--?[A-Za-z0-9_-]+")  # a bare flag (--xla_foo) is kept; any other bare word is not
SCRUB_MIN = 4  # shorter hidden values (a "1", a port) are not searched for in text: they would garble it
NOT_SECRETS = frozenset({"true", "false", "none", "null", "auto", "yes"})  # nor the words every log has


def split_flags(value: str) -> list[str]:
    """Arguments as XLA's parse_flags_from_env.cc splits them, and a shell too where the two differ: whitespace
    separates, '...' and "..." group and lose their quotes (a backslash escapes inside "..."), an unclosed quote
    runs to the end. Never raises; where XLA would split a value further, this keeps more of it together."""
    tokens: list[str] = []
    word: list[str] = []
    started, quote, chars = False, "", iter(value)
    for ch in chars:
        if quote:
            if ch == quote:
                quote = ""
            else:
                word.append(next(chars, "") if ch == "\\" and quote == '"' else ch)
        elif ch.isspace():
            if started:
                tokens.append("".join(word))
            word, started = [], False
        else:
            started = True
            if ch in "'\"":
                quote = ch
            else:
                word.append(ch)
    return tokens + (["".join(word)] if started else [])


def _flags(value: str) -> tuple[str, list[str]]:
    """A flags variable shown with unknown values hidden, and what was hidden."""
    shown, hidden = [], []
    for token in split_flags(value):
        name, sep, flag_value = token.partition("=")
        if sep and name in KNOWN_XLA_FLAGS and PLAIN.fullmatch(flag_value):
            shown.append(token)
        elif sep and FLAG_NAME.fullmatch(name):
            shown.append(f"{name}={REDACTED}")
            hidden.append(flag_value)
        elif not sep and FLAG_NAME.fullmatch(token):
            shown.append(token)
        else:
            shown.append(REDACTED)
            hidden.append(token)
    return " ".join(shown), hidden


def _url(piece: str, whole_path: bool) -> tuple[str, list[str]]:
    """One address (`scheme://user:pw@host:port/path?query#fragment`, with or without a scheme) with its
    credentials, query and fragment hidden, and with whole_path its path too."""
    scheme, sep, rest = piece.partition("://")
    head, rest = (scheme + sep, rest) if sep else ("", piece)
    hidden = []
    if "@" in rest:  # up to the last @: a password may hold an @ or a /
        userinfo, _, rest = rest.rpartition("@")
        hidden += [userinfo, userinfo.partition(":")[2]]
        head += REDACTED + "@"
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    base, tail = rest[:cut], rest[cut:]
    if tail and (sep or "=" in tail):  # a URL's query or fragment, or anything like ?token=...
        hidden.append(tail[1:])
        tail = tail[0] + REDACTED
    if whole_path and "/" in base:
        host, _, path = base.partition("/")
        hidden.append(path)
        base = f"{host}/{REDACTED}"
    return head + base + tail, hidden


def secret_name(name: str) -> bool:
    return any(word in name.upper() for word in SECRET_WORDS)


def flags_name(name: str) -> bool:
    return name.upper().endswith(FLAGS_SUFFIXES)


def _hide(name: str, value: str) -> tuple[str, list[str]]:
    """What a variable shows in the facts, and the values it hides (for `scrub`)."""
    if secret_name(name):
        return REDACTED, [value, *value.split()]
    if flags_name(name):
        flags, hidden = _flags(value)
        return flags, hidden + [part for found in hidden for part in found.split()]
    whole_path, shown, hidden = bool(URL_NAME.search(name.upper())), [], []
    for piece in re.split(r"([\s,;]+)", value):  # a list of addresses: each on its own
        kept, found = _url(piece, whole_path) if piece.strip(" ,;\t\n") else (piece, [])
        shown.append(kept)
        hidden += found
    return "".join(shown), hidden


def redact(name: str, value: str) -> str:
    return _hide(name, value)[0]


def redact_xla_flags(value: str) -> str:
    """Each `--flag=value` argument keeps its value only if the flag is known here; bare flags are kept."""
    return _flags(value)[0]


def select_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The relevant subset of an environment mapping, with possible secrets redacted (pure)."""
    chosen = {k: redact(k, v) for k, v in environ.items() if selected(k)}
    cuda_paths = cuda_library_path_entries(environ.get("LD_LIBRARY_PATH", ""))
    if cuda_paths:
        chosen["LD_LIBRARY_PATH"] = os.pathsep.join(cuda_paths)
    return dict(sorted(chosen.items()))


def scrub(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every value that redaction hides in `environ` (os.environ by default) replaced by <redacted>:
    for the variables the facts keep, and for any variable whose name looks secret or holds flags. Longest values
    first, so a whole value goes before its parts."""
    env = os.environ if environ is None else environ
    chosen = (k for k in env if selected(k) or secret_name(k) or flags_name(k))
    secrets = {s for k in chosen for s in _hide(k, env[k])[1]}
    secrets = {s for s in secrets if len(s) >= SCRUB_MIN and s.lower() not in NOT_SECRETS and s != REDACTED}
    if not secrets or not text:
        return text
    return re.sub("|".join(map(re.escape, sorted(secrets, key=len, reverse=True))), REDACTED, text)
