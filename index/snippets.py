"""Snippets shared by backends: the best window of a text for the query, highlighted safely.

The output is HTML: the text is escaped, and only the words whose analyzed term is a query
term are wrapped in ``<mark>``. Matching uses :mod:`index.analysis`, so ``Running`` in the
text is highlighted for the query ``runs``, like the index matched it.

Finding matches without analyzing every word keeps this cheap on long pages: a regex finds
words starting like a query term's stem on a case- and accent-folded copy of the text (same
length, so offsets stay valid), and only those candidates are analyzed.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from html import escape

from index.analysis import WORD_RE, analyze

__all__ = ["SNIPPET_CHARS", "build_snippet", "find_matches", "highlight"]

SNIPPET_CHARS = 220
# Only this much of a page is searched for the best window; the rest costs time and transfer
# (Elasticsearch hits carry just this much), rarely wins. 95% of the pages of the relevance
# crawl are shorter (median 1,900 characters), so their snippets are drawn from all of it;
# 99.4% of its pages give the snippet a 100,000-character scan gave (docs/elasticsearch.md).
SCAN_CHARS = 20_000
_ELLIPSIS = "\u2026"
_SPACES_RE = re.compile(r"\s+")
_WORD_TERMS_MAX = 100_000
_word_terms: dict[str, list[str]] = {}
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


def _word_starts(folded: str, prefixes: set[str]) -> list[int]:
    """Sorted offsets where a word of ``folded`` starts with one of ``prefixes``.

    ``str.find`` per prefix beats compiling a regex alternation for every query.
    """
    starts = set()
    for prefix in prefixes:
        i = folded.find(prefix)
        while i >= 0:
            if i == 0 or not folded[i - 1].isalnum():
                starts.add(i)
            i = folded.find(prefix, i + 1)
    return sorted(starts)


def _terms_of(word: str) -> list[str]:
    """``analyze(word)``, memoized: the same words recur on every page."""
    terms = _word_terms.get(word)
    if terms is None:
        if len(_word_terms) >= _WORD_TERMS_MAX:
            _word_terms.clear()
        terms = _word_terms[word] = analyze(word)
    return terms


def find_matches(text: str, terms: Iterable[str]) -> list[tuple[int, int, str]]:
    """``(start, end, term)`` of each word in ``text`` whose analyzed term is in ``terms``."""
    wanted = frozenset(t for t in terms if t)
    if not wanted or not text:
        return []
    matches = []
    end = 0
    for start in _word_starts(_fold(text), {_prefix(t) for t in wanted}):
        if start < end:
            continue
        word = WORD_RE.match(text, start)
        if word is None:
            continue
        for term in _terms_of(word.group()):
            if term in wanted:
                matches.append((start, word.end(), term))
                break
        end = word.end()
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
    if len(text) <= width:
        return 0, len(text)
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


def _adjacent(text: str, left: tuple[int, int, str], right: tuple[int, int, str]) -> bool:
    """Whether ``right`` is the word right after ``left`` (only punctuation between)."""
    return right[0] >= left[1] and not any(c.isalnum() for c in text[left[1] : right[0]])


def _phrase_matches(
    text: str,
    matches: list[tuple[int, int, str]],
    words: set[str],
    phrases: Sequence[Sequence[str]],
) -> list[tuple[int, int, str]]:
    """The matches of ``words`` anywhere plus those inside a whole occurrence of a phrase."""
    keep = [m[2] in words for m in matches]
    for phrase in phrases:
        k = len(phrase)
        for i in range(len(matches) - k + 1):
            if all(
                matches[i + j][2] == phrase[j]
                and (j == 0 or _adjacent(text, matches[i + j - 1], matches[i + j]))
                for j in range(k)
            ):
                keep[i : i + k] = [True] * k
    return [m for m, kept in zip(matches, keep, strict=True) if kept]


def build_snippet(
    text: str,
    terms: Iterable[str],
    max_chars: int = SNIPPET_CHARS,
    phrases: Sequence[Sequence[str]] = (),
) -> str:
    """HTML snippet: the ``max_chars`` window of ``text`` richest in query matches, marked up.

    ``terms`` match anywhere; the terms of ``phrases`` only where the whole phrase occurs
    (``Query.words()`` and ``Query.phrases()``). Without a match it is the start of the
    text. Everything but ``<mark>`` is escaped.
    """
    text = text[:SCAN_CHARS]
    words = set(terms)
    if phrases:
        matches = find_matches(text, words.union(*phrases))
        matches = _phrase_matches(text, matches, words, phrases)
    else:
        matches = find_matches(text, words)
    if not matches:
        return _render(text, *_span(text, 0, 0, max_chars), [])
    i, j = _best_window(matches, max_chars)
    start, end = _span(text, matches[i][0], matches[j - 1][1], max_chars)
    return _render(text, start, end, matches)


def highlight(text: str, terms: Iterable[str]) -> str:
    """All of ``text`` escaped, every word matching ``terms`` in ``<mark>`` (for titles)."""
    return _render(text, 0, len(text), find_matches(text, terms))
