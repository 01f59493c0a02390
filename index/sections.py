"""A page's sections at query time: which one answers a query, and where else to jump.

The crawl splits a page's main text into sections (``crawler.extract``: a heading and its
text, a definition term with an id, a man page's option), each with the anchor that shows
it; a :class:`~index.base.Document` keeps them as ``(start, anchor, heading)``. The
engines store, for hits, those that begin within the snippet text
(``index.hits.snippet_text``, the first ``SCAN_CHARS`` of the body), encoded once here
(:func:`encode`), so a hit reads them with its snippet source and never the whole page.

For a query, each section counts the query's terms it holds (:func:`answer`): the section
with the most distinct terms (then the most in its heading, then the most matches) is the
one a result links to (``url#anchor``) and draws its snippet from, when it holds more of
them than the page's opening section; up to ``JUMPS`` others, those naming the most terms
in their headings, are offered as "jump to" links.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from index.snippets import SCAN_CHARS, SnippetSource, find_matches

__all__ = ["JUMPS", "Answer", "Section", "answer", "decode", "encode", "hit_sections"]

#: Most "jump to" links a result lists.
JUMPS = 3
#: Most sections stored for a hit (an API page defines hundreds within its first
#: ``SCAN_CHARS``).
HIT_SECTIONS = 400
_FIELD, _RECORD = "\t", "\n"


@dataclass(frozen=True)
class Section:
    """A section as a hit knows it: where it starts in the page's text, its anchor
    (``""``: the page itself) and its heading."""

    start: int
    anchor: str
    heading: str


@dataclass(frozen=True)
class Answer:
    """What a page's sections say about a query: the section the result links to (``None``:
    the page itself) and the sections to offer as jumps."""

    section: Section | None
    end: int
    jumps: tuple[Section, ...]


def hit_sections(sections: Iterable[Sequence]) -> list[Section]:
    """The sections a hit needs of a document's ``(start, anchor, heading)`` ones: those
    starting within the snippet text, at most ``HIT_SECTIONS``."""
    kept = []
    for start, anchor, heading in sections:
        if start >= SCAN_CHARS or len(kept) >= HIT_SECTIONS:
            break
        kept.append(Section(int(start), anchor, heading))
    return kept


def _plain(value: str) -> str:
    return value.replace(_FIELD, " ").replace(_RECORD, " ")


def encode(sections: Iterable[Sequence]) -> str:
    """The stored form of a document's hit sections (:func:`hit_sections`), one a line."""
    return _RECORD.join(f"{s.start}{_FIELD}{_plain(s.anchor)}{_FIELD}{_plain(s.heading)}"
                        for s in hit_sections(sections))


def decode(stored: str) -> list[Section]:
    """The sections :func:`encode` stored."""
    out = []
    for line in stored.split(_RECORD) if stored else ():
        start, anchor, heading = line.split(_FIELD, 2)
        out.append(Section(int(start), anchor, heading))
    return out


def answer(sections: Sequence[Section], text: str | SnippetSource,
           terms: Iterable[str]) -> Answer | None:
    """Which of ``sections`` answers a query of these analyzed ``terms`` in a page whose
    snippet text is ``text``; ``None`` when the page has no sections or no term in them."""
    if not sections:
        return None
    terms = frozenset(terms)
    if isinstance(text, SnippetSource):
        matches, length = text.matches(terms), len(text.text)
    else:
        matches, length = find_matches(text[:SCAN_CHARS], terms), min(len(text), SCAN_CHARS)
    if not matches:
        return None
    units = list(sections)
    if units[0].start > 0:  # the text before the first heading: the page's opening
        units.insert(0, Section(0, "", ""))
    starts = [u.start for u in units]
    found: list[dict[str, int]] = [{} for _ in units]
    named: list[set[str]] = [set() for _ in units]
    for begin, _, term in matches:
        i = bisect_right(starts, begin) - 1
        if i < 0:
            continue
        found[i][term] = found[i].get(term, 0) + 1
        if begin < units[i].start + len(units[i].heading):
            named[i].add(term)

    def rank(i: int) -> tuple[int, int, int]:
        return len(found[i]), len(named[i]), sum(found[i].values())

    best = max(range(len(units)), key=lambda i: (rank(i), -i))
    if best == 0 or not units[best].anchor or rank(best)[:2] <= rank(0)[:2]:
        section, end, taken = None, length, {""}
    else:
        section = units[best]
        end = starts[best + 1] if best + 1 < len(units) else length
        taken = {section.anchor, ""}
    jumps: list[Section] = []
    for i in sorted(range(len(units)), key=lambda i: (-len(named[i]), -len(found[i]), i)):
        if len(jumps) >= JUMPS or not found[i]:
            break
        if units[i].anchor not in taken and units[i].heading:
            taken.add(units[i].anchor)
            jumps.append(units[i])
    return Answer(section, end, tuple(jumps))
