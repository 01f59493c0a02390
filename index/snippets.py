"""Snippets shared by backends: the best window of a text for the query, highlighted safely.

The output is HTML: the text is escaped, and only the words whose analyzed term is a query
term are wrapped in ``<mark>``. Matching uses :mod:`index.analysis`, so ``Running`` in the
text is highlighted for the query ``runs``, like the index matched it.

Finding matches without analyzing every word keeps this cheap on long pages: a regex finds
words starting like a query term's stem on a case- and accent-folded copy of the text (same
length, so offsets stay valid), and only those candidates are analyzed.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from html import escape

from index.analysis import WORD_RE, analyze

__all__ = ["SNIPPET_CHARS", "build_snippet", "find_matches", "highlight"]

SNIPPET_CHARS = 220
# Only this much of a page is searched for the best window; the rest costs time, rarely wins.
SCAN_CHARS = 100_000
_ELLIPSIS = "\u2026"
_SPACES_RE = re.compile(r"\s+")
_fold_table: dict[int, str] = {ord(c): c.lower() for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}


def _fold(text: str) -> str:
    """A lower-cased, accent-free copy of ``text`` with exactly the same length."""
    if text.isascii():
        return text.lower()
    missing = {ch for ch in set(text) if ord(ch) > 127 and ord(ch) not in _fold_table}
    for ch in missing:
        folded = unicodedata.normalize("NFKD", ch.casefold())
        base = "".join(c for c in folded if not unicodedata.combining(c))
        if len(base) == 1:
            _fold_table[ord(ch)] = base
        else:
            lower = ch.lower()
            _fold_table[ord(ch)] = lower if len(lower) == 1 else ch
    return text.translate(_fold_table)


def _prefix(term: str) -> str:
    """The start shared by every word that stems to ``term``.

    Snowball rewrites at most the last two letters of what it keeps (``happy`` → ``happi``,
    ``probability`` → ``probabl``); a final ``i`` may stand for a ``y`` further back
    (``flying`` → ``fli``) and a final ``e`` may be added (``using`` → ``use``).
    """
    base = term[:-1] if len(term) > 1 and term.endswith(("i", "e")) else term
    return base[: max(1, min(3, len(base)), len(base) - 2)]


@functools.lru_cache(maxsize=256)
def _candidate_re(terms: frozenset[str]) -> re.Pattern:
    """Words starting like one of ``terms`` (compiled once per query, not per hit)."""
    prefixes = sorted({re.escape(_prefix(t)) for t in terms if t}, key=len, reverse=True)
    return re.compile(r"(?<![^\W_])(?:" + "|".join(prefixes) + ")")


def find_matches(text: str, terms: Iterable[str]) -> list[tuple[int, int, str]]:
    """``(start, end, term)`` of each word in ``text`` whose analyzed term is in ``terms``."""
    wanted = frozenset(terms)
    if not wanted or not text:
        return []
    candidates = _candidate_re(wanted)
    folded = _fold(text)
    matches = []
    pos = 0
    while pos < len(text) and (m := candidates.search(folded, pos)):
        word = WORD_RE.match(text, m.start())
        if word is None:
            pos = m.start() + 1
            continue
        for term in analyze(word.group()):
            if term in wanted:
                matches.append((word.start(), word.end(), term))
                break
        pos = word.end()
    return matches


def _best_window(matches: list[tuple[int, int, str]], width: int) -> tuple[int, int]:
    """Index range of ``matches`` fitting in ``width`` chars with most distinct terms, then most."""
    best, best_score = (0, 0), (-1, -1)
    counts: Counter[str] = Counter()
    j = 0
    for i, (start, _, _) in enumerate(matches):
        while j < len(matches) and matches[j][1] - start <= width:
            counts[matches[j][2]] += 1
            j += 1
        score = (len(counts), j - i)
        if score > best_score:
            best, best_score = (i, j), score
        counts[matches[i][2]] -= 1
        if not counts[matches[i][2]]:
            del counts[matches[i][2]]
    return best


def _span(text: str, first: int, last: int, width: int) -> tuple[int, int]:
    """Character range of about ``width`` around ``[first, last)``, cut at word boundaries."""
    lead = max(0, (width - (last - first)) // 3)
    start = max(0, first - lead)
    sentence = text.rfind(". ", start, first)
    if sentence >= 0:
        start = sentence + 2
    elif start > 0:
        space = text.find(" ", start, first)
        start = space + 1 if space >= 0 else first
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", max(last, start), end)
        end = space if space > start else max(end, last)
    return start, end


def _clean(segment: str) -> str:
    return escape(_SPACES_RE.sub(" ", segment), quote=False)


def _render(
    text: str, start: int, end: int, matches: list[tuple[int, int, str]]
) -> str:
    out = [_ELLIPSIS] if start > 0 else []
    pos = start
    for m_start, m_end, _ in matches:
        if m_start < start or m_end > end:
            continue
        out.append(_clean(text[pos:m_start]))
        out.append("<mark>" + escape(text[m_start:m_end], quote=False) + "</mark>")
        pos = m_end
    out.append(_clean(text[pos:end]))
    if end < len(text):
        out.append(_ELLIPSIS)
    return "".join(out).strip()


def build_snippet(
    text: str, terms: Iterable[str], max_chars: int = SNIPPET_CHARS
) -> str:
    """HTML snippet: the ``max_chars`` window of ``text`` richest in ``terms``, marked up.

    Without a match it is the start of the text. Everything but ``<mark>`` is escaped.
    """
    text = text[:SCAN_CHARS]
    matches = find_matches(text, terms)
    if not matches:
        return _render(text, *_span(text, 0, 0, max_chars), [])
    i, j = _best_window(matches, max_chars)
    start, end = _span(text, matches[i][0], matches[j - 1][1], max_chars)
    return _render(text, start, end, matches)


def highlight(text: str, terms: Iterable[str]) -> str:
    """All of ``text`` escaped, every word matching ``terms`` in ``<mark>`` (for titles)."""
    return _render(text, 0, len(text), find_matches(text, terms))
