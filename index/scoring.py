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
    "Candidate",
    "Ranker",
    "Signal",
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
    score: float = 0.0


class Signal(ABC):
    """A ranking signal: ``name`` keys its weight; ``compute`` gives its value for a match."""

    name: ClassVar[str]
    default_weight: ClassVar[float]

    @abstractmethod
    def compute(self, candidate: Candidate) -> float:
        """The signal's value for ``candidate`` (before weighting)."""


class TextRelevance(Signal):
    """The engine's BM25 score over title, anchors, URL and body."""

    name = "bm25"
    default_weight = 1.0

    def compute(self, candidate: Candidate) -> float:
        return candidate.text_score


class StaticRank(Signal):
    """The page's static rank from ``update_rank`` (PageRank scaled so the best page is ~1)."""

    name = "pagerank"
    default_weight = 2.0

    def compute(self, candidate: Candidate) -> float:
        return candidate.pagerank


DEFAULT_SIGNALS: tuple[Signal, ...] = (TextRelevance(), StaticRank())


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
        for c in candidates:
            score = 0.0
            for compute, weight in active:
                score += weight * compute(c)
            c.score = score
        candidates.sort(key=lambda c: c.score, reverse=True)
        return candidates
