"""Re-ranking of an engine's top candidates by a list of weighted signals.

A backend's engine finds and scores the top K matches by text relevance (BM25); the
:class:`Ranker` then combines each candidate's signals linearly, ``sum(weight * value)``.
A signal is a small class with a name, a default weight and a way to compute itself, so a
new signal (freshness, URL depth, ...) joins by adding a class, and weights are data: pass
``{"pagerank": 5.0}`` to override a default without touching code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "DEFAULT_SIGNALS",
    "AllWords",
    "Candidate",
    "LabelMatch",
    "LanguageMatch",
    "Ranker",
    "Signal",
    "SiteHome",
    "SiteMention",
    "StaticRank",
    "TextRelevance",
]


@dataclass
class Candidate:
    """One engine match with the per-document values signals read; ``score`` is filled in."""

    ref: Any
    text_score: float
    pagerank: float = 0.0
    fetched_at: float = 0.0
    cluster: int = 0
    text_top: float = 0.0
    depth: int = 0
    site_home: bool = False
    labelled: bool = False
    site_named: bool = False
    language: float = 0.0
    all_words: bool = True
    score: float = 0.0


class Signal(ABC):
    """A ranking signal: ``name`` keys its weight; ``compute`` gives its value for a match."""

    name: ClassVar[str]
    default_weight: ClassVar[float]

    @abstractmethod
    def compute(self, candidate: Candidate) -> float:
        """The signal's value for ``candidate`` (before weighting)."""


class TextRelevance(Signal):
    """The engine's BM25 score over title, anchors, URL and body, relative to the best
    candidate of the query (1 for the best), so other signals' weights mean the same for
    every query."""

    name = "bm25"
    default_weight = 1.0

    def compute(self, candidate: Candidate) -> float:
        if candidate.text_top <= 0:
            return 0.0
        return max(0.0, candidate.text_score) / candidate.text_top


class StaticRank(Signal):
    """The page's static rank from ``update_rank`` (PageRank scaled so the best page is ~1)."""

    name = "pagerank"
    default_weight = 2.0

    def compute(self, candidate: Candidate) -> float:
        return candidate.pagerank


class SiteHome(Signal):
    """Navigational intent: 1 for the home page of a site the query names (``django docs``
    -> the home page of ``django.*``), else 0."""

    name = "sitehome"
    default_weight = 1.5

    def compute(self, candidate: Candidate) -> float:
        return 1.0 if candidate.site_home else 0.0


class LabelMatch(Signal):
    """1 when every query word is in the page's title, anchor text or URL: what the page
    is called and linked as, not only what it mentions."""

    name = "label"
    default_weight = 0.15

    def compute(self, candidate: Candidate) -> float:
        return 1.0 if candidate.labelled else 0.0


class SiteMention(Signal):
    """1 for a page of a site the query names among other words (``requests session`` ->
    pages of ``requests.*``), else 0."""

    name = "site"
    default_weight = 0.1

    def compute(self, candidate: Candidate) -> float:
        return 1.0 if candidate.site_named else 0.0


class LanguageMatch(Signal):
    """How well the page's language fits the query's: 1 the same, 0.5 unknown, 0 another
    (set by the backend as ``candidate.language``). Translations share names and
    commands (``nfs``, ``samba``), so text alone cannot tell them apart."""

    name = "lang"
    default_weight = 0.3

    def compute(self, candidate: Candidate) -> float:
        return candidate.language


class AllWords(Signal):
    """1 for a page with every query word, 0 for one lacking a word. Longer queries also
    bring pages lacking a minor word, since the best page often does not use every word of
    a question; their text score is already multiplied by the share of the query's IDF
    they cover (Lucene's coordination factor)."""

    name = "allwords"
    default_weight = 0.5

    def compute(self, candidate: Candidate) -> float:
        return 1.0 if candidate.all_words else 0.0


DEFAULT_SIGNALS: tuple[Signal, ...] = (
    TextRelevance(),
    StaticRank(),
    SiteHome(),
    LabelMatch(),
    SiteMention(),
    LanguageMatch(),
    AllWords(),
)


class Ranker:
    """Scores candidates as the weighted sum of its signals and orders them best first."""

    def __init__(
        self,
        signals: Sequence[Signal] = DEFAULT_SIGNALS,
        weights: Mapping[str, float] | None = None,
    ):
        weights = dict(weights or {})
        unknown = set(weights) - {s.name for s in signals}
        if unknown:
            raise ValueError(
                f"Unknown ranking signal(s) {sorted(unknown)}; "
                f"known: {sorted(s.name for s in signals)}."
            )
        self.weighted = [(s, weights.get(s.name, s.default_weight)) for s in signals]

    @property
    def weights(self) -> dict[str, float]:
        """The weight in use for each signal, by name."""
        return {s.name: w for s, w in self.weighted}

    def rank(self, candidates: list[Candidate]) -> list[Candidate]:
        """``candidates`` with ``score`` set, sorted by score, ties kept in engine order."""
        active = [(s.compute, w) for s, w in self.weighted if w]
        top = max((c.text_score for c in candidates), default=0.0)
        for c in candidates:
            c.text_top = top
            score = 0.0
            for compute, weight in active:
                score += weight * compute(c)
            c.score = score
        candidates.sort(key=lambda c: c.score, reverse=True)
        return candidates
