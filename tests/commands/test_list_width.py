"""`envaudit rules` and `envaudit probes` wrapped as the report is (commands/terminal.py: a terminal's width, else
80 columns): no line wider, but for a word no line break may split (a URL, a path), and no word lost or moved."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from envaudit import rules as knowledge
from envaudit.cli import main
from envaudit.files import probefiles
from envaudit.model.exitcodes import Exit


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def shown(monkeypatch: pytest.MonkeyPatch, columns: int | None, *argv: str) -> str:
    """What `envaudit ARGV` prints: to a terminal `columns` wide, or (None) to a pipe."""
    out = Terminal() if columns is not None else io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    if columns is not None:
        monkeypatch.setenv("COLUMNS", str(columns))
    assert main(list(argv)) == Exit.OK
    return out.getvalue()


def listings() -> Iterator[tuple[str, ...]]:
    yield ("rules",)
    yield ("rules", "--tables")
    yield ("probes",)
    yield from (("rules", e.id) for e in knowledge.catalogue())
    yield from (("probes", name) for name in probefiles.available())


def unbreakable(line: str, width: int) -> bool:
    """A line that is at most a label and one word no break may split (a URL, a path, a flag with its value)
    longer than half the width: wrapping could only have moved it to a line of its own."""
    *label, word = line.split()
    return len(label) <= 1 and len(word) > width // 2


@pytest.mark.parametrize("columns", [None, 60, 80, 120])
def test_no_line_is_wider_than_the_terminal_but_an_unbreakable_word(
    monkeypatch: pytest.MonkeyPatch, columns: int | None
) -> None:
    width = columns or 80  # a pipe gets 80, as the report does
    for argv in listings():
        for line in shown(monkeypatch, columns, *argv).splitlines():
            assert len(line) <= width or unbreakable(line, width), (argv, line)


def test_wrapping_only_moves_line_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    for argv in [("rules",), ("rules", "--tables"), ("probes",), ("rules", "jax-broken"), ("probes", "ntk")]:
        narrow = shown(monkeypatch, 60, *argv).split()
        assert narrow == shown(monkeypatch, 10_000, *argv).split(), argv


def test_a_wide_terminal_gets_one_line_per_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = shown(monkeypatch, 10_000, "rules").splitlines()
    assert [line.split()[0] for line in lines] == [e.id for e in knowledge.catalogue()]
    assert len(shown(monkeypatch, 10_000, "probes").splitlines()) == len(probefiles.available())


def test_a_probe_script_is_printed_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    path = probefiles.available()["ntk"]
    assert shown(monkeypatch, 40, "probes", "ntk", "--script") == probefiles.script(path) + "\n"
