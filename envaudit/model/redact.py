"""What a report may show of the environment and of what a child says: what may be a secret is hidden first.

Reports travel (Markdown is meant for public bug reports), so `select_env` keeps the variables of the audited scope
(`model/scope.py`) with their secrets hidden, and `scrub` hides the same values in any text a child brings into a
report, so redacting here and scrubbing there can never disagree. What is hidden:

- **A name that looks secret** (`secret_name`): the whole value of a variable whose name holds one of SECRET_WORDS
  (TOKEN, SECRET, PASS for PASSWORD, PASSWD and PASSPHRASE, PWD, CRED for CREDS and CREDENTIAL, KEY for API_KEY
  and SIGNING_KEY, AUTH, PRIVATE, COOKIE, SESSION, BEARER, SIGNATURE) or the word PW (`DB_PW`, a `_PW` suffix).
  NOT_SECRET_NAMES are the exceptions, each named where it is defined: the shell's working directory (PWD, OLDPWD),
  the login session's public identifiers (XDG_SESSION_*, DESKTOP_SESSION) and jax's own options whose names hold
  KEY or PASS (their values are modes and booleans). Any other name holding a word is hidden, `MONKEY` included:
  hiding too much costs a report one value, too little a secret.
- **A structured value**: a JSON document (a value starting with `{` or `[`: a service account's
  `{"private_key": ...}`) or a value holding a PEM block (`-----BEGIN ...`) is hidden whole, whatever its name.
- **A flags variable** (XLA_FLAGS, TF_XLA_FLAGS, any `*_FLAGS` or `*_ARGS`), split as XLA splits it (`split_flags`):
  an argument stays as written only when it is a flag of the shape XLA and TensorFlow give their flags' names,
  `--xla_...` or `--tf_...` in lower-case snake_case (every flag of XLA's debug_options_flags.cc is `xla_*`;
  TF_XLA_FLAGS holds `tf_xla_*` and `tf_mlir_*`; tsl's command_line_flags.cc reads only `--name` and `--name=value`)
  and, when it has a value, when the flag is one of KNOWN_XLA_FLAGS (they decide numerics; the rules read them) and
  the value is of that flag's type as tsl parses it: a bool `true`/`false` (any case), `1` or `0`; an int; a list
  of passes or fusion types, comma-separated lower-case names, each maybe signed `+`/`-`. So a bare `--xla_foo` (a
  flag set to true: a name, not a value) stays; `--xla_dump_to=/home/alice/x` and `--xla_gpu_autotune_level=sk-7`
  show `--name=<redacted>`; and what does not have a flag's shape, a bare `--abcdef123secret`, `-x`, a path (XLA
  reads flags from a file not starting with `-`) or a word after a space (a value given apart from its flag), is
  hidden whole. What this keeps that could still be a secret is a lower-case word given as the name of a pass to a
  list flag: the rules need those names, and a secret has no reason to be there.
- **An address**, in any other value: a URL's credentials (`user:password@`, up to the last `@`), query and
  fragment, and for a variable named like a URL or a webhook its path too (only scheme://host:port stays).

`scrub` hides in a text the values hidden above in the variables of the audited scope and in any variable whose
name looks secret or holds flags, and the credentials, query and fragment of a URL in any variable at all
(`PIP_INDEX_URL`, `HTTPS_PROXY`: outside the scope, but a child's error may quote them); then, in the text itself
whatever the environment, every URL's credentials and query, its fragment unless a plain anchor (`#section`), and
every PEM block. `scrub_all` does the same to every string of a JSON value (a probe's metrics, what jax reports,
another interpreter's answer).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from envaudit.model.scope import PATH_NAMES, cuda_library_path_entries, selected

REDACTED = "<redacted>"
SECRET_WORDS = (
    "TOKEN",
    "SECRET",
    "PASS",  # PASSWORD, PASSWD, PASSPHRASE
    "PWD",
    "CRED",  # CREDS, CREDENTIAL
    "KEY",  # API_KEY, APIKEY, SIGNING_KEY
    "AUTH",
    "PRIVATE",
    "COOKIE",
    "SESSION",
    "BEARER",
    "SIGNATURE",
)
SECRET_PARTS = frozenset({"PW"})  # a word of the name on its own: DB_PW, PW_FILE (not a PW inside another word)
NOT_SECRET_NAMES = frozenset(
    {
        "PWD",  # POSIX: the shell's working directory, and the one before
        "OLDPWD",
        "XDG_SESSION_ID",  # pam_systemd(8): the login session's id, type, class and desktop
        "XDG_SESSION_TYPE",
        "XDG_SESSION_CLASS",
        "XDG_SESSION_DESKTOP",
        "DESKTOP_SESSION",  # a display manager's name of the desktop session
        "JAX_DEBUG_KEY_REUSE",  # jax's own options (jax/_src/config.py at jax-v0.10.1), read from these variables
        "JAX_LEGACY_PRNG_KEY",
        "JAX_COMPILATION_CACHE_INCLUDE_METADATA_IN_KEY",
        "JAX_REMOVE_CUSTOM_PARTITIONING_PTR_FROM_CACHE_KEY",
        "JAX_COMPILER_ENABLE_REMAT_PASS",
    }
)
FLAGS_SUFFIXES = ("_FLAGS", "_ARGS")  # XLA_FLAGS, TF_XLA_FLAGS, LIBTPU_INIT_ARGS: command lines in a variable
URL_NAME = re.compile(r"(URL|URI|WEBHOOK|ENDPOINT)S?$")
# A flag's value as tsl's command_line_flags.cc parses it: a bool is true/false (EqualsIgnoreCase), 1 or 0; an int
# is sscanf's %d; a list is what debug_options_flags.cc splits at commas (pass names, or LibraryFusionType names
# each with an optional +/- sign), empty included
BOOL = re.compile(r"(?i:true|false)|[01]")
INT = re.compile(r"[+-]?[0-9]+")
NAMES = re.compile(r"(?:[+-]?[a-z][a-z0-9_-]*(?:,[+-]?[a-z][a-z0-9_-]*)*)?")
KNOWN_XLA_FLAGS: Mapping[str, re.Pattern[str]] = {
    "--xla_cpu_enable_fast_math": BOOL,
    "--xla_cpu_fast_math_honor_nans": BOOL,
    "--xla_cpu_fast_math_honor_infs": BOOL,
    "--xla_cpu_fast_math_honor_division": BOOL,
    "--xla_cpu_fast_math_honor_functions": BOOL,
    "--xla_gpu_deterministic_ops": BOOL,
    "--xla_gpu_exclude_nondeterministic_ops": BOOL,
    "--xla_gpu_enable_scatter_determinism_expander": BOOL,
    "--xla_gpu_enable_triton_gemm": BOOL,
    "--xla_gpu_enable_cublaslt": BOOL,
    "--xla_gpu_autotune_level": INT,
    "--xla_gpu_cublas_fallback": BOOL,
    "--xla_force_host_platform_device_count": INT,
    "--xla_gpu_enable_fast_min_max": BOOL,
    "--xla_backend_optimization_level": INT,
    "--xla_gpu_enable_latency_hiding_scheduler": BOOL,
    "--xla_cpu_experimental_ynn_fusion_type": NAMES,
    "--xla_disable_hlo_passes": NAMES,
}
FLAG_NAME = re.compile(r"--(?:xla|tf)_[a-z0-9_]+")  # the shape of XLA's and TensorFlow's flag names
PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*-----.*?(?:-----END [A-Z0-9 ]*-----|\Z)", re.DOTALL)  # unclosed: to the end
PEM_ARMOR = "-----"
# a scheme starts where no scheme character precedes it (so a long word is scanned once, not from each of its
# letters: linear in the text) and is at most 32 characters (RFC 3986's are short)
URL_IN_TEXT = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s'\"<>`]+")
SCRUB_MIN = 4  # shorter hidden values (a "1", a port) are not searched for in text: they would garble it
NOT_SECRETS = frozenset({"true", "false", "none", "null", "auto", "yes"})  # nor the words every log has
T = TypeVar("T")


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
    """A flags variable shown with what may be a secret hidden (the module's rule), and what was hidden."""
    shown, hidden = [], []
    for token in split_flags(value):
        name, sep, flag_value = token.partition("=")
        kind = KNOWN_XLA_FLAGS.get(name)
        if not FLAG_NAME.fullmatch(name):  # a value in a flag's place
            shown.append(REDACTED)
            hidden += [token, token.lstrip("-")]
        elif not sep or (kind is not None and kind.fullmatch(flag_value)):
            shown.append(token)
        else:
            shown.append(f"{name}={REDACTED}")
            hidden.append(flag_value)
    return " ".join(shown), hidden


def _url(piece: str, whole_path: bool, anchors: bool = False) -> tuple[str, list[str]]:
    """One address (`scheme://user:pw@host:port/path?query#fragment`, with or without a scheme) with its
    credentials, query and fragment hidden, and with whole_path its path too; with anchors, a fragment that holds no
    parameter (`errors.html#jax.errors.ConcretizationTypeError` in jax's messages) stays."""
    scheme, sep, rest = piece.partition("://")
    head, rest = (scheme + sep, rest) if sep else ("", piece)
    hidden = []
    if "@" in rest:  # up to the last @: a password may hold an @ or a /
        userinfo, _, rest = rest.rpartition("@")
        hidden += [userinfo, userinfo.partition(":")[2]]
        head += REDACTED + "@"
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    base, tail = rest[:cut], rest[cut:]
    anchor = anchors and tail.startswith("#") and "=" not in tail
    if tail and (sep or "=" in tail) and not anchor:  # a URL's query or fragment, or anything like ?token=...
        hidden.append(tail[1:])
        tail = tail[0] + REDACTED
    if whole_path and "/" in base:
        host, _, path = base.partition("/")
        hidden.append(path)
        base = f"{host}/{REDACTED}"
    return head + base + tail, hidden


def secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return False
    return any(word in upper for word in SECRET_WORDS) or not SECRET_PARTS.isdisjoint(re.split(r"[^A-Z0-9]+", upper))


def flags_name(name: str) -> bool:
    return name.upper().endswith(FLAGS_SUFFIXES)


def structured(value: str) -> bool:
    """A JSON document or a PEM block: hidden whole, whatever the variable's name."""
    return value.lstrip().startswith(("{", "[")) or "-----BEGIN " in value


def _parts(value: str) -> list[str]:
    """What of a hidden value a text may quote: the value, its words, and for a JSON document or a PEM block its
    strings and their lines (a key's body) instead, without the PEM armor every key has."""
    try:
        document = json.loads(value)
    except ValueError:
        document = None
    if not isinstance(document, (dict, list)) and PEM_ARMOR not in value:
        return [value, *value.split()]
    leaves, todo = [], [document if isinstance(document, (dict, list)) else value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            todo += item.values()
        elif isinstance(item, list):
            todo += item
        elif isinstance(item, str):
            lines = [line.strip() for line in item.replace("\\n", "\n").splitlines()]
            leaves += [item, *(line for line in lines if not line.startswith(PEM_ARMOR))]
    return [value, *leaves]


def _hide(name: str, value: str) -> tuple[str, list[str]]:
    """What a variable shows in the facts, and the values it hides (for `scrub`)."""
    if secret_name(name) or structured(value):
        return REDACTED, _parts(value)
    if flags_name(name):
        flags, hidden = _flags(value)
        return flags, hidden + [part for found in hidden for part in found.split()]
    return _addresses(value, bool(URL_NAME.search(name.upper())))


def _addresses(value: str, whole_path: bool) -> tuple[str, list[str]]:
    shown, hidden = [], []
    for piece in re.split(r"([\s,;]+)", value):  # a list of addresses: each on its own
        kept, found = _url(piece, whole_path) if piece.strip(" ,;\t\n") else (piece, [])
        shown.append(kept)
        hidden += found
    return "".join(shown), hidden


def redact(name: str, value: str) -> str:
    return _hide(name, value)[0]


def redact_xla_flags(value: str) -> str:
    """Each argument as the module's rule shows it: known flags with values of their type, flag names otherwise."""
    return _flags(value)[0]


def select_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The relevant subset of an environment mapping, with possible secrets redacted (pure)."""
    chosen = {k: redact(k, v) for k, v in environ.items() if selected(k)}
    for name in PATH_NAMES:
        cuda_paths = cuda_library_path_entries(environ.get(name, ""))
        if cuda_paths:
            chosen[name] = os.pathsep.join(cuda_paths)
    return dict(sorted(chosen.items()))


def _hidden_in(env: Mapping[str, str]) -> set[str]:
    """Every value a text may not show: what redaction hides in the scope and in secret or flags variables, and the
    credentials and query of a URL in any other variable (its path stays: `/simple` is no secret; a JSON document
    out of the scope, a launcher's configuration, is not searched for word by word: its words are a job's paths and
    names, and a PEM block in the text goes anyway)."""
    found: set[str] = set()
    for name, value in env.items():
        if selected(name) or secret_name(name) or flags_name(name):
            found.update(_hide(name, value)[1])
        elif "://" in value:
            found.update(_addresses(value, whole_path=False)[1])
    return {s for s in found if len(s) >= SCRUB_MIN and s.lower() not in NOT_SECRETS and s != REDACTED}


def scrubber(environ: Mapping[str, str] | None = None) -> Callable[[str], str]:
    """`scrub` with `environ` (os.environ by default) read once, for many texts."""
    secrets = _hidden_in(os.environ if environ is None else environ)
    # longest values first, so a whole value goes before its parts
    known = re.compile("|".join(map(re.escape, sorted(secrets, key=len, reverse=True)))) if secrets else None

    def clean(text: str) -> str:
        if not text:
            return text
        text = known.sub(REDACTED, text) if known is not None else text
        text = PEM.sub(REDACTED, text)
        return URL_IN_TEXT.sub(lambda url: _url(url.group(), whole_path=False, anchors=True)[0], text)

    return clean


def scrub(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every value that redaction hides in `environ` (os.environ by default) replaced by <redacted>,
    and every URL's credentials, query and fragment and every PEM block in it (the module's rule)."""
    return scrubber(environ)(text)


# a URL's credentials where a path's normalisation has collapsed its `//` (`https:/user:tok@host/r.txt`, a URL
# given where a file was expected): what follows `scheme:/` up to an `@`, with no `/` before it
COLLAPSED_USERINFO = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}:/)([^/\s'\"<>`@]+@)")


def scrub_error(text: str) -> str:
    """An error line that quotes input (a requirement, a file's line, a path): `scrub`'s rule (a URL's credentials,
    query and fragment, a PEM block, a secret of the environment), and credentials in a URL a path has collapsed."""
    return COLLAPSED_USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", scrub(text))


def scrub_all(value: T, environ: Mapping[str, str] | None = None) -> T:
    """A JSON value (a probe's metrics, a stage of jax's facts, another interpreter's answer) with each of its
    strings scrubbed, keys kept; a copy, made without recursion (a document may be nested as deep as JSON allows)."""
    clean = scrubber(environ)
    root: list[Any] = [value]
    todo: list[tuple[Any, Any]] = [(root, 0)]
    while todo:
        parent, key = todo.pop()
        item = parent[key]
        if isinstance(item, str):
            parent[key] = clean(item)
        elif isinstance(item, dict):
            parent[key] = mapping = dict(item)
            todo += [(mapping, k) for k in mapping]
        elif isinstance(item, list):
            parent[key] = items = list(item)
            todo += [(items, i) for i in range(len(items))]
    return cast(T, root[0])
