"""The documentation a user reads, README.md and the pages under docs/, and where in it a section, a fenced block or
a sentence is: the tests that hold the documentation to the code find the text wherever it now lives, by its
heading or its content, never by a line number or a page name that a reorganisation would move."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

README = ROOT / "README.md"
FENCE = re.compile(r"^ *```")


def pages() -> list[Path]:
    """README.md, then every Markdown page under docs/."""
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


@dataclass(frozen=True)
class Heading:
    page: Path
    level: int
    title: str
    start: int  # offset of the heading's line in the page's text
    end: int  # offset where its section ends: the next heading of its level or above, or the page's end


def headings(page: Path) -> list[Heading]:
    """The page's Markdown headings, outside fenced blocks (a `# comment` in a shell or YAML block is none)."""
    found: list[tuple[int, str, int]] = []
    offset, fenced = 0, False
    body = text(page)
    for line in body.splitlines(keepends=True):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := re.match(r"(#{1,6}) (.+?)\s*$", line)):
            found.append((len(m[1]), m[2], offset))
        offset += len(line)
    result = []
    for i, (level, title, start) in enumerate(found):
        end = next((s for lv, _, s in found[i + 1 :] if lv <= level), len(body))
        result.append(Heading(page, level, title, start, end))
    return result


def section(title: str) -> str:
    """The text of the one section, in any page, whose heading is `title` (its subsections included)."""
    found = [h for page in pages() for h in headings(page) if h.title == title]
    assert len(found) == 1, f"one heading {title!r} in the documentation, found {len(found)}"
    (h,) = found
    return text(h.page)[h.start : h.end]


def fenced(body: str, language: str) -> list[str]:
    """The fenced blocks of one language in `body`, dedented (a block inside a list item is indented)."""
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```$", body, re.MULTILINE | re.DOTALL)
    return [textwrap.dedent(block) for _, block in found]


def block(language: str, first_line: str) -> str:
    """The one fenced block of `language`, in any page, whose first line is `first_line` (a file's name, as the
    documentation heads a snippet to copy into that file)."""
    found = [b for page in pages() for b in fenced(text(page), language) if b.split("\n", 1)[0] == first_line]
    assert len(found) == 1, f"one {language} block headed {first_line!r} in the documentation, found {len(found)}"
    return found[0]


def claim(pattern: str) -> re.Match[str]:
    """The one sentence of the documentation that `pattern` matches, with its line breaks and indents as spaces (a
    sentence is wrapped wherever its page wraps it)."""
    found = [m for page in pages() for m in re.finditer(pattern, " ".join(text(page).split()))]
    assert len(found) == 1, f"one place in the documentation says {pattern!r}, found {len(found)}"
    return found[0]


def sh_blocks() -> list[str]:
    """Every shell block of the documentation, README first."""
    return [b.strip() for page in pages() for b in fenced(text(page), "sh")]
