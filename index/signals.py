"""Ranking signals, each defined once for every engine.

A signal is one small type (Stract's shape): its ``name`` (the key of its weight), its
``stage`` in the score formula (:mod:`index.formula`), the document fields it reads
(``fields``, names in :data:`index.fields.DOC_FIELDS`, computed once in Python at index
time and stored by both engines), its value for one candidate at query time
(:meth:`Signal.value`), and, side by side, how the Elasticsearch engine expresses it
(:meth:`Signal.es_functions`).

The embedded engine finds the top K matches by BM25 and a :class:`Ranker` scores them with
the formula in Python. Elasticsearch finds its top K by BM25 as well and rescores them
(:mod:`index.engines.elasticsearch.paging`); it cannot run Python, so each signal compiles itself
into ``function_score`` functions that :mod:`index.engines.elasticsearch.query` assembles into the
same formula. The same :meth:`Signal.value` explains a hit on both engines (``search(...,
explain=True)``).

Weights are data, and only data: :func:`load_weights` reads ``index/weights.json`` (one
section per engine, for the weights fitted on each; both rank with one formula), over which
the weights ``manage.py train-ranker``
fitted (``batch/learn.py``; ``DATA_DIR/ranking-weights.json``, found by
:func:`weights_file_of`) and a setting may override any of them. A signal declares no
weight of its own; a new signal is one class here, its weight in ``index/weights.json``,
and a contract test.
"""

from __future__ import annotations

import json
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from index.fields import LEAD_FIELD, keyword_key
from index.formula import (
    ADD,
    BOOST,
    DEMOTE,
    TEXT,
    Formula,
    Staged,
    demotion_weight,
    formula_for,
)
from index.query import asks_for_changes, described_sites, names_identifier

if TYPE_CHECKING:
    from index.query import Query

__all__ = [
    "DEFAULT_SIGNALS",
    "FITTED_WEIGHTS_NAME",
    "WEIGHTS_FILE",
    "AllWords",
    "Candidate",
    "ChangelogDemotion",
    "Defines",
    "DefinesName",
    "EsParts",
    "Freshness",
    "LabelMatch",
    "LanguageMatch",
    "Original",
    "Proximity",
    "RankContext",
    "Ranker",
    "Signal",
    "SiteHome",
    "SiteMention",
    "SpamDemotion",
    "StaticRank",
    "TextRelevance",
    "UrlDepth",
    "load_weights",
    "weights_file_of",
]

WEIGHTS_FILE = Path(__file__).with_name("weights.json")
#: The fitted weights ``manage.py train-ranker`` writes under ``DATA_DIR`` (same format).
FITTED_WEIGHTS_NAME = "ranking-weights.json"
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class RankContext:
    """What a query tells the signals, derived once from the parsed query: the sites it
    names or mentions, its language, and the time it runs at. Keyword values are compared
    as :func:`~index.fields.keyword_key` keys, as every engine stores them."""

    query: Query
    language: str
    now: float
    named: frozenset[str]
    mentioned: frozenset[str]
    named_keys: frozenset[int]
    mentioned_keys: frozenset[int]
    language_key: int
    #: The sites the query names and describes, and the terms describing each
    #: (``query.described_sites``): their home pages are the ones whose lead holds them.
    described: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Whether the query asks what changed (``query.asks_for_changes``): release-note
    #: pages then rank as any other (``ChangelogDemotion``).
    changes: bool = False

    @classmethod
    def of(cls, query: Query, default_language: str = "en",
           now: float | None = None) -> RankContext:
        """The context of ``query``; its language is guessed from its text."""
        language = query.language(default_language)
        return cls(
            query=query,
            language=language,
            now=time.time() if now is None else now,
            named=query.named_sites,
            mentioned=query.mentioned_sites,
            named_keys=frozenset(keyword_key(n) for n in query.named_sites),
            mentioned_keys=frozenset(keyword_key(n) for n in query.mentioned_sites),
            language_key=keyword_key(language),
            described=described_sites(query),
            changes=asks_for_changes(query),
        )

    @property
    def asks_for_homes(self) -> bool:
        """Whether the query names or describes a site whose home page it asks for."""
        return bool(self.named or self.described)


@dataclass
class Candidate:
    """One engine match: its text score, the ranking fields its signals read (keywords as
    keys), and the per-query facts the engine found (label match, every word)."""

    ref: Any
    text_score: float
    fields: dict[str, Any] = field(default_factory=dict)
    labelled: bool = False
    #: The share of the query's proximity runs the page holds (``Proximity``).
    near: float = 0.0
    defines: bool = False
    #: The share of the query the page holds as the engine matched it: 1 with every
    #: required word (or as the home page of a site the query names), ``1 - share`` lacking
    #: a minor word whose share of the query's IDF is ``share`` (``Query.lacking``),
    #: ``Query.partial_coverage`` lacking some words of a question, 0 from the any-word
    #: fallback or lacking several words of a long query.
    coverage: float = 1.0
    text_top: float = 0.0
    score: float = 0.0
    #: The engine found the page to be the home page of a site the query describes (its
    #: lead holds the describing words: ``SiteHome.es_filter``, ``SiteHome.describes``).
    home: bool = False

    def get(self, name: str, default: Any = 0) -> Any:
        """A ranking field's value (``default`` when the engine had none)."""
        value = self.fields.get(name)
        return default if value is None else value


def _column(candidates: Sequence[Candidate], name: str, default: Any = 0) -> list:
    """``Candidate.get(name, default)`` of each candidate, in order."""
    return [default if (value := c.fields.get(name)) is None else value
            for c in candidates]


@dataclass(frozen=True)
class EsParts:
    """The parts of an Elasticsearch query that signals filter on: the strict query (every
    word, as written), whether other pages compete with it (relaxed or blended), the
    pages lacking one minor word with that word's share of the query (``Query.lacking``),
    the label filters of the query's words, the filters of pages holding each pair of them
    near each other and the filters of pages defining them."""

    strict: dict
    others_compete: bool
    lacking: tuple[tuple[dict, float], ...] = ()
    label_filters: tuple[dict, ...] = ()
    near_filters: tuple[dict, ...] = ()
    define_filters: tuple[dict, ...] = ()
    #: The coverage of a page matching by coordination alone, lacking some required words
    #: (``Query.partial_coverage``: a question's).
    partial_coverage: float = 0.0


class Signal(ABC):
    """A ranking signal: weighted by ``name``; ``value`` gives it for a candidate."""

    name: ClassVar[str]
    #: Ranking fields (``index.fields.DOC_FIELDS``) the signal reads.
    fields: ClassVar[tuple[str, ...]] = ()
    #: Where the score formula (:mod:`index.formula`) puts it: "text", "boost", "add" or
    #: "demote".
    stage: ClassVar[str] = BOOST

    @abstractmethod
    def value(self, candidate: Candidate, context: RankContext) -> float:
        """The signal's value for ``candidate`` (before weighting)."""

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        """``value`` of each candidate, in order (a signal may compute them in one pass:
        the same values, without a call a candidate)."""
        value = self.value
        return [value(c, context) for c in candidates]

    def column(self) -> Callable[[Sequence[Candidate], RankContext], list[float]]:
        """How the ranker reads the signal's values: ``values``, unless a subclass
        overrides ``value`` below the class that computes ``values`` in one pass (then
        ``value`` a candidate, as it says)."""
        owner = next(c for c in type(self).__mro__ if "value" in vars(c))
        if "values" in vars(owner):
            return self.values
        return partial(Signal.values, self)

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        """This signal as ``function_score`` functions (``filter`` + ``weight``, or a
        function of a field), for Elasticsearch; ``[]`` when the query does not call for
        it."""
        raise NotImplementedError(
            f"The ranking signal {self.name!r} has no Elasticsearch form; add es_functions."
        )


class TextRelevance(Signal):
    """The engine's BM25 score over title, anchors, URL and body, relative to the best
    candidate of the query (1 for the best), so other signals' weights mean the same for
    every query. In Elasticsearch its weight boosts the raw text score."""

    name = "bm25"
    stage = TEXT

    def value(self, candidate: Candidate, context: RankContext) -> float:
        if candidate.text_top <= 0:
            return 0.0
        return max(0.0, candidate.text_score) / candidate.text_top

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        return [0.0 if c.text_top <= 0 else max(0.0, c.text_score) / c.text_top
                for c in candidates]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        return []  # the engine's own score, boosted by the weight


class StaticRank(Signal):
    """The page's static rank from ``update_rank`` (PageRank scaled so the best page is ~1)."""

    name = "pagerank"
    fields = ("pagerank",)
    stage = ADD

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return float(candidate.get("pagerank", 0.0))

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        return [float(v) for v in _column(candidates, "pagerank", 0.0)]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        return [{"field_value_factor": {"field": "pagerank", "missing": 0}, "weight": weight}]


class Freshness(Signal):
    """How recently the page was fetched: a Gaussian decay, 1 now and 0.5 at
    ``scale_days`` (Elasticsearch's ``gauss`` decay function, computed alike here)."""

    name = "freshness"
    fields = ("fetched_at",)
    stage = ADD

    def __init__(self, scale_days: float = 30.0):
        self.scale_s = scale_days * _SECONDS_PER_DAY

    def value(self, candidate: Candidate, context: RankContext) -> float:
        age = abs(context.now - float(candidate.get("fetched_at", 0.0)))
        return math.exp(math.log(0.5) * (age / self.scale_s) ** 2)

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        return [{
            "gauss": {"fetched_at": {"origin": context.now, "scale": self.scale_s,
                                     "decay": 0.5}},
            "weight": weight,
        }]


class SiteHome(Signal):
    """Navigational intent: 1 for the home page of a site the query names (``django docs``
    -> the home page of ``django.*``) or names and describes with words its lead holds
    (``kitty terminal``: ``query.described_sites``, ``fields.home_lead``; the engine marks
    it, ``Candidate.home``), else 0. Engines also retrieve such home pages when their text
    does not match, and rank them whatever their text score: they are always among the
    candidates the signals rank (the embedded engine adds them to its window,
    Elasticsearch ranks them first in the phase its rescore window is taken from)."""

    name = "sitehome"
    fields = ("site_name", "url_depth")

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return float(candidate.home or (candidate.get("url_depth", -1) == 0
                                        and candidate.get("site_name") in context.named_keys))

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        keys = context.named_keys
        return [float(c.home or (depth == 0 and site in keys)) for c, depth, site in zip(
            candidates, _column(candidates, "url_depth", -1),
            _column(candidates, "site_name"), strict=True)]

    @staticmethod
    def describes(context: RankContext, site_key: int, lead: frozenset[str]) -> bool:
        """Whether a home page of the site keyed ``site_key`` whose lead holds the terms
        ``lead`` (``fields.home_lead``) is one the query describes."""
        return any(keyword_key(name) == site_key and lead.issuperset(terms)
                   for name, terms in context.described)

    @staticmethod
    def es_filter(context: RankContext) -> dict | None:
        """The home pages of the sites the query names, and of those it describes whose
        lead holds the describing words (``None`` when it names and describes none)."""
        homes = [{"terms": {"site_name": sorted(context.named)}}] if context.named else []
        homes += [{"bool": {"filter": [{"term": {"site_name": name}},
                                       *({"term": {LEAD_FIELD: t}} for t in terms)]}}
                  for name, terms in context.described]
        if not homes:
            return None
        site = homes[0] if len(homes) == 1 else {"bool": {"should": homes,
                                                          "minimum_should_match": 1}}
        return {"bool": {"filter": [site, {"term": {"url_depth": 0}}]}}

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        home = self.es_filter(context)
        return [] if home is None else [{"filter": home, "weight": weight}]


class LabelMatch(Signal):
    """1 when every query word is in the page's title, anchor text or URL: what the page
    is called and linked as, not only what it mentions."""

    name = "label"

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return 1.0 if candidate.labelled else 0.0

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        return [1.0 if c.labelled else 0.0 for c in candidates]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        if not parts.label_filters:
            return []
        return [{"filter": {"bool": {"filter": list(parts.label_filters)}}, "weight": weight}]


class Defines(Signal):
    """1 when the page's headings or definition terms (``<dt>``) hold every word of a
    short query (``Query.defined_words``): the page that defines ``os.path.join`` or
    ``AllowOverride`` rather than one that mentions it."""

    name = "defines"

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return 1.0 if candidate.defines else 0.0

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        return [1.0 if c.defines else 0.0 for c in candidates]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        if not parts.define_filters:
            return []
        return [{"filter": {"bool": {"filter": list(parts.define_filters)}}, "weight": weight}]


class DefinesName(Defines):
    """1 when the page's headings or definition terms hold the identifier a query names
    (``query.names_identifier``: ``GENERATE_TREEVIEW``, ``psycopg2.extras.execute_values``),
    on top of ``Defines``: a reference that defines hundreds of names on one long page
    scores a low text score for any one of them (BM25's length normalisation), below the
    short pages that merely mention it. ``Defines`` gated on the query."""

    name = "defines_name"

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return super().value(candidate, context) if names_identifier(context.query) else 0.0

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        if not names_identifier(context.query):
            return [0.0] * len(candidates)
        return super().values(candidates, context)

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        if not names_identifier(context.query):
            return []
        return super().es_functions(context, weight, parts)


class Proximity(Signal):
    """The share of the query's proximity runs (``Query.near_groups``: each pair of adjacent
    required words) the page holds within ``Query.near_slop`` in its title or body: the page
    about "ignore files in git" rather than a long one that has each word somewhere. In
    Elasticsearch one filter per run, each weighted by the weight's share."""

    name = "near"

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return float(candidate.near)

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        return [float(c.near) for c in candidates]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        if not parts.near_filters:
            return []
        share = weight / len(parts.near_filters)
        return [{"filter": f, "weight": share} for f in parts.near_filters]


class SiteMention(Signal):
    """1 for a page of a site the query names among other words (``requests session`` ->
    pages of ``requests.*``), else 0."""

    name = "site"
    fields = ("site_name",)

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return float(candidate.get("site_name") in context.mentioned_keys)

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        keys = context.mentioned_keys
        return [float(site in keys) for site in _column(candidates, "site_name")]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        if not context.mentioned:
            return []
        return [{"filter": {"terms": {"site_name": sorted(context.mentioned)}},
                 "weight": weight}]


class LanguageMatch(Signal):
    """How well the page's language fits the query's: 1 the same, 0.5 unknown, 0 another.
    Translations share names and commands (``nfs``, ``samba``), so text alone cannot tell
    them apart."""

    name = "lang"
    fields = ("lang",)

    def value(self, candidate: Candidate, context: RankContext) -> float:
        key = candidate.get("lang", 0)
        if not key:
            return 0.5
        return 1.0 if key == context.language_key else 0.0

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        language = context.language_key
        return [(1.0 if key == language else 0.0) if key else 0.5
                for key in _column(candidates, "lang")]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        return [
            {"filter": {"term": {"lang": context.language}}, "weight": weight},
            {"filter": {"term": {"lang": ""}}, "weight": weight / 2},
        ]


class Original(Signal):
    """1 unless the page is a copy in another language's tree (``fields.is_language_copy``):
    of a page and its copies, which say the same, the original is the one shown."""

    name = "original"
    fields = ("lang_copy",)

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return 0.0 if candidate.get("lang_copy", 0) else 1.0

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        return [0.0 if copy else 1.0 for copy in _column(candidates, "lang_copy")]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        return [{"filter": {"term": {"lang_copy": 0}}, "weight": weight}]


class AllWords(Signal):
    """The share of the query a page holds (``Candidate.coverage``): 1 for a page matching
    it as asked (every word, or the home page of the site it names), ``1 - share`` for one
    lacking a minor word whose share of the query's IDF is ``share`` (the coordination
    factor its text score already bears, ``Query.lacking``), ``Query.partial_coverage``
    for one holding some but not all words of a question, 0 for one brought in by the
    any-word fallback: a page lacking only a common word (``python`` in a question about a
    dataclass) keeps most of the bonus, one lacking the topic's word none of it."""

    name = "allwords"

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return max(0.0, min(1.0, float(candidate.coverage)))

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        return [max(0.0, min(1.0, float(c.coverage))) for c in candidates]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        if not parts.others_compete:
            return [{"weight": weight}]  # every page matches as asked
        home = SiteHome.es_filter(context)
        asked = parts.strict if home is None else {
            "bool": {"should": [parts.strict, home], "minimum_should_match": 1}}
        # A page matches at most one of these: each lacking clause excludes the pages
        # holding all the words and the other clauses' pages (each lacks another word).
        functions = [{"filter": asked, "weight": weight}] + [
            {"filter": lacking if home is None else
             {"bool": {"filter": [lacking], "must_not": [home]}},
             "weight": weight * (1.0 - share)}
            for lacking, share in parts.lacking]
        if parts.partial_coverage:  # a question's pages lacking some of its words
            functions.append({"filter": {"bool": {"must_not": [asked]}},
                              "weight": weight * parts.partial_coverage})
        return functions


class SpamDemotion(Signal):
    """Spam pages rank lower: the page's spam score from the crawl (``crawler.quality.judges``:
    keyword stuffing, hidden text, doorways, link farms; 0 for a page that trips no rule)
    multiplies the page's score by ``1 - weight * spam``. A page with no spam signal keeps
    its score exactly, so ranking among such pages does not change. In Elasticsearch the
    factor is a ``linear`` decay on the ``spam`` field (1 at 0, ``1 - weight`` at 1), applied
    only to pages with a score above 0."""

    name = "spam"
    fields = ("spam",)
    stage = DEMOTE

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return min(1.0, max(0.0, float(candidate.get("spam", 0.0))))

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        return [min(1.0, max(0.0, float(spam))) for spam in _column(candidates, "spam", 0.0)]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        keep = 1.0 - demotion_weight(weight)  # the factor at spam 1 (decay must be > 0)
        return [{"filter": {"range": {"spam": {"gt": 0}}},
                 "linear": {"spam": {"origin": 0, "scale": 1, "decay": keep}}}]


class ChangelogDemotion(Signal):
    """A change log, release notes or "what's new" page (``fields.is_changelog``) ranks
    below the pages documenting what it mentions: it names every option and function a
    release touched, many times (LAME's ``history.html`` says ``--nogap`` more often than
    the switches page defining it), so its text score passes theirs. Its score is
    multiplied by ``1 - weight``, unless the query asks what changed
    (``query.asks_for_changes``: ``lame changelog``, ``what's new in 3.100``).
    Elasticsearch: a ``filter`` on ``changelog`` with that factor as its weight."""

    name = "changelog"
    fields = ("changelog",)
    stage = DEMOTE

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return 0.0 if context.changes else float(bool(candidate.get("changelog", 0)))

    def values(self, candidates: Sequence[Candidate], context: RankContext) -> list[float]:
        if context.changes:
            return [0.0] * len(candidates)
        return [float(bool(v)) for v in _column(candidates, "changelog")]

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        if context.changes:
            return []
        return [{"filter": {"term": {"changelog": 1}},
                 "weight": 1.0 - demotion_weight(weight)}]


class UrlDepth(Signal):
    """How near its site's root a page is: ``0.5 ** url_depth`` (1 for a home page, 0.5 a
    level down), so overview pages can outrank deep reference pages that hold the same
    words. Elasticsearch: an ``exp`` decay of ``url_depth`` from 0, halving per level.
    Weighted 0 by hand; ``manage.py train-ranker`` fits it."""

    name = "depth"
    fields = ("url_depth",)
    stage = ADD
    #: The value's factor per level.
    decay = 0.5

    def value(self, candidate: Candidate, context: RankContext) -> float:
        return self.decay ** max(0, int(candidate.get("url_depth", 0)))

    def es_functions(self, context: RankContext, weight: float, parts: EsParts) -> list[dict]:
        return [{"exp": {"url_depth": {"origin": 0, "scale": 1, "decay": self.decay}},
                 "weight": weight}]


DEFAULT_SIGNALS: tuple[Signal, ...] = (
    TextRelevance(),
    StaticRank(),
    Freshness(),
    SiteHome(),
    LabelMatch(),
    Defines(),
    DefinesName(),
    Proximity(),
    SiteMention(),
    LanguageMatch(),
    Original(),
    AllWords(),
    UrlDepth(),
    SpamDemotion(),
    ChangelogDemotion(),
)


def _read_weights(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"Cannot read ranking weights from {path}: {exc}") from exc


def load_weights(engine: str, path: str | Path | None = None) -> dict[str, float]:
    """The weights of ``engine`` ("embedded" or "elasticsearch"): ``index/weights.json``,
    the only source, with ``path``'s section for the engine (a fitted file) over it."""
    data = _read_weights(WEIGHTS_FILE)
    weights = {name: float(w) for name, w in data[engine].items()} if engine in data else {}
    if path is not None and Path(path).resolve() != WEIGHTS_FILE.resolve():
        other = _read_weights(Path(path))
        if engine not in other:
            raise ValueError(f"{path} has no weights for the {engine!r} engine; "
                             f"it has {sorted(k for k in other if not k.startswith('_'))}.")
        weights.update({name: float(w) for name, w in other[engine].items()})
    elif engine not in data:
        raise ValueError(f"{WEIGHTS_FILE} has no weights for the {engine!r} engine; "
                         f"it has {sorted(k for k in data if not k.startswith('_'))}.")
    return weights


def weights_file_of(setting: str | Path | None, data_dir: Path | None) -> Path | None:
    """The weights file an engine loads: ``SEARCH_WEIGHTS_FILE`` when set, else the fitted
    file of ``data_dir`` (:data:`FITTED_WEIGHTS_NAME`) when there is one, else ``None``:
    the hand weights of :data:`WEIGHTS_FILE`, the fallback."""
    if setting:
        return Path(setting)
    if data_dir is not None:
        fitted = Path(data_dir) / FITTED_WEIGHTS_NAME
        if fitted.is_file():
            return fitted
    return None


class Ranker:
    """The weighted signals of one engine and its score formula: scores candidates
    (embedded) and explains hits (both engines)."""

    def __init__(
        self,
        signals: Sequence[Signal],
        weights: Mapping[str, float],
        engine: str = "embedded",
    ):
        weights = dict(weights)
        names = {s.name for s in signals}
        unknown = set(weights) - names
        if unknown:
            raise ValueError(
                f"Unknown ranking signal(s) {sorted(unknown)}; known: {sorted(names)}."
            )
        missing = sorted(names - set(weights))
        if missing:
            raise ValueError(f"No weight for the ranking signal(s) {missing}: add them to "
                             f"the {engine!r} section of {WEIGHTS_FILE}, or pass them as "
                             "rank_weights.")
        self.engine = engine
        self.formula: Formula = formula_for(engine)
        self.signals = tuple(signals)
        self.weighted = [(s, float(weights[s.name])) for s in signals]
        self.staged: Staged = self.formula.staged(self.weighted)
        self._active = [(s, w) for s, w in self.weighted if w]
        self._stages = [s.stage for s, _ in self._active]
        self._columns = [s.column() for s, _ in self._active]
        self._weights = np.array([w for _, w in self._active], dtype=float)
        self._by_name = {s.name: w for s, w in self.weighted}
        self._fields = tuple(dict.fromkeys(f for s, w in self.weighted if w for f in s.fields))

    @classmethod
    def for_engine(cls, engine: str, signals: Sequence[Signal] | None = None,
                   overrides: Mapping[str, float] | None = None,
                   weights_file: str | Path | None = None) -> Ranker:
        """The ranker of ``engine``: its weights from the weights files (for the signals in
        use), then ``overrides`` (a setting)."""
        signals = tuple(signals or DEFAULT_SIGNALS)
        names = {s.name for s in signals}
        weights = {k: v for k, v in load_weights(engine, weights_file).items() if k in names}
        return cls(signals, {**weights, **(overrides or {})}, engine)

    @property
    def weights(self) -> dict[str, float]:
        """The weight in use for each signal, by name."""
        return dict(self._by_name)

    def weight(self, name: str) -> float:
        """The weight of the signal called ``name`` (0 when it is not in use)."""
        return self._by_name.get(name, 0.0)

    @property
    def fields(self) -> tuple[str, ...]:
        """The ranking fields the weighted signals read."""
        return self._fields

    def rank(self, candidates: list[Candidate], context: RankContext) -> list[Candidate]:
        """``candidates`` with ``score`` set by the formula, sorted by score, ties kept in
        engine order."""
        if not candidates:
            return candidates
        top = max(c.text_score for c in candidates)
        for c in candidates:
            c.text_top = top
        # Signal by signal (``Signal.values``), laid out candidate by candidate as before.
        values = np.ascontiguousarray(
            np.array([values(candidates, context) for values in self._columns],
                     dtype=float).reshape(len(self._active), len(candidates)).T)
        text = np.array([c.text_score for c in candidates], dtype=float)
        scores = self.formula.scores(self._stages, self._weights, values, text)
        for c, score in zip(candidates, scores.tolist(), strict=True):
            c.score = score
        candidates.sort(key=lambda c: c.score, reverse=True)
        return candidates

    def explain(self, candidate: Candidate, context: RankContext) -> dict[str, dict]:
        """Each signal's ``value``, ``weight`` and ``contribution`` (weight × value) for a
        candidate; the text signal also gives the engine's own text score (``raw``), which
        Elasticsearch's formula uses (what ``batch.learn`` fits on); a ``demote`` signal
        gives ``-weight × value`` as its contribution (the share of the score it takes
        away) and its ``factor`` (1 - weight × value)."""
        out = {}
        for signal, weight in self.weighted:
            value = signal.value(candidate, context)
            if signal.stage == DEMOTE:
                out[signal.name] = {"value": round(value, 6), "weight": weight,
                                    "contribution": round(-weight * value, 6),
                                    "factor": round(float(self.formula.factor(weight, value)),
                                                    6)}
                continue
            out[signal.name] = {"value": round(value, 6), "weight": weight,
                                "contribution": round(weight * value, 6)}
            if signal.stage == TEXT:
                out[signal.name]["raw"] = round(candidate.text_score, 6)
        return out
