"""Error signatures: each one, rendered from its own source text, is found with the facts it carries (also wrapped
by a terminal, behind a log prefix, or cut after its last value); the messages of real reports match the rule or
check they name; and a signature is data that is checked when it is loaded."""

from __future__ import annotations

import re
import tomllib

import pytest

from envaudit import rules
from envaudit.model.facts import Facts
from envaudit.rules import engine, messages, signatures
from envaudit.rules.registry import registry
from envaudit.rules.signatures import Compiled, Signature, SignatureError
from tests.conftest import ROOT

CATALOGUE = registry().signatures
SEEN = tomllib.loads((ROOT / "tests" / "fixtures" / "signatures" / "seen.toml").read_text())["seen"]
SAMPLE = {  # a value of each placeholder's kind; versions differ per slot, so that each fact is told apart
    "package": "jax_cuda12_plugin",
    "platform": "cpu",
    "name": "jax.interpreters.xla.xe",
    "jax_module": "jax.random",
    "jax_submodule": "jax.linear_util",
    "number": "8907",
    "any": "an explanation",
}


def render(compiled: Compiled) -> tuple[str, list[tuple[str, str]], str]:
    """The signature's text with a sample value in each placeholder, the facts it then states, and the text cut
    just after its last value."""
    values, count = [], iter(range(1, 100))
    for slot in compiled.slots:
        values.append((slot, SAMPLE.get(slot) or f"{next(count)}.{next(count)}.{next(count)}"))
    it, ends = iter(values), []
    parts, pos = [], 0
    for found in signatures.SLOT.finditer(compiled.signature.text):
        parts += [compiled.signature.text[pos : found.start()], next(it)[1]]
        ends.append(len("".join(parts)))
        pos = found.end()
    text = "".join(parts) + compiled.signature.text[pos:]
    facts = signatures.Match("", compiled.signature, 1, "", tuple(values)).facts
    return text, facts, text[: ends[-1]] if ends else text


def test_there_are_signatures_of_rules_and_of_checks() -> None:
    from envaudit.rules.registry import CHECKS

    owners = {c.owner for c in CATALOGUE.compiled}
    assert owners & {r.id for r in engine.load_rules()} and owners & {c.id for c in CHECKS}
    assert all(c.signature.source.startswith("https://") for c in CATALOGUE.compiled)


@pytest.mark.parametrize("compiled", CATALOGUE.compiled, ids=lambda c: f"{c.owner}:{c.needle}")
def test_each_signature_is_found_in_its_own_text_with_its_facts(compiled: Compiled) -> None:
    text, facts, _ = render(compiled)
    words = text.split(" ")
    wrapped = " ".join(words[: len(words) // 2]) + "\n" + " ".join(words[len(words) // 2 :])
    for lines in (text.splitlines(), wrapped.splitlines(), [f"W0715 18:02:17.58 x.cc:523] {text}", "next line"]):
        found = [m for m in CATALOGUE.scan(lines) if m.signature is compiled.signature]
        assert found and found[0].facts == facts, (lines, found)
        assert found[0].line == 1


@pytest.mark.parametrize("compiled", CATALOGUE.compiled, ids=lambda c: f"{c.owner}:{c.needle}")
def test_a_message_cut_after_its_last_value_still_matches_unless_the_text_after_it_is_what_tells_it(
    compiled: Compiled,
) -> None:
    text, facts, cut = render(compiled)
    found = any(m.signature is compiled.signature and m.facts == facts for m in CATALOGUE.scan([cut]))
    needed = compiled.slots and compiled.slots[-1] == "any" and cut != text  # `{any}` ends where the text resumes
    assert found is not needed, cut


@pytest.mark.parametrize("seen", SEEN, ids=lambda s: f"{s['owner']}:{s['url'].rsplit('/', 3)[-3]}")
def test_real_reports_messages_match_the_rule_they_name(seen: dict[str, object]) -> None:
    matches = CATALOGUE.scan(str(seen["text"]).splitlines())
    named = [m for m in matches if m.owner == seen["owner"]]
    if seen.get("match", True) is False:
        assert named == [], named
        return
    assert named, (seen["owner"], matches)
    assert dict(named[0].facts) == seen["facts"]


def test_a_signature_that_fires_makes_its_finding_with_the_quoted_line_and_one_that_does_not_only_states() -> None:
    said = (
        "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu."
    )
    found = {f.id: f for f in rules.evaluate(Facts(messages=[{"line": 7, "text": said}], origin="triage")).findings}
    assert found["gpu-present-jax-on-cpu"].severity == "warn"
    assert "line 7: 'An NVIDIA GPU may be present" in found["gpu-present-jax-on-cpu"].detail
    quiet = Facts(messages=[{"line": 2, "text": "No GPU/TPU found, falling back to CPU."}], origin="triage")
    assert "gpu-present-jax-on-cpu" not in {f.id for f in rules.evaluate(quiet).findings}
    stated = [m.facts for m in messages.messages(quiet) if not m.signature.fires]
    assert stated == [[("platform", "cpu")]] and not rules.evaluate(quiet).findings  # a CPU machine's words


def test_a_rule_only_its_messages_show_never_fires_from_facts_alone() -> None:
    silent = [r for r in engine.load_rules() if not r.when]
    assert silent and all(any(s.fires for s in r.signatures) for r in silent)
    facts = Facts(packages={"numpy": "2.0.0", "jax": "0.4.30", "jaxlib": "0.4.30"})
    assert not {r.id for r in silent} & {f.id for f in rules.evaluate(facts).findings}


@pytest.mark.parametrize(
    ("signature", "error"),
    [
        (Signature("jaxlib is {jaxlib_version}", "https://x.org"), "unknown placeholder"),
        (Signature("{jax} {jaxlib}", "https://x.org"), "no literal word"),
        (Signature("jaxlib is version {jaxlib}", "http://x.org"), "https URLs"),
    ],
)
def test_a_signature_that_cannot_be_one_is_refused_naming_its_owner(signature: Signature, error: str) -> None:
    with pytest.raises(SignatureError, match=rf"^owner-id: .*{re.escape(error)}"):
        signatures.compile_signature("owner-id", signature)


def test_a_rule_without_conditions_needs_a_signature_that_fires() -> None:
    base = {"id": "x", "title": "t", "severity": "fail", "symptom": "s", "fix": "f", "references": ["https://x.org"]}
    with pytest.raises(engine.RuleError, match="needs a signature that fires"):
        engine.parse_rule(
            {**base, "signatures": [{"text": "No GPU/TPU found", "source": "https://x", "fires": False}]}, "x.toml"
        )
    rule = engine.parse_rule(
        {**base, "signatures": [{"text": "No GPU/TPU found here", "source": "https://x"}]}, "x.toml"
    )
    assert rule.evaluate(Facts())[0] is None


SOURCES = {
    s["url"]: s["excerpt"]
    for s in tomllib.loads((ROOT / "tests" / "fixtures" / "signatures" / "sources.toml").read_text())["source"]
}
LITERAL = re.compile(r"""[rfbuRFBU]{0,2}("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')""")
TRIPLE = re.compile(r'[rfbuRFBU]{0,2}("""|\'\'\')(.*?)\1', re.DOTALL)
# words a source's message gets at run time rather than from a literal of the lines its URL names: the variable's
# name XLA's flag parser is called with, and the plural it adds to "flag"
RUNTIME = {"XLA_FLAGS", "flag"}


def literal_words(excerpt: str) -> set[str]:
    """The words of the string literals in an excerpt of Python or C++ (an f-string's fields as spaces, `!r`
    fields in the quotes repr gives them), concatenated as the compiler concatenates adjacent literals."""
    excerpt = excerpt.replace('\\"', '"')
    bodies = [m[2] for m in TRIPLE.finditer(excerpt)]
    rest = TRIPLE.sub(" ", excerpt)  # then the literals of each line, joined ("flag" "s"), the lines' by a space
    bodies += ["".join(m[1][1:-1] for m in LITERAL.finditer(line)) for line in rest.splitlines()]
    text = " ".join(re.sub(r"\{[^{}]*\}", " ", re.sub(r"\{(\w+)!r\}", r"'{\1}'", b)) for b in bodies)
    return set(_words(text.replace("\\n", " ")))


def _words(text: str) -> list[str]:
    return [w for w in (w.strip(".,:;()'\"") for w in text.split()) if w]


def test_the_sources_of_the_signatures_are_derived_from_their_repositories() -> None:
    derived = {c.signature.source for c in CATALOGUE.compiled} & SOURCES.keys()
    # cpython (an import's message and a module's missing attribute, whose words jax's own messages table cites
    # for what jax imports: its mirror is larger than the derivation can fetch), TF, ptxas, and XLA's TPU lock (so
    # is the openxla/xla mirror)
    assert len(derived) >= len({c.signature.source for c in CATALOGUE.compiled}) - 6


@pytest.mark.parametrize(
    "compiled", [c for c in CATALOGUE.compiled if c.signature.source in SOURCES], ids=lambda c: f"{c.owner}:{c.needle}"
)
def test_each_signatures_words_are_its_sources(compiled: Compiled) -> None:
    """Every word of a signature's text is in the string literals of the lines its source URL names, at its tag:
    the text is the source's, not a recollection of it."""
    have = literal_words(SOURCES[compiled.signature.source]) | RUNTIME
    literal = re.sub(r"\S*\{\w+\}\S*", " ", compiled.signature.text)  # a word with a value in it is the value
    missing = [w for w in _words(literal) if w not in have]
    assert missing == [], (compiled.signature.source, missing)
