"""The score formula, written once: how the weighted signals of :mod:`index.signals` make
a page's score, for the Python ranker (:class:`~index.signals.Ranker`, the embedded
engine), the Elasticsearch compiler (:mod:`index.engines.elasticsearch.query`) and the weight fitter
(:mod:`batch.learn`).

Each signal belongs to one stage (``Signal.stage``):

- ``text``: the engine's text score (BM25), times its weight;
- ``boost``: ``weight * value`` summed, a relative bonus;
- ``add``: ``weight * value`` summed, added to the score;
- ``demote``: each multiplies the whole score by ``1 - weight * value`` (weight and value
  in 0..1; a page whose value is 0 keeps its score exactly).

Both engines score with one formula:
``(w_text * text_share + sum(boost) + sum(add)) * prod(demote)``, where ``text_share`` is
the text score relative to the best candidate's (the ``bm25`` signal's value, at most 1),
so the other weights mean the same for every query. The embedded ranker computes it in
Python; Elasticsearch learns the best text score of a pass first (its text query's first
hit) and compiles the rest (``function_score``: the text query boosted by ``w_text / top``,
a ``sum`` of the boost and added functions, a ``multiply`` of the demotions; it forbids
negative weights, so a penalty is a factor on both engines). ``boost`` and ``add`` differ
only in what a signal means (a bonus for what the page is, an amount it has), not in how
they combine.

:meth:`Formula.scores` evaluates it over arrays (one candidate, a query's candidates, or
queries x candidates), so the ranker ranks and the fitter fits with the same code;
:meth:`Formula.staged` groups an engine's weighted signals by stage for the compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ADD", "BOOST", "DEMOTE", "FORMULAS", "STAGES", "TEXT", "Formula", "Staged",
           "formula_for"]

TEXT, BOOST, ADD, DEMOTE = "text", "boost", "add", "demote"
STAGES = (TEXT, BOOST, ADD, DEMOTE)
#: The smallest factor a demotion leaves (Elasticsearch's decay functions need a factor
#: above 0): a demotion weight is capped at ``1 - MIN_FACTOR``.
MIN_FACTOR = 1e-6


def demotion_weight(weight: float) -> float:
    """A demotion weight as the formula applies it: within ``0 .. 1 - MIN_FACTOR``."""
    return min(1.0 - MIN_FACTOR, max(0.0, float(weight)))


@dataclass(frozen=True)
class Staged:
    """An engine's weighted signals grouped by stage (signals weighted 0 left out; each
    entry ``(signal, weight)``, demotion weights capped by :func:`demotion_weight`)."""

    text: tuple[tuple[Any, float], ...]
    boost: tuple[tuple[Any, float], ...]
    add: tuple[tuple[Any, float], ...]
    demote: tuple[tuple[Any, float], ...]

    @property
    def text_weight(self) -> float:
        """The weight of the text score (0 when no text signal is weighted)."""
        return sum(w for _, w in self.text)


@dataclass(frozen=True)
class Formula:
    """One engine's score formula (see the module docstring)."""

    engine: str

    def staged(self, weighted: Sequence[tuple[Any, float]]) -> Staged:
        """``(signal, weight)`` pairs grouped by the signal's stage."""
        groups: dict[str, list[tuple[Any, float]]] = {s: [] for s in STAGES}
        for signal, weight in weighted:
            if signal.stage not in groups:
                raise ValueError(f"The ranking signal {signal.name!r} has stage "
                                 f"{signal.stage!r}; stages are {', '.join(STAGES)}.")
            if not weight:
                continue
            if signal.stage == DEMOTE:
                weight = demotion_weight(weight)
            groups[signal.stage].append((signal, weight))
        return Staged(*(tuple(groups[s]) for s in STAGES))

    def scores(self, stages: Sequence[str], weights: np.ndarray, values: np.ndarray,
               text: np.ndarray) -> np.ndarray:
        """Scores of candidates: ``values[..., j]`` is signal ``j``'s value (stage
        ``stages[j]``, weight ``weights[j]``), ``text[...]`` the engine's raw text score."""
        stages = np.asarray(stages)
        w = np.asarray(weights, dtype=float)
        values = np.asarray(values, dtype=float)
        text = np.asarray(text, dtype=float)
        is_text, boost = stages == TEXT, stages == BOOST
        added, demote = stages == ADD, stages == DEMOTE
        # the text term is the text signal's value, a page's share of the best text score
        text_term = values @ np.where(is_text, w, 0.0)
        score = text_term + values @ np.where(boost, w, 0.0)
        score = score + values @ np.where(added, w, 0.0)
        for j in np.flatnonzero(demote & (w != 0)):
            score = score * self.factor(w[j], values[..., j])
        return score

    @staticmethod
    def factor(weight: float, value: Any) -> Any:
        """A demotion's factor, ``1 - weight * value`` (the weight capped)."""
        return 1.0 - demotion_weight(weight) * np.clip(value, 0.0, 1.0)

    def linear(self, stages: Sequence[str]) -> np.ndarray:
        """Per signal, whether the score is linear in its weight alone *and* scaling it
        together with the other linear ones keeps it linear (every stage but the text
        weight, a multiplying one, and the demotions, factors)."""
        return np.array([s in (BOOST, ADD) for s in stages])


FORMULAS = {engine: Formula(engine) for engine in ("embedded", "elasticsearch")}


def formula_for(engine: str) -> Formula:
    """The formula of ``engine`` ("embedded" or "elasticsearch")."""
    try:
        return FORMULAS[engine]
    except KeyError:
        raise ValueError(f"No score formula for the {engine!r} engine; "
                         f"known: {sorted(FORMULAS)}.") from None
