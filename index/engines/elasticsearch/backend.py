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

import dataclasses
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import Elasticsearch

from crawler.config import Config, get_config
from index.base import Document, Results, SearchBackend
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
from index.engines.elasticsearch.options import ElasticsearchOptions
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
from index.engines.elasticsearch.vectors import read_versioned, unembedded_ids
from index.fields import completion_prefix
from index.query import Query, parse
from index.semantic import SemanticOptions
from index.signals import Ranker, Signal, weights_file_of

__all__ = ["ElasticsearchBackend", "ElasticsearchOptions", "QueryCompiler", "mappings"]

logger = logging.getLogger(__name__)

class ElasticsearchBackend(SearchBackend):
    """Documents in an alias-versioned Elasticsearch index; writes streamed losslessly."""

    def __init__(
        self,
        hosts: str | list[str],
        *,
        options: ElasticsearchOptions | None = None,
        signals: Sequence[Signal] | None = None,
        spool_dir: str | Path | None = None,
        crawler_stats=None,
        client: Elasticsearch | None = None,
        config: Config | None = None,
        **overrides: Any,
    ):
        """``options`` (default: those of the settings' defaults), ``overrides`` (fields of
        :class:`ElasticsearchOptions`) on top. A ``client`` given is the caller's own (its
        auth, its nodes), so its searches are not re-routed (no hedging)."""
        if isinstance(hosts, str):
            hosts = [h.strip() for h in hosts.split(",") if h.strip()]
        self.hosts = hosts
        self.options = o = (dataclasses.replace(options, **overrides) if options is not None
                            else ElasticsearchOptions.from_settings(None, **overrides))
        self.alias = o.index_prefix
        compiler = QueryCompiler(o.field_weights, o.compound_fields)
        # A configured engine loads the weights train-ranker fitted under DATA_DIR.
        weights_file = weights_file_of(o.weights_file, config.data_dir if config else None)
        self.ranker = Ranker.for_engine("elasticsearch", signals, o.rank_weights, weights_file)
        self.ranking = RankingQuery(compiler, self.ranker)
        self.semantic = SemanticOptions(o.semantic, o.semantic_sections, o.semantic_depth,
                                        o.semantic_model, o.semantic_queries)
        # A node that dies mid-request is retried on another one: queries keep answering.
        self.client = client or Elasticsearch(hosts, request_timeout=o.request_timeout_s,
                                              max_retries=3, retry_on_timeout=True)
        hedger = None
        if o.hedge and client is None:
            hedger = Hedger(self.client, hosts, o.hedge_delay_s, o.request_timeout_s)
        self.requests = SearchRequests(self.client, hedger)
        self.pager = Pager(self.requests, self.alias, o.max_window, o.query_timeout,
                           o.near_copies, rerank_depth=o.rerank_depth)
        if spool_dir is None:
            spool_dir = (config or get_config()).data_dir / "es-spool" / o.index_prefix
        self.stats_ = Stats(crawler_stats)
        self.writer = BulkWriter(
            self.client,
            spool_dir,
            max_docs=o.bulk_docs,
            max_bytes=o.bulk_bytes,
            interval_s=o.bulk_interval_s,
            queue_bytes=o.bulk_queue_bytes,
            max_retries=o.bulk_max_retries,
            request_timeout_s=max(o.request_timeout_s, 60.0),
            stats=self.stats_,
            on_reconnect=self._ensure_index,
        )
        self._rank_feature: bool | None = None
        #: The version each document the last :meth:`get_many` read was at, until
        #: :meth:`write_vectors` writes it (so it holds one read's documents at most).
        self._read_at: dict[str, int] = {}
        self.tier1 = Tier1.of(o, self.client, self.pager, self._index_body, self._replicas,
                              self.writer.spool_dir, self.stats_)
        self._search = EsSearch(o, self.ranker, self.ranking, self.semantic, self.requests,
                                self.pager, self.tier1, self.uses_rank_feature)

    @classmethod
    def from_config(cls, config: Config, settings: Any = None, **options) -> ElasticsearchBackend:
        """The backend for ``config.elasticsearch_url`` (comma-separated node URLs), tuned by
        the ``ES_*`` settings."""
        if not config.elasticsearch_url:
            raise ValueError("ELASTICSEARCH_URL is not set; use the embedded backend instead.")
        return cls(config.elasticsearch_url, config=config,
                   options=ElasticsearchOptions.from_settings(settings), **options)

    # --- index lifecycle --------------------------------------------------------------

    def _index_body(self) -> dict:
        o = self.options
        return index_body(self.client, o.shards, o.replicas, o.refresh_interval)

    def _replicas(self) -> int:
        """Replicas of a new index: the setting, or sized from the cluster."""
        return cluster_sizing(self.client, self.options.shards, self.options.replicas)[1]

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

    def index(self, docs: Iterable[Document], versions: Mapping[str, int] | None = None) -> int:
        """Queue documents by id (blocks while the queue is full), each under a new version
        or ``versions``' one; tier 1 gets its own."""
        rank_feature = self.uses_rank_feature()
        count = 0
        for doc in docs:
            version = versions[doc.id] if versions is not None else action_version()
            source = document_source(doc, rank_feature, self.options.suggest_body_chars)
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

    def get_many(self, ids: Sequence[str]) -> list[Document]:
        """The stored documents of ``ids`` that exist, each version remembered for
        :meth:`write_vectors` until it writes the document or the next read (what a
        read left unwritten, a page the batch skips or a run that failed, is forgotten)."""
        read = read_versioned(self.client, self.alias, ids)
        self._read_at = {doc.id: version for doc, version in read}
        return [doc for doc, _ in read]

    def unembedded(self, limit: int, version: str) -> list[str]:
        """Ids of up to ``limit`` documents indexed without section vectors of model
        ``version`` (:mod:`.vectors`)."""
        self.refresh()
        return unembedded_ids(self.client, self.alias, limit, version)

    def write_vectors(self, docs: Sequence[Document]) -> int:
        """Index ``docs`` again, one version past the one :meth:`get_many` read (a page
        the crawl wrote since is newer and stays), not a partial update: ``_source`` lacks
        the analyzed fields, which an update would lose."""
        count = self.index(docs, {d.id: (self._read_at.pop(d.id, 0) or action_version()) + 1
                                  for d in docs})
        self.refresh()
        return count

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
        ``relaxed`` for the any-word fallback, ``idf`` (``query.word_idf``) to also rank pages
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
        """Titles starting with ``prefix``, most pages first (``suggest.completions``)."""
        key = completion_prefix(prefix)
        if not key.strip() or limit < 1:
            return []
        return completions(self.client, self.alias, key, limit, self.options.query_timeout)

    def suggest(self, query: str | Query) -> str | None:
        """The query with words the index lacks replaced by the term suggester's best."""
        return self._search.suggest(query if isinstance(query, Query) else parse(query))

    # --- rebuild --------------------------------------------------------------------

    def _reindexer(self) -> AliasReindexer:
        o = self.options
        return AliasReindexer(self.client, self.alias, index_body=self._index_body,
                              replicas=self._replicas(), refresh_interval=o.refresh_interval,
                              spool_dir=self.writer.spool_dir, stats=self.stats_,
                              suggest_body_chars=o.suggest_body_chars)

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
