"""The Elasticsearch search backend: versioned indices behind an alias, fed by bulk streaming.

Index design (see docs/elasticsearch.md):

- Text is analyzed in Python by :mod:`index.analysis`, the code the embedded index uses, and
  reaches Elasticsearch as space-joined terms in ``whitespace``-analyzed text fields
  (``title``, ``body``, ``anchors``, ``url``). Only core analyzers are used, so the design
  runs on the minimal integ-test server and unchanged on a full cluster.
- ``site`` holds the host and its parent domains (keyword) for ``site:``; ``host``,
  ``cluster`` (the collapse key), ``lang`` are keywords; ``fetched_at`` and ``pagerank`` are
  numeric. When the cluster has the mapper-extras module, ``pagerank_rf`` is also a
  ``rank_feature`` and the static rank uses a ``rank_feature`` query; otherwise a
  ``function_score`` over ``pagerank``. A ``gauss`` decay on ``fetched_at`` favours fresh pages.
- The embedded ranker's query signals, without scripts: ``site_name`` (keyword) and
  ``url_depth`` (integer) are computed in Python; site home, label, site mention, language
  and every-word are ``filter`` + ``weight`` functions of a ``function_score`` that
  multiplies the text score by ``1 + sum(weights)``; compounds of the query's words are
  ``should`` clauses; pages lacking one minor word are ``should`` alternatives (their IDF
  from one ``filters`` aggregation); the any-word fallback is a second request.
- ``doc`` keeps the whole :class:`~index.base.Document` (not indexed) for hits, snippets,
  ``get`` and rebuilds; the analyzed fields are left out of ``_source`` to keep it small.
- Writes go to the alias ``<prefix>``, which points to one versioned index
  ``<prefix>-v<N>``; :meth:`ElasticsearchBackend.reindex` builds ``v<N+1>`` from the stored
  documents and swaps the alias atomically.

Snippets come from :mod:`index.snippets` over the stored text (HTML-escaped, words marked by
their analyzed term), because Elasticsearch's highlighter would only see the stemmed terms.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import ApiError, Elasticsearch, NotFoundError

from crawler.config import Config, get_config
from index.analysis import (
    WORD_RE,
    analyze,
    compound_terms,
    host_suffixes,
    normalize,
    normalize_host,
    query_language,
)
from index.base import (
    Document,
    Hit,
    Results,
    SearchBackend,
    host_matches,
    host_pattern_suffix,
)
from index.embedded import (
    DEFAULT_COMPOUND_FIELDS,
    DEFAULT_FIELD_WEIGHTS,
    MAX_BLEND_WORDS,
    FieldWeights,
    mentioned_site_names,
    query_site_names,
    settings_to_options,
    site_name,
    url_depth,
)
from index.es_bulk import BulkWriter, Stats, action_version
from index.query import And, Node, Not, Or, Phrase, Query, Site, Term, parse
from index.scoring import Ranker
from index.snippets import build_snippet

__all__ = ["ElasticsearchBackend", "QueryCompiler", "mappings", "options_from_settings"]

logger = logging.getLogger(__name__)

_TEXT_FIELDS = ("title", "body", "anchors", "url")
_ANALYZED = [*_TEXT_FIELDS, "suggest", "site"]
_HIT_SOURCE = [f"doc.{f}" for f in ("id", "url", "host", "title", "body", "description")] + [
    "doc.cluster_id",
    "doc.pagerank",
]
_SECONDS_PER_DAY = 86_400.0
# Ties in score break by id, so from/size pages and search_after walks agree.
_RANK_ORDER = [{"_score": "desc"}, {"id": "asc"}]

#: Signal weights where they differ from the signals' defaults. Signals multiply the raw
#: text score here, so the home page of a named site needs a large factor to come first
#: as it does in the embedded ranker (whose text score is at most 1).
DEFAULT_RANK_WEIGHTS = {"sitehome": 100.0}

# Setting name -> (constructor option, type); defaults live in ElasticsearchBackend.__init__.
SETTINGS = {
    "ES_INDEX_PREFIX": ("index_prefix", str),
    "ES_SHARDS": ("shards", int),
    "ES_REPLICAS": ("replicas", int),
    "ES_REFRESH_INTERVAL": ("refresh_interval", str),
    "ES_QUERY_TIMEOUT": ("query_timeout", str),
    "ES_REQUEST_TIMEOUT_S": ("request_timeout_s", float),
    "ES_MAX_WINDOW": ("max_window", int),
    "ES_TRACK_TOTAL_HITS": ("track_total_hits", int),
    "ES_FIELD_WEIGHTS": ("field_weights", dict),
    "ES_RANK_WEIGHTS": ("rank_weights", dict),
    "ES_FRESHNESS_WEIGHT": ("freshness_weight", float),
    "ES_FRESHNESS_SCALE_DAYS": ("freshness_scale_days", float),
    "ES_SUGGEST_BODY_CHARS": ("suggest_body_chars", int),
    "ES_MIN_STRICT_HITS": ("min_strict_hits", int),
    "ES_BLEND_WORDS": ("blend_words", int),
    "ES_BLEND_BELOW": ("blend_below", int),
    "SEARCH_LANGUAGE": ("language", str),
    "ES_BULK_DOCS": ("bulk_docs", int),
    "ES_BULK_BYTES": ("bulk_bytes", int),
    "ES_BULK_INTERVAL_S": ("bulk_interval_s", float),
    "ES_BULK_QUEUE_BYTES": ("bulk_queue_bytes", int),
    "ES_BULK_MAX_RETRIES": ("bulk_max_retries", int),
}


def options_from_settings(settings: Any) -> dict:
    """Constructor options from a Scrapy/Django settings object or a mapping (``ES_*`` names)."""
    return settings_to_options(settings, SETTINGS)


def mappings(rank_feature: bool) -> dict:
    """The index mapping; ``rank_feature`` adds ``pagerank_rf`` (needs mapper-extras)."""
    text = {"type": "text", "analyzer": "whitespace", "similarity": "BM25"}
    properties: dict[str, dict] = {name: dict(text) for name in _TEXT_FIELDS}
    properties["suggest"] = {"type": "text", "analyzer": "whitespace", "norms": False}
    properties.update(
        {
            "id": {"type": "keyword"},
            "site": {"type": "keyword", "norms": False},
            "host": {"type": "keyword"},
            "cluster": {"type": "keyword"},
            "cluster_id": {"type": "keyword"},
            "lang": {"type": "keyword"},
            "site_name": {"type": "keyword"},
            "url_depth": {"type": "integer"},
            "fetched_at": {"type": "double"},
            "pagerank": {"type": "float"},
            "indexed_at": {"type": "long"},
            "doc": {"type": "object", "enabled": False},
        }
    )
    if rank_feature:
        properties["pagerank_rf"] = {"type": "rank_feature"}
    return {
        "dynamic": "strict",
        "_source": {"excludes": _ANALYZED},
        "properties": properties,
    }


class QueryCompiler:
    """Compiles the shared query AST to the Elasticsearch query DSL."""

    def __init__(
        self,
        field_weights: FieldWeights = DEFAULT_FIELD_WEIGHTS,
        compound_fields: FieldWeights = DEFAULT_COMPOUND_FIELDS,
    ):
        self.field_weights = field_weights
        self.fields = [f"{name}^{weight:g}" for name, weight in field_weights.items()]
        self.compound_fields = compound_fields

    def label(self, node: Node) -> dict:
        """Pages whose title, anchor text or URL hold a word or phrase (a filter)."""
        if isinstance(node, Term):
            return _label_match(node.term, "best_fields")
        return _label_match(" ".join(node.terms), "phrase")

    def compound(self, term: str) -> dict:
        """A compound term of the query's words in the compound fields, scored."""
        return {
            "multi_match": {
                "query": term,
                "type": "best_fields",
                "fields": [f"{f}^{w:g}" for f, w in self.compound_fields.items()],
                "tie_breaker": self.compound_fields.tie_breaker,
                "analyzer": "whitespace",
            }
        }

    def compile(self, node: Node) -> dict:
        """The DSL query matching exactly the documents ``node`` matches."""
        if isinstance(node, Term):
            return self._multi_match(node.term, "best_fields")
        if isinstance(node, Phrase):
            return self._multi_match(" ".join(node.terms), "phrase")
        if isinstance(node, Site):
            return {"term": {"site": node.host}}
        if isinstance(node, Or):
            return {
                "bool": {
                    "should": [self.compile(c) for c in node.children],
                    "minimum_should_match": 1,
                }
            }
        if isinstance(node, Not):
            return {"bool": {"must_not": [self.compile(node.child)]}}
        if isinstance(node, And):
            must = [self.compile(c) for c in node.children if not isinstance(c, Not)]
            must_not = [self.compile(c.child) for c in node.children if isinstance(c, Not)]
            clause: dict = {"must": must}
            if must_not:
                clause["must_not"] = must_not
            return {"bool": clause}
        raise TypeError(f"Not a query node: {node!r}")

    def _multi_match(self, text: str, kind: str) -> dict:
        return {
            "multi_match": {
                "query": text,
                "type": kind,
                "fields": self.fields,
                "tie_breaker": self.field_weights.tie_breaker,
                "analyzer": "whitespace",
            }
        }


class ElasticsearchBackend(SearchBackend):
    """Documents in an alias-versioned Elasticsearch index; writes streamed losslessly."""

    def __init__(
        self,
        hosts: str | list[str],
        *,
        index_prefix: str = "websearch",
        shards: int = 1,
        replicas: int = 0,
        refresh_interval: str = "1s",
        field_weights: FieldWeights = DEFAULT_FIELD_WEIGHTS,
        rank_weights: Mapping[str, float] | None = None,
        freshness_weight: float = 0.5,
        freshness_scale_days: float = 30.0,
        query_timeout: str = "2s",
        request_timeout_s: float = 30.0,
        max_window: int = 10_000,
        track_total_hits: int = 10_000,
        suggest_body_chars: int = 2000,
        snippet_chars: int = 220,
        min_strict_hits: int = 1,
        blend_words: int = 3,
        blend_below: int = 300,
        max_missing_share: float = 0.5,
        compound_fields: FieldWeights = DEFAULT_COMPOUND_FIELDS,
        language: str = "en",
        spool_dir: str | Path | None = None,
        bulk_docs: int = 500,
        bulk_bytes: int = 5_000_000,
        bulk_interval_s: float = 1.0,
        bulk_queue_bytes: int = 50_000_000,
        bulk_max_retries: int = 4,
        crawler_stats=None,
        client: Elasticsearch | None = None,
        config: Config | None = None,
    ):
        if isinstance(hosts, str):
            hosts = [h.strip() for h in hosts.split(",") if h.strip()]
        self.hosts = hosts
        self.alias = index_prefix
        self.shards = shards
        self.replicas = replicas
        self.refresh_interval = refresh_interval
        self.compiler = QueryCompiler(field_weights, compound_fields)
        weights = Ranker(weights={**DEFAULT_RANK_WEIGHTS, **(rank_weights or {})}).weights
        self.text_weight = weights.get("bm25", 1.0)
        self.rank_weight = weights.get("pagerank", 0.0)
        self.weights = weights
        self.min_strict_hits = min_strict_hits
        self.blend_words = blend_words
        self.blend_below = blend_below
        self.max_missing_share = max_missing_share
        self.language = language
        self.freshness_weight = freshness_weight
        self.freshness_scale_s = freshness_scale_days * _SECONDS_PER_DAY
        self.query_timeout = query_timeout
        self.max_window = max_window
        self.track_total_hits = track_total_hits
        self.suggest_body_chars = suggest_body_chars
        self.snippet_chars = snippet_chars
        # A node that dies mid-request is retried on another one: queries keep answering.
        self.client = client or Elasticsearch(
            hosts,
            request_timeout=request_timeout_s,
            max_retries=3,
            retry_on_timeout=True,
        )
        if spool_dir is None:
            spool_dir = (config or get_config()).data_dir / "es-spool" / index_prefix
        self.stats_ = Stats(crawler_stats)
        self.writer = BulkWriter(
            self.client,
            spool_dir,
            max_docs=bulk_docs,
            max_bytes=bulk_bytes,
            interval_s=bulk_interval_s,
            queue_bytes=bulk_queue_bytes,
            max_retries=bulk_max_retries,
            request_timeout_s=max(request_timeout_s, 60.0),
            stats=self.stats_,
            on_reconnect=self._ensure_index,
        )
        self._rank_feature: bool | None = None

    @classmethod
    def from_config(cls, config: Config, settings: Any = None, **options) -> ElasticsearchBackend:
        """The backend for ``config.elasticsearch_url`` (comma-separated node URLs)."""
        if not config.elasticsearch_url:
            raise ValueError("ELASTICSEARCH_URL is not set; use the embedded backend instead.")
        merged = options_from_settings(settings) if settings is not None else {}
        merged.update(options)
        return cls(config.elasticsearch_url, config=config, **merged)

    # --- index lifecycle --------------------------------------------------------------

    def _cluster_has_rank_feature(self) -> bool:
        nodes = self.client.nodes.info(metric="plugins")["nodes"].values()
        return all(
            any(m["name"] == "mapper-extras" for m in node.get("modules", [])) for node in nodes
        )

    def _index_body(self) -> dict:
        return {
            "settings": {
                "number_of_shards": self.shards,
                "number_of_replicas": self.replicas,
                "refresh_interval": self.refresh_interval,
            },
            "mappings": mappings(self._cluster_has_rank_feature()),
        }

    def current_index(self) -> str | None:
        """The concrete index the alias points to, or ``None`` before ``ensure_index``."""
        try:
            names = list(self.client.indices.get_alias(name=self.alias))
        except NotFoundError:
            return None
        return max(names, key=_version_of) if names else None

    def ensure_index(self) -> None:
        """Create ``<prefix>-v1`` behind the alias unless the alias exists; idempotent.

        With the cluster unreachable, writes are spooled and the index is created as soon
        as the cluster answers, before the spool is replayed.
        """
        try:
            self._ensure_index()
        except (TransportConnectionError, ConnectionTimeout):
            logger.warning(
                "Elasticsearch at %s is unreachable; documents are spooled to %s until it "
                "answers (scripts/services.sh status)",
                ",".join(self.hosts),
                self.writer.spool_dir,
            )
            self.writer.mark_unavailable()

    def _ensure_index(self) -> None:
        if self.current_index() is not None:
            return
        try:
            self.client.indices.create(
                index=f"{self.alias}-v1",
                aliases={self.alias: {"is_write_index": True}},
                wait_for_active_shards="1",
                **self._index_body(),
            )
        except ApiError as exc:
            if exc.error != "resource_already_exists_exception":
                raise
        self._rank_feature = None

    def uses_rank_feature(self) -> bool:
        """Whether the current index scores static rank with a ``rank_feature`` field."""
        if self._rank_feature is None and not self.writer.available:
            return False  # asked again once the cluster is back
        if self._rank_feature is None:
            mapping = self.client.indices.get_mapping(index=self.alias)
            self._rank_feature = any(
                "pagerank_rf" in m["mappings"].get("properties", {}) for m in mapping.values()
            )
        return self._rank_feature

    def close(self) -> None:
        """Send what is queued (the rest stays spooled) and close the connections."""
        self.writer.close()
        self.client.close()

    def drop(self) -> None:
        """Delete the alias and every versioned index of this prefix (tests, benchmarks)."""
        self.writer.flush()
        self.client.options(ignore_status=404).indices.delete(
            index=f"{self.alias}-v*", expand_wildcards="all"
        )

    # --- writes -----------------------------------------------------------------------

    def _source(self, doc: Document, rank_feature: bool) -> dict:
        if not doc.host:
            doc.host = normalize_host(doc.url)
        source = {
            "id": doc.id,
            "title": " ".join(analyze(doc.title)),
            "body": " ".join(analyze(doc.body or doc.description)),
            "anchors": " ".join(analyze(doc.anchors)),
            "url": " ".join(analyze(doc.url.split("://", 1)[-1])),
            "suggest": " ".join(self._suggest_words(doc)),
            "site": host_suffixes(doc.host),
            "host": doc.host,
            "cluster": doc.cluster_id or doc.id,
            "cluster_id": doc.cluster_id,
            "lang": doc.lang.strip().lower().replace("_", "-").split("-")[0],
            "site_name": site_name(doc.host),
            "url_depth": url_depth(doc.url),
            "fetched_at": float(doc.fetched_at),
            "pagerank": float(doc.pagerank),
            "doc": doc.to_dict(),
        }
        if rank_feature and doc.pagerank > 0:
            source["pagerank_rf"] = float(doc.pagerank)
        return source

    def _suggest_words(self, doc: Document) -> list[str]:
        """Normalized, unstemmed words for "did you mean": what users can be offered."""
        text = " ".join(
            (doc.title, doc.anchors, (doc.body or doc.description)[: self.suggest_body_chars])
        )
        return WORD_RE.findall(normalize(text))

    def index(self, docs: Iterable[Document]) -> int:
        """Queue documents for bulk indexing by id (blocks when the queue is full)."""
        rank_feature = self.uses_rank_feature()
        count = 0
        for doc in docs:
            version = action_version()
            source = self._source(doc, rank_feature)
            source["indexed_at"] = version
            self.writer.add(
                {
                    "index": {
                        "_index": self.alias,
                        "_id": doc.id,
                        "version": version,
                        "version_type": "external",
                        "require_alias": True,
                    }
                },
                source,
            )
            count += 1
        return count

    def delete(self, ids: Iterable[str]) -> int:
        """Queue deletions by id; unknown ids are ignored."""
        count = 0
        for doc_id in ids:
            self.writer.add(
                {
                    "delete": {
                        "_index": self.alias,
                        "_id": doc_id,
                        "version": action_version(),
                        "version_type": "external",
                        "require_alias": True,
                    }
                }
            )
            count += 1
        return count

    def delete_by_host(self, pattern: str) -> int:
        """Remove the documents whose host matches ``pattern``, refreshed; returns how many."""
        from elasticsearch import helpers

        self.refresh()
        suffix = host_pattern_suffix(pattern)
        query = {"term": {"site": suffix}} if suffix else {"match_all": {}}
        ids = [
            hit["_id"]
            for hit in helpers.scan(
                self.client, index=self.alias, query={"query": query}, _source=["host"]
            )
            if host_matches(hit["_source"].get("host", ""), pattern)
        ]
        self.delete(ids)
        self.refresh()
        return len(ids)

    def update_rank(self, scores: Mapping[str, float]) -> int:
        """Set ``pagerank`` of stored documents (re-indexed from ``doc``); returns how many."""
        self.writer.flush()  # documents still queued must be read back with their new rank
        changed = 0
        ids = list(scores)
        for start in range(0, len(ids), 1000):
            docs = list(self._get_many(ids[start : start + 1000]))
            for doc in docs:
                doc.pagerank = float(scores[doc.id])
            changed += self.index(docs)
        return changed

    def refresh(self) -> None:
        """Send everything queued and make it searchable; raises if the cluster is down."""
        if not self.writer.flush():
            raise ConnectionError(
                "Elasticsearch is unreachable; writes are spooled and will be sent when it "
                "is back (check scripts/services.sh status)."
            )
        self.client.indices.refresh(index=self.alias)

    # --- reads ------------------------------------------------------------------------

    def _get_many(self, ids: list[str]) -> Iterator[Document]:
        if not ids:
            return
        response = self.client.mget(index=self.alias, ids=ids, source=["doc"])
        for found in response["docs"]:
            if found.get("found"):
                yield Document.from_dict(found["_source"]["doc"])

    def get(self, doc_id: str) -> Document | None:
        """The stored document with this id, or ``None``."""
        return next(self._get_many([doc_id]), None)

    def stats(self) -> dict:
        """``docs`` (searchable), ``bytes`` of primaries, ``total_bytes``, the writer's state."""
        stats = self.client.indices.stats(index=self.alias, metric=["docs", "store"])["_all"]
        return {
            "docs": stats["primaries"]["docs"]["count"],
            "bytes": stats["primaries"]["store"]["size_in_bytes"],
            "total_bytes": stats["total"]["store"]["size_in_bytes"],
            "index": self.current_index(),
            "pending": self.writer.pending,
            "spooled_files": self.writer.spooled_files,
            **{k: v for k, v in self.stats_.values.items()},
        }

    def _matching(
        self, parsed: Query, relaxed: bool, idf: list[float] | None
    ) -> tuple[dict, list[dict]]:
        """The query for the pages to rank and the ``allwords`` function that goes with it.

        Strict: every word. ``relaxed`` (the any-word fallback): any word, pages with every
        word scored up. With ``idf`` (a plain query of ``blend_words`` words or more): also
        the pages lacking one minor word, their text score times the share of the query's
        IDF they cover, pages with every word scored up.
        """
        strict = self.compiler.compile(parsed.root)
        words = _plain_words(parsed.root)
        weight = self.weights.get("allwords", 0.0)
        if relaxed and len(words) > 1:
            query = {
                "bool": {
                    "should": [self.compiler.compile(w) for w in words],
                    "minimum_should_match": 1,
                }
            }
            return query, [{"filter": strict, "weight": weight}] if weight else []
        if not idf:
            return strict, []
        total = sum(idf) or 1.0
        compiled = [self.compiler.compile(w) for w in words]
        alternatives = [strict]
        for i, missing in enumerate(compiled):
            share = idf[i] / total
            if share > self.max_missing_share:
                continue
            others = [c for j, c in enumerate(compiled) if j != i]
            # boost: Lucene's coordination factor, the text score times the share covered
            alternatives.append(
                {"bool": {"must": others, "must_not": [missing], "boost": 1 - share}}
            )
        if len(alternatives) == 1:
            return strict, []
        query = {"bool": {"should": alternatives, "minimum_should_match": 1}}
        return query, [{"filter": strict, "weight": weight}] if weight else []

    def _signals(self, parsed: Query, query: dict, all_words: list[dict]) -> dict:
        """``query`` scored by the ranking signals the query calls for, as a multiplier of
        its text score (``1 + sum(weight)`` of the signals a page has), so a weight means
        the same share of the text score as in the embedded ranker. Compounds of the
        query's words add to the text score; the home page of a site the query names
        matches even without the words."""
        words = _plain_words(parsed.root)
        compounds = (
            compound_terms([w.word for w in words])
            if words and all(isinstance(w, Term) for w in words)
            and self.compiler.compound_fields.items()
            else []
        )
        if compounds:
            query = {
                "bool": {
                    "must": [query],
                    "should": [self.compiler.compound(c) for c in compounds],
                }
            }
        weights = self.weights
        functions: list[dict] = []
        named = sorted(query_site_names(parsed.raw))
        if named and weights.get("sitehome"):
            home = {
                "bool": {
                    "filter": [{"terms": {"site_name": named}}, {"term": {"url_depth": 0}}]
                }
            }
            query = {
                "bool": {
                    "should": [query, {"constant_score": {"filter": home, "boost": 1.0}}],
                    "minimum_should_match": 1,
                }
            }
            functions.append({"filter": home, "weight": weights["sitehome"]})
        labelled = [
            w for w in (getattr(parsed.root, "children", None) or [parsed.root])
            if isinstance(w, Term | Phrase)
        ]
        if labelled and isinstance(parsed.root, Term | Phrase | And) and weights.get("label"):
            functions.append(
                {
                    "filter": {"bool": {"filter": [self.compiler.label(w) for w in labelled]}},
                    "weight": weights["label"],
                }
            )
        mentioned = sorted(mentioned_site_names(parsed.raw))
        if mentioned and weights.get("site"):
            functions.append(
                {"filter": {"terms": {"site_name": mentioned}}, "weight": weights["site"]}
            )
        if weights.get("lang"):
            lang = query_language(parsed.raw, self.language)
            functions.append({"filter": {"term": {"lang": lang}}, "weight": weights["lang"]})
            functions.append({"filter": {"term": {"lang": ""}}, "weight": weights["lang"] / 2})
        functions.extend(all_words)
        if not functions:
            return query
        return {
            "function_score": {
                "query": query,
                "functions": [{"weight": 1.0}, *functions],
                "score_mode": "sum",
                "boost_mode": "multiply",
            }
        }

    def _word_idf(self, parsed: Query) -> list[float] | None:
        """BM25's IDF of each word of a plain query of ``blend_words`` to
        ``MAX_BLEND_WORDS`` words that fewer than ``blend_below`` pages match in full, in
        the body field (a phrase: its rarest term); one request. ``None`` otherwise."""
        words = _plain_words(parsed.root)
        if not self.blend_words or not self.blend_words <= len(words) <= MAX_BLEND_WORDS:
            return None
        terms = sorted({t for w in words for t in ([w.term] if isinstance(w, Term) else w.terms)})
        response = self.client.search(
            index=self.alias,
            size=0,
            track_total_hits=True,
            aggs={
                "df": {
                    "filters": {"filters": {t: {"term": {"body": t}} for t in terms}}
                },
                "strict": {"filter": self.compiler.compile(parsed.root)},
            },
            timeout=self.query_timeout,
        )
        if response["aggregations"]["strict"]["doc_count"] >= self.blend_below:
            return None
        n = response["hits"]["total"]["value"]
        df = {t: b["doc_count"] for t, b in response["aggregations"]["df"]["buckets"].items()}

        def idf(count: int) -> float:
            return math.log(1.0 + (n - count + 0.5) / (count + 0.5))

        return [
            idf(df[w.term]) if isinstance(w, Term) else max(idf(df[t]) for t in w.terms)
            for w in words
        ]

    def search_body(
        self, parsed: Query, relaxed: bool = False, idf: list[float] | None = None
    ) -> dict:
        """The search request body (without paging) for a parsed, non-empty query:
        ``relaxed`` for the any-word fallback, ``idf`` (``_word_idf``) to also rank pages
        lacking one minor word."""
        text_query = self._signals(parsed, *self._matching(parsed, relaxed, idf))
        if self.text_weight != 1.0:
            text_query = {"bool": {"must": [text_query], "boost": self.text_weight}}
        functions = []
        rank_feature = self.rank_weight > 0 and self.uses_rank_feature()
        if self.rank_weight > 0 and not rank_feature:
            functions.append(
                {
                    "field_value_factor": {"field": "pagerank", "missing": 0},
                    "weight": self.rank_weight,
                }
            )
        if self.freshness_weight > 0:
            functions.append(
                {
                    "gauss": {
                        "fetched_at": {
                            "origin": time.time(),
                            "scale": self.freshness_scale_s,
                            "decay": 0.5,
                        }
                    },
                    "weight": self.freshness_weight,
                }
            )
        query: dict = text_query
        if functions:
            query = {
                "function_score": {
                    "query": text_query,
                    "functions": functions,
                    "score_mode": "sum",
                    "boost_mode": "sum",
                }
            }
        if rank_feature:
            query = {
                "bool": {
                    "must": [query],
                    "should": [
                        {
                            "rank_feature": {
                                "field": "pagerank_rf",
                                "linear": {},
                                "boost": self.rank_weight,
                            }
                        }
                    ],
                }
            }
        return {
            "query": query,
            "timeout": self.query_timeout,
            "track_total_hits": self.track_total_hits,
            "_source": _HIT_SOURCE,
        }

    def search(self, query: str | Query, page: int = 1, size: int = 10) -> Results:
        """Hits by BM25 plus static rank and freshness, collapsed on cluster id.

        Pages within ``max_window`` use from/size with server-side collapse; deeper pages
        walk the ranking with ``search_after``. ``partial`` is set when a shard timed out or
        failed.
        """
        started = time.perf_counter()
        parsed = query if isinstance(query, Query) else parse(query)
        page, size = max(1, int(page)), max(1, min(int(size), 100))
        results = Results(query=parsed.raw, hits=[], total=0, page=page, size=size)
        if parsed.matches_nothing:
            results.suggestion = self._suggest(parsed)
            results.took_ms = (time.perf_counter() - started) * 1000
            return results
        body = self.search_body(parsed, idf=self._word_idf(parsed))
        offset = (page - 1) * size
        suggest = self._suggest_request(parsed)
        if suggest:
            body["suggest"] = suggest
        response, found = self._page(body, offset, size)
        if (
            response["hits"]["total"]["value"] < self.min_strict_hits
            and len(_plain_words(parsed.root)) > 1
        ):
            # No page has every word: pages with some of them, those with more first.
            body = self.search_body(parsed, relaxed=True)
            if suggest:
                body["suggest"] = suggest
            response, found = self._page(body, offset, size)
        results.total = response["hits"]["total"]["value"]
        results.partial = _partial(response)
        results.suggestion = self._suggestion(parsed, response.get("suggest"))
        terms = parsed.terms()
        for hit, similar in found:
            doc = hit["_source"]["doc"]
            results.hits.append(
                Hit(
                    id=doc["id"],
                    url=doc["url"],
                    title=doc.get("title", ""),
                    snippet=build_snippet(
                        doc.get("body") or doc.get("description", ""), terms, self.snippet_chars
                    ),
                    score=round(hit["_score"] or 0.0, 6),
                    host=doc.get("host", ""),
                    cluster_id=doc.get("cluster_id", ""),
                    similar=similar,
                    pagerank=doc.get("pagerank", 0.0),
                )
            )
        results.took_ms = (time.perf_counter() - started) * 1000
        return results

    def _page(self, body: dict, offset: int, size: int) -> tuple[dict, list]:
        """The response and the (hit, near-copies) of one page of results for ``body``."""
        if offset + size > self.max_window:
            return self._deep_page(body, offset, size)
        response = self.client.search(
            index=self.alias,
            **body,
            from_=offset,
            size=size,
            sort=_RANK_ORDER,
            collapse={"field": "cluster"},
        ).body
        hits = response["hits"]["hits"]
        return response, list(zip(hits, self._cluster_sizes(body["query"], hits), strict=True))

    def _deep_page(self, body: dict, offset: int, size: int) -> tuple[dict, list]:
        """A page past ``max_window``: walk the ranking with search_after, collapsing here."""
        chunk = min(1000, self.max_window)
        seen: set[str] = set()
        kept: list[dict] = []
        request = dict(body, size=chunk, sort=_RANK_ORDER)
        request["track_scores"] = True
        first: dict | None = None
        partial = False
        while len(kept) < offset + size:
            response = self.client.search(
                index=self.alias, **request, docvalue_fields=["cluster"]
            ).body
            first = first or response
            partial = partial or _partial(response)
            hits = response["hits"]["hits"]
            for hit in hits:
                cluster = hit["fields"]["cluster"][0]
                if cluster not in seen:
                    seen.add(cluster)
                    kept.append(hit)
            if len(hits) < chunk:
                break
            request.update(search_after=hits[-1]["sort"], track_total_hits=False)
            request.pop("suggest", None)
        page = kept[offset : offset + size]
        first["timed_out"] = partial
        return first, list(zip(page, self._cluster_sizes(body["query"], page), strict=True))

    def _cluster_sizes(self, query: dict, hits: list[dict]) -> list[int]:
        """For each hit, how many other matches share its cluster (the near-copy count).

        One aggregation over the hits' clusters; pages without near-copies cost nothing.
        """
        keys = [hit["fields"]["cluster"][0] for hit in hits]
        shared = sorted(
            {k for k, h in zip(keys, hits, strict=True) if h["_source"]["doc"].get("cluster_id")}
        )
        if not shared:
            return [0] * len(hits)
        response = self.client.search(
            index=self.alias,
            size=0,
            query={"bool": {"must": [query], "filter": [{"terms": {"cluster": shared}}]}},
            aggs={"clusters": {"terms": {"field": "cluster", "size": len(shared)}}},
            timeout=self.query_timeout,
        )
        counts = {b["key"]: b["doc_count"] for b in response["aggregations"]["clusters"]["buckets"]}
        return [max(0, counts.get(k, 1) - 1) for k in keys]

    def _suggest_request(self, parsed: Query) -> dict | None:
        words = _user_words(parsed)
        if not words:
            return None
        return {
            "did_you_mean": {
                "text": " ".join(words),
                "term": {"field": "suggest", "suggest_mode": "missing", "size": 1},
            }
        }

    def _suggest(self, parsed: Query) -> str | None:
        request = self._suggest_request(parsed)
        if request is None:
            return None
        response = self.client.search(index=self.alias, size=0, suggest=request)
        return self._suggestion(parsed, response.get("suggest"))

    @staticmethod
    def _suggestion(parsed: Query, suggest: dict | None) -> str | None:
        """The query with each word the index lacks replaced by the suggester's best option."""
        if not suggest:
            return None
        fixes = {
            entry["text"]: entry["options"][0]["text"]
            for entry in suggest.get("did_you_mean", [])
            if entry["options"]
        }
        if not fixes:
            return None

        def fix(match: re.Match) -> str:
            return fixes.get(normalize(match.group()), match.group())

        suggestion = WORD_RE.sub(fix, parsed.raw)
        return suggestion if suggestion != parsed.raw else None

    # --- rebuild --------------------------------------------------------------------

    def iter_documents(self) -> Iterator[Document]:
        """Every stored document, in id order."""
        for doc, _ in self._documents(self.alias):
            yield doc

    def reindex(self, progress=None) -> str:
        """Build a new versioned index from the stored documents and swap the alias to it.

        Searches keep answering from the old index until the atomic swap. Writes made during
        the copy are caught up after it: the old index is then write-blocked (writes in flight
        are retried by their bulk writer and land in the new index) and every document it
        has in a newer version than the new index is copied again. Returns the new index
        name; the old index is deleted. Deletions made during the copy are not carried over.
        """
        self.writer.flush()
        old = self.current_index()
        if old is None:
            self.ensure_index()
            return self.current_index()
        new = f"{self.alias}-v{_version_of(old) + 1}"
        self.client.options(ignore_status=404).indices.delete(index=new)
        body = self._index_body()
        # Built without replicas or refreshes, which is faster; both are set before the swap.
        body["settings"].update(number_of_replicas=0, refresh_interval="-1")
        self.client.indices.create(index=new, wait_for_active_shards="1", **body)
        self._rank_feature = None
        self.client.indices.refresh(index=old)
        copied = self._copy(old, new, self._documents(old), progress)
        self.client.indices.put_settings(
            index=new,
            settings={
                "number_of_replicas": self.replicas,
                "refresh_interval": self.refresh_interval,
            },
        )
        self.client.indices.refresh(index=new)
        if self.replicas:
            self.client.options(ignore_status=408).cluster.health(
                index=new, wait_for_status="green", timeout="60s"
            )
        self.client.indices.update_aliases(
            actions=[
                {"remove": {"index": old, "alias": self.alias}},
                {"add": {"index": new, "alias": self.alias, "is_write_index": True}},
            ]
        )
        self.client.indices.add_block(index=old, block="write")
        self.client.indices.refresh(index=old)
        stale = self._newer_in(old, new)
        caught_up = self._copy(old, new, self._documents(old, stale))
        self.client.indices.refresh(index=new)
        self.client.indices.delete(index=old)
        logger.info("reindex: %s -> %s (%d documents, %d caught up)", old, new, copied, caught_up)
        return new

    def _copy(self, source: str, target: str, docs, progress=None) -> int:
        """Index ``docs`` (documents of ``source`` with their versions) into ``target``."""
        writer = BulkWriter(self.client, self.writer.spool_dir / "reindex", stats=self.stats_)
        mapping = self.client.indices.get_mapping(index=target)[target]["mappings"]
        rank_feature = "pagerank_rf" in mapping.get("properties", {})
        count = 0
        try:
            for doc, version in docs:
                src = self._source(doc, rank_feature)
                src["indexed_at"] = version
                writer.add(
                    {
                        "index": {
                            "_index": target,
                            "_id": doc.id,
                            "version": version,
                            "version_type": "external",
                        }
                    },
                    src,
                )
                count += 1
                if progress is not None and count % 10_000 == 0:
                    progress(count)
        finally:
            writer.close(timeout_s=None)
        return count

    def _scan(self, index: str, source: list[str] | bool, query: dict | None = None, batch=1000):
        """Every hit of ``index`` (optionally matching ``query``) in id order, with versions."""
        request: dict = {
            "size": batch,
            "sort": [{"id": "asc"}],
            "_source": source,
            "version": True,
            "query": query or {"match_all": {}},
        }
        while True:
            hits = self.client.search(index=index, **request)["hits"]["hits"]
            yield from hits
            if len(hits) < batch:
                return
            request["search_after"] = hits[-1]["sort"]

    def _documents(
        self, index: str, ids: list[str] | None = None
    ) -> Iterator[tuple[Document, int]]:
        """The stored documents of ``index`` (all, or those of ``ids``) with their versions."""
        if ids is None:
            hits = self._scan(index, ["doc"])
        else:
            hits = (
                hit
                for start in range(0, len(ids), 1000)
                for hit in self._scan(
                    index, ["doc"], {"ids": {"values": ids[start : start + 1000]}}
                )
            )
        for hit in hits:
            yield Document.from_dict(hit["_source"]["doc"]), hit["_version"]

    def _newer_in(self, old: str, new: str) -> list[str]:
        """Ids whose version in ``old`` is newer than in ``new`` (or missing there)."""
        theirs = ((h["_id"], h["_version"]) for h in self._scan(new, False))
        current = next(theirs, None)
        stale = []
        for hit in self._scan(old, False):
            doc_id, version = hit["_id"], hit["_version"]
            while current is not None and current[0] < doc_id:
                current = next(theirs, None)
            if current is None or current[0] != doc_id or current[1] < version:
                stale.append(doc_id)
        return stale


def _label_match(text: str, kind: str) -> dict:
    return {
        "multi_match": {
            "query": text,
            "type": kind,
            "fields": ["title", "anchors", "url"],
            "analyzer": "whitespace",
        }
    }


def _plain_words(root: Node | None) -> list[Term | Phrase]:
    """The words of a plain word query (no operators), else ``[]``."""
    children = [root] if isinstance(root, Term | Phrase) else getattr(root, "children", [])
    if not isinstance(root, Term | Phrase | And) or not all(
        isinstance(c, Term | Phrase) for c in children
    ):
        return []
    return list(children)


def _version_of(index_name: str) -> int:
    match = re.search(r"-v(\d+)$", index_name)
    return int(match.group(1)) if match else 0


def _partial(response: dict) -> bool:
    """Whether a search response misses results: a shard timed out or failed."""
    return bool(response.get("timed_out")) or response["_shards"].get("failed", 0) > 0


def _user_words(parsed: Query) -> list[str]:
    """Normalized words the user typed in positive terms and phrases (for suggestions)."""
    words: list[str] = []
    for leaf in parsed.leaves(positive_only=True):
        if isinstance(leaf, Term | Phrase):
            text = leaf.word if isinstance(leaf, Term) else leaf.text
            words.extend(WORD_RE.findall(normalize(text)))
    return list(dict.fromkeys(words))
