"""Fitted ranking weights: every signal of :mod:`index.signals` is a feature, and its weight
is fitted on known-item training queries (a query and the one page it is about), never on
the judged queries of the evaluation.

The features of a candidate are what the engine's own explain output says
(``search(..., explain=True)``: each signal's value, and the text score), so the embedded
engine and Elasticsearch are fitted on the features they rank with, and scored by the
engine's own formula (:class:`ScoreForm` evaluates :meth:`index.formula.Formula.scores`,
the code the :class:`~index.signals.Ranker` ranks with and the formula the Elasticsearch
compiler builds), demotions included.

The score is linear in each weight alone (the text weight aside), and in the boost and add
weights scaled together, so the fit is coordinate ascent on MRR@10 (Metzler and Croft's
linear feature-based ranker): along one weight at a time (a demotion weight within 0..1),
and then along the boost and add weights scaled together (their balance with the text
score), the reciprocal rank of each query's known item changes only where it crosses a
competitor, so the line search tries the gaps between those crossings and keeps the best.
The text weight stays 1 (scores only order pages within a query, so one weight sets the
scale), and weights stay non-negative (Elasticsearch refuses negative scores). The result maps
directly onto a section of the weights file (:func:`write_weights`), which both engines
load in place of the hand weights of ``index/weights.json``.

LambdaMART (LightGBM) is not used: its trees cannot be expressed as ``function_score``
functions, so Elasticsearch could only apply it through the learning-to-rank plugin, which
the project's minimal server does not have.

Training queries: ``manage.py train-ranker`` makes them from the index's documents
(:func:`document_known_items`); the held-out evaluation passes its own
(``harness/training.py``) to :class:`FoldFitter`; any source of ``(query, url, site)``
triples works.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from index.analysis import STOPWORDS
from index.fields import site_name
from index.formula import DEMOTE, MIN_FACTOR, formula_for
from index.signals import WEIGHTS_FILE

__all__ = [
    "FeatureSet",
    "FitResult",
    "FoldFitter",
    "FoldWeights",
    "QueryFeatures",
    "ScoreForm",
    "TrainingQuery",
    "as_training",
    "awake",
    "beats",
    "collect",
    "engine_of",
    "fit",
    "form_for",
    "document_known_items",
    "item_key",
    "mrr",
    "reciprocal_ranks",
    "sample_per_site",
    "write_weights",
]

#: Reciprocal ranks count down to this rank (MRR@10, as the evaluation reports).
CUTOFF = 10
#: The text weight: fixed, it sets the scale of the others.
TEXT_SIGNAL = "bm25"
#: The weight of a signal weighted 0 while features are collected (:func:`awake`).
AWAKE = 1e-6


@dataclass(frozen=True)
class TrainingQuery:
    """A known-item training query: the text typed, the page it is about, that page's site."""

    query: str
    url: str
    site: str


def item_key(url: str) -> str:
    """``host/path`` of a URL without scheme, port or query; a directory means its index
    page (how a training query's page and a hit are compared)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    path = parts.path or "/"
    if path.endswith("/"):
        path += "index.html"
    return (parts.hostname or "") + path


# --- features ------------------------------------------------------------------------


@dataclass
class QueryFeatures:
    """One training query's candidates as the engine ranked them: each signal's value
    (``values``, candidates x signals), the engine's text score (``text``), and the index of
    the known item among them (``target``; ``None`` when it was not retrieved)."""

    query: TrainingQuery
    values: np.ndarray
    text: np.ndarray
    target: int | None


@dataclass
class FeatureSet:
    """The features of a set of training queries on one engine: the signals in column
    order, their ``stage`` (index.signals), and the weights the engine ranked them with."""

    engine: str
    names: list[str]
    stages: list[str]
    weights: dict[str, float]
    queries: list[QueryFeatures] = field(default_factory=list)

    def only(self, sites: Iterable[str]) -> FeatureSet:
        """The queries whose page is on one of ``sites``."""
        wanted = set(sites)
        return FeatureSet(self.engine, self.names, self.stages, self.weights,
                          [q for q in self.queries if q.query.site in wanted])

    @property
    def sites(self) -> list[str]:
        """The sites of the queries, sorted."""
        return sorted({q.query.site for q in self.queries})

    @property
    def found(self) -> int:
        """How many queries have their known item among the candidates."""
        return sum(1 for q in self.queries if q.target is not None)


def engine_of(backend: Any) -> str:
    """The weights-file section of a backend ("embedded" or "elasticsearch")."""
    from index.engines.elasticsearch.backend import ElasticsearchBackend
    from index.engines.embedded.backend import EmbeddedBackend

    backend = getattr(backend, "backend", backend)  # behind the result cache
    if isinstance(backend, EmbeddedBackend):
        return "embedded"
    if isinstance(backend, ElasticsearchBackend):
        return "elasticsearch"
    raise ValueError(f"Cannot fit ranking weights for a {type(backend).__name__}; use the "
                     "embedded or the Elasticsearch backend.")


def awake(weights: Mapping[str, float]) -> dict[str, float]:
    """``weights`` with each 0 raised to :data:`AWAKE`, to collect features with: an engine
    skips a signal weighted 0 (its value is not computed), and this weight does not change
    the ranking."""
    return {name: float(w) or AWAKE for name, w in weights.items()}


def collect(backend: Any, queries: Sequence[TrainingQuery], depth: int = 50,
            progress: Callable[[int, int], None] | None = None,
            start: Mapping[str, float] | None = None) -> FeatureSet:
    """Run each training query through ``backend.search(..., explain=True)`` and keep the
    top ``depth`` candidates' explained signal values and text scores. ``start``: the
    weights a fit starts from (default: the backend's; pass the hand weights when the
    backend runs with :func:`awake` ones)."""
    inner = getattr(backend, "backend", backend)
    ranker = inner.ranker
    names = [s.name for s in ranker.signals]
    features = FeatureSet(engine_of(backend), names, [s.stage for s in ranker.signals],
                          dict(start if start is not None else ranker.weights))
    for n, training in enumerate(queries, 1):
        results = inner.search(training.query, size=depth, explain=True)
        hits = [h for h in results.hits if h.explain]
        values = np.array([[h.explain[name]["value"] for name in names] for h in hits],
                          dtype=float).reshape(len(hits), len(names))
        text = np.array([h.explain[TEXT_SIGNAL].get("raw", h.explain[TEXT_SIGNAL]["value"])
                         for h in hits], dtype=float)
        key = item_key(training.url)
        target = next((i for i, h in enumerate(hits) if item_key(h.url) == key), None)
        features.queries.append(QueryFeatures(training, values, text, target))
        if progress is not None:
            progress(n, len(queries))
    return features


# --- score forms ---------------------------------------------------------------------


class ScoreForm:
    """An engine's score formula (:mod:`index.formula`) over padded candidate matrices
    (queries x candidates)."""

    def __init__(self, features: FeatureSet):
        queries = [q for q in features.queries if q.target is not None]
        self.names = list(features.names)
        self.stages = list(features.stages)
        self.formula = formula_for(features.engine)
        width = max((len(q.text) for q in queries), default=1)
        shape = (len(queries), width)
        self.values = np.zeros((*shape, len(self.names)))
        self.text = np.zeros(shape)
        self.valid = np.zeros(shape, dtype=bool)
        self.target = np.array([q.target for q in queries], dtype=int)
        for row, q in enumerate(queries):
            n = len(q.text)
            self.values[row, :n] = q.values
            self.text[row, :n] = q.text
            self.valid[row, :n] = True
        self.queries = len(queries)
        self.order = np.broadcast_to(np.arange(width), shape)

    def score(self, w: np.ndarray) -> np.ndarray:
        """Each candidate's score under weights ``w`` (one per signal, column order)."""
        scores = self.formula.scores(self.stages, w, self.values, self.text)
        return np.where(self.valid, scores, -np.inf)

    def varies(self) -> np.ndarray:
        """Per signal, whether its value differs between the candidates of some query: a
        signal that never does says nothing about the ranking, and keeps its weight."""
        low = np.where(self.valid[..., None], self.values, np.inf).min(axis=1)
        high = np.where(self.valid[..., None], self.values, -np.inf).max(axis=1)
        return (high - low > 1e-9).any(axis=0)

    def line(self, origin: np.ndarray, direction: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
        """``(base, slope)``: the score at ``origin + t * direction`` is ``base + t *
        slope`` (the formula is linear along one weight, and along the boost and add
        weights scaled together)."""
        base = self.score(origin)
        moved = self.score(origin + direction / 2)
        return base, np.where(self.valid, 2 * (moved - np.where(self.valid, base, 0)), 0)

    def reciprocal_ranks(self, scores: np.ndarray) -> np.ndarray:
        """Each query's reciprocal rank of its known item (0 below the cutoff); ties go
        to the engine's order, as the rankers keep it."""
        rows = np.arange(self.queries)
        mine = scores[rows, self.target][:, None]
        ahead = self.valid & ((scores > mine) | ((scores == mine)
                                                 & (self.order < self.target[:, None])))
        rank = 1 + ahead.sum(axis=1)
        return np.where(rank <= CUTOFF, 1.0 / rank, 0.0)


def form_for(features: FeatureSet) -> ScoreForm:
    """The score form of the engine the features come from."""
    return ScoreForm(features)


# --- the fit -------------------------------------------------------------------------


@dataclass
class FitResult:
    """Fitted weights (by signal name) and MRR@10 over the training queries whose known
    item was retrieved, with the starting weights and the fitted ones."""

    weights: dict[str, float]
    start_mrr: float
    mrr: float
    queries: int
    passes: int
    seconds: float

    def to_dict(self) -> dict:
        """A JSON-ready summary."""
        return {"weights": self.weights, "start_mrr_at_10": round(self.start_mrr, 4),
                "mrr_at_10": round(self.mrr, 4), "queries": self.queries,
                "passes": self.passes, "seconds": round(self.seconds, 2)}


def reciprocal_ranks(features: FeatureSet, weights: Mapping[str, float]) -> np.ndarray:
    """Each training query's reciprocal rank of its known item under ``weights`` (0 below
    rank 10, or when it was not retrieved), in query order."""
    out = np.zeros(len(features.queries))
    form = form_for(features)
    if form.queries:
        w = np.array([float(weights.get(n, 0.0)) for n in features.names])
        found = [i for i, q in enumerate(features.queries) if q.target is not None]
        out[found] = form.reciprocal_ranks(form.score(w))
    return out


def mrr(features: FeatureSet, weights: Mapping[str, float]) -> float:
    """MRR@10 of the training queries under ``weights`` (a query whose known item was not
    retrieved scores 0)."""
    ranks = reciprocal_ranks(features, weights)
    return float(ranks.mean()) if len(ranks) else 0.0


def beats(fitted: np.ndarray, hand: np.ndarray, z: float = 2.0) -> bool:
    """Whether the per-query reciprocal ranks ``fitted`` beat ``hand`` on the same queries
    by more than ``z`` standard errors of the mean paired difference (a gain smaller than
    that is noise: a few queries moving)."""
    if len(fitted) < 2:
        return False
    diff = np.asarray(fitted) - np.asarray(hand)
    return float(diff.mean()) > z * float(diff.std(ddof=1)) / math.sqrt(len(diff))


def _line_search(form: ScoreForm, origin: np.ndarray, direction: np.ndarray, now: float,
                 max_points: int, max_step: float) -> tuple[float, float]:
    """The best step ``t`` in ``[0, max_step]`` along ``origin + t * direction`` (``now``:
    the current one) and the mean reciprocal rank it gives. The known item's rank only
    changes where it crosses a competitor, so the trials are the gaps between crossings."""
    base, slope = form.line(origin, direction)
    rows = np.arange(form.queries)
    b_t, s_t = base[rows, form.target][:, None], slope[rows, form.target][:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (b_t - base) / (slope - s_t)
    cross = cross[form.valid & np.isfinite(cross) & (cross > 0) & (cross < max_step)]
    points = np.unique(cross)
    if len(points) > max_points:
        points = np.quantile(points, np.linspace(0, 1, max_points))
    gaps = (points[:-1] + points[1:]) / 2 if len(points) > 1 else np.array([])
    tail = points[-1:] * 1.5 if len(points) else np.array([])
    head = points[:1] / 2 if len(points) else np.array([])
    trials = np.unique(np.concatenate([[0.0, now], head, gaps, tail]))
    trials = trials[(trials >= 0) & (trials <= max_step)]
    best_step, best_score = now, -1.0
    for step in trials:
        score = float(form.reciprocal_ranks(base + step * slope).mean())
        # ties keep the step nearest the current one
        if score > best_score + 1e-12 or (
            abs(score - best_score) <= 1e-12 and abs(step - now) < abs(best_step - now)
        ):
            best_step, best_score = float(step), score
    return best_step, best_score


def fit(features: FeatureSet, start: Mapping[str, float] | None = None, passes: int = 4,
        fixed: Iterable[str] = (), max_points: int = 256,
        max_weight: float | None = None) -> FitResult:
    """Coordinate ascent on MRR@10 from ``start`` (default: the weights the features were
    ranked with); the text weight, the signals in ``fixed`` and those whose value never
    differs between a query's candidates keep their start value.
    Stops after ``passes`` rounds over the signals or when a round gains nothing."""
    started = time.monotonic()
    start = dict(features.weights if start is None else start)
    w = np.array([float(start.get(n, 0.0)) for n in features.names])
    form = form_for(features)
    total = max(1, len(features.queries))
    if not form.queries:
        weights = dict(zip(features.names, w.tolist(), strict=True))
        return FitResult(weights, 0.0, 0.0, 0, 0, time.monotonic() - started)
    keep = {TEXT_SIGNAL, *fixed}
    varies = form.varies()
    stages = features.stages
    scaled = form.formula.linear(stages)
    demotion_cap = 1.0 - MIN_FACTOR
    free = [j for j, name in enumerate(features.names) if name not in keep and varies[j]]
    cap = max_weight if max_weight is not None else max(10.0, 10 * float(w.max()))
    current = float(form.reciprocal_ranks(form.score(w)).mean())
    first = current
    done = 0
    while done < passes:
        done += 1
        before = current
        for j in free:
            origin, unit = w.copy(), np.zeros_like(w)
            origin[j], unit[j] = 0.0, 1.0
            value, score = _line_search(form, origin, unit, w[j], max_points,
                                        demotion_cap if stages[j] == DEMOTE else cap)
            if score >= current:
                w[j], current = value, score
        # The boost and add weights scaled together: their balance with the text score.
        direction = np.where(np.isin(np.arange(len(w)), free) & scaled, w, 0.0)
        if direction.any():
            top = float(direction.max())
            step, score = _line_search(form, w - direction, direction, 1.0, max_points,
                                       cap / top)
            if score >= current:
                w, current = w - direction + step * direction, score
        if current <= before + 1e-9:
            break
    scale = form.queries / total
    weights = {n: round(float(v), 6) for n, v in zip(features.names, w, strict=True)}
    return FitResult(weights, first * scale, current * scale, form.queries, done,
                     time.monotonic() - started)


@dataclass(frozen=True)
class FoldWeights:
    """What :class:`FoldFitter` returns for a fold, in the shape of the evaluation's
    ``harness.relevance.FittedWeights``: a name, the weights file both engines load, and
    the sites whose judged queries shaped the weights (none: they never see one)."""

    name: str
    weights_file: Path | None = None
    seen_sites: frozenset[str] = frozenset()


def as_training(items: Iterable[Any]) -> list[TrainingQuery]:
    """Training queries from any known items with ``query``, ``site`` and ``url`` or
    ``target`` (``host/path``, as ``harness.training.KnownItem`` has)."""
    out = []
    for item in items:
        if isinstance(item, TrainingQuery):
            out.append(item)
        else:
            url = getattr(item, "url", None) or item.target
            out.append(TrainingQuery(item.query, url, item.site))
    return out


def sample_per_site(queries: Sequence[TrainingQuery], per_site: int,
                    seed: int = 0) -> list[TrainingQuery]:
    """At most ``per_site`` queries of each site, drawn the same way every run."""
    import random

    by_site: dict[str, list[TrainingQuery]] = {}
    for q in queries:
        by_site.setdefault(q.site, []).append(q)
    out: list[TrainingQuery] = []
    for site in sorted(by_site):
        chosen = sorted(by_site[site], key=lambda q: (q.query, q.url))
        random.Random(f"{seed}:{site}").shuffle(chosen)
        out.extend(chosen[:per_site])
    return out


class FoldFitter:
    """The per-fold ``fit(train_sites, training)`` hook of a held-out-by-site evaluation
    (``harness.relevance.evaluate_heldout``) for one engine: it samples the fold's training
    queries (``per_site`` per site), collects the features of those it has not seen yet
    from ``backend`` (build it with :func:`awake` weights and pass the hand weights as
    ``start``), fits, and writes the weights to a file under ``out_dir`` for the fold's
    engine to load (``weights_file``)."""

    def __init__(self, backend: Any, out_dir: str | Path, *,
                 start: Mapping[str, float] | None = None, per_site: int = 250,
                 depth: int = 50, passes: int = 4,
                 progress: Callable[[int, int], None] | None = None):
        self.backend = backend
        self.engine = engine_of(backend)
        self.out_dir = Path(out_dir)
        self.start = dict(start) if start is not None else None
        self.per_site = per_site
        self.depth = depth
        self.passes = passes
        self.progress = progress
        self.features: FeatureSet | None = None
        self._seen: dict[tuple[str, str], QueryFeatures] = {}

    def __call__(self, train_sites: Sequence[str], training: Iterable[Any]) -> FoldWeights:
        """Weights fitted on ``training`` (the known items of ``train_sites`` only)."""
        wanted = set(train_sites)
        queries = sample_per_site([q for q in as_training(training) if q.site in wanted],
                                  self.per_site)
        new = [q for q in queries if (q.query, q.url) not in self._seen]
        collected = collect(self.backend, new, self.depth, self.progress, self.start)
        if self.features is None:
            self.features = FeatureSet(collected.engine, collected.names, collected.stages,
                                       collected.weights)
        for q in collected.queries:
            self._seen[(q.query.query, q.query.url)] = q
        fold = FeatureSet(self.features.engine, self.features.names, self.features.stages,
                          self.features.weights,
                          [self._seen[(q.query, q.url)] for q in queries])
        result = fit(fold, passes=self.passes)
        name = f"fitted on {len(wanted)} sites ({result.queries} queries)"
        key = hashlib.sha1(" ".join(sorted(wanted)).encode()).hexdigest()[:12]
        path = self.out_dir / f"{self.engine}-{key}.json"
        write_weights(path, self.engine, result.weights,
                      {"train_sites": sorted(wanted), **result.to_dict()}, base=WEIGHTS_FILE)
        return FoldWeights(name, path)


# --- the weights file ----------------------------------------------------------------


def write_weights(path: str | Path, engine: str, weights: Mapping[str, float],
                  about: Mapping[str, Any], base: str | Path | None = None) -> Path:
    """Write a weights file (the format of ``index/weights.json``) with ``engine``'s
    section fitted; the other engines' sections come from ``base`` (the existing file at
    ``path``, else the hand weights), so the file is complete for every engine."""
    path = Path(path)
    if path.resolve() == WEIGHTS_FILE.resolve():
        raise ValueError(f"{path} holds the hand weights (the fallback); write the fitted "
                         "weights to another file.")
    source = Path(base) if base else (path if path.exists() else WEIGHTS_FILE)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
    hand = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
    for name, section in hand.items():
        data.setdefault(name, section)
    data["_about"] = ("Fitted ranking weights (manage.py train-ranker; batch/learn.py), in "
                      "the format of index/weights.json. Sections not fitted are the hand "
                      "weights.")
    fitted = dict(data.get("_fitted", {}))
    fitted[engine] = dict(about)
    data["_fitted"] = fitted
    data[engine] = {name: float(value) for name, value in weights.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# --- training queries from documents ------------------------------------------------

_WORD = re.compile(r"[^\W\d_][\w.+-]*[^\W_]|[^\W\d_]")
_TITLE_WORDS = 4
_BODY_WORDS = 3


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def document_known_items(docs: Iterable[Any], per_site: int = 200,
                        seed: int = 0) -> list[TrainingQuery]:
    """Known-item queries from indexed documents alone (what ``train-ranker`` has): for
    sampled pages of each site, one query from the page's title (its words that few titles
    share, the site's own name left out) and one from its body (its most characteristic
    words by tf-idf, common to a few pages at least). ``docs``: objects with ``url``,
    ``host``, ``title`` and ``body`` (index Documents). Measured against the evaluation's
    generator (``harness/training.py``: title variants, anchor texts, headings) as the
    fitter's training data, held out by site: docs/relevance-figures.md."""
    import random

    pages = [d for d in docs if getattr(d, "title", "") or getattr(d, "body", "")]
    title_df: Counter[str] = Counter()
    body_df: Counter[str] = Counter()
    for d in pages:
        title_df.update(set(_words(d.title)))
        body_df.update(set(_words(d.body[:20_000])))
    n = max(1, len(pages))
    by_site: dict[str, list[Any]] = {}
    for d in pages:
        by_site.setdefault(d.host, []).append(d)
    rng = random.Random(seed)
    out: list[TrainingQuery] = []
    for site in sorted(by_site):
        chosen = sorted(by_site[site], key=lambda d: d.url)
        rng.shuffle(chosen)
        own = set(_words(site_name(site))) | set(_words(site.split(":")[0].replace(".", " ")))
        for d in chosen[:per_site]:
            title = [w for w in dict.fromkeys(_words(d.title))
                     if w not in STOPWORDS and w not in own
                     and title_df[w] <= max(1.0, 0.02 * n)]
            if title:
                out.append(TrainingQuery(" ".join(title[:_TITLE_WORDS]), d.url, site))
            tf = Counter(w for w in _words(d.body[:20_000]) if w not in STOPWORDS
                         and len(w) > 2 and 2 <= body_df[w] <= max(2.0, 0.05 * n))
            ranked = sorted(tf, key=lambda w: -tf[w] * math.log(n / body_df[w]))
            if len(ranked) >= _BODY_WORDS:
                out.append(TrainingQuery(" ".join(ranked[:_BODY_WORDS]), d.url, site))
    return out
