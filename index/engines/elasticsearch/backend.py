"""The Elasticsearch search backend: versioned indices behind an alias, fed by bulk streaming.

Index design (see docs/elasticsearch.md): text is analyzed in Python by
:mod:`index.analysis`, the code the embedded index uses, and reaches Elasticsearch as
space-joined terms in ``whitespace``-analyzed fields; only core analyzers are used, so the
design runs on the minimal integ-test server and unchanged on a full cluster. The backend is
this class plus one module per role:

- :mod:`index.engines.elasticsearch.mapping`: the mapping and each document's ``_source``, both from
  the shared field declarations of :mod:`index.fields`;
- :mod:`index.engines.elasticsearch.query`: the query AST compiled to the DSL, and the ranking the
  signals of :mod:`index.signals` compile themselves into (``function_score``, no scripts);
- :mod:`index.engines.elasticsearch.search`: the search passes (strict, blended, relaxed), facets,
  explain;
- :mod:`index.engines.elasticsearch.paging`: from/size pages with server-side collapse,
  ``search_after`` beyond the window, near-copy counts;
- :mod:`index.engines.elasticsearch.suggest`: "did you mean" from the term suggester, in the same
  request, and title completion;
- :mod:`index.engines.elasticsearch.reindex`: the alias's first index, and a new versioned index
  built from the stored documents, the alias swapped atomically;
- :mod:`index.engines.elasticsearch.bulk`: lossless bulk streaming with a disk spool while the
  cluster is down.

Snippets come from :mod:`index.snippets` over the stored text (HTML-escaped, words marked by
their analyzed term), because Elasticsearch's highlighter would only see the stemmed terms.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import Elasticsearch

from crawler.config import Config, get_config
from crawler.options import setting_default, settings_to_options
from index.base import (
    RERANK_DEPTH,
    Document,
    Results,
    SearchBackend,
)
from index.engines.elasticsearch.bulk import BulkWriter, Stats, action_version
from index.engines.elasticsearch.hedge import Hedger
from index.engines.elasticsearch.mapping import (
    bulk_action,
    cluster_sizing,
    document_source,
    index_body,
    index_has_rank_feature,
    mappings,
)
from index.engines.elasticsearch.paging import Pager
from index.engines.elasticsearch.query import QueryCompiler, RankingQuery
from index.engines.elasticsearch.reindex import (
    AliasReindexer,
    current_index,
    ensure_alias,
    host_ids,
)
from index.engines.elasticsearch.requests import SearchRequests, outages_unavailable
from index.engines.elasticsearch.search import EsSearch
from index.engines.elasticsearch.suggest import completions
from index.engines.elasticsearch.tiers import Tier1
from index.fields import (
    DEFAULT_COMPOUND_FIELDS,
    DEFAULT_FIELD_WEIGHTS,
    FieldWeights,
    completion_prefix,
)
from index.query import Query, parse
from index.semantic import SemanticOptions
from index.signals import Ranker, Signal, weights_file_of

__all__ = ["ElasticsearchBackend", "QueryCompiler", "mappings", "options_from_settings"]

logger = logging.getLogger(__name__)

# Setting name -> (constructor option, type); defaults live in ElasticsearchBackend.__init__.
SETTINGS = {
    "ES_INDEX_PREFIX": ("index_prefix", str),
    "ES_SHARDS": ("shards", int),
    "ES_REPLICAS": ("replicas", int),
    "ES_REFRESH_INTERVAL": ("refresh_interval", str),
    "ES_QUERY_TIMEOUT": ("query_timeout", str),
    "ES_REQUEST_TIMEOUT_S": ("request_timeout_s", float),
    "ES_HEDGE": ("hedge", bool),
    "ES_HEDGE_DELAY_S": ("hedge_delay_s", float),
    "ES_MAX_WINDOW": ("max_window", int),
    "ES_RERANK_DEPTH": ("rerank_depth", int),
    "ES_NEAR_COPY_COUNTS": ("near_copies", str),
    "ES_TRACK_TOTAL_HITS": ("track_total_hits", int),
    "ES_FIELD_WEIGHTS": ("field_weights", FieldWeights.of),
    "ES_RANK_WEIGHTS": ("rank_weights", dict),
    "ES_SUGGEST_BODY_CHARS": ("suggest_body_chars", int),
    "ES_MIN_STRICT_HITS": ("min_strict_hits", int),
    "ES_BLEND_WORDS": ("blend_words", int),
    "ES_BLEND_BELOW": ("blend_below", int),
    "ES_TIERED": ("tiered", bool),
    "ES_TIER1_SHARE": ("tier1_share", float),
    "ES_TIER1_MIN_HITS": ("tier1_min_hits", int),
    "SEARCH_LANGUAGE": ("language", str),
    "SEARCH_WEIGHTS_FILE": ("weights_file", str),
    "SEARCH_SEMANTIC": ("semantic", bool),
    "SEARCH_SEMANTIC_SECTIONS": ("semantic_sections", int),
    "SEARCH_SEMANTIC_DEPTH": ("semantic_depth", int),
    "ES_BULK_DOCS": ("bulk_docs", int),
    "ES_BULK_BYTES": ("bulk_bytes", int),
    "ES_BULK_INTERVAL_S": ("bulk_interval_s", float),
    "ES_BULK_QUEUE_BYTES": ("bulk_queue_bytes", int),
    "ES_BULK_MAX_RETRIES": ("bulk_max_retries", int),
}


def options_from_settings(settings: Any) -> dict:
    """Constructor options from a Scrapy/Django settings object or a mapping (``ES_*`` names)."""
    return settings_to_options(settings, SETTINGS)


class ElasticsearchBackend(SearchBackend):
    """Documents in an alias-versioned Elasticsearch index; writes streamed losslessly."""

    def __init__(
        self,
        hosts: str | list[str],
        *,
        index_prefix: str | None = None,
        shards: int | None = None,
        replicas: int | None = None,
        refresh_interval: str = "1s",
        field_weights: FieldWeights = DEFAULT_FIELD_WEIGHTS,
        rank_weights: Mapping[str, float] | None = None,
        signals: Sequence[Signal] | None = None,
        weights_file: str | None = None,
        query_timeout: str = "2s",
        request_timeout_s: float = 30.0,
        hedge: bool | None = None, hedge_delay_s: float | None = None,  # ES_HEDGE*: es_hedge
        max_window: int = 10_000, rerank_depth: int = RERANK_DEPTH,  # es_paging
        near_copies: str | None = None,
        track_total_hits: int = 10_000,
        suggest_body_chars: int = 2000,
        snippet_chars: int = 220,
        min_strict_hits: int = 1,
        blend_words: int = 3,
        blend_below: int = 300,
        tiered: bool | None = None, tier1_share: float | None = None,  # ES_TIER*: es_tiers
        tier1_min_hits: int | None = None, max_missing_share: float = 0.5,
        compound_fields: FieldWeights = DEFAULT_COMPOUND_FIELDS,
        language: str = "en",
        semantic: bool | None = None, semantic_sections: int | None = None,  # SEARCH_SEMANTIC*
        semantic_depth: int | None = None, spool_dir: str | Path | None = None,
        bulk_docs: int = 500, bulk_bytes: int = 5_000_000,  # ES_BULK_*: es_bulk
        bulk_interval_s: float = 1.0, bulk_queue_bytes: int = 50_000_000,
        bulk_max_retries: int = 4,
        crawler_stats=None,
        client: Elasticsearch | None = None,
        config: Config | None = None,
    ):
        if isinstance(hosts, str):
            hosts = [h.strip() for h in hosts.split(",") if h.strip()]
        self.hosts = hosts
        # None: the setting's default (crawler/settings.py)
        index_prefix = index_prefix or setting_default("ES_INDEX_PREFIX")
        self.alias = index_prefix
        # None: sized from the cluster when an index is created (es_mapping.cluster_sizing)
        self.shards = setting_default("ES_SHARDS") if shards is None else shards
        self.replicas = setting_default("ES_REPLICAS") if replicas is None else replicas
        self.refresh_interval = refresh_interval
        self.compiler = QueryCompiler(field_weights, compound_fields)
        # A configured engine loads the weights train-ranker fitted under DATA_DIR.
        weights_file = weights_file_of(weights_file, config.data_dir if config else None)
        self.ranker = Ranker.for_engine("elasticsearch", signals, rank_weights, weights_file)
        self.ranking = RankingQuery(self.compiler, self.ranker, max_missing_share)
        self.min_strict_hits = min_strict_hits
        self.blend_words = blend_words
        self.blend_below = blend_below
        self.language = language
        self.semantic = SemanticOptions.of(semantic, semantic_sections, semantic_depth)
        self.query_timeout = query_timeout
        self.track_total_hits = track_total_hits
        self.suggest_body_chars = suggest_body_chars
        self.snippet_chars = snippet_chars
        # A node that dies mid-request is retried on another one: queries keep answering.
        self.client = client or Elasticsearch(hosts, request_timeout=request_timeout_s,
                                              max_retries=3, retry_on_timeout=True)
        # None: the settings' defaults (crawler/settings.py). A client given is the
        # caller's own (its auth, its nodes), so its searches are not re-routed.
        hedger = None
        if (setting_default("ES_HEDGE") if hedge is None else hedge) and client is None:
            delay = setting_default("ES_HEDGE_DELAY_S") if hedge_delay_s is None else hedge_delay_s
            hedger = Hedger(self.client, hosts, float(delay), request_timeout_s)
        self.requests = SearchRequests(self.client, hedger)
        self.pager = Pager(self.requests, self.alias, max_window, query_timeout,
                           near_copies or setting_default("ES_NEAR_COPY_COUNTS"),
                           rerank_depth=rerank_depth)
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
        self.tier1 = Tier1.of(self, tiered, tier1_share, tier1_min_hits)
        self._search = EsSearch(self)

    @classmethod
    def from_config(cls, config: Config, settings: Any = None, **options) -> ElasticsearchBackend:
        """The backend for ``config.elasticsearch_url`` (comma-separated node URLs)."""
        if not config.elasticsearch_url:
            raise ValueError("ELASTICSEARCH_URL is not set; use the embedded backend instead.")
        merged = options_from_settings(settings) if settings is not None else {}
        merged.update(options)
        return cls(config.elasticsearch_url, config=config, **merged)

    # --- index lifecycle --------------------------------------------------------------

    def _index_body(self) -> dict:
        return index_body(self.client, self.shards, self.replicas, self.refresh_interval)

    def current_index(self) -> str | None:
        """The concrete index the alias points to, or ``None`` before ``ensure_index``."""
        return current_index(self.client, self.alias)

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
        ensure_alias(self.client, self.alias, self._index_body)
        self._rank_feature = None

    def uses_rank_feature(self) -> bool:
        """Whether the current index scores static rank with a ``rank_feature`` field."""
        if self._rank_feature is None and not self.writer.available:
            return False  # asked again once the cluster is back
        if self._rank_feature is None:
            self._rank_feature = index_has_rank_feature(self.client, self.alias)
        return self._rank_feature

    def close(self) -> None:
        """Send what is queued (the rest stays spooled) and close the connections."""
        self.writer.close()
        self.requests.close()
        self.client.close()

    def drop(self) -> None:
        """Delete the alias and every versioned index of this prefix (tests, benchmarks)."""
        self.writer.flush()
        self.client.options(ignore_status=404).indices.delete(
            index=f"{self.alias}-v*", expand_wildcards="all")
        self.tier1.drop()

    # --- writes -----------------------------------------------------------------------

    def index(self, docs: Iterable[Document]) -> int:
        """Queue documents by id (blocks while the queue is full); tier 1 gets its own."""
        rank_feature = self.uses_rank_feature()
        count = 0
        for doc in self.semantic.embedded(docs):
            version = action_version()
            source = document_source(doc, rank_feature, self.suggest_body_chars)
            source["indexed_at"] = version
            self.writer.add(bulk_action("index", self.alias, doc.id, version), source)
            self.tier1.mirror(self.writer, "index", doc.id, version, source, doc.pagerank)
            count += 1
        return count

    def delete(self, ids: Iterable[str]) -> int:
        """Queue deletions by id (from tier 1 too); unknown ids are ignored."""
        count = 0
        for doc_id in ids:
            version = action_version()
            self.writer.add(bulk_action("delete", self.alias, doc_id, version))
            self.tier1.mirror(self.writer, "delete", doc_id, version)
            count += 1
        return count

    def delete_by_host(self, pattern: str) -> int:
        """Remove the documents whose host matches ``pattern``, refreshed; returns how many."""
        self.refresh()
        ids = host_ids(self.client, self.alias, pattern)
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
        self.tier1.refresh(self.writer.available)

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
            **self.requests.stats(),
        }

    # --- search ---------------------------------------------------------------------

    def search_body(self, parsed: Query, relaxed: bool = False,
                    idf: list[float] | None = None) -> dict:
        """The search request body (without paging) for a parsed, non-empty query:
        ``relaxed`` for the any-word fallback, ``idf`` (``es_query.word_idf``) to also rank pages
        lacking one minor word."""
        return self._search.body(self._search.plan(parsed), relaxed, idf)

    def search(self, query: str | Query, page: int = 1, size: int = 10,
               explain: bool = False, facets: bool = False) -> Results:
        """Hits by BM25 times the boost signals plus static rank and freshness, collapsed on
        cluster id (:mod:`.search`; tier 1 first, :mod:`.tiers`); ``partial``
        when a shard timed out or failed; facets are aggregations in the same request."""
        started = time.perf_counter()
        self.requests.count_search()
        parsed = query if isinstance(query, Query) else parse(query)
        page, size = max(1, int(page)), max(1, min(int(size), 100))
        with outages_unavailable():
            return self._search.run(parsed, page, size, explain, facets, started)

    def complete(self, prefix: str, limit: int = 8) -> list[str]:
        """Titles starting with ``prefix``, most pages first (``es_suggest.completions``)."""
        key = completion_prefix(prefix)
        if not key.strip() or limit < 1:
            return []
        return completions(self.client, self.alias, key, limit, self.query_timeout)

    def suggest(self, query: str | Query) -> str | None:
        """The query with words the index lacks replaced by the term suggester's best."""
        return self._search.suggest(query if isinstance(query, Query) else parse(query))

    # --- rebuild --------------------------------------------------------------------

    def _reindexer(self) -> AliasReindexer:
        replicas = cluster_sizing(self.client, self.shards, self.replicas)[1]
        return AliasReindexer(self.client, self.alias, index_body=self._index_body,
                              replicas=replicas, refresh_interval=self.refresh_interval,
                              spool_dir=self.writer.spool_dir, stats=self.stats_,
                              suggest_body_chars=self.suggest_body_chars)

    def iter_documents(self) -> Iterator[Document]:
        """Every stored document, in id order."""
        for doc, _ in self._reindexer().documents(self.alias):
            yield doc

    def reindex(self, progress=None) -> str:
        """Build a new versioned index from the stored documents and swap the alias to it
        (:mod:`.reindex`); returns the new index name, the old one is deleted."""
        self.writer.flush()
        old = self.current_index()
        if old is None:
            self.ensure_index()
            return self.current_index()
        new = self.tier1.reindex_with(self._reindexer(), old, progress)
        self._rank_feature = None
        return new

    def publish_tiers(self) -> str | None:
        """Tier 1 cut afresh at the stored static ranks (``Tier1.publish``; off: ``None``)."""
        self.writer.flush()
        return self.tier1.publish(self.current_index() or self.alias)
