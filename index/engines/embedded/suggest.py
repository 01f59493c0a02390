""""Did you mean" for the embedded index (Elasticsearch has a term suggester of its own).

A query word that no document holds is replaced by its one-edit variant (delete, transpose,
replace, insert) found in the most documents, judged by the index's own term statistics, so
suggestions are words of the crawled pages, analyzed exactly as at index time.

Bounded per query: at most ``max_words`` unknown words are examined (fixed or not) and at
most ``max_edits`` candidate edits in all (each costs an analysis and a term lookup), so a
query of 64 unknown words costs what a query of a few does. ``words_examined`` and
``edits_examined`` count the work of the last ``suggest()``.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator

from index.analysis import analyze, is_stopword
from index.query import Query, parse

LETTERS = string.ascii_lowercase + string.digits


def edits1(word: str) -> Iterator[str]:
    """Every string one edit away from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    for left, right in splits:
        if right:
            yield left + right[1:]
            for c in LETTERS:
                if c != right[0]:
                    yield left + c + right[1:]
        if len(right) > 1:
            yield left + right[1] + right[0] + right[2:]
        for c in LETTERS:
            yield left + c + right


class EditSuggester:
    """Suggests a corrected query from ``doc_freq(term)`` (documents holding an index term)."""

    def __init__(self, doc_freq: Callable[[str], int], max_words: int = 4,
                 min_length: int = 3, max_length: int = 20, max_edits: int = 2500):
        self.doc_freq = doc_freq
        self.max_words = max_words
        self.max_edits = max_edits
        self.min_length = min_length
        self.max_length = max_length
        self.words_examined = 0
        self.edits_examined = 0

    def correct(self, word: str) -> str | None:
        """The best-supported one-edit variant of an unknown ``word``, or None; stops when
        the query's edit budget (``max_edits``) is spent."""
        best, best_df = None, 0
        seen: set[str] = set()
        for candidate in edits1(word):
            if self.edits_examined >= self.max_edits:
                break
            self.edits_examined += 1
            terms = analyze(candidate)
            if len(terms) != 1 or terms[0] in seen or is_stopword(terms[0]):
                continue
            seen.add(terms[0])
            df = self.doc_freq(terms[0])
            if df > best_df:
                best, best_df = candidate, df
        return best

    def suggest(self, query: str | Query) -> str | None:
        """The query with unknown words corrected, or None when there is nothing to fix."""
        parsed = query if isinstance(query, Query) else parse(query)
        fixes: dict[str, str] = {}
        self.words_examined = self.edits_examined = 0
        for word in parsed.suggest_words:
            if self.words_examined >= self.max_words or self.edits_examined >= self.max_edits:
                break
            if not (self.min_length <= len(word) <= self.max_length) or not word.isalnum():
                continue
            terms = analyze(word)
            if len(terms) == 1 and self.doc_freq(terms[0]) == 0:
                self.words_examined += 1
                fixed = self.correct(word)
                if fixed:
                    fixes[word] = fixed
        return parsed.with_words_replaced(fixes)
