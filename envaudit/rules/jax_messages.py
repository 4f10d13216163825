"""jax's own words about its environment: the messages its sources raise, log and warn when a backend does not
start, a version check refuses, the CPU lacks what jaxlib was built for, a CUDA library or the TPU runtime is not
as it needs, or a plugin does not load (tables/derived/jax-messages.toml, DERIVED from the sources at every release
tag by derive/tables/jax_messages.py). One check owns every such message that no rule or check of envaudit reads
with a signature of its own: an existing signature wins (`unclaimed`), so a message a rule knows the cause of stays
that rule's, and where one is seen on the same line as this check's, it speaks instead (rules/messages.py).

The finding quotes jax's message and says, by the message's category (`CATEGORIES`, the one place its words, its
fix and when it is a failure are kept), what it means and what to do. A category whose messages only appear when
something the user needs is broken fails; a backend, CUDA library or plugin message fails where the report says an
accelerator was expected (a GPU or TPU listed, the platform asked for, the message naming one) and warns where
nothing does (a CPU-only machine with a CUDA build installed says some of them too); a Python warning jax only
warns with (it goes on) warns.

The table is not keyed on jax (`Table(jax=...)`): a message a newer release says that it lacks is not judged
wrong, only not read here, and the error line is then `unexplained-error`'s.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import product
from typing import Literal, TypedDict

from envaudit.files import cachedir
from envaudit.model.facts import Facts
from envaudit.model.report import Severity
from envaudit.rules.check import Check, Occurrence
from envaudit.rules.signatures import QUOTED, Catalogue, Match, Owner, Signature
from envaudit.rules.table import Span, Table

# how jax says a message: it raises it, logs it as an error, warns with it (logged as a warning, or warnings.warn: it
# goes on), or it is CPython's word for what jax imports
Said = Literal["raises", "logs", "warns", "imports"]


class JaxMessage(TypedDict):
    text: str  # the message as a signature's text (`{any}` where jax inserts a value)
    category: str  # one of CATEGORIES
    said: Said  # how jax says it
    first: str  # the first release whose tag says it
    last: str  # the last
    at: str  # where jax says it, at its first tag (an https URL with its line)
    words: str  # where its words are: `at`, or CPython's source for what an import raises
    extras: list[str]  # for a module jax does not require: its extras that install it


class JaxMessages(Span):
    message: list[JaxMessage]


MESSAGES = Table("derived/jax-messages.toml", JaxMessages)


@dataclass(frozen=True)
class Category:
    """What a category of jax's messages means, what to do, and when it is a failure: `always`, or `accelerator`
    (where the report says an accelerator was expected; a warning where nothing does)."""

    cause: str
    fix: str
    fails: Literal["always", "accelerator"]


CATEGORIES: dict[str, Category] = {
    "backend-init": Category(
        "a jax backend did not start, so jax runs without it (or stops, where the platform was asked for)",
        "read the reason jax gives after the backend's name; python -c \"import jax; jax.devices('cuda')\" (or "
        "'tpu', 'rocm') raises the backend's own error; install the jax build for that accelerator (pip install -U "
        '"jax[cuda12]", "jax[tpu]") or set JAX_PLATFORMS=cpu where the CPU is what is wanted',
        "accelerator",
    ),
    "version-check": Category(
        "jax and jaxlib (or a jax plugin) are releases that do not go together: jax checks this at import",
        "install jax and jaxlib (and its plugins) of one release: pip install -U jax jaxlib, or pin both to the "
        "release the message states",
        "always",
    ),
    "cpu-features": Category(
        "jaxlib was built for CPU instructions (AVX, AVX2, FMA) that this CPU or its operating system does not "
        "offer; on a Mac with Apple silicon, an x86_64 Python runs under Rosetta, which offers no AVX",
        "install a jaxlib built for this CPU: on Apple silicon, a native arm64 Python (python -c 'import platform; "
        "print(platform.machine())' prints arm64) and jax installed in it; on an x86 CPU without AVX, a jaxlib "
        "built from source",
        "always",
    ),
    "cuda-libraries": Category(
        "a CUDA library jax needs (cuDNN, cuBLAS, cuSPARSE, NCCL, the CUDA runtime, ptxas) is missing, too old or "
        "not the one jax was built for",
        'install the CUDA libraries jax\'s extra pins (pip install -U "jax[cuda12]"; unset LD_LIBRARY_PATH where it '
        "points at another CUDA), or a driver and CUDA of the versions the message states",
        "accelerator",
    ),
    "tpu-runtime": Category(
        "jax's Cloud TPU start or cluster code did not find what it needs (libtpu, a module it imports, the TPU "
        "metadata server)",
        'install jax for the TPU (pip install -U "jax[tpu]", which installs libtpu and what the cluster code '
        "imports) and run it on every host of the TPU slice",
        "always",
    ),
    "plugin-load": Category(
        "a jax plugin (the CUDA or ROCm PJRT plugin, another jax_plugins module) was found but did not load",
        "install the plugin of jaxlib's release (pip install -U jax jaxlib with the plugin's extra), or uninstall "
        "the plugin where its accelerator is not wanted",
        "accelerator",
    ),
}
# what jax inserted into its message that names an accelerator: the platform it was asked for or was starting, as a
# whole value ("Backend 'cuda' failed to initialize"), or a GPU's model; not a word inside another value (a CUDA
# plugin's module name is in its failure on a machine without a GPU too)
PLATFORM = re.compile(r"(?:cuda|rocm|gpu|tpu|METAL|iree_cuda)", re.IGNORECASE)
MODEL = re.compile(r"\b(?:Tesla|Quadro|GeForce|RTX|GTX|Radeon|Instinct|[AHLV]\d{2,3}|MI\d{3}|GB\d{3})\b")
PLATFORM_VARIABLES = ("JAX_PLATFORMS", "JAX_PLATFORM_NAME")
VERSIONS = re.compile(r"\b\d+\.\d+(?:\.\d+)*\b")
QUOTED_NAME = re.compile(r"'([\w.]+)'")  # the module an import's message names


SENTENCE_END = re.compile(r"[.!?](?=\s)")
AFTER_LAST_VALUE = re.compile(r"(?<=\{any\})[\s.,;:!?'\"`)\]]+$")


def first_sentences(text: str) -> str:
    """What a signature of a message requires: its first sentence (the first that can be told from another line,
    signatures.needle's 6-character word and three words), since a report quotes a long message cut (a terminal's
    width, an excerpt) and the first sentence is what names it; and where it ends with a value, not the quote or
    stop after it, so that the value is the rest of the line (a version's dots are not taken for the stop: ">= {any}."
    read "0.4.14." as "0")."""
    head = text
    for end in SENTENCE_END.finditer(text):
        words = text[: end.end()].replace("{any}", " ").split()
        if len(words) >= 3 and max(map(len, words)) >= 6:
            head = text[: end.end()]
            break
    return AFTER_LAST_VALUE.sub("", head)


def rows() -> dict[str, list[JaxMessage]]:
    """The table's rows by the text of their signature (rows that begin alike share one), in the table's order."""
    found: dict[str, list[JaxMessage]] = {}
    for row in MESSAGES.load()["message"]:
        found.setdefault(first_sentences(row["text"]), []).append(row)
    return found


def signature(text: str, row: JaxMessage) -> Signature:
    return Signature(text, row["words"])


SAMPLES = ("cuSPARSE", "8907", "1.2.3", "an explanation")  # a value of each kind a placeholder reads
MOST_SLOTS = 4  # a text with more values is tried with one sample in all of them
CLAIMS = 1  # how `claimed` decides: a new number where it changes, so that what the cache kept is worked out again


def _renderings(text: str) -> Iterator[str]:
    """The text with its `{any}` values filled with samples (a name, a number, a version, words), every
    combination where it has few values: a signature that reads the message reads one of them."""
    parts = text.split("{any}")
    slots = len(parts) - 1
    combinations = product(SAMPLES, repeat=slots) if slots <= MOST_SLOTS else ((s,) * slots for s in SAMPLES)
    for values in combinations:
        yield "".join(part + value for part, value in zip(parts, (*values, ""), strict=True))


def claimed(text: str, catalogue: Catalogue) -> str:
    """The owner of another signature that reads this message ("" none): only those whose literal word to be
    found by (its needle) the message's own words hold are tried."""
    candidates = [c for c in catalogue.compiled if c.needle in text]
    for rendered in _renderings(text) if candidates else ():
        for compiled in candidates:
            if compiled.pattern.search(rendered):
                return compiled.owner
    return ""


def unclaimed(others: Iterable[Owner]) -> tuple[Signature, ...]:
    """The signatures of the table's rows (their first sentences) that no other owner's signature reads, in any
    message that begins so (the rule or check that knows a message wins it). Worked out once for a table and the
    others' signatures, and kept in envaudit's cache (it compiles the others' patterns, which a run that reads no
    message never needs)."""
    others = tuple(others)
    table = rows()
    stat = MESSAGES.path.stat()
    read = sorted([o.id, s.text, s.fires] for o in others for s in o.signatures)
    stamp = json.dumps([str(MESSAGES.path.resolve()), stat.st_size, stat.st_mtime_ns, CLAIMS, *read])
    name = f"unclaimed-{hashlib.sha256(stamp.encode()).hexdigest()[:20]}.json"
    kept = cachedir.read_json(name)
    if not (isinstance(kept, list) and all(isinstance(t, str) and t in table for t in kept)):
        catalogue = Catalogue(others)
        kept = [text for text, said in table.items() if not any(claimed(r["text"], catalogue) for r in said)]
        cachedir.write_json(name, kept)
    return tuple(signature(text, table[text][0]) for text in kept)


def expected(facts: Facts, match: Match) -> str:
    """What says an accelerator was expected here ("" nothing): a GPU or TPU the facts list, jax's platform, the
    platform asked for, or an accelerator named in the message's values."""
    gpus = facts.nvidia.get("gpus") or []
    if gpus:
        return f"the report lists {len(gpus)} NVIDIA GPU(s)"
    if (facts.platform.get("tpu") or {}).get("chips"):
        return "the host has TPU chips"
    platform = str(facts.jax.get("platform") or "")
    if platform and platform != "cpu":
        return f"jax's platform is {platform}"
    for variable in PLATFORM_VARIABLES:
        asked = [p for p in facts.env.get(variable, "").split(",") if p.strip() and p.strip() != "cpu"]
        if asked:
            return f"{variable} asks for {','.join(asked)}"
    for _, value in match.values:
        if PLATFORM.fullmatch(value.strip()):
            return f"the message names {value.strip()}"
        if named := MODEL.search(value):
            return f"the message names {named[0]}"
    return ""


def severity(row: JaxMessage, match: Match, facts: Facts) -> tuple[Severity, str]:
    """The severity of one message here, and why."""
    if row["said"] == "warns":
        return "warn", "jax only warns with it and goes on"
    if CATEGORIES[row["category"]].fails == "always":
        return "fail", ""
    why = expected(facts, match)
    return ("fail", why) if why else ("warn", "nothing in the report says an accelerator was expected")


def judged(facts: Facts, matches: Sequence[Match]) -> Occurrence | None:
    """The check's occurrence where its messages are seen: each category once, its cause and what to do, the
    worst severity; the message quoted where no report's line shows it (jax's own exception, an import's)."""
    table = rows()
    seen = [(m, table[m.signature.text][0]) for m in matches if m.signature.text in table]
    if not seen:
        return None
    parts, todo = [], []
    worst: Severity = "warn"
    for category in dict.fromkeys(row["category"] for _, row in seen):
        here = [(m, row) for m, row in seen if row["category"] == category]
        judged_here = [severity(row, m, facts) for m, row in here]
        level = "fail" if any(s == "fail" for s, _ in judged_here) else "warn"
        worst = "fail" if level == "fail" else worst
        why = "; ".join(dict.fromkeys(w for s, w in judged_here if w and s == level))
        said = "; ".join(f"'{m.text[:QUOTED]}'" for m, _ in here if not m.line)
        where = ", ".join(dict.fromkeys(row["at"] for _, row in here))
        versions = sorted({v for m, _ in here for _, value in m.values for v in VERSIONS.findall(value)})
        stated = f" (the versions it states: {', '.join(versions)})" if versions and category == "version-check" else ""
        installs = "; ".join(
            f"jax does not require {module[1]}; {', '.join(f'jax[{e}]' for e in row['extras'])} installs it"
            for _, row in here
            if row["said"] == "imports" and row["extras"] and (module := QUOTED_NAME.search(row["text"]))
        )
        parts.append(
            f"jax says {category}: {CATEGORIES[category].cause}{stated}{' [' + why + ']' if why else ''}"
            + (f"; it said {said}" if said else "")
            + (f" ({installs})" if installs else "")
            + f" (where jax says it: {where})"
        )
        todo.append(f"{category}: {CATEGORIES[category].fix}" if len(seen) > 1 else CATEGORIES[category].fix)
    return Occurrence("; ".join(parts), severity=worst, todo="; ".join(todo))


JAX_ENVIRONMENT_MESSAGE = Check(
    id="jax-environment-message",
    severity="warn",
    title="jax says what is wrong with its environment, in a message no other rule reads",
    fix="what the finding says for the message's category (a backend, a version check, the CPU, the CUDA "
    "libraries, the TPU runtime, a plugin)",
    references=("https://github.com/jax-ml/jax",),
    run=lambda facts: [],  # its messages alone show it
    said=judged,
    defers=True,
)


def owning(check: Check, others: Iterable[Owner]) -> Check:
    """The check with the signatures of the table's rows no other owner reads."""
    return replace(check, signatures=unclaimed(others))
