""""Did you mean" for the embedded index (Elasticsearch has a term suggester of its own).

A query word that no document holds is replaced by its one-edit variant (delete, transpose,
replace, insert) found in the most documents, judged by the index's own term statistics, so
suggestions are words of the crawled pages, analyzed exactly as at index time.
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
                 min_length: int = 3, max_length: int = 20):
        self.doc_freq = doc_freq
        self.max_words = max_words
        self.min_length = min_length
        self.max_length = max_length

    def correct(self, word: str) -> str | None:
        """The best-supported one-edit variant of an unknown ``word``, or None."""
        best, best_df = None, 0
        seen: set[str] = set()
        for candidate in edits1(word):
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
        for word in parsed.suggest_words:
            if len(fixes) >= self.max_words:
                break
            if not (self.min_length <= len(word) <= self.max_length) or not word.isalnum():
                continue
            terms = analyze(word)
            if len(terms) == 1 and self.doc_freq(terms[0]) == 0:
                fixed = self.correct(word)
                if fixed:
                    fixes[word] = fixed
        return parsed.with_words_replaced(fixes)
