"""Ranking signals and the ranker that combines them with weights kept as data.

Each signal is one small class with a ``name``, a ``default_weight`` and ``compute``, which
maps one hit (plus what is known about the query and the candidate set) to a number in
[0, 1]. The ranker is a list of signals and a weight per signal name; the final score of a
hit is the weighted sum. Backends fetch the top K hits by text relevance and hand them to
``rerank``, so every backend ranks the same way.

Weights come from settings (``RANKING_WEIGHTS``, ``RANKING_SIGNALS``), so changing the
ranking is a configuration change, not a code change.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any
from urllib.parse import urlsplit

from index.base import Hit

_WORD = re.compile(r"[\w.-]+", re.UNICODE)
_HOME_PATHS = frozenset({"", "/", "/index.html", "/index.htm", "/index.php", "/default.aspx"})
_GENERIC_LABELS = frozenset({"www", "m", "web", "home"})


@dataclass(frozen=True)
class QueryInfo:
    """What signals need from a query: its positive words, lower-cased, in order."""

    terms: tuple[str, ...]

    @classmethod
    def of(cls, query: Any) -> QueryInfo:
        """From a query string, a parsed ``index.query.Query`` (its ``raw`` text, since host
        names must not be stemmed) or anything with a ``terms`` attribute.

        ``-excluded`` words, ``site:`` filters and ``OR`` are not terms; phrase words are.
        """
        if isinstance(query, QueryInfo):
            return query
        if isinstance(query, str):
            return cls(tuple(_string_terms(query)))
        if isinstance(getattr(query, "raw", None), str):
            return cls(tuple(_string_terms(query.raw)))
        terms = getattr(query, "terms", None)
        if callable(terms):
            terms = terms()
        if terms is None:
            raise TypeError(
                f"cannot read query terms from {type(query).__name__}: pass the query string "
                "or an object with a 'terms' attribute listing its positive words"
            )
        words: list[str] = []
        for term in terms:
            words.extend(w.lower() for w in _WORD.findall(str(term)))
        return cls(tuple(words))


def _string_terms(query: str) -> Iterable[str]:
    for token in query.replace('"', " ").split():
        low = token.lower()
        if low == "or" and token == "OR":
            continue
        if token.startswith("-") or low.startswith("site:"):
            continue
        yield from _WORD.findall(low)


@dataclass
class RankContext:
    """Per-query facts shared by all signals: the query, the candidates' best text score,
    and the host static ranks of the committed ranking run (host -> [0, 1])."""

    query: QueryInfo
    max_text_score: float = 0.0
    host_ranks: Mapping[str, float] = field(default_factory=dict)


class Signal:
    """One ranking signal: a name, a default weight, and a value in [0, 1] per hit."""

    name: str = ""
    default_weight: float = 0.0

    def compute(self, hit: Hit, ctx: RankContext) -> float:
        """This signal's value for ``hit``, between 0 and 1."""
        raise NotImplementedError


class TextRelevance(Signal):
    """The engine's text score (BM25), relative to the best candidate of this query."""

    name = "text"
    default_weight = 1.0

    def compute(self, hit: Hit, ctx: RankContext) -> float:
        if ctx.max_text_score <= 0:
            return 0.0
        return max(0.0, hit.score) / ctx.max_text_score


class PageRankSignal(Signal):
    """The page's static rank as the ranking batch writes it (``ranking.pagerank.static_rank``:
    log-scaled PageRank, best page 1)."""

    name = "pagerank"
    default_weight = 0.4

    def compute(self, hit: Hit, ctx: RankContext) -> float:
        return min(1.0, max(0.0, hit.pagerank))


class HostRankSignal(Signal):
    """The static rank of the hit's host in the host graph (same scale as ``pagerank``)."""

    name = "hostrank"
    default_weight = 0.2

    def compute(self, hit: Hit, ctx: RankContext) -> float:
        return min(1.0, max(0.0, ctx.host_ranks.get(_host_of(hit), 0.0)))


def host_labels(host: str) -> list[str]:
    """The labels of a host name that identify the site: no port, TLD or ``www``."""
    labels = host.lower().split(":")[0].strip(".").split(".")
    if len(labels) > 1:
        labels = labels[:-1]
    return [label for label in labels if label and label not in _GENERIC_LABELS]


def query_names_host(query: QueryInfo, host: str) -> bool:
    """True when the query is (mostly) the name of ``host``: "python", "python.test",
    "docs python" for docs.python.test, or "stack overflow" for stackoverflow.test."""
    if not query.terms:
        return False
    terms = set(query.terms)
    bare = host.lower().split(":")[0]
    if bare in terms or bare.removeprefix("www.") in terms:
        return True
    labels = host_labels(host)
    if not labels:
        return False
    if set(labels) <= terms:
        return True
    return "".join(query.terms) == "".join(labels)


class HostHomePage(Signal):
    """Navigational bonus: 1 for the home page of a host the query names, else 0."""

    name = "homepage"
    default_weight = 1.5

    def compute(self, hit: Hit, ctx: RankContext) -> float:
        parts = urlsplit(hit.url)
        if parts.path not in _HOME_PATHS or parts.query:
            return 0.0
        return 1.0 if query_names_host(ctx.query, _host_of(hit)) else 0.0


class UrlDepth(Signal):
    """Shallow URLs first: 1 at the root, ``1 / (1 + depth)`` below; a query string adds 1."""

    name = "urldepth"
    default_weight = 0.1

    def compute(self, hit: Hit, ctx: RankContext) -> float:
        parts = urlsplit(hit.url)
        depth = len([p for p in parts.path.split("/") if p]) + (1 if parts.query else 0)
        return 1.0 / (1 + depth)


def _host_of(hit: Hit) -> str:
    return (hit.host or urlsplit(hit.url).netloc).lower()


DEFAULT_SIGNALS = (
    "ranking.signals.TextRelevance",
    "ranking.signals.PageRankSignal",
    "ranking.signals.HostRankSignal",
    "ranking.signals.HostHomePage",
    "ranking.signals.UrlDepth",
)


class Ranker:
    """A list of signals with a weight per signal name; scores hits by the weighted sum."""

    def __init__(self, signals: Sequence[Signal], weights: Mapping[str, float] | None = None):
        self.signals = list(signals)
        names = {s.name for s in self.signals}
        unknown = set(weights or {}) - names
        if unknown:
            raise ValueError(
                f"RANKING_WEIGHTS names unknown signals {sorted(unknown)}; known: {sorted(names)}"
            )
        self.weights = {s.name: float(s.default_weight) for s in self.signals}
        self.weights.update(weights or {})

    @classmethod
    def from_settings(cls, settings: Any) -> Ranker:
        """Build from ``RANKING_SIGNALS`` (dotted paths) and ``RANKING_WEIGHTS`` (name ->
        weight) of Django settings, Scrapy settings or a plain mapping."""
        paths = _setting(settings, "RANKING_SIGNALS", DEFAULT_SIGNALS)
        weights = _setting(settings, "RANKING_WEIGHTS", {})
        return cls([_load(path)() for path in paths], weights)

    def context(
        self, hits: Sequence[Hit], query: Any, host_ranks: Mapping[str, float] | None = None
    ) -> RankContext:
        """The per-query context for scoring ``hits``."""
        return RankContext(
            query=QueryInfo.of(query),
            max_text_score=max((h.score for h in hits), default=0.0),
            host_ranks=host_ranks or {},
        )

    def explain(self, hit: Hit, ctx: RankContext) -> dict[str, float]:
        """Each signal's value for ``hit`` (before weighting), by signal name."""
        return {s.name: s.compute(hit, ctx) for s in self.signals}

    def score(self, hit: Hit, ctx: RankContext) -> float:
        """The weighted sum of all signals for ``hit``."""
        return sum(self.weights[s.name] * s.compute(hit, ctx) for s in self.signals)

    def rerank(
        self, hits: Sequence[Hit], query: Any, host_ranks: Mapping[str, float] | None = None
    ) -> list[Hit]:
        """``hits`` as new ``Hit`` objects scored by this ranker, best first (stable)."""
        ctx = self.context(hits, query, host_ranks)
        scored = [dataclasses.replace(h, score=self.score(h, ctx)) for h in hits]
        return sorted(scored, key=lambda h: h.score, reverse=True)


def rerank(
    hits: Sequence[Hit],
    query: Any,
    weights: Mapping[str, float] | None = None,
    host_ranks: Mapping[str, float] | None = None,
) -> list[Hit]:
    """Re-rank a backend's top hits with the default signals; the entry point for backends.

    ``query`` is the query string or its parsed form (with a ``terms`` attribute);
    ``weights`` overrides default weights by signal name (e.g. ``settings.RANKING_WEIGHTS``);
    ``host_ranks`` maps host -> host static rank in [0, 1] (``ScoreStore.host_ranks``).
    Each returned hit's ``score`` is its combined score.
    """
    return Ranker([_load(path)() for path in DEFAULT_SIGNALS], weights).rerank(
        hits, query, host_ranks
    )


def _setting(settings: Any, name: str, default: Any) -> Any:
    if isinstance(settings, Mapping):
        return settings.get(name, default)
    getter = getattr(settings, "get", None)
    if callable(getter) and not hasattr(settings, name):
        return getter(name, default)
    return getattr(settings, name, default)


def _load(path: str) -> type[Signal]:
    module, _, name = path.rpartition(".")
    try:
        return getattr(import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"RANKING_SIGNALS entry {path!r} is not importable: {exc}") from exc
