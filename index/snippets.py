"""Snippets shared by backends: the best window of a text for the query, highlighted safely.

The output is HTML: the text is escaped, and only the words whose analyzed term is a query
term are wrapped in ``<mark>``. Matching uses :mod:`index.analysis`, so ``Running`` in the
text is highlighted for the query ``runs``, like the index matched it.

Finding matches without analyzing every word keeps this cheap on long pages: ``str.find``
locates words starting like a query term's stem on a case- and accent-folded copy of the
text (same length, so offsets stay valid), and only those candidates are analyzed.

A snippet does not scan a whole long page per query. The text is read in blocks (4,096
characters, then twice as many each time, up to ``SCAN_CHARS``), and reading stops after
the first block in which one window holds every query term the page may hold (its stem's
prefix occurs in the lower-cased text), or once ``READ_MATCHES`` matches were found, plus
one window's width so the window's neighbourhood is marked in full: a later window could
hold more matches, not more terms. Folding is ``str.lower()`` (C speed) unless the text
holds characters that fold otherwise (accents, ligatures, full-width forms, ``ß``, a final
sigma); only those runs go through the per-character table (a text in another script, or
full of accents, goes through it in one pass). Read to the end, the output is the same as
folding everything through the table. On 100,000 real documentation pages this took a
query's CPU time at p95 from 105 ms to 33 ms (CHANGELOG.md).

An engine that can store more than text does better: :class:`SnippetSource` is made once at
index time, the bounded text and, per analyzed term, where the words it comes from start.
A query's matches are then looked up, not searched for (no folding, no scan, no analysis
at query time); the blocks read and the window chosen follow the same rule, so a snippet is
the one the text gives, except that a match is a whole word of the text (a word start is
never looked for inside a word, as after an apostrophe) and a term counts as one the page
may hold only when a word of it is there (not when its stem's prefix merely occurs).
"""

from __future__ import annotations

import re
import struct
import sys
import unicodedata
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from itertools import accumulate, repeat
from operator import itemgetter

import numpy as np

from index.analysis import WORD_RE, analyze, ascii_words, join_blocks, unicode_words

__all__ = ["SCAN_CHARS", "SNIPPET_CHARS", "SnippetSource", "build_snippet", "find_matches",
           "highlight", "located_snippet"]

SNIPPET_CHARS = 220
# Only this much of a page is searched for the best window; the rest costs time and transfer
# (Elasticsearch hits carry just this much), rarely wins. 95% of the pages of the relevance
# crawl are shorter (median 1,900 characters), so their snippets are drawn from all of it;
# 99.4% of its pages give the snippet a 100,000-character scan gave (docs/elasticsearch.md).
SCAN_CHARS = 20_000
# The first block read; each next one is twice as long.
FIRST_BLOCK_CHARS = 4_096
# No block is read after this many matches: enough to pick a window from.
READ_MATCHES = 500
_ELLIPSIS = "\u2026"
_SPACES_RE = re.compile(r"\s+")
_WORD_TERMS_MAX = 100_000
# A word's terms as a tuple: a tuple of strings is not tracked by the garbage collector,
# where 100,000 lists were most of what a crawl's full collections walked.
_word_terms: dict[str, tuple[str, ...]] = {}
# The one term of a word that has one (nearly every word): looked up for a page's distinct
# words at once, at C speed. Started over when full, like ``_word_terms``.
_word_term: dict[str, str] = {}
# The text split into separators and words, alternately: the words and their offsets
# without a Python step per word.
_WORD_SPLIT_RE = re.compile(f"({WORD_RE.pattern})")
# Most texts are split in NumPy instead (``analysis.ascii_words``, ``unicode_words``).

Match = tuple[int, int, str]


def _fold_char(ch: str) -> str:
    """The one character ``ch`` folds to: its lower-cased base letter without accents, or
    its lower case, or itself, whichever is a single character."""
    folded = unicodedata.normalize("NFKD", ch.casefold())
    base = "".join(c for c in folded if not unicodedata.combining(c))
    if len(base) == 1:
        return base
    lower = ch.lower()
    return lower if len(lower) == 1 else ch


class _FoldTable(dict):
    """Code point -> ``_fold_char``, for ``str.translate``; filled on first sight, so it holds
    at most one entry per distinct character ever seen."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold_char(chr(code))
        return folded


_fold_table = _FoldTable()
_unlike_lower: re.Pattern[str] | None = None


def _unlike_lower_re() -> re.Pattern[str]:
    """Runs of the characters whose fold is not what ``str.lower()`` makes of them in a
    string: accented letters, ligatures, full-width forms, ``ß``, ``Σ`` (lower() turns a
    final one into ``ς``), and every character beyond the BMP (rare; one range keeps the
    regex a bitmap test per character). Built on first use, in about 0.1 s."""
    global _unlike_lower
    if _unlike_lower is None:
        spans: list[list[int]] = []
        for code in range(0x80, 0x10000):
            ch = chr(code)
            lower = ch.lower()
            if (
                len(lower) == 1
                and ch.casefold() == lower
                and not unicodedata.decomposition(ch)
                and not unicodedata.decomposition(lower)
                and ch != "Σ"
            ):
                continue
            if len(lower) == 1 and _fold_char(ch) == lower and ch != "Σ":
                continue
            if spans and spans[-1][1] == code - 1:
                spans[-1][1] = code
            else:
                spans.append([code, code])
        spans.append([0x10000, 0x10FFFF])
        ranges = "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in spans)
        _unlike_lower = re.compile(f"[{ranges}]+")
    return _unlike_lower


def _folds_as_lower(text: str, lower: str) -> bool:
    """Whether ``_fold(text)`` is ``lower`` (``text.lower()``): true of most pages, where
    nothing decomposes and case folding is lower-casing."""
    return text.isascii() or (
        len(lower) == len(text)
        and unicodedata.is_normalized("NFKD", text)
        and text.casefold() == lower
    )


def _fold(text: str) -> str:
    """A lower-cased, accent-free copy of ``text`` with exactly the same length.

    That is ``text.translate`` through the per-character table, done as ``str.lower()``
    (100 times faster) with only the characters that fold otherwise put through the table.
    """
    lower = text.lower()
    if _folds_as_lower(text, lower):
        return lower
    # Text in another script or full of accents: one pass through the table beats a
    # piece per accented run (the extra UTF-8 bytes count the non-ASCII characters).
    if len(lower) != len(text) or 16 * (len(text.encode("utf-8", "surrogatepass"))
                                        - len(text)) > len(text):
        return text.translate(_fold_table)
    pieces = []
    pos = 0
    for run in _unlike_lower_re().finditer(text):
        start, end = run.span()
        pieces.append(lower[pos:start])
        pieces.append(run.group().translate(_fold_table))
        pos = end
    pieces.append(lower[pos:])
    return "".join(pieces)


def _prefix(term: str) -> str:
    """The start shared by every word that stems to ``term``.

    Snowball rewrites at most the last two letters of what it keeps (``happy`` → ``happi``,
    ``probability`` → ``probabl``); a final ``i`` may stand for a ``y`` further back
    (``flying`` → ``fli``) and a final ``e`` may be added (``using`` → ``use``).
    """
    base = term[:-1] if len(term) > 1 and term.endswith(("i", "e")) else term
    return base[: max(1, min(3, len(base)), len(base) - 2)]


def _word_starts(folded: str, prefixes: Iterable[str], start: int, end: int) -> list[int]:
    """Sorted offsets in ``[start, end)`` where a word of ``folded`` starts with one of
    ``prefixes``.

    ``str.find`` per prefix beats compiling a regex alternation for every query.
    """
    starts = set()
    for prefix in prefixes:
        stop = end + len(prefix) - 1
        i = folded.find(prefix, start, stop)
        while i >= 0:
            if i == 0 or not folded[i - 1].isalnum():
                starts.add(i)
            i = folded.find(prefix, i + 1, stop)
    return sorted(starts)


def _one_term_per_word(words: list[str]) -> list[str] | None:
    """The one term of each of ``words``, or None when one of them makes none or several."""
    terms = list(map(_word_term.get, words))
    if None not in terms:
        return terms
    if len(_word_term) >= _WORD_TERMS_MAX:
        _word_term.clear()
    for i, word in enumerate(words):
        if terms[i] is None:
            found = _terms_of(word)
            if len(found) != 1:
                return None
            terms[i] = _word_term[word] = found[0]
    return terms


def _terms_of(word: str) -> tuple[str, ...]:
    """``analyze(word)``, memoized: the same words recur on every page."""
    terms = _word_terms.get(word)
    if terms is None:
        if len(_word_terms) >= _WORD_TERMS_MAX:
            _word_terms.clear()
        terms = _word_terms[word] = tuple(analyze(word))
    return terms


class _Matcher:
    """The matches of ``wanted`` in ``text``, found from the start one block at a time.

    ``matches`` are ``(start, end, term)`` in text order; every word starting before
    ``scanned`` has been looked at. ``possible`` are the terms whose stem's prefix occurs
    in the lower-cased text: others match only through accents, if at all.
    """

    def __init__(self, text: str, wanted: frozenset[str]):
        self.text = text
        self.wanted = wanted
        lower = text.lower()
        # The folded text when it is the lower-cased one; else blocks are folded as read.
        self.folded = lower if _folds_as_lower(text, lower) else None
        prefixes = {t: _prefix(t) for t in wanted}
        self.prefixes = set(prefixes.values())
        self.possible = frozenset(t for t, p in prefixes.items() if p in lower)
        # A prefix starting before a block's end may run past it.
        self.overlap = max(map(len, self.prefixes)) - 1
        self.matches: list[Match] = []
        self.scanned = 0
        self._word_end = 0

    def scan_to(self, end: int) -> None:
        """Look at the words starting before ``end`` (and after ``scanned``)."""
        text = self.text
        start, end = self.scanned, min(end, len(text))
        if end <= start:
            return
        if self.folded is not None:
            folded, lo = self.folded, 0
        else:
            # One character back so that a word start can be told from a word's middle.
            lo = max(0, start - 1)
            folded = _fold(text[lo : end + self.overlap])
        for i in _word_starts(folded, self.prefixes, start - lo, end - lo):
            pos = lo + i
            if pos < self._word_end:
                continue
            word = WORD_RE.match(text, pos)
            if word is None:
                continue
            for term in _terms_of(word.group()):
                if term in self.wanted:
                    self.matches.append((pos, word.end(), term))
                    break
            self._word_end = word.end()
        self.scanned = end


def find_matches(text: str, terms: Iterable[str]) -> list[Match]:
    """``(start, end, term)`` of each word in ``text`` whose analyzed term is in ``terms``."""
    wanted = frozenset(t for t in terms if t)
    if not wanted or not text:
        return []
    found = _Matcher(text, wanted)
    found.scan_to(len(text))
    return found.matches


# The directory of a source: " term:first,count" per term, then " " (a term holds neither
# separator): its words are ``count`` (start, end) pairs of ``offsets`` from pair ``first``.
_TERM, _AT = " ", ":"
_HEADER = struct.Struct("<II")


def _offset_code(text: str) -> str:
    """The array type of a source's offsets: 16 bits when the text allows."""
    return "H" if len(text) <= 0xFFFF else "I"


@dataclass(frozen=True)
class SnippetSource:
    """A page's snippet text prepared at index time: ``text`` (at most ``SCAN_CHARS``) and,
    per analyzed term, where its words start and end (``SnippetSource.of``): ``postings``,
    a directory of terms into ``offsets``, the words' (start, end) pairs as little-endian
    unsigned integers (16 bits, or 32 for a text beyond 65,535 characters)."""

    text: str
    postings: str
    offsets: bytes

    @classmethod
    def of(cls, text: str) -> SnippetSource:
        """The source for ``text``: each word of its first ``SCAN_CHARS`` analyzed once.

        A page's distinct words are analyzed, and its words grouped by term in NumPy (a
        stable sort of their term numbers): on real documentation pages three quarters of
        the CPU of a word-by-word loop (``_of_words``), with the same source. A page with
        a word that makes no term or several (``_one_term_per_word``) takes that loop."""
        return cls.with_terms(text)[0]

    @classmethod
    def with_terms(cls, text: str) -> tuple[SnippetSource, str | None]:
        """``of(text)``, and ``analyze_blocks(text)`` when the source gives it for free:
        ``text`` within ``SCAN_CHARS``, ASCII without an apostrophe (``analyze`` then
        splits it into the same words) and each word of one term; else None."""
        cut = text[:SCAN_CHARS]
        split = ascii_words(cut) if cut.isascii() else unicode_words(cut)
        if split is not None:
            words, starts, ends = split
        else:
            # separator, word, separator, ..., separator; a word starts where the
            # separator before it ends
            parts = _WORD_SPLIT_RE.split(cut)
            words = parts[1::2]
            offsets = np.fromiter(accumulate(map(len, parts)), np.intp, len(parts))
            starts, ends = offsets[0:-1:2], offsets[1::2]
        distinct = list(dict.fromkeys(words))
        terms = _one_term_per_word(distinct)
        if terms is None:
            return cls._of_words(cut), None
        term_numbers: dict[str, int] = {}  # in the order of their first words
        number_of = {word: term_numbers.setdefault(term, len(term_numbers))
                     for word, term in zip(distinct, terms, strict=True)}
        numbers = np.fromiter(map(number_of.__getitem__, words), np.intp, len(words))
        order = np.argsort(numbers, kind="stable")  # by term, in text order within one
        pairs = np.empty((len(words), 2), "<u2" if _offset_code(cut) == "H" else "<u4")
        pairs[:, 0] = starts[order]
        pairs[:, 1] = ends[order]
        counts = np.bincount(numbers, minlength=len(term_numbers)).tolist()
        directory = "".join(
            f"{_TERM}{term}{_AT}{first},{count}"
            for term, first, count in zip(term_numbers, accumulate(counts, initial=0),
                                          counts, strict=False))
        joined = None
        if len(cut) == len(text) and cut.isascii() and "'" not in cut:
            # each word's term by its number: a NumPy gather, no lookup a word
            joined = join_blocks(np.array(list(term_numbers), object)[numbers], starts, cut)
        return cls(cut, directory + _TERM, pairs.tobytes()), joined

    @classmethod
    def _of_words(cls, text: str) -> SnippetSource:
        """``of(text)``, word by word (a word may make no term or several)."""
        spans: dict[str, list[int]] = {}
        for word in WORD_RE.finditer(text):
            start = word.start()
            for term in _terms_of(word.group()):
                at = spans.get(term)
                if at is None:
                    spans[term] = [start, word.end()]
                elif at[-2] != start:
                    at += (start, word.end())
        directory, offsets, first = [], array(_offset_code(text)), 0
        for term, at in spans.items():
            directory.append(f"{_TERM}{term}{_AT}{first},{len(at) // 2}")
            offsets.extend(at)
            first += len(at) // 2
        if sys.byteorder != "little":
            offsets.byteswap()
        return cls(text, "".join(directory) + _TERM, offsets.tobytes())

    def encode(self) -> bytes:
        """The source as bytes, for an engine to store (``decode`` reads them back)."""
        text = self.text.encode("utf-8", "surrogatepass")
        postings = self.postings.encode("utf-8", "surrogatepass")
        return _HEADER.pack(len(text), len(postings)) + text + postings + self.offsets

    @classmethod
    def decode(cls, data: bytes) -> SnippetSource:
        """The source ``encode`` gave ``data`` for."""
        text_len, postings_len = _HEADER.unpack_from(data)
        at = _HEADER.size
        text = data[at : at + text_len].decode("utf-8", "surrogatepass")
        at += text_len
        postings = data[at : at + postings_len].decode("utf-8", "surrogatepass")
        return cls(text, postings, data[at + postings_len :])

    def _offsets(self) -> Sequence[int]:
        """The words' offsets as numbers: a view of ``offsets`` (not a copy of them all,
        of which a search reads a few terms' pairs); a copy where bytes are big-endian."""
        if sys.byteorder == "little":
            return memoryview(self.offsets).cast(_offset_code(self.text))
        offsets = array(_offset_code(self.text), self.offsets)
        offsets.byteswap()
        return offsets

    def matches(self, wanted: Iterable[str]) -> list[Match]:
        """``(start, end, term)`` of each word whose analyzed term is in ``wanted``, in text
        order (a word of several terms matches by the first wanted one, as ``find_matches``)."""
        return self.spans(frozenset(wanted))

    def spans(self, wanted: frozenset[str]) -> list[Match]:
        """``(start, end, term)`` of the words of the ``wanted`` terms, in text order, one
        per word (a word of several wanted terms by the first one it analyzes to)."""
        postings, found = self.postings, []
        offsets = None
        for term in wanted:
            key = f"{_TERM}{term}{_AT}"
            at = postings.find(key)
            if at < 0:
                continue
            if offsets is None:
                offsets = self._offsets()
            end = postings.index(_TERM, at + len(key))
            first, count = map(int, postings[at + len(key) : end].split(","))
            pairs = offsets[2 * first : 2 * (first + count)]
            found.extend(zip(pairs[0::2], pairs[1::2], repeat(term)))
        if len(wanted) > 1:
            found.sort()
            for k in range(len(found) - 1, 0, -1):
                if found[k - 1][0] == found[k][0]:  # a word of several wanted terms
                    start, word_end, _ = found[k]
                    terms = _terms_of(self.text[start:word_end])
                    found[k - 1] = (start, word_end, next(t for t in terms if t in wanted))
                    del found[k]
        return found


class _Posted:
    """The matches of a :class:`SnippetSource`, read block by block as ``_Matcher``'s."""

    def __init__(self, source: SnippetSource, wanted: frozenset[str]):
        self.text = source.text
        self._spans = source.spans(wanted)
        self.possible = frozenset(map(itemgetter(2), self._spans))
        self.matches: list[Match] = []
        self.scanned = 0

    def scan_to(self, end: int) -> None:
        """The matches of the words starting before ``end``."""
        self.scanned = max(self.scanned, min(end, len(self.text)))
        stop = bisect_left(self._spans, self.scanned, key=itemgetter(0))
        self.matches.extend(self._spans[len(self.matches) : stop])


def _numbered(matches: list[Match]) -> tuple[list[int], list[int], int]:
    """Each match's term as a number (in order of first match), each match's end, and how
    many distinct terms there are: the sliding windows count terms in lists by number."""
    named = list(map(itemgetter(2), matches))
    numbers = {term: k for k, term in enumerate(dict.fromkeys(named))}
    return list(map(numbers.__getitem__, named)), list(map(itemgetter(1), matches)), len(numbers)


def _best_window(matches: list[Match], width: int) -> tuple[int, int]:
    """Index range of ``matches`` fitting in ``width`` chars with most distinct terms, then most.

    A term is in the window from when a match of it enters until its count falls to
    exactly 0 (a word wider than the window leaves it below 0, still in); terms are
    counted by number, in lists."""
    terms, ends, kinds = _numbered(matches)
    counts = [0] * kinds
    held = [False] * kinds
    best, best_distinct, best_count = (0, 0), -1, -1
    distinct = j = 0
    n = len(matches)
    for i, (start, _, _) in enumerate(matches):
        limit = start + width
        while j < n and ends[j] <= limit:
            t = terms[j]
            counts[t] += 1
            if not held[t]:
                held[t] = True
                distinct += 1
            j += 1
        if distinct > best_distinct or (distinct == best_distinct and j - i > best_count):
            best, best_distinct, best_count = (i, j), distinct, j - i
        t = terms[i]
        left = counts[t] = counts[t] - 1
        if not left:
            held[t] = False
            distinct -= 1
        elif not held[t]:
            held[t] = True
            distinct += 1
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
    text: str, start: int, end: int, matches: list[Match]
) -> str:
    out = [_ELLIPSIS] if start > 0 else []
    pos = start
    # ``matches`` are in text order: those of the window from the first starting in it
    # until one starts past its end (a page's matches may be thousands).
    for m_start, m_end, _ in matches[bisect_left(matches, start, key=itemgetter(0)):]:
        if m_start > end:
            break
        if m_end > end:
            continue
        out.append(_clean(text[pos:m_start]))
        out.append("<mark>" + escape(text[m_start:m_end], quote=False) + "</mark>")
        pos = m_end
    out.append(_clean(text[pos:end]))
    if end < len(text):
        out.append(_ELLIPSIS)
    return "".join(out).strip()


def _adjacent(text: str, left: Match, right: Match) -> bool:
    """Whether ``right`` is the word right after ``left`` (only punctuation between)."""
    return right[0] >= left[1] and not any(c.isalnum() for c in text[left[1] : right[0]])


def _phrase_matches(
    text: str,
    matches: list[Match],
    words: set[str],
    phrases: Sequence[Sequence[str]],
) -> list[Match]:
    """The matches of ``words`` anywhere plus those inside a whole occurrence of a phrase."""
    if not phrases:
        return matches
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
    text: str | SnippetSource,
    terms: Iterable[str],
    max_chars: int = SNIPPET_CHARS,
    phrases: Sequence[Sequence[str]] = (),
) -> str:
    """HTML snippet: the ``max_chars`` window of ``text`` richest in query matches, marked up.

    ``terms`` match anywhere; the terms of ``phrases`` only where the whole phrase occurs
    (``Query.words()`` and ``Query.phrases()``). The window has the most distinct terms,
    then the most matches, among the text read: blocks from the start until one holds a
    window with every term (at most ``SCAN_CHARS``). Without a match it is the start of
    the text. Everything but ``<mark>`` is escaped. ``text`` may be a
    :class:`SnippetSource` made at index time: its matches are looked up, not searched for.
    """
    return located_snippet(text, terms, max_chars, phrases)[0]


def located_snippet(
    text: str | SnippetSource,
    terms: Iterable[str],
    max_chars: int = SNIPPET_CHARS,
    phrases: Sequence[Sequence[str]] = (),
) -> tuple[str, int]:
    """``build_snippet``'s snippet and where in the text its middle match is (-1 for a
    snippet without one): what tells which section of the page the snippet is from (a
    window may begin with the last words of the section before)."""
    source = text if isinstance(text, SnippetSource) else None
    text = source.text if source is not None else text[:SCAN_CHARS]
    words = set(terms)
    wanted = frozenset(t for t in words.union(*phrases) if t)
    matches = []
    if text and wanted:
        found = _Posted(source, wanted) if source is not None else _Matcher(text, wanted)
        matches = _window_matches(found, text, words, phrases, max_chars)
    if not matches:
        return _render(text, *_span(text, 0, 0, max_chars), []), -1
    i, j = _best_window(matches, max_chars)
    start, end = _span(text, matches[i][0], matches[j - 1][1], max_chars)
    return _render(text, start, end, matches), matches[(i + j - 1) // 2][0]


def _window_matches(
    found: _Matcher | _Posted,
    text: str,
    words: set[str],
    phrases: Sequence[Sequence[str]],
    width: int,
) -> list[Match]:
    """The matches to pick a window from: those of the blocks read until one window of
    ``width`` holds every wanted term that the text may hold, or until ``READ_MATCHES``
    were found, and of one more ``width`` of text after."""
    block = FIRST_BLOCK_CHARS
    while True:
        before = found.scanned
        found.scan_to(before + block)
        if found.scanned >= len(text):
            break
        # Windows starting further back end before this block: they were looked at.
        first = bisect_left(found.matches, before - width, key=itemgetter(0))
        recent = _phrase_matches(text, found.matches[first:], words, phrases)
        if len(found.matches) >= READ_MATCHES or _holds_every_term(
            recent, width, len(found.possible)
        ):
            found.scan_to(found.scanned + width)
            break
        block *= 2
    return _phrase_matches(text, found.matches, words, phrases)


def _holds_every_term(matches: list[Match], width: int, count: int) -> bool:
    """Whether ``count`` distinct terms of ``matches`` fit in one window of ``width``."""
    terms, ends, kinds = _numbered(matches)
    if kinds < count:
        return False
    counts = [0] * kinds
    distinct = j = 0
    n = len(matches)
    for i, start in enumerate(map(itemgetter(0), matches)):
        if j < i:
            j = i
        limit = start + width
        while j < n and ends[j] <= limit:
            t = terms[j]
            if not counts[t]:
                distinct += 1
            counts[t] += 1
            j += 1
        if distinct >= count:
            return True
        if j > i:
            t = terms[i]
            counts[t] -= 1
            if not counts[t]:
                distinct -= 1
    return False


def highlight(text: str, terms: Iterable[str]) -> str:
    """All of ``text`` escaped, every word matching ``terms`` in ``<mark>`` (for titles)."""
    return _render(text, 0, len(text), find_matches(text, terms))
