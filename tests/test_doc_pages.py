"""The docs are reference, each page a few screens: every hand-written page of ``docs/``
(all but the generated ``settings.md``) fits in ``MAX_LINES`` lines, and no page, nor
README.md or CHANGELOG.md, tells the story of how it was written: no development sessions,
UTC time stamps, machine loads or branch names. A figure names the command that reproduces
it and the commit it measured (and whether the box was quiet or busy); how figures moved
is told in CHANGELOG.md's dated entries and the commit messages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: Pages generated from the code, as long as what they list.
GENERATED = {"settings.md"}
#: A few screens: past this a page is split by topic (README.md lists every page).
MAX_LINES = 300

_ORDINAL = (r"(?:\d+(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|"
            r"ninth|tenth|eleventh|twelfth|this|that|earlier|previous|last|later|another)")
#: What a diary says and a reference page does not, each with the reason it is refused.
DIARY = {
    "a development session": re.compile(rf"\b{_ORDINAL} sessions?\b|\b\d+ sessions\b",
                                        re.IGNORECASE),
    "a UTC time stamp": re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\s*UTC\b|\bUTC\s+\d{1,2}:\d{2}\b"
                                   r"|\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}\b"),
    "a machine load": re.compile(r"\bload(?:s| average| averages| median| avg)? (?:of )?~?\d",
                                 re.IGNORECASE),
    "a branch": re.compile(r"\b(?:on|in|from|this|that|my|our|its|feature|work) branch\b"
                           r"|\bbranch(?:es)? (?:named|called|`)", re.IGNORECASE),
}


def hand_written_pages() -> list[Path]:
    return [p for p in sorted(DOCS.glob("*.md")) if p.name not in GENERATED]


def diary_lines(text: str) -> list[str]:
    """The lines of ``text`` that read like a lab diary, each with what gave it away."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        found += [f"{number}: {what}: {line.strip()[:100]}" for what, pattern in DIARY.items()
                  if pattern.search(line)]
    return found


@pytest.mark.parametrize("page", hand_written_pages(), ids=lambda p: p.name)
def test_a_reference_page_fits_on_a_few_screens(page: Path) -> None:
    lines = len(page.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, (
        f"docs/{page.name} has {lines} lines: split it by topic (and list the new page in "
        f"README.md and docs/architecture.md), or move its history to CHANGELOG.md")


@pytest.mark.parametrize("page", [*hand_written_pages(), ROOT / "README.md",
                                  ROOT / "CHANGELOG.md"], ids=lambda p: p.name)
def test_no_page_reads_like_a_diary(page: Path) -> None:
    assert diary_lines(page.read_text(encoding="utf-8")) == []


def test_the_diary_is_recognised() -> None:
    text = ("Measured in the eleventh session.\n"
            "At 21:40 UTC the run ended.\n"
            "span_over_bound 1.4 at load 3.2, 1.1 at load average 0.9, load median 8.2.\n"
            "As measured on this branch.\n"
            "A Spark session starts; the sessions.test host; wall, load + 12 steps.\n"
            "A branch of the link graph; at `ecfda36` on a quiet box.\n")
    assert [line.split(":")[0] for line in diary_lines(text)] == ["1", "2", "3", "4"]


def test_the_readme_lists_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [p.name for p in sorted(DOCS.glob("*.md"))
            if f"(docs/{p.name})" not in readme] == []
