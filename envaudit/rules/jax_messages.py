"""jax's own words about its environment: the messages its sources raise, log and warn when a backend does not
start, a version check refuses, the CPU lacks what jaxlib was built for, a CUDA library or the TPU runtime is not
as it needs, or a plugin does not load (tables/derived/jax-messages.toml, DERIVED from the sources at every release
tag by derive/tables/jax_messages.py). One check owns every such message that no rule or check of envaudit reads
with a firing signature of its own: such a signature wins (`unclaimed`), so a message a rule knows the cause of stays
that rule's; where a rule's signature only states facts, the message is this check's too, and the rule speaks
instead on the line where it is a finding (rules/messages.py).

The finding quotes jax's message and says, by the message's category (`CATEGORIES`, the one place its words, its
fix and when it is a failure are kept), what it means and what to do. A category whose messages only appear when
something the user needs is broken fails; a backend, CUDA library or plugin message fails where the report says an
accelerator was expected (a GPU or TPU listed, the platform asked for, the message naming one), even where jax only
warns and goes on (it goes on without that accelerator), and warns where nothing does (a CPU-only machine with a
CUDA build installed says some of them too); another category's Python warning jax only warns with warns.

The table is not keyed on jax (`Table(jax=...)`): a message a newer release says that it lacks is not judged
wrong, only not read here, and the error line is then `unexplained-error`'s.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import product
from typing import Literal, Protocol, TypedDict, runtime_checkable

from envaudit.files import cachedir
from envaudit.model.facts import Facts
from envaudit.model.report import Finding, Severity
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
CLAIMS = 4  # how `claimed` decides: a new number where it changes, so that what the cache kept is worked out again


def _renderings(text: str) -> Iterator[str]:
    """The text with its `{any}` values filled with samples (a name, a number, a version, words), every
    combination where it has few values: a signature that reads the message reads one of them."""
    parts = text.split("{any}")
    slots = len(parts) - 1
    combinations = product(SAMPLES, repeat=slots) if slots <= MOST_SLOTS else ((s,) * slots for s in SAMPLES)
    for values in combinations:
        yield "".join(part + value for part, value in zip(parts, (*values, ""), strict=True))


def claimed(text: str, catalogue: Catalogue) -> tuple[bool, frozenset[str]]:
    """How other owners' signatures read this message: whether one fires on it, and the owners whose signatures
    read it only to state facts (cuda-backend-failed-jax-on-cpu's "CUDA backend failed to initialize", which a
    machine without a GPU prints too). Only signatures whose literal word to be found by (its needle) the message's
    own words hold are tried."""
    candidates = [c for c in catalogue.compiled if c.needle in text]
    quiet: set[str] = set()
    for rendered in _renderings(text) if candidates else ():
        for compiled in candidates:
            if compiled.pattern.search(rendered):
                if compiled.signature.fires:
                    return True, frozenset()
                quiet.add(compiled.owner)
    return False, frozenset(quiet)


def unclaimed(others: Iterable[Owner]) -> tuple[tuple[Signature, ...], dict[str, frozenset[str]]]:
    """The signatures of the table's rows (their first sentences) that no other owner's signature fires on, in any
    message that begins so (the rule or check that knows a message wins it); and, for those another owner's
    signature reads only to state facts (shared), those owners: the check says a shared message only where it
    fails and none of them is a finding (`judged`). Worked out once for a table and the others' signatures, and
    kept in envaudit's cache (it compiles the others' patterns, which a run that reads no message never needs)."""
    others = tuple(others)
    table = rows()
    stat = MESSAGES.path.stat()
    read = sorted([o.id, s.text, s.fires] for o in others for s in o.signatures)
    stamp = json.dumps([str(MESSAGES.path.resolve()), stat.st_size, stat.st_mtime_ns, CLAIMS, *read])
    name = f"unclaimed-{hashlib.sha256(stamp.encode()).hexdigest()[:20]}.json"
    kept = cachedir.read_json(name)
    if not (
        isinstance(kept, dict)
        and isinstance(kept.get("kept"), list)
        and isinstance(kept.get("shared"), dict)
        and all(isinstance(t, str) and t in table for t in [*kept["kept"], *kept["shared"]])
    ):
        catalogue = Catalogue(others)
        claims = {text: [claimed(r["text"], catalogue) for r in said] for text, said in table.items()}
        owned = [text for text, found in claims.items() if not any(fires for fires, _ in found)]
        kept = {
            "kept": owned,
            "shared": {
                t: sorted(set().union(*(q for _, q in claims[t]))) for t in owned if any(q for _, q in claims[t])
            },
        }
        cachedir.write_json(name, kept)
    shared = {text: frozenset(owners) for text, owners in kept["shared"].items()}
    return tuple(signature(text, table[text][0]) for text in kept["kept"]), shared


# the platforms one accelerator answers to: a message about a backend of another is not about that accelerator
# (jax 0.3's 'gpu' also tried 'rocm' on a CUDA machine: jax#12335)
SAME_PLATFORM = {"cuda": {"cuda", "gpu"}, "rocm": {"rocm", "gpu"}, "tpu": {"tpu"}, "gpu": {"gpu", "cuda", "rocm"}}


def expected(facts: Facts, match: Match, *, by_words: bool = True) -> str:
    """What says an accelerator was expected here ("" nothing): a GPU or TPU the facts list, jax's platform, the
    platform asked for, or (`by_words`) an accelerator named in the message's values. Where the message names the
    backend it is about, only an accelerator of that backend counts (a rocm backend failing beside NVIDIA GPUs is not
    theirs)."""
    named = {v.strip().lower() for _, v in match.values if PLATFORM.fullmatch(v.strip())}
    have: list[tuple[str, str]] = []  # (platform, what says it was expected)
    if gpus := facts.nvidia.get("gpus") or []:
        have.append(("cuda", f"the report lists {len(gpus)} NVIDIA GPU(s)"))
    if (facts.platform.get("tpu") or {}).get("chips"):
        have.append(("tpu", "the host has TPU chips"))
    platform = str(facts.jax.get("platform") or "")
    if platform and platform != "cpu":
        have.append((platform, f"jax's platform is {platform}"))
    for variable in PLATFORM_VARIABLES:
        asked = [p.strip() for p in facts.env.get(variable, "").split(",") if p.strip() and p.strip() != "cpu"]
        have += [(p.lower(), f"{variable} asks for {','.join(asked)}") for p in asked]
    for accelerator, why in have:
        if not named or named & SAME_PLATFORM.get(accelerator, {accelerator}):
            return why
    if have or not by_words:
        return ""  # the message is about another backend than the one expected, or only its words would say it
    for _, value in match.values:
        if PLATFORM.fullmatch(value.strip()):
            return f"the message names {value.strip()}"
        if model := MODEL.search(value):
            return f"the message names {model[0]}"
    return ""


def severity(row: JaxMessage, match: Match, facts: Facts) -> tuple[Severity, str]:
    """The severity of one message here, and why: a backend, CUDA library or plugin message fails where an
    accelerator was expected, even one jax only warns with (it goes on, without the GPU the report lists)."""
    if CATEGORIES[row["category"]].fails == "accelerator":
        # a warning jax goes on after is a failure only where the facts expect the accelerator (a GPU listed): its
        # own words naming a platform are not enough (every jax-metal start warns "Platform 'METAL' is experimental")
        why = expected(facts, match, by_words=row["said"] != "warns")
        return ("fail", why) if why else ("warn", "nothing in the report says an accelerator was expected")
    if row["said"] == "warns":
        return "warn", "jax only warns with it and goes on"
    return "fail", ""


def judged(
    facts: Facts,
    matches: Sequence[Match],
    shared: Mapping[str, frozenset[str]] | None = None,
    causes: Mapping[str, Cause] | None = None,
) -> Occurrence | None:
    """The check's occurrence where its messages are seen: each category once, its cause and what to do, the
    worst severity; the message quoted where no report's line shows it (jax's own exception, an import's). A
    message other causes read to state facts (`shared`: the text -> those causes) is said only where none of them
    is a finding here and it fails: a CUDA backend that did not start where the report lists a GPU, not the same
    words on a machine without one, nor where the variable that asked for the backend is the finding."""
    table = rows()
    shared, causes = shared or {}, causes or {}
    seen = [(m, table[m.signature.text][0]) for m in matches if m.signature.text in table]
    seen = [
        (m, row)
        for m, row in seen
        if m.signature.text not in shared or _says(shared[m.signature.text], row, m, facts, causes)
    ]
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


@runtime_checkable
class Cause(Protocol):
    """What `judged` asks of another cause that reads a shared message: its findings on the facts."""

    def findings(self, facts: Facts) -> list[Finding]: ...


def _says(quiet: frozenset[str], row: JaxMessage, match: Match, facts: Facts, causes: Mapping[str, Cause]) -> bool:
    """Whether the check says a shared message here: it fails, and no cause that reads it is a finding."""
    if severity(row, match, facts)[0] != "fail":
        return False
    return not any((cause := causes.get(owner)) is not None and cause.findings(facts) for owner in quiet)


def owning(check: Check, others: Iterable[Owner]) -> Check:
    """The check with the signatures of the table's rows no other owner fires on, saying the shared ones only
    where they fail."""
    others = tuple(others)
    owned, shared = unclaimed(others)
    causes = {o.id: o for o in others if isinstance(o, Cause)}
    return replace(check, signatures=owned, said=functools.partial(judged, shared=shared, causes=causes))
