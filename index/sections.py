"""A page's sections at query time: which one a result links to, and where else to jump.

The crawl splits a page's main text into sections (``crawler.extract``: a heading and its
text, a definition term with an id, a man page's option), each with the anchor that shows
it; a :class:`~index.base.Document` keeps them as ``(start, anchor, heading)``. The
engines store, for hits, the page's first ``HIT_SECTIONS`` sections wherever they begin
(past the snippet text, ``index.hits.snippet_text``, too, so a long page's later sections
can be jumped to), each with its heading's analyzed terms, encoded once here
(:func:`encode`), so a hit reads them with its snippet source and never the whole page.

A result's snippet is the window of the page richest in the query's terms
(``index.snippets.located_snippet``); the section that window is in answers the query
(:func:`answer`): unless it is the page's opening, the result links to it
(``url#anchor``). Up to ``JUMPS`` other sections whose headings name the most query terms
are offered as "jump to" links. Nothing is scanned for this beyond the snippet itself: the
sections' starts are looked up by offset and their headings' terms compared as sets.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from index.analysis import analyze

__all__ = ["JUMPS", "Answer", "Section", "answer", "decode", "encode"]

#: Most "jump to" links a result lists.
JUMPS = 3
#: Most sections stored for a hit (an API page defines hundreds; a hit reads about 50
#: bytes a section).
HIT_SECTIONS = 400
_FIELD, _RECORD = "\t", "\n"


@dataclass(frozen=True)
class Section:
    """A section as a hit knows it: where it starts in the page's text, its anchor
    (``""``: the page itself), its heading and its heading's analyzed terms."""

    start: int
    anchor: str
    heading: str
    terms: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Answer:
    """What a page's sections say about a query: the section the result links to
    (``None``: the page itself) and the sections to offer as jumps."""

    section: Section | None
    jumps: tuple[Section, ...]


def _plain(value: str) -> str:
    return value.replace(_FIELD, " ").replace(_RECORD, " ")


def encode(sections: Iterable[Sequence]) -> str:
    """The stored form of a document's ``(start, anchor, heading)`` sections for its hits:
    the first ``HIT_SECTIONS``, one a line, with their headings' analyzed terms."""
    lines = []
    for start, anchor, heading in sections:
        if len(lines) >= HIT_SECTIONS:
            break
        terms = " ".join(dict.fromkeys(analyze(heading)))
        lines.append(_FIELD.join((str(start), _plain(anchor), _plain(heading), terms)))
    return _RECORD.join(lines)


def decode(stored: str) -> list[Section]:
    """The sections :func:`encode` stored."""
    out = []
    for line in stored.split(_RECORD) if stored else ():
        start, anchor, heading, terms = line.split(_FIELD, 3)
        out.append(Section(int(start), anchor, heading, frozenset(terms.split())))
    return out


def answer(sections: Sequence[Section], at: int, terms: Iterable[str]) -> Answer | None:
    """The section of a page that holds its snippet's middle match at offset ``at`` (-1:
    none), and the jumps for a query of these analyzed ``terms``; ``None`` for a page
    without sections."""
    if not sections:
        return None
    terms = frozenset(terms)
    i = bisect_right([s.start for s in sections], at) - 1 if at >= 0 else -1
    # the page's opening (before the first section, or a first section at its very top)
    # is the page itself
    section = sections[i] if i > 0 or (i == 0 and sections[0].start > 0) else None
    if section is not None and not section.anchor:
        section = None
    taken = {"", section.anchor if section else ""}
    named = sorted((s for s in sections if s.terms & terms),
                   key=lambda s: (-len(s.terms & terms), s.start))
    jumps: list[Section] = []
    for s in named:
        if len(jumps) >= JUMPS:
            break
        if s.anchor not in taken:
            taken.add(s.anchor)
            jumps.append(s)
    return Answer(section, tuple(jumps))
