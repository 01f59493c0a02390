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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from index.analysis import analyze

__all__ = ["JUMPS", "Answer", "Section", "answer", "answer_stored", "decode", "encode"]

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
    return [_decoded(line) for line in stored.split(_RECORD)] if stored else []


def _decoded(line: str) -> Section:
    start, anchor, heading, terms = line.split(_FIELD, 3)
    return Section(int(start), anchor, heading, frozenset(terms.split()))


def answer(sections: Sequence[Section], at: int, terms: Iterable[str]) -> Answer | None:
    """The section of a page that holds its snippet's middle match at offset ``at`` (-1:
    none), and the jumps for a query of these analyzed ``terms``; ``None`` for a page
    without sections."""
    if not sections:
        return None
    terms = frozenset(terms)
    i = _holding(at, [s.start for s in sections])
    return _answer(sections[i] if i is not None else None,
                   [s for s in sections if s.terms & terms], terms)


def answer_stored(stored: str, at: int, terms: Iterable[str]) -> Answer | None:
    """``answer(decode(stored), at, terms)``, decoding only the sections in the answer (a
    hit stores up to ``HIT_SECTIONS``): the one holding ``at`` (found by bisection) and
    the jumps, chosen by the terms of each line's heading before any line is decoded."""
    if not stored:
        return None
    terms = frozenset(terms)
    lines = stored.split(_RECORD)
    i = _holding(at, lines, _start)
    section = _decoded(lines[i]) if i is not None else None
    named = []
    for n, line in enumerate(lines):
        held = terms.intersection(line[line.rindex(_FIELD) + 1:].split())
        if held:
            named.append((-len(held), _start(line), n))
    named.sort()
    return _answer(section, (_decoded(lines[n]) for _, _, n in named), terms, ranked=True)


def _start(line: str) -> int:
    """Where the section of a stored line starts in its page's text."""
    return int(line[:line.index(_FIELD)])


def _holding(at: int, starts: Sequence, key: Callable[[Any], int] | None = None
             ) -> int | None:
    """The index of the section holding offset ``at`` (-1: none) among sections that
    start at ``starts`` (or at ``key`` of each), ``None`` for the page's opening (before
    the first section, or a first section at its very top): the page itself."""
    i = bisect_right(starts, at, key=key) - 1 if at >= 0 else -1
    return i if i > 0 or (i == 0 and (key(starts[0]) if key else starts[0]) > 0) else None


def _answer(section: Section | None, named: Iterable[Section], terms: frozenset[str],
            ranked: bool = False) -> Answer:
    """The answer: ``section`` (unless it has no anchor) and up to ``JUMPS`` other sections
    of ``named`` (those whose headings hold query terms, in page order, or ``ranked``
    already: most terms first, then page order), most terms first."""
    if section is not None and not section.anchor:
        section = None
    taken = {"", section.anchor if section else ""}
    if not ranked:
        named = sorted(named, key=lambda s: (-len(s.terms & terms), s.start))
    jumps: list[Section] = []
    for s in named:
        if len(jumps) >= JUMPS:
            break
        if s.anchor not in taken:
            taken.add(s.anchor)
            jumps.append(s)
    return Answer(section, tuple(jumps))
