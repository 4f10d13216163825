"""What `--help` promises, for every verb the command line has (walked from the parser, so a new verb is held to
it too): help text on every option, the same short flags for the same long ones, examples that are command lines
the verb's parser takes, and the exit codes rendered from model/exitcodes.py."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from envaudit.cli import COMMANDS, build_parser, command, main
from envaudit.model.exitcodes import MEANING, Exit, UsageError, meaning

SHORT = {"--format": "-f", "--output": "-o", "--quiet": "-q", "--verbose": "-v"}


def verbs() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_the_walk_finds_every_verb() -> None:
    assert set(verbs()) == set(COMMANDS)


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_every_argument_says_what_it_is_for(verb: str) -> None:
    missing = [
        "/".join(a.option_strings) or a.dest
        for a in verbs()[verb]._actions
        if not isinstance(a, argparse._HelpAction) and (not (a.help or "").strip() or a.help == argparse.SUPPRESS)
    ]
    assert not missing, f"{verb}: no help for {missing}"


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_a_long_option_has_the_same_short_flag_on_every_verb(verb: str) -> None:
    for action in verbs()[verb]._actions:
        for long, short in SHORT.items():
            if long in action.option_strings:
                assert short in action.option_strings, f"{verb} {long} has no {short}"


def test_short_flags_mean_their_long_options(capsys: pytest.CaptureFixture[str]) -> None:
    for verb in ("rules", "probes", "schema"):
        long = main([verb, "--format", "json"] if verb != "schema" else [verb])
        said = capsys.readouterr().out
        short = main([verb, "-f", "json"] if verb != "schema" else [verb])
        assert (long, said) == (short, capsys.readouterr().out)
    parsed = build_parser("audit").parse_args(["audit", "-f", "json", "-o", "r.json", "-q", "-v"])
    assert (parsed.format, str(parsed.output), parsed.quiet, parsed.verbose) == ("json", "r.json", True, True)


def help_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main([*argv, "--help"]) == Exit.OK
    return capsys.readouterr().out


def exit_codes(shown: str) -> dict[int, str]:
    """The `exit codes:` section of a help text: each code and its meaning, its wrapped lines joined."""
    section = shown.split("\nexit codes:\n", 1)[1]
    found: dict[int, str] = {}
    for line in section.splitlines():
        match = re.match(r"^  (\d+) +(.*)$", line)
        if match:
            code = int(match[1])
            found[code] = match[2]
        elif line.strip() and found:
            found[code] += " " + line.strip()
    return found


def test_the_top_level_help_shows_every_exit_code_of_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_codes(help_text(capsys)) == {int(code): MEANING[code] for code in Exit}


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_a_verbs_help_shows_the_exit_codes_it_can_return(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    found = command(verb)
    shown = exit_codes(help_text(capsys, verb))
    assert shown == {int(code): meaning(code, dict(found.exit_words)) for code in found.exits}
    assert {Exit.OK, Exit.USAGE, Exit.INTERNAL} <= set(found.exits)  # every verb can be misused, or break


def examples(shown: str) -> list[str]:
    """The command lines of a help text's `examples:` section (each on a line of its own, indented 2)."""
    if "\nexamples:\n" not in shown:
        return []
    section = shown.split("\nexamples:\n", 1)[1].split("\n\n", 1)[0]
    return [line[2:] for line in section.splitlines() if line.startswith("  ") and not line.startswith("   ")]


def envaudit_words(example: str) -> list[str]:
    """The arguments an example gives envaudit: its words after `envaudit`, up to a shell operator."""
    words = shlex.split(example)
    start = words.index("envaudit") + 1
    end = next((i for i, w in enumerate(words[start:], start) if w in ("|", ">", "<", "&&")), len(words))
    return words[start:end]


@pytest.mark.parametrize("verb", [None, *sorted(COMMANDS)])
def test_help_shows_examples_the_parser_takes(verb: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    shown = examples(help_text(capsys, *([verb] if verb else [])))
    assert 2 <= len(shown) <= 3, shown
    for example in shown:
        argv = envaudit_words(example)
        if verb is not None:
            assert argv[:1] == [verb] or (verb == "audit" and (not argv or argv[0].startswith("-"))), example
        argv = argv if argv and argv[0] in COMMANDS else ["audit", *argv]
        try:
            build_parser(argv[0]).parse_args(argv)
        except UsageError as exc:
            pytest.fail(f"{example!r} does not parse: {exc}")
